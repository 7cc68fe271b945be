// Package storagebench measures bothy's write path: Units of Work through storage.DB.Do on a
// real SQLite file (storage/sqlite's pragmas: WAL, synchronous=FULL) or a real PostgreSQL
// database (fsync and synchronous_commit on), each writing a message with storage's
// repositories and appending its message.created event, from many concurrent writers so that
// group commit batches them. It reports durable events committed per second (the event_seq
// head, read after COMMIT) and the latency of Do at a fixed offered rate. It only drives storage
// through its exported API and never changes it.
package storagebench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/bench/internal/fixture"
	"bothy.dev/bothy/bench/internal/measure"
	"bothy.dev/bothy/bench/internal/pgcluster"
	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/postgres"
	"bothy.dev/bothy/storage/sqlite"
	"bothy.dev/bothy/storage/storetest"
)

// Store is a migrated store on a fresh database with the fixture rows a message needs.
type Store struct {
	DB         *storage.DB
	reads      *sql.DB // the store's own read pool, for checks after a run
	chat       *storage.ChatStore
	messages   *storage.MessageStore
	eventsOnly bool
	fx         fixture.Fixture
	n          atomic.Int64                  // messages created, for client_msg_id and thread rotation
	drop       func() error                  // PostgreSQL: drops the store's database after Close
	dbCPU      func() (time.Duration, error) // PostgreSQL: the cluster's CPU time, if readable here
}

// Open opens a store on a new file in dir, with the pragmas of storage/sqlite (synchronous=FULL)
// and options o. With eventsOnly, a Unit of Work only appends its event (see CreateMessage).
func Open(ctx context.Context, dir string, o storage.Options, eventsOnly bool) (*Store, error) {
	w, r, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(dir, "bothy.db"), Synchronous: "FULL"})
	if err != nil {
		return nil, err
	}
	return open(ctx, sqlite.Dialect{}, w, r, o, eventsOnly)
}

// OpenPostgres opens a store on a new database of cluster c, created for it, migrated with
// migrate.Up and dropped by Close. The store is opened as `bothy serve` opens it with the
// default database.* settings: storage/postgres.Open (one write connection, a read pool of
// postgres.DefaultReaders) and the dialect with the configuration's default timeouts (statement 5 s, lock 2 s:
// storetest.PostgresTimeouts). The cluster's fsync and synchronous_commit are its own (on, in
// the cluster bench/run starts).
func OpenPostgres(ctx context.Context, c *pgcluster.Cluster, o storage.Options, eventsOnly bool) (*Store, error) {
	d, err := c.NewDatabase(ctx)
	if err != nil {
		return nil, err
	}
	dialect := storetest.PostgresTimeouts
	w, r, err := postgres.Open(ctx, postgres.Options{URL: d.URL, MaxOpenConns: postgres.DefaultReaders,
		StatementTimeout: dialect.StatementTimeout, LockTimeout: dialect.LockTimeout})
	if err != nil {
		return nil, errors.Join(err, d.Drop(ctx))
	}
	s, err := open(ctx, dialect, w, r, o, eventsOnly)
	if err != nil {
		return nil, errors.Join(err, d.Drop(ctx))
	}
	s.drop = func() error { return d.Drop(ctx) }
	if _, err := c.CPU(); err == nil {
		s.dbCPU = c.CPU
	}
	return s, nil
}

// open migrates the database behind w, seeds the fixture and starts the store.
func open(ctx context.Context, d storage.Dialect, w, r *sql.DB, o storage.Options, eventsOnly bool) (*Store, error) {
	fail := func(err error) (*Store, error) {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("storagebench: %w", err)
	}
	if _, err := migrate.Up(ctx, w, d.Name(), nil); err != nil {
		return fail(err)
	}
	fx, err := fixture.Seed(ctx, w, d.Rebind)
	if err != nil {
		return fail(err)
	}
	db, err := storage.Open(ctx, d, w, r, o)
	if err != nil {
		return fail(err)
	}
	return &Store{DB: db, reads: r, chat: storage.NewChatStore(db), messages: storage.NewMessageStore(db),
		eventsOnly: eventsOnly, fx: fx}, nil
}

