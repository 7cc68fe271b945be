package appliance

import (
	"time"

	"context"
	"fmt"
	"net/http"
	"runtime"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/dms"
	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/gateway"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/inbox"
	"bothy.dev/bothy/app/instance"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/notify"
	"bothy.dev/bothy/app/push"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/app/search"
	"bothy.dev/bothy/app/stats"
	"bothy.dev/bothy/appliance/clientaddr"
	"bothy.dev/bothy/appliance/egress"
	"bothy.dev/bothy/appliance/httpapi"
	"bothy.dev/bothy/appliance/imaging"
	"bothy.dev/bothy/appliance/mcpserver"
	"bothy.dev/bothy/appliance/passwords"
	"bothy.dev/bothy/appliance/wstransport"
	"bothy.dev/bothy/assets"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/jobs"
	"bothy.dev/bothy/ui"
)

// wire builds the modules on a.DB, registers the in-transaction subscribers in one place, seals
// the bus, and sets the public handler. Every dependency is passed explicitly; nothing is global.
func wire(ctx context.Context, a *App) error {
	db, clock := a.DB, a.Clock
	bus := kernel.NewTxBus()
	// The job queue (storage/jobs): the modules enqueue through it (kernel.Jobs) in the Unit of
	// Work that causes a job; their handlers are registered on it here, and wireJobs, at the
	// end, adds the appliance's own and runs the runner in roles all and worker. A process that
	// runs no jobs (api) wakes the runners of the others when it enqueues one due now.
	jobQueue := jobs.NewQueue(db, jobs.QueueOptions{NotifyOthers: !runsJobs(a.Config.Server.Role)})

	authzStore := storage.NewAuthzStore(db)
	az := authz.New(authz.Deps{Store: authzStore, Structure: authzStore, UoW: db, Events: db, Clock: clock})

	// argon2id takes 19 MiB per hash: bound the hashes running at once so a burst of logins
	// cannot take the memory of a small machine.
	hasher := passwords.New(passwords.OWASP, max(1, runtime.NumCPU()))
	// identity's own tunables that are not settings keep its defaults.
	identConfig := identity.DefaultConfig()
	identConfig.SessionTTL = a.Config.Auth.SessionTTL
	identConfig.LoginFailuresPerIP = a.Config.Auth.LoginMaxFailuresPerAddress
	identConfig.LoginFailuresPerHandle = a.Config.Auth.LoginMaxFailures
	identConfig.LoginFailureWindow = a.Config.Auth.LoginFailureWindow
	// Credentials are kept in memory for a few seconds at most (auth.credential_cache_ttl): the
	// wiring below hands identity every revocation (this process's commits, the log tail's, the
	// permission cache's disabled principals), so the time only bounds a revocation of another
	// node this one has not read yet.
	identConfig.CredentialCacheTTL = a.Config.Auth.CredentialCacheTTL
	ident := identity.New(identity.Deps{
		Store:  storage.NewIdentityStore(db),
		UoW:    db,
		Events: db,
		Authz:  az,
		Hasher: hasher,
		Bus:    bus,
		Clock:  clock,
	}, identConfig)

	chatStore := storage.NewChatStore(db)
	chats := chat.New(chat.Deps{Store: chatStore, Principals: chatStore, UoW: db, Events: db, Authz: az, Scoper: az, Clock: clock})
	// An agent's principal and token are identity's, made in the agents module's Unit of Work.
	agentStore := storage.NewAgentStore(db)
	agentSvc := agents.New(agents.Deps{Store: agentStore, Principals: ident, UoW: db, Events: db, Authz: az, Bus: bus})
	// Files: their bytes behind the blob store of files.storage, images read in pure Go.
	blobStore, err := openBlobs(ctx, a.Config)
	if err != nil {
		return fmt.Errorf("open the file storage: %w", err)
	}
	fileSvc := files.New(files.Deps{Store: storage.NewFileStore(db), Blobs: blobStore, Imager: imaging.New(), Sniff: sniff,
		UoW: db, Events: db, Jobs: jobQueue, Authz: az, Clock: clock}, filesConfig(a.Config))
	registerFileJobs(jobQueue, fileSvc)
	registerBlobSweep(jobQueue, blobStore, a.Logger)
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
		// @here and @channel reach the channel's members as the permission cache knows them,
		// when the instance's setting lets the poster use them.
		Audience: az,
		Policy:   storage.NewInstanceStore(db),
		Files:    fileSvc,
	})
	// Read positions and what is unread: a person's own message is read for them at once.
	inboxSvc := inbox.New(inbox.Deps{Store: storage.NewInboxStore(db), Threads: chats, UoW: db, Events: db, Authz: az, Clock: clock}, az)
	catchUp := catchup.New(catchup.Deps{Log: db, Scoper: az})
	// The invocation tokens are signed with the instance's key, made by the first node that
	// needs it, shared through the database and rotated by runs.signing_key_rotation (migrate
	// 0007_signing_keys, 0010_signing_key_rotation).
	runConfig := runs.DefaultConfig()
	if a.Config.Server.PublicURL != "" {
		runConfig.Issuer = a.Config.Server.PublicURL
	}
	runConfig.TokenTTL = a.Config.Agent.InvocationTokenTTL
	runConfig.QueuedTimeout = a.Config.Agent.QueuedTimeout
	runConfig.StallTimeout = a.Config.Agent.StallTimeout
	runConfig.CancelGrace = a.Config.Agent.CancelGrace
	runConfig.MaxHandoffDepth = a.Config.Runs.MaxHandoffDepth
	keys := runs.NewKeyringWith(storage.NewSigningKeyStore(db), clock, runs.KeyringOptions{
		Rotation: a.Config.Agent.SigningKeyRotation, TokenTTL: a.Config.Agent.InvocationTokenTTL})
	// Direct messages: their participants' rights are grants (authz writes them in the DM's Unit
	// of Work), and runs reads their participants to invoke a DM's agents without a mention.
	dmSvc := dms.New(dms.Deps{Store: storage.NewDMStore(db), Chat: chatStore, Principals: chatStore, Grants: az, UoW: db, Events: db, Authz: az, Clock: clock})
	runSvc := runs.New(runs.Deps{Store: storage.NewRunStore(db), Agents: agentStore, Structure: chats, UoW: db, Events: db,
		Authz: az, Clock: clock, Keys: keys, Jobs: jobQueue, DMs: dmSvc, Approvals: storage.NewApprovalStore(db)}, runConfig)
	registerRunJobs(jobQueue, runSvc, a.Config.Agent.StallCheckInterval, a.Logger)
	// Retention (appliance/retention.go); a message goes through messaging's own delete.
	registerRetention(jobQueue, db, clock, retentionSettings{Messages: a.Config.Messaging.Retention,
		Revisions: a.Config.Messaging.RevisionRetention, RunOutput: a.Config.Runs.OutputRetention,
		Events: a.Config.Sync.EventRetention, Interval: a.Config.Sync.RetentionInterval, BatchSize: a.Config.Sync.RetentionBatchSize},
		func(ctx context.Context, before time.Time, limit int) (int64, error) {
			return msgs.ExpireMessages(ctx, msgStore, before, limit)
		}, a.Logger)
	// Web Push: a notification enqueues one push.send job per browser of the person (in the
	// notifier's Unit of Work); the job posts through the egress client, whose dialer refuses
	// private addresses unless push.allow_private_endpoints.
	pushSvc := push.New(push.Deps{Store: storage.NewPushStore(db), Jobs: jobQueue, UoW: db, Authz: az, Clock: clock,
		Sender: egress.New(egress.Options{AllowPrivate: a.Config.Push.AllowPrivateEndpoints, Observe: a.egressObserver()})}, pushConfig(a.Config))
	registerPushJobs(jobQueue, pushSvc, a.Logger)
	notifyStore := storage.NewNotifyStore(db)
	notifySvc := notify.New(notify.Deps{Store: notifyStore, Threads: chats, UoW: db, Events: db, Authz: az, Clock: clock})

	// In-transaction subscribers (kernel.TxBus) are registered here and nowhere else, in delivery
	// order: runs decides the trigger of each posted message (its runs and the message's trigger
	// state) and fails the runs of a disabled agent.
	kernel.Subscribe(bus, "runs.trigger", runSvc.OnMessageDeciding)
	kernel.Subscribe(bus, "runs.invoke", runSvc.OnMessagePosted)
	kernel.Subscribe(bus, "inbox.own_message_read", inboxSvc.OnMessagePosted)
	// The writers of a thread follow it (notify): a lookup in memory for a main-thread message.
	kernel.Subscribe(bus, "notify.follow", notifySvc.OnMessagePosted)
	kernel.Subscribe(bus, "runs.agent_disabled", runSvc.OnAgentDisabled)
	bus.Seal()

	trustedProxies, err := clientaddr.ParseProxies(a.Config.Server.TrustedProxies)
	if err != nil {
		return fmt.Errorf("server.trusted_proxies: %w", err)
	}
	router := httpapi.NewRouter(ident, httpapi.NewIdempotency(db, db), httpapi.Options{
		MaxBodyBytes:    a.Config.HTTP.MaxJSONBodyBytes,
		MaxJSONDepth:    a.Config.HTTP.MaxJSONDepth,
		RequestTimeout:  a.Config.HTTP.RequestTimeout,
		BodyReadTimeout: a.Config.HTTP.BodyReadTimeout,
		// The console's forms that come before a sign-in take the small cap of login and setup.
		PublicForms: []string{ui.Prefix + "signin", ui.Prefix + "setup"},
		Logger:      a.Logger,
		// The routes that the console's script calls as well (files) take its session cookie.
		SessionCookieName: ui.SessionCookieName(a.Config.Server.PublicURL),
		SessionCSRF:       ui.SessionCSRF,
		// Traces and metrics of each request (observe.go); nil without telemetry.
		Observer: a.requestObserver(),
		// The config check has read server.trusted_proxies the same way already.
		TrustedProxies: trustedProxies,
	})
	router.Handle(httpapi.OpenAPIRoutes(az)...)
	// The public keys of invocation tokens, for adapters that verify a token themselves.
	router.Handle(httpapi.JWKSRoutes(az, keys)...)
	router.Handle(httpapi.IdentityRoutes(ident)...)
	// The instance's settings (its name) and the owner's overview numbers, for the console.
	inst := instance.New(instance.Deps{Store: storage.NewInstanceStore(db), UoW: db, Events: db, Authz: az})
	router.Handle(httpapi.InstanceRoutes(inst)...)
	router.Handle(httpapi.GrantRoutes(az)...)
	router.Handle(httpapi.ChatRoutes(chats)...)
	router.Handle(httpapi.DMRoutes(dmSvc)...)
	router.Handle(httpapi.AgentRoutes(agentSvc)...)
	router.Handle(httpapi.CommandRoutes(agentSvc, runSvc)...)
	router.Handle(httpapi.MessageRoutes(msgs, runSvc)...)
	router.Handle(httpapi.FileRoutes(fileSvc)...)
	router.Handle(httpapi.RunRoutes(runSvc)...)
	router.Handle(httpapi.ApprovalRoutes(runSvc)...)
	// A person's click or pick on a message's buttons and selects, over REST and from the
	// console; the message's author gets it through its consumer, prepared by runSvc with a token
	// for the thread.
	interactions := runs.NewInteractions(runs.InteractionDeps{Messages: msgStore, Store: storage.NewInteractionStore(db),
		UoW: db, Events: db, Authz: az, Clock: clock})
	router.Handle(httpapi.InteractionRoutes(interactions)...)
	router.Handle(httpapi.PushRoutes(pushSvc)...)
	router.Handle(httpapi.NotifyRoutes(notifySvc)...)
	router.Handle(httpapi.InboxRoutes(inboxSvc)...)
	// The search of messages reads the index storage keeps with each message (storage/search.go).
	searchSvc := search.New(search.Deps{Index: storage.NewSearchStore(db), Messages: msgStore, Directory: msgStore, Scoper: az})
	router.Handle(httpapi.SearchRoutes(searchSvc)...)
	router.Handle(httpapi.EventRoutes(catchUp)...)
	router.Handle(httpapi.ConsumerRoutes(catchup.NewConsumer(catchup.ConsumerDeps{Service: catchUp, Authz: az, Cursors: storage.NewConsumerStore(db), Wake: db, Clock: clock, Prepare: runSvc}))...)
	// The MCP endpoint for outside agents (mcp.enabled): its tools call the use cases above as
	// the principal of the token the router resolved, so their answers are REST's; off, the
	// path is unknown (404).
	if a.Config.MCP.Enabled {
		router.HandleJSONRPC(mcpserver.Path, a.Config.MCP.MaxRequestsPerPrincipal, mcpserver.New(mcpserver.Deps{
			Chat: chats, Messages: msgs, Inbox: inboxSvc, Runs: runSvc, Search: searchSvc, Authors: storage.NewIdentityStore(db), Logger: a.Logger,
		}, mcpserver.Options{Version: Version, MaxBodyBytes: a.Config.HTTP.MaxJSONBodyBytes, CallTimeout: a.Config.HTTP.RequestTimeout}))
	}

	// The realtime gateway (see docs/architecture.md, The write path): one log tail hands every event to authz's permission
	// cache (Observe) and then to the hub, which decides each delivery from that cache alone
	// (authz.Delivery). The upgrade route sits outside the JSON chain because it authorizes
	// in-band; the shutdown closes every WebSocket with 4013 once the HTTP requests have finished
	// (stops run after http.Server.Shutdown).
	gwDeps := gateway.Deps{
		Auth:      ident,
		Authz:     az.Delivery(),
		Scoper:    az.Delivery(),
		CatchUp:   catchUp,
		Log:       db,
		Structure: chats,
		Observer:  observers{az, chats, ident},
		Consumers: storage.NewConsumerStore(db),
		Preparer:  runSvc,
		Runs:      storage.NewRunStore(db),
		Clock:     clock,
		Logger:    a.Logger,
		Watcher:   a.connWatcher(),
	}
	// The gateway's own tunables that are not settings keep its defaults; the settings come
	// from the configuration, where 0 turns off what can be off, as in the gateway.
	gwConfig := gateway.DefaultConfig()
	gwConfig.HeartbeatInterval = a.Config.Gateway.HeartbeatInterval
	gwConfig.WriteTimeout = a.Config.Gateway.WriteTimeout
	gwConfig.IdentifyTimeout = a.Config.Gateway.IdentifyTimeout
	gwConfig.ReplayBufferEvents = a.Config.Gateway.ReplayBufferEvents
	gwConfig.MaxConnectionsPerPrincipal = a.Config.Gateway.MaxConnectionsPerPrincipal
	gwConfig.MaxConnectionsPerAddress = a.Config.Gateway.MaxConnectionsPerAddress
	gwConfig.OutboundQueueMax = a.Config.Sync.OutboundQueueMax
	gwConfig.RunPatchCoalesce = a.Config.Sync.RunPatchCoalesceInterval
	// A quarter of the stall timeout, within 1 to 30 s: the stall check sees a connected agent
	// alive, and an idle instance writes at most twice a minute.
	gwConfig.ConsumerSeenInterval = min(max(a.Config.Agent.StallTimeout/4, time.Second), 30*time.Second)
	// Several nodes (cluster.mode multi, PostgreSQL): each process is a node with an id of its
	// own, new at every start; typing and presence cross nodes as id-only signals on the channel
	// ephemeral, and presence is shared through gateway_presence. On one node neither is wired
	// and everything stays in memory.
	if a.Config.Cluster.Mode == "multi" {
		if a.signals == nil {
			return fmt.Errorf("cluster.mode multi needs PostgreSQL")
		}
		gwDeps.Signals, gwDeps.Presence = a.signals, storage.NewPresenceStore(db)
		gwConfig.Node = kernel.NewID()
		gwConfig.PresenceFlushInterval = a.Config.Cluster.PresenceFlushInterval
		gwConfig.PresenceTTL = a.Config.Cluster.PresenceTTL
	}
	gw := gateway.New(gwDeps, gwConfig)
	// A disabled principal's connections close, and its credentials leave identity's cache.
	az.OnPrincipalDisabled(func(id kernel.ID) {
		ident.ForgetPrincipal(id)
		gw.PrincipalDisabled(id)
	})
	runSvc.OnPatched(gw.RunPatched) // patches are not logged: this is their way to the clients
	az.OnObserveError(func(seq int64, err error) {
		a.Logger.Warn("permission cache: loaded again", "seq", seq, "err", err)
	})
	if _, err := az.Warm(ctx); err != nil {
		return fmt.Errorf("warm the permission cache: %w", err)
	}
	// The writer hands each batch's events to the cache right after COMMIT, so the next batch
	// decides its units' rights from memory instead of a grants query on the write connection.
	db.OnCommit(az.ObserveCommitted)
	// A revocation committed here holds before the request that made it is answered; the log
	// tail (Observer above) hands identity the revocations of other nodes.
	db.OnCommit(ident.ObserveCommitted)
	router.HandleRaw(wstransport.Path, wstransport.NewHandler(gw, wstransport.Options{
		PublicURL:     a.Config.Server.PublicURL,
		MaxFrameBytes: a.Config.Gateway.MaxFrameBytes,
		Logger:        a.Logger,
	}))
	if servesAPI(a.Config.Server.Role) { // a worker has no public listener, hence no gateway to feed
		a.Background("gateway log tail", gw.Tail)
		a.Background("gateway heartbeats", gw.Heartbeats)
		if gwDeps.Signals != nil {
			a.Background("gateway cluster", gw.Cluster)
		}
	}
	a.OnStop("gateway", gw.Shutdown)
	a.Gateway = gw

	// The notifier (notify): a consumer of the log with its cursor in log_cursors, in the roles
	// that run jobs. This process's commits wake it right after COMMIT; other nodes' are read
	// by its poll. It skips whoever has a connection to this node focused on the thread.
	notifier := notify.NewNotifier(notify.NotifierDeps{Log: db, Store: notifyStore, Threads: chats, DMs: dmSvc, Authz: az,
		UoW: db, Events: db, Focus: gw, Pusher: notifyPusher{pushSvc}, Wake: notifierWake(engineOf(a.Config), db), Clock: clock, Logger: a.Logger})
	if runsJobs(a.Config.Server.Role) {
		db.OnCommit(notifier.Observe)
		a.Background("notifier", notifier.Run)
	}

	// The console (ui/) and its embedded assets sit outside the JSON chain: pages answer HTML,
	// authenticate with the session cookie and call the same use cases as the routes above. The
	// printed setup link and the bare address lead into it.
	// Scheduled backups (backup.schedule, SQLite): the job wakes a task that makes them, and
	// the overview shows the last run.
	backups := registerBackupJob(a, jobQueue, instance.NewBackupLog(instance.BackupLogDeps{UoW: db, Events: db, Owners: agentStore}))
	router.HandleRaw(ui.Prefix, ui.New(ui.Deps{Identity: ident, Chat: chats, Messages: msgs, Agents: agentSvc, Runs: runSvc,
		Authz: az, Logger: a.Logger, Clock: clock, PublicURL: a.Config.Server.PublicURL, Version: Version,
		Engine: a.Config.Database.Driver, Started: clock.Now(),
		Instance: inst, Stats: stats.New(stats.Deps{Store: storage.NewStatsStore(db), Authz: az, Clock: clock}), Reactions: msgStore, DMs: dmSvc,
		LogHead: db, Inbox: inboxSvc, Interactions: interactions, SpaceGrants: authzStore, AgentRuns: storage.NewRunStore(db), AgentsSeen: agentStore,
		Notify: notifySvc, Threads: chats, Push: pushSvc, Approvals: runSvc,
		Budgets: runSvc, Search: searchSvc, Backups: backups.status()}))
	router.HandleRaw(assets.Prefix, assets.Handler())
	router.HandleRaw("/favicon.ico", assets.Favicon())
	router.HandleRaw("GET /{$}", http.RedirectHandler(ui.Prefix, http.StatusSeeOther))
	router.HandleRaw("GET /setup", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console/setup?"+r.URL.RawQuery, http.StatusSeeOther)
	}))

	// Every route's action must be one authz decides, or the start aborts: a route whose
	// action has no rule would answer 500 to everyone, and no one would know before calling it.
	for _, r := range router.Routes() {
		if !authz.Known(r.Action) {
			return fmt.Errorf("route %s %s: authz has no rule for action %q", r.Method, r.Pattern, r.Action)
		}
	}

	if err := wireJobs(ctx, a, jobQueue); err != nil {
		return err
	}
	if err := a.observeGauges(gw, servesAPI(a.Config.Server.Role)); err != nil {
		return err
	}

	a.Identity = ident
	a.Push = pushSvc
	a.Public = router
	return nil
}

// observers hands each event of the log tail to several observers, in order: the permission
// cache first (the hub decides from it), then chat, which forgets cached thread refs when a
// channel is archived on any node.
type observers []gateway.Observer

func (o observers) Observe(e kernel.LoggedEvent) {
	for _, x := range o {
		x.Observe(e)
	}
}
