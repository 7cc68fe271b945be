// Package authzbench measures the warm permission cache of app/authz (see docs/architecture.md, Authorization): the delivery
// decision the gateway's hub makes for every recipient of every event, from memory, with an
// instance of about 1,000 principals and 1,000 channels loaded. It reports the time of one
// decision (ns/op, and the p50, p99 and maximum of per-call latencies sampled in a loop), alone
// and while a log tail keeps applying grant changes with Observe.
//
// It drives app/authz only through its exported API, on an in-memory store that hands Warm a
// generated snapshot: no database is involved, the decision must not touch one.
package authzbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/bench/internal/measure"
)

// Config shapes the instance loaded into the cache.
type Config struct {
	Principals int
	Channels   int
	Spaces     int
	// ChannelGrants is how many channel grants each principal holds (view or post, on channels
	// drawn at random); every tenth principal also holds a view grant on one space.
	ChannelGrants int
	// DMs is how many of the channels are DMs.
	DMs  int
	Seed uint64
}

// Default is the instance of the target's figure: ~1,000 channels and ~1,000 principals.
var Default = Config{Principals: 1000, Channels: 1000, Spaces: 20, ChannelGrants: 30, DMs: 100, Seed: 11}

// Read is one decision the hub makes: a member reading a message of its channel.
type Read struct {
	Actor    kernel.Actor
	Resource kernel.Resource
}

// Instance is a warm cache and the reads to measure on it.
type Instance struct {
	Service *authz.Service
	// Reads are member reads (each allowed), in random order.
	Reads []Read
	// Grants is how many grants the cache holds.
	Grants int

	principals []kernel.ID
	channels   []authz.ChannelRef
	seq        int64
	churn      *rand.Rand
	member     map[[2]kernel.ID]bool // (principal, channel) pairs the reads use: churn leaves them alone
	mu         sync.Mutex
	observeErr error // what OnObserveError reported: the benchmark's log must apply cleanly
}

// ObserveErr returns what Observe could not apply so far.
func (in *Instance) ObserveErr() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.observeErr
}

// New builds an instance as cfg says and warms the cache.
func New(cfg Config) (*Instance, error) {
	if cfg.Principals < 1 || cfg.Channels < cfg.Spaces || cfg.Spaces < 1 || cfg.ChannelGrants < 1 || cfg.DMs >= cfg.Channels {
		return nil, fmt.Errorf("authzbench: config %+v makes no sense", cfg)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 1))
	snap := authz.Snapshot{Seq: 1}
	spaces := make([]kernel.ID, cfg.Spaces)
	for i := range spaces {
		spaces[i] = kernel.NewID()
	}
	in := &Instance{churn: rand.New(rand.NewPCG(cfg.Seed, 2)), member: map[[2]kernel.ID]bool{}}
	for i := range cfg.Channels {
		kind := "channel"
		if i < cfg.DMs {
			kind = authz.ChannelKindDM
		}
		in.channels = append(in.channels, authz.ChannelRef{ID: kernel.NewID(), SpaceID: spaces[i%cfg.Spaces], Kind: kind})
	}
	snap.Channels = in.channels
	for i := range cfg.Principals {
		p := authz.PrincipalRef{ID: kernel.NewID(), Active: true, IsOwner: i == 0}
		snap.Principals = append(snap.Principals, p)
		in.principals = append(in.principals, p.ID)
		actor := kernel.Actor{ID: p.ID, Kind: kernel.KindPerson, IsOwner: p.IsOwner}
		if i%10 == 0 {
			snap.Grants = append(snap.Grants, authz.Grant{ResourceKind: kernel.ResSpace, ResourceID: spaces[rng.IntN(cfg.Spaces)],
				PrincipalID: p.ID, Level: authz.LevelView})
		}
		for _, c := range rng.Perm(cfg.Channels)[:cfg.ChannelGrants] {
			ch := in.channels[c]
			level := authz.LevelView + authz.Level(rng.IntN(2))
			snap.Grants = append(snap.Grants, authz.Grant{ResourceKind: kernel.ResChannel, ResourceID: ch.ID, PrincipalID: p.ID, Level: level})
			in.member[[2]kernel.ID{p.ID, ch.ID}] = true
			in.Reads = append(in.Reads, Read{Actor: actor, Resource: kernel.Resource{Kind: kernel.ResMessage, ID: kernel.NewID(),
				ChannelID: ch.ID, SpaceID: ch.SpaceID, OwnerID: in.principals[rng.IntN(len(in.principals))]}})
		}
	}
	rng.Shuffle(len(in.Reads), func(i, j int) { in.Reads[i], in.Reads[j] = in.Reads[j], in.Reads[i] })
	in.Grants = len(snap.Grants)
	in.seq = snap.Seq
	in.Service = authz.New(authz.Deps{Store: &store{snap: snap}, Structure: structure{}, UoW: uow{}, Events: events{}})
	in.Service.OnObserveError(func(seq int64, err error) {
		in.mu.Lock()
		in.observeErr = errors.Join(in.observeErr, fmt.Errorf("seq %d: %w", seq, err))
		in.mu.Unlock()
	})
	seq, err := in.Service.Warm(context.Background())
	if err != nil {
		return nil, err
	}
	if seq != snap.Seq {
		return nil, fmt.Errorf("authzbench: warm at %d, want %d", seq, snap.Seq)
	}
	return in, nil
}