// Close closes the store and, on PostgreSQL, drops its database.
func (s *Store) Close() error {
	err := s.DB.Close()
	if s.drop != nil {
		err = errors.Join(err, s.drop())
	}
	return err
}

// CreateMessage runs one Unit of Work that does what messaging's CreateMessage does in storage,
// through storage's own repositories: read the thread, insert the message (its idempotency is
// the ON CONFLICT on (author_id, client_msg_id)), count it in the thread and append one
// message.created event with the message as payload. What it leaves out runs outside SQL
// (authorize, validate, resolve mentions). With eventsOnly it only appends the event.
func (s *Store) CreateMessage(ctx context.Context) error {
	n := s.n.Add(1)
	fth := s.fx.Threads[int(n)%len(s.fx.Threads)]
	cmid := messaging.ClientMsgID(fmt.Sprintf("bench-%d", n))
	return s.DB.Do(ctx, func(ctx context.Context) error {
		now := time.Now()
		m := messaging.Message{ID: kernel.NewID(), ThreadID: fth.ID, ChannelID: fth.ChannelID, SpaceID: s.fx.SpaceID,
			AuthorID: s.fx.AuthorID, Content: fixture.Content, ClientMsgID: cmid, Mentions: []kernel.ID{}, Version: 1,
			CreatedAt: now, ChannelKind: "channel"}
		if !s.eventsOnly {
			th, err := s.chat.Thread(ctx, fth.ID)
			if err != nil {
				return err
			}
			m.ChannelKind = th.ChannelKind
			inserted, err := s.messages.InsertMessage(ctx, m)
			if err != nil {
				return err
			}
			if !inserted {
				return fmt.Errorf("storagebench: client_msg_id %s was already used", cmid)
			}
			if err := s.chat.BumpThread(ctx, th.ID, 1, m.ID, now); err != nil {
				return err
			}
		}
		s.DB.Append(ctx, messaging.EvMessageCreated.Event(kernel.Event{Scope: m.Scope(), SubjectID: m.ID, ActorID: m.AuthorID}, m))
		return nil
	})
}

// Rate runs writers goroutines that create messages back to back for warmup and then dur, and
// returns the durable events committed during dur (the growth of the committed event head,
// storage.DB.Head, set after COMMIT), the elapsed time and the process's CPU time; on
// PostgreSQL also the cluster's CPU time when its processes are readable here.
func (s *Store) Rate(ctx context.Context, writers int, warmup, dur time.Duration) (measure.Run, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	failed := make(chan error, 1) // the first error stops the run
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := s.CreateMessage(ctx); err != nil && ctx.Err() == nil {
					select {
					case failed <- err:
					default:
					}
					cancel()
				}
			}
		}()
	}
	time.Sleep(warmup)
	db0, dbErr := s.readDBCPU()
	h0, t0, cpu0 := s.DB.Head(), time.Now(), measure.CPUTime()
	time.Sleep(dur)
	h1, t1, cpu1 := s.DB.Head(), time.Now(), measure.CPUTime()
	db1, dbErr1 := s.readDBCPU()
	cancel()
	wg.Wait()
	select {
	case err := <-failed:
		return measure.Run{}, err
	default:
	}
	return measure.Run{Ops: h1 - h0, Elapsed: t1.Sub(t0), CPU: cpu1 - cpu0,
		DBCPU: db1 - db0, DBRead: dbErr == nil && dbErr1 == nil}, nil
}

// readDBCPU reads the database server's CPU time (PostgreSQL's, when readable).
func (s *Store) readDBCPU() (time.Duration, error) {
	if s.dbCPU == nil {
		return 0, errors.New("storagebench: no database server CPU to read")
	}
	return s.dbCPU()
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

// Count returns what the benchmark committed: events in the log, messages, and the messages
// counted in their threads.
func (s *Store) Count(ctx context.Context) (events, messages, counted int64, err error) {
	err = s.reads.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM event_log), (SELECT COUNT(*) FROM messages),
		(SELECT SUM(message_count) FROM threads)`).Scan(&events, &messages, &counted)
	return events, messages, counted, err
}
