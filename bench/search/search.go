// Package searchbench measures the search of messages: search.Service.Search on the real index
// and repositories of storage, for a person who may read a tenth of the channels of an instance
// that holds a large number of messages.
//
// The messages are written straight into the store's database in large transactions (a million
// posts through the use case would take most of an hour on two cores, and the figure is about the
// read): each message row with its row of the search index as storage writes it, the words drawn
// from a vocabulary with a Zipf-like distribution. The queries are common and rare words, two
// words, a prefix, a phrase, an author's words and a word that only the channels the person may
// not read hold; each is timed one at a time, in the use case (index query, the messages loaded
// as GET /messages/{id} answers them, the excerpts), without HTTP.
package searchbench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/search"
	"bothy.dev/bothy/bench/internal/fixture"
	"bothy.dev/bothy/bench/internal/measure"
	"bothy.dev/bothy/bench/internal/pgcluster"
	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/postgres"
	"bothy.dev/bothy/storage/sqlite"
	"bothy.dev/bothy/storage/storetest"
)

// Layout is the instance: Channels channels in one space, Messages messages over their main
// threads from Authors authors, Words words each; the person reads Readable of the channels.
type Layout struct {
	Channels, Readable, Messages, Authors, Words, Vocabulary int
}

// Store is a migrated database with the store on it.
type Store struct {
	DB      *storage.DB
	w, r    *sql.DB
	dialect storage.Dialect
	eng     engine.Name
	drop    func() error
	vocab   []string
	// Seeded by Seed:
	channels []kernel.ID
	threads  []kernel.ID
	authors  []kernel.ID
	handles  []string
	spaceID  kernel.ID
	phrase   []string // two words that follow each other in a readable message
	// CPUPerQuery is this process's CPU time per measured search (on SQLite all of it; on
	// PostgreSQL the cluster's is not in it), set by Measure.
	CPUPerQuery time.Duration
}

// Open opens a store on a new SQLite file in dir.
func Open(ctx context.Context, dir string) (*Store, error) {
	w, r, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(dir, "bothy.db"), Synchronous: "FULL"})
	if err != nil {
		return nil, err
	}
	return open(ctx, sqlite.Dialect{}, w, r, nil)
}

// OpenPostgres opens a store on a new database of cluster c, dropped by Close.
func OpenPostgres(ctx context.Context, c *pgcluster.Cluster) (*Store, error) {
	d, err := c.NewDatabase(ctx)
	if err != nil {
		return nil, err
	}
	dialect := storetest.PostgresTimeouts
	dialect.StatementTimeout = time.Minute // the seed's large inserts, not the measured reads
	w, r, err := postgres.Open(ctx, postgres.Options{URL: d.URL, MaxOpenConns: postgres.DefaultReaders,
		StatementTimeout: dialect.StatementTimeout, LockTimeout: dialect.LockTimeout})
	if err != nil {
		return nil, errors.Join(err, d.Drop(ctx))
	}
	return open(ctx, dialect, w, r, func() error { return d.Drop(ctx) })
}

// open migrates the database; the store starts after the seed (Start), since its writer takes
// the one write connection.
func open(ctx context.Context, d storage.Dialect, w, r *sql.DB, drop func() error) (*Store, error) {
	if _, err := migrate.Up(ctx, w, d.Name(), nil); err != nil {
		return nil, errors.Join(err, w.Close(), r.Close())
	}
	return &Store{w: w, r: r, dialect: d, eng: d.Name(), drop: drop}, nil
}

// Start opens the store on the seeded database.
func (s *Store) Start(ctx context.Context) error {
	db, err := storage.Open(ctx, s.dialect, s.w, s.r, storage.Options{})
	if err != nil {
		return err
	}
	s.DB = db
	return nil
}

// Close closes the store and, on PostgreSQL, drops its database.
func (s *Store) Close() error {
	var err error
	if s.DB != nil {
		err = s.DB.Close()
	} else {
		err = errors.Join(s.w.Close(), s.r.Close())
	}
	if s.drop != nil {
		err = errors.Join(err, s.drop())
	}
	return err
}

