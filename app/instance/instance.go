// Package instance holds the instance's own settings, for now its name: what the console shows
// in its top bar and page titles and what GET /api/v1/instance answers. The row lives in the
// instance table, which identity also uses for the first-owner setup; this module reads and
// writes only its name.
//
// It must not import storage or net/http.
package instance

import (
	"context"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/names"
)

// EvUpdated is the instance-wide event appended when an owner changes the settings; its payload
// is the new Settings.
var EvUpdated = kernel.DefineEvent[Settings]("instance.updated")

// DefaultName is the name of an instance nobody has named yet.
const DefaultName = "bothy"

// MaxNameLen bounds the name, in characters.
const MaxNameLen = names.MaxInstanceName

// Settings are the instance's settings as the API shows them.
type Settings struct {
	Name string `json:"name"`
}

// Store is the settings repository port (storage/instance.go).
type Store interface {
	// Settings reads the instance row. Errors: only the database's.
	Settings(ctx context.Context) (Settings, error)
	// SetName stores the name; it must run in a Unit of Work. Errors: only the database's.
	SetName(ctx context.Context, name string) error
}

// Deps are the ports the service uses.
type Deps struct {
	Store  Store
	UoW    kernel.UnitOfWork
	Events kernel.EventLog
	Authz  kernel.Authorizer
}

// Service holds the instance use cases.
type Service struct{ d Deps }

// New returns the instance service.
func New(d Deps) *Service {
	if d.Store == nil || d.UoW == nil || d.Events == nil || d.Authz == nil {
		panic("instance: New needs Store, UoW, Events and Authz")
	}
	return &Service{d: d}
}

var instanceResource = kernel.Resource{Kind: kernel.ResInstance}

// Settings returns the settings (instance.read, any principal). Errors: unauthenticated.
func (s *Service) Settings(ctx context.Context, actor kernel.Actor) (Settings, error) {
	if err := s.d.Authz.Authorize(ctx, actor, ActInstanceRead, instanceResource); err != nil {
		return Settings{}, err
	}
	return s.d.Store.Settings(ctx)
}

// Name returns the instance's name for the frame of the console's pages, which shows it to
// anyone, signed in or not, like the page a setup link opens: it decides
// instance.discovery.read, which everyone may.
func (s *Service) Name(ctx context.Context) (string, error) {
	if err := s.d.Authz.Authorize(ctx, kernel.Anonymous, ActDiscoveryRead, instanceResource); err != nil {
		return "", err
	}
	st, err := s.d.Store.Settings(ctx)
	if err != nil {
		return "", err
	}
	return st.Name, nil
}

// Rename changes the instance's name (instance.update, owners only) and appends
// instance.updated. Surrounding white space is dropped; a name equal to the current one changes
// nothing. Errors: unauthenticated, forbidden, validation_failed (name).
func (s *Service) Rename(ctx context.Context, actor kernel.Actor, name string) (Settings, error) {
	if err := s.d.Authz.Authorize(ctx, actor, ActInstanceUpdate, instanceResource); err != nil {
		return Settings{}, err
	}
	name, err := ValidateName(name)
	if err != nil {
		return Settings{}, err
	}
	var out Settings
	err = s.d.UoW.Do(ctx, func(ctx context.Context) error {
		cur, err := s.d.Store.Settings(ctx)
		if err != nil {
			return err
		}
		if cur.Name == name {
			out = cur
			return nil
		}
		if err := s.d.Store.SetName(ctx, name); err != nil {
			return err
		}
		out = Settings{Name: name}
		s.d.Events.Append(ctx, EvUpdated.Event(kernel.Event{ActorID: actor.ID}, out))
		return nil
	})
	return out, err
}

// ValidateName checks a name of 1–64 characters by the rule of every name (names.Name: NFC,
// no control, bidirectional or invisible characters) and returns it as it is kept, without
// surrounding white space.
func ValidateName(name string) (string, error) {
	return names.Name("name", name, names.MaxInstanceName)
}
