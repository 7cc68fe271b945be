// Package storagebench measures bothy's write path: Units of Work through storage.DB.Do on a
// real SQLite file (storage/sqlite's pragmas: WAL, synchronous=FULL), each appending one
// message-shaped durable event, from many concurrent writers so that group commit batches them.
// It reports durable events committed per second (the event_seq head, read after COMMIT) and
// the latency of Do at a fixed offered rate. It never edits storage: it only drives it.
package storagebench

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/bench/internal/fixture"
	"bothy.dev/bothy/bench/internal/measure"
	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/sqlite"
)

// Store is a migrated store on a fresh file with the fixture rows a message needs.
type Store struct {
	DB    *storage.DB
	reads *sql.DB // the store's own read pool, for checks after a run
	fx    fixture.Fixture
	n     atomic.Int64 // messages created, for client_msg_id and thread rotation
}

// messageRowTrigger makes every message.created event insert its message row and bump its
// thread, in the same statement and so in the same SAVEPOINT of the Unit of Work. storage has
// no messages repository yet and offers no way to run SQL inside a Unit of Work from outside
// the package, so this is how the benchmark writes the domain rows of a message create through
// the real Do path: the message row (its primary key, UNIQUE (author_id, client_msg_id) and
// thread index, four foreign-key checks) and the thread's counters. The use case's two reads
// (the idempotency check and the thread lookup) are not in it.
const messageRowTrigger = `CREATE TRIGGER bench_message_row AFTER INSERT ON event_log
WHEN NEW.type = 'message.created'
BEGIN
	INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, client_msg_id, created_at)
	VALUES (NEW.subject_id, NEW.thread_id, NEW.channel_id, NEW.space_id, NEW.actor_id,
		json_extract(NEW.payload, '$.content'), json_extract(NEW.payload, '$.client_msg_id'), NEW.created_at);
	UPDATE threads SET message_count = message_count + 1, last_message_at = NEW.created_at, updated_at = NEW.created_at
	WHERE id = NEW.thread_id;
END`

// Open opens a store on a new file in dir, with the pragmas of storage/sqlite (synchronous=FULL)
// and options o. With messageRows, each message event also writes its message row (see
// messageRowTrigger).
func Open(ctx context.Context, dir string, o storage.Options, messageRows bool) (*Store, error) {
	w, r, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(dir, "bothy.db"), Synchronous: "FULL"})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Store, error) {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("storagebench: %w", err)
	}
	if _, err := migrate.Up(ctx, w, "sqlite", nil); err != nil {
		return fail(err)
	}
	fx, err := fixture.Seed(ctx, w)
	if err != nil {
		return fail(err)
	}
	if messageRows {
		if _, err := w.ExecContext(ctx, messageRowTrigger); err != nil {
			return fail(err)
		}
	}
	db, err := storage.Open(ctx, sqlite.Dialect{}, w, r, o)
	if err != nil {
		return fail(err)
	}
	return &Store{DB: db, reads: r, fx: fx}, nil
}

// Close closes the store.
func (s *Store) Close() error { return s.DB.Close() }

// CreateMessage runs one Unit of Work that appends one message.created event, the shape the
// messaging module appends (scope, subject, actor, a payload with the message).
func (s *Store) CreateMessage(ctx context.Context) error {
	n := s.n.Add(1)
	th := s.fx.Threads[int(n)%len(s.fx.Threads)]
	id := kernel.NewID()
	return s.DB.Do(ctx, func(ctx context.Context) error {
		s.DB.Append(ctx, kernel.Event{
			Type:      kernel.EvMessageCreated,
			Scope:     kernel.Scope{SpaceID: s.fx.SpaceID, ChannelID: th.ChannelID, ThreadID: th.ID},
			SubjectID: id,
			ActorID:   s.fx.AuthorID,
			Payload: fixture.MessagePayload{ID: id, ThreadID: th.ID, ChannelID: th.ChannelID, SpaceID: s.fx.SpaceID,
				AuthorID: s.fx.AuthorID, Content: fixture.Content, ClientMsgID: fmt.Sprintf("bench-%d", n), Version: 1,
				CreatedAt: fixture.Stamp(time.Now())},
		})
		return nil
	})
}

// Rate runs writers goroutines that create messages back to back for warmup and then dur, and
// returns the durable events committed during dur (the growth of the committed event head,
// storage.DB.Head, set after COMMIT), the elapsed time and the process's CPU time.
func (s *Store) Rate(ctx context.Context, writers int, warmup, dur time.Duration) (measure.Run, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := s.CreateMessage(ctx); err != nil && ctx.Err() == nil {
					firstErr.CompareAndSwap(nil, err)
					cancel()
				}
			}
		}()
	}
	time.Sleep(warmup)
	h0, t0, cpu0 := s.DB.Head(), time.Now(), measure.CPUTime()
	time.Sleep(dur)
	h1, t1, cpu1 := s.DB.Head(), time.Now(), measure.CPUTime()
	cancel()
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return measure.Run{}, err
	}
	return measure.Run{Ops: h1 - h0, Elapsed: t1.Sub(t0), CPU: cpu1 - cpu0}, nil
}

// Latency offers Units of Work at a fixed rate (open loop: one starts every 1/rate whether or
// not the earlier ones finished) for dur, and summarises how long each Do took from the moment
// it was due, so that a stall of the generator is counted against the store, not hidden.
func (s *Store) Latency(ctx context.Context, rate float64, dur time.Duration) (measure.Latencies, error) {
	interval := time.Duration(float64(time.Second) / rate)
	total := int(dur / interval)
	lat := make([]time.Duration, total)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range total {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.CreateMessage(ctx); err != nil {
				select {
				case errs <- err:
				default:
				}
			}
			lat[i] = time.Since(due)
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return measure.Latencies{}, err
	default:
	}
	return measure.Summarise(lat), nil
}

// Count returns the committed rows the benchmark wrote: events in the log and messages.
func (s *Store) Count(ctx context.Context) (events, messages int64, err error) {
	if err := s.reads.QueryRowContext(ctx, `SELECT COUNT(*) FROM event_log`).Scan(&events); err != nil {
		return 0, 0, err
	}
	err = s.reads.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages`).Scan(&messages)
	return events, messages, err
}
