package appliance

import (
	"fmt"
	"runtime"

	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	appsync "bothy.dev/bothy/app/sync"
	"bothy.dev/bothy/appliance/httpapi"
	"bothy.dev/bothy/appliance/passwords"
	"bothy.dev/bothy/storage"
)

// wire builds the modules on a.DB, registers the in-transaction subscribers in one place, seals
// the bus, and sets the public handler. Every dependency is passed explicitly; nothing is global.
func wire(a *App) error {
	db, clock := a.DB, a.Clock
	bus := kernel.NewTxBus()

	authzStore := storage.NewAuthzStore(db)
	az := authz.New(authzStore, authzStore, db, db, clock)

	// argon2id takes 19 MiB per hash: bound the hashes running at once so a burst of logins
	// cannot take the memory of a small machine.
	hasher := passwords.New(passwords.OWASP, max(1, runtime.NumCPU()))
	ident := identity.New(identity.Deps{
		Store:  storage.NewIdentityStore(db),
		UoW:    db,
		Events: db,
		Authz:  az,
		Hasher: hasher,
		Bus:    bus,
		Clock:  clock,
	}, identity.Config{
		SessionTTL:             a.Config.Auth.SessionTTL,
		LoginFailuresPerIP:     a.Config.Auth.LoginMaxFailures,
		LoginFailuresPerHandle: a.Config.Auth.LoginMaxFailures,
		LoginFailureWindow:     a.Config.Auth.LoginFailureWindow,
	})

	chats := chat.New(chat.Deps{Store: storage.NewChatStore(db), UoW: db, Events: db, Authz: az, Scoper: az, Clock: clock})
	msgStore := storage.NewMessageStore(db)
	msgs := messaging.New(messaging.Deps{
		Store:     msgStore,
		Threads:   chats,
		Directory: msgStore,
		Redactor:  db,
		UoW:       db,
		Events:    db,
		Authz:     az,
		Bus:       bus,
		Clock:     clock,
	})
	catchUp := appsync.New(db, az)

	// In-transaction subscribers (seed 8.3) are registered here and nowhere else, in delivery
	// order. None yet: runs will subscribe to messaging.MessagePosted.
	bus.Seal()

	router := httpapi.NewRouter(ident, httpapi.NewIdempotency(db, db), httpapi.Options{
		MaxBodyBytes:   a.Config.HTTP.MaxJSONBodyBytes,
		MaxJSONDepth:   a.Config.HTTP.MaxJSONDepth,
		RequestTimeout: a.Config.HTTP.RequestTimeout,
		Logger:         a.Logger,
	})
	router.Handle(httpapi.OpenAPIRoutes(az)...)
	router.Handle(httpapi.SetupPageRoutes(az)...)
	router.Handle(httpapi.IdentityRoutes(ident)...)
	router.Handle(httpapi.GrantRoutes(az)...)
	router.Handle(httpapi.ChatRoutes(chats)...)
	router.Handle(httpapi.MessageRoutes(msgs)...)
	router.Handle(httpapi.EventRoutes(catchUp)...)

	// Seed 15.1 step 7: every route's action must be one authz decides, or the start aborts.
	for _, r := range router.Routes() {
		if !authz.Known(r.Action) {
			return fmt.Errorf("route %s %s: authz has no rule for action %q", r.Method, r.Pattern, r.Action)
		}
	}

	a.Identity = ident
	a.Public = router
	return nil
}
