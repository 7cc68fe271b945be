// Package instance holds the instance's own settings: its name (what the console shows in its
// top bar and page titles) and who may mention a whole channel (broadcast_mentions), as GET
// /api/v1/instance answers them. The row lives in the instance table, which identity also uses
// for the first-owner setup; this module reads and writes only its settings.
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
	// BroadcastMentions says who may mention a whole channel with @here or @channel:
	// BroadcastPost (whoever may post in it) or BroadcastManage (only its managers).
	BroadcastMentions string `json:"broadcast_mentions"`
}

// The values of Settings.BroadcastMentions.
const (
	BroadcastPost   = "post"
	BroadcastManage = "manage"
)

// Store is the settings repository port (storage/instance.go).
type Store interface {
	// Settings reads the instance row. Errors: only the database's.
	Settings(ctx context.Context) (Settings, error)
	// SetName stores the name; it must run in a Unit of Work. Errors: only the database's.
	SetName(ctx context.Context, name string) error
	// SetBroadcastMentions stores who may mention a whole channel; it must run in a Unit of
	// Work. Errors: only the database's.
	SetBroadcastMentions(ctx context.Context, v string) error
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
	return s.Update(ctx, actor, Change{Name: name})
}

// Change is what Update sets: the name, and who may mention a whole channel (nil: as it is).
type Change struct {
	Name              string
	BroadcastMentions *string
}

// Update changes the settings (instance.update, owners only) and appends instance.updated with
// them when something changed. The name is kept as Rename keeps it. Errors: unauthenticated,
// forbidden, validation_failed (name, broadcast_mentions: one of post, manage).
func (s *Service) Update(ctx context.Context, actor kernel.Actor, c Change) (Settings, error) {
	if err := s.d.Authz.Authorize(ctx, actor, ActInstanceUpdate, instanceResource); err != nil {
		return Settings{}, err
	}
	name, err := ValidateName(c.Name)
	if err != nil {
		return Settings{}, err
	}
	if b := c.BroadcastMentions; b != nil && *b != BroadcastPost && *b != BroadcastManage {
		return Settings{}, kernel.Invalid("broadcast_mentions", "broadcast_mentions must be one of post, manage")
	}
	var out Settings
	err = s.d.UoW.Do(ctx, func(ctx context.Context) error {
		cur, err := s.d.Store.Settings(ctx)
		if err != nil {
			return err
		}
		out = cur
		if cur.Name != name {
			if err := s.d.Store.SetName(ctx, name); err != nil {
				return err
			}
			out.Name = name
		}
		if b := c.BroadcastMentions; b != nil && *b != cur.BroadcastMentions {
			if err := s.d.Store.SetBroadcastMentions(ctx, *b); err != nil {
				return err
			}
			out.BroadcastMentions = *b
		}
		if out != cur {
			s.d.Events.Append(ctx, EvUpdated.Event(kernel.Event{ActorID: actor.ID}, out))
		}
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