// vocabulary makes n distinct words of two to four syllables, the same on every run.
func vocabulary(n int) []string {
	syl := []string{"ka", "lo", "mi", "ren", "to", "sa", "vel", "di", "nor", "pe", "qua", "zi", "bru", "fen", "gal", "hu",
		"jor", "ost", "ple", "ri", "sto", "tra", "un", "wex", "yal", "cor", "dep", "lay", "mer", "nix"}
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	out := make([]string, 0, n)
	for len(out) < n {
		k := 2 + rng.IntN(3)
		var b strings.Builder
		for range k {
			b.WriteString(syl[rng.IntN(len(syl))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// Seed writes the people, the channels and the messages with their index rows.
func (s *Store) Seed(ctx context.Context, l Layout) (time.Duration, error) {
	start := time.Now()
	s.vocab = vocabulary(l.Vocabulary)
	now := fixture.Stamp(time.Now())
	rebind := s.dialect.Rebind
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	exec := func(q string, args ...any) error {
		_, err := tx.ExecContext(ctx, rebind(q), args...)
		return err
	}
	for i := range l.Authors {
		id := kernel.NewID()
		h := fmt.Sprintf("author%d", i)
		s.authors, s.handles = append(s.authors, id), append(s.handles, h)
		if err := exec(`INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at) VALUES (?, 'person', ?, ?, ?, ?, ?)`,
			string(id), h, h, h, now, now); err != nil {
			return 0, err
		}
	}
	s.spaceID = kernel.NewID()
	if err := exec(`INSERT INTO spaces (id, name, created_by, created_at, updated_at) VALUES (?, 'bench', ?, ?, ?)`,
		string(s.spaceID), string(s.authors[0]), now, now); err != nil {
		return 0, err
	}
	for i := range l.Channels {
		c, th := kernel.NewID(), kernel.NewID()
		s.channels, s.threads = append(s.channels, c), append(s.threads, th)
		if err := exec(`INSERT INTO channels (id, space_id, name, main_thread_id, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			string(c), string(s.spaceID), fmt.Sprintf("channel-%d", i), string(th), string(s.authors[0]), now, now); err != nil {
			return 0, err
		}
		if err := exec(`INSERT INTO threads (id, channel_id, space_id, is_main, created_by, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?, ?)`,
			string(th), string(c), string(s.spaceID), string(s.authors[0]), now, now); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	rng := rand.New(rand.NewPCG(3, 4))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(5, 6)), 1.07, 2, uint64(l.Vocabulary-1))
	const perInsert, perTx = 250, 50000
	base := time.Now().Add(-time.Duration(l.Messages) * time.Second)
	for done := 0; done < l.Messages; {
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			return 0, err
		}
		for end := min(done+perTx, l.Messages); done < end; {
			n := min(perInsert, end-done)
			var msgArgs, idxArgs []any
			for k := range n {
				i := done + k
				words := make([]string, l.Words)
				for j := range words {
					words[j] = s.vocab[zipf.Uint64()]
				}
				content := strings.Join(words, " ")
				ch := rng.IntN(l.Channels)
				if s.phrase == nil && ch < l.Readable {
					s.phrase = words[3:5]
				}
				author := s.authors[rng.IntN(len(s.authors))]
				// Ids grow in time order, as the server makes them: newest first is id order.
				id := kernel.NewID()
				rowid := int64(i + 1)
				msgArgs = append(msgArgs, rowid, string(id), string(s.threads[ch]), string(s.channels[ch]), string(s.spaceID), string(author),
					content, fixture.Stamp(base.Add(time.Duration(i)*time.Second)))
				switch s.eng {
				case engine.SQLite:
					idxArgs = append(idxArgs, rowid, content, "c"+strings.ReplaceAll(string(s.channels[ch]), "-", "")+" a"+strings.ReplaceAll(string(author), "-", ""))
				case engine.Postgres:
					idxArgs = append(idxArgs, string(id), string(s.channels[ch]), string(author), search.IndexText(content))
				}
			}
			done += n
			var err error
			switch s.eng {
			case engine.SQLite:
				_, err = tx.ExecContext(ctx, `INSERT INTO messages (rowid, id, thread_id, channel_id, space_id, author_id, content, created_at) VALUES `+values(n, 8), msgArgs...)
				if err == nil {
					_, err = tx.ExecContext(ctx, `INSERT INTO message_search (rowid, body, files, title, tags) VALUES `+strings.TrimSuffix(strings.Repeat("(?, ?, '', '', ?), ", n), ", "), idxArgs...)
				}
			case engine.Postgres:
				for k := range n { // PostgreSQL's messages have no rowid
					msgArgs = slices.Delete(msgArgs, k*7, k*7+1)
				}
				_, err = tx.ExecContext(ctx, rebind(`INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, created_at) VALUES `+values(n, 7)), msgArgs...)
				if err == nil {
					_, err = tx.ExecContext(ctx, rebind(`INSERT INTO message_search (message_id, channel_id, author_id, body) VALUES `+values(n, 4)), idxArgs...)
				}
			}
			if err != nil {
				tx.Rollback()
				return 0, fmt.Errorf("seed: %w", err)
			}
		}
		if err := tx.Commit(); err != nil {
			return 0, err
		}
		if s.eng == engine.SQLite { // the store's writer checkpoints; this seed writes around it
			if _, err := s.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
				return 0, err
			}
		}
	}
	if s.eng == engine.Postgres {
		if _, err := s.w.ExecContext(ctx, `VACUUM ANALYZE message_search`); err != nil {
			return 0, err
		}
		if _, err := s.w.ExecContext(ctx, `ANALYZE messages`); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

func values(rows, cols int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(row+", ", rows), ", ")
}

// visibility is what the person may read: the first Readable channels.
type visibility map[kernel.ID]bool

func (v visibility) Space(kernel.ID) bool      { return true }
func (v visibility) Channel(id kernel.ID) bool { return v[id] }
func (v visibility) All() bool                 { return false }

// scoper answers the person's visibility, as authz's warm permission cache does.
type scoper struct{ v visibility }

func (s scoper) Visible(ctx context.Context, _ kernel.Actor, a kernel.Action) (kernel.Visibility, error) {
	kernel.RecordCheck(ctx, a)
	return s.v, nil
}

// Query is one measured search.
type Query struct{ Kind, Q string }

// Queries are the searches measured: words by their rank in the vocabulary's distribution.
func (s *Store) Queries(l Layout) []Query {
	v := s.vocab
	return []Query{
		{"common", v[2]},
		{"common-two", v[2] + " " + v[5]},
		{"mid", v[120]},
		{"rare", v[l.Vocabulary-10]},
		{"mid-and-rare", v[120] + " " + v[l.Vocabulary/2]},
		{"prefix", v[40][:4]},
		{"phrase", `"` + strings.Join(s.phrase, " ") + `"`},
		{"from-author", v[60] + " from:@" + s.handles[1]},
		{"excluded", v[2] + " -" + v[3]},
	}
}

// Measure times each query in turn, warmup rounds first, then samples searches in all;
// answers the latencies of all and of each kind, and the hits of each kind's last search.
func (s *Store) Measure(ctx context.Context, l Layout, warmup, samples int) (all measure.Latencies, byKind map[string]measure.Latencies, hits map[string]int, err error) {
	v := visibility{}
	for _, c := range s.channels[:l.Readable] {
		v[c] = true
	}
	msgs := storage.NewMessageStore(s.DB)
	svc := search.New(search.Deps{Index: storage.NewSearchStore(s.DB), Messages: msgs, Directory: msgs, Scoper: scoper{v}})
	actor := kernel.Actor{ID: s.authors[0], Kind: kernel.KindPerson}
	qs := s.Queries(l)
	hits = map[string]int{}
	run := func(q Query) (time.Duration, error) {
		t0 := time.Now()
		p, err := svc.Search(ctx, actor, search.Request{Q: q.Q, Limit: search.DefaultLimit})
		d := time.Since(t0)
		if err != nil {
			return 0, fmt.Errorf("%s %q: %w", q.Kind, q.Q, err)
		}
		for _, it := range p.Items {
			if !v[it.ChannelID] {
				return 0, fmt.Errorf("%s: a hit in a channel the person may not read", q.Kind)
			}
		}
		hits[q.Kind] = len(p.Items)
		return d, nil
	}
	for i := range warmup * len(qs) {
		if _, err := run(qs[i%len(qs)]); err != nil {
			return all, nil, nil, err
		}
	}
	var every []time.Duration
	kinds := map[string][]time.Duration{}
	cpu0 := measure.CPUTime()
	defer func() { s.CPUPerQuery = (measure.CPUTime() - cpu0) / time.Duration(max(1, samples)) }()
	for i := range samples {
		q := qs[i%len(qs)]
		d, err := run(q)
		if err != nil {
			return all, nil, nil, err
		}
		every = append(every, d)
		kinds[q.Kind] = append(kinds[q.Kind], d)
	}
	byKind = map[string]measure.Latencies{}
	for k, ds := range kinds {
		byKind[k] = measure.Summarise(ds)
	}
	return measure.Summarise(every), byKind, hits, nil
}

// Backfill times what migration 0025 does on a database that already holds the messages: it
// empties the index and runs the migration's own INSERT … SELECT again. It runs before Start.
func (s *Store) Backfill(ctx context.Context) (time.Duration, error) {
	ms, err := migrate.List(s.eng)
	if err != nil {
		return 0, err
	}
	var stmt string
	for _, m := range ms {
		if m.Version == 25 {
			_, rest, ok := strings.Cut(m.SQL, "INSERT INTO message_search")
			if !ok {
				return 0, errors.New("searchbench: 0025 has no backfill")
			}
			stmt = "INSERT INTO message_search" + rest
		}
	}
	if stmt == "" {
		return 0, errors.New("searchbench: no migration 0025")
	}
	if _, err := s.w.ExecContext(ctx, `DELETE FROM message_search`); err != nil {
		return 0, err
	}
	t0 := time.Now()
	if _, err := s.w.ExecContext(ctx, stmt); err != nil {
		return 0, fmt.Errorf("backfill: %w", err)
	}
	d := time.Since(t0)
	if s.eng == engine.SQLite {
		if _, err := s.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			return 0, err
		}
	}
	return d, nil
}