// NextEvent returns the next event of a log tail that keeps changing grants: a view grant, or its
// revoke, of a random principal on a random channel that no Read uses, so every Read stays
// allowed. Not safe for concurrent use.
func (in *Instance) NextEvent() kernel.LoggedEvent {
	for {
		p := in.principals[in.churn.IntN(len(in.principals))]
		ch := in.channels[in.churn.IntN(len(in.channels))]
		if in.member[[2]kernel.ID{p, ch.ID}] {
			continue
		}
		in.seq++
		level := `"view"`
		if in.seq%2 == 0 {
			level = "null"
		}
		return kernel.LoggedEvent{Seq: in.seq, Type: authz.EvGrantChanged.Name, Scope: kernel.Scope{SpaceID: ch.SpaceID, ChannelID: ch.ID},
			SubjectID: ch.ID, Payload: fmt.Appendf(nil, `{"channel_id":%q,"principal_id":%q,"level":%s}`, ch.ID, p, level)}
	}
}

// Sample times n delivery decisions, one by one, cycling through the reads, and returns the
// latency of each (each includes two clock reads). Every decision must allow.
func (in *Instance) Sample(ctx context.Context, n int) ([]time.Duration, error) {
	d := in.Service.Delivery()
	out := make([]time.Duration, n)
	for i := range out {
		r := &in.Reads[i%len(in.Reads)]
		t0 := time.Now()
		err := d.Authorize(ctx, r.Actor, messaging.ActMessageRead, r.Resource)
		out[i] = time.Since(t0)
		if err != nil {
			return nil, fmt.Errorf("authzbench: read %d refused: %w", i, err)
		}
	}
	return out, nil
}

// Observing runs a log tail in the background that applies NextEvent at rate events per second
// (in bursts, each millisecond what is due, as a tail reads batches) until the returned stop is
// called; stop returns how many events were applied and what Observe could not apply.
func (in *Instance) Observing(rate int) (stop func() (int, error)) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	var n int
	wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-quit:
				return
			case now := <-t.C:
				for due := int(now.Sub(start).Seconds() * float64(rate)); n < due; n++ {
					in.Service.Observe(in.NextEvent())
				}
			}
		}
	})
	return func() (int, error) {
		close(quit)
		wg.Wait()
		return n, in.ObserveErr()
	}
}

// Run measures Default: n decisions alone, then n while a tail observes 10,000 grant changes a
// second, and writes RESULT lines (µs) for bench/run.
func Run(ctx context.Context, w io.Writer, n int) error {
	in, err := New(Default)
	if err != nil {
		return err
	}
	if _, err := in.Sample(ctx, min(n, 100_000)); err != nil { // warm the CPU caches and the maps
		return err
	}
	runtime.GC()
	quiet, err := in.Sample(ctx, n)
	if err != nil {
		return err
	}
	stop := in.Observing(10_000)
	busy, err := in.Sample(ctx, n)
	events, oerr := stop()
	if err = errors.Join(err, oerr); err != nil {
		return err
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	for _, s := range []struct {
		name string
		ds   []time.Duration
	}{{"authz/authorize-warm", quiet}, {"authz/authorize-warm/while-observing", busy}} {
		l := measure.Summarise(s.ds)
		measure.Result(w, s.name+"/p50", us(l.P50), "µs")
		measure.Result(w, s.name+"/p99", us(l.P99), "µs")
		measure.Result(w, s.name+"/max", us(l.Max), "µs")
	}
	measure.Result(w, "authz/authorize-warm/while-observing/events", float64(events), "events")
	return nil
}

// store is an authz.Store that only knows its snapshot.
type store struct{ snap authz.Snapshot }

var _ authz.Store = (*store)(nil)

var errNotHere = errors.New("authzbench: the delivery path must not read the store")

func (s *store) Snapshot(context.Context) (authz.Snapshot, error)         { return s.snap, nil }
func (s *store) CommittedHead(context.Context) (int64, bool)              { return 0, false }
func (s *store) BumpPermissionVersion(context.Context) error              { return errNotHere }
func (s *store) PrincipalActive(context.Context, kernel.ID) (bool, error) { return false, errNotHere }
func (s *store) MaxLevel(context.Context, kernel.ID, ...kernel.ID) (authz.Level, error) {
	return 0, errNotHere
}
func (s *store) SpaceAccess(context.Context, kernel.ID, kernel.ID) (authz.Level, bool, error) {
	return 0, false, errNotHere
}
func (s *store) VisibleTo(context.Context, kernel.ID) ([]kernel.ID, []kernel.ID, error) {
	return nil, nil, errNotHere
}
func (s *store) HiddenDMs(context.Context, kernel.ID) ([]kernel.ID, error) { return nil, errNotHere }
func (s *store) Grant(context.Context, kernel.ID, kernel.ID) (authz.Grant, error) {
	return authz.Grant{}, errNotHere
}
func (s *store) UpsertGrant(context.Context, authz.Grant) (authz.Grant, error) {
	return authz.Grant{}, errNotHere
}
func (s *store) DeleteGrant(context.Context, kernel.ID, kernel.ID) error { return errNotHere }
func (s *store) ListGrants(context.Context, kernel.ID) ([]authz.Grant, error) {
	return nil, errNotHere
}

type structure struct{}

func (structure) Channel(context.Context, kernel.ID) (authz.ChannelRef, error) {
	return authz.ChannelRef{}, errNotHere
}
func (structure) SpaceExists(context.Context, kernel.ID) (bool, error) { return false, errNotHere }

type uow struct{}

func (uow) Do(context.Context, func(context.Context) error) error { return errNotHere }

type events struct{}

func (events) Append(context.Context, kernel.Event) {}
