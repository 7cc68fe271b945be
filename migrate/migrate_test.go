package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/postgres"
	"bothy.dev/bothy/storage/sqlite"
	"bothy.dev/bothy/storage/storetest/pgdb"
)

var engines = []engine.Name{engine.SQLite, engine.Postgres}

// openEmpty returns the writer and the read pool of a new, empty database of engine (a file in
// t.TempDir(), or a PostgreSQL database of its own), closed and dropped when the test ends. The
// PostgreSQL case is skipped without BOTHY_TEST_POSTGRES_URL.
func openEmpty(t *testing.T, eng engine.Name) (w, r *sql.DB, where string) {
	t.Helper()
	ctx := context.Background()
	var err error
	switch eng {
	case engine.SQLite:
		where = filepath.Join(t.TempDir(), "bothy.db")
		w, r, err = sqlite.Open(ctx, sqlite.Options{Path: where})
	case engine.Postgres:
		where = pgdb.Create(t, "")
		w, r, err = postgres.Open(ctx, postgres.Options{URL: where, MaxOpenConns: 2})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(); r.Close() })
	return w, r, where
}

// each runs body as one subtest per engine.
func each(t *testing.T, body func(t *testing.T, eng engine.Name)) {
	for _, eng := range engines {
		t.Run(string(eng), func(t *testing.T) { body(t, eng) })
	}
}

// fixtureAt is the time the migrations' fixtures are stamped with.
const fixtureAt = "2026-03-01T10:00:00.000000Z"

// chatFixture is a person (p1), a space (s1), a channel (c1) with its main thread (t1) and a
// message (m1): what a migration of a table that refers to them needs in the database.
var chatFixture = []string{
	`INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at)
		VALUES ('p1', 'person', 'olga', 'olga', 'Olga', '` + fixtureAt + `', '` + fixtureAt + `')`,
	`INSERT INTO spaces (id, name, created_by, created_at, updated_at) VALUES ('s1', 'Home', 'p1', '` + fixtureAt + `', '` + fixtureAt + `')`,
	`INSERT INTO channels (id, space_id, name, main_thread_id, created_by, created_at, updated_at)
		VALUES ('c1', 's1', 'general', 't1', 'p1', '` + fixtureAt + `', '` + fixtureAt + `')`,
	`INSERT INTO threads (id, channel_id, space_id, created_by, created_at, updated_at)
		VALUES ('t1', 'c1', 's1', 'p1', '` + fixtureAt + `', '` + fixtureAt + `')`,
	`INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, created_at)
		VALUES ('m1', 't1', 'c1', 's1', 'p1', 'hello', '` + fixtureAt + `')`,
}

// across migrates a fresh database of eng to the version before version, runs the fixture
// there, and then migrates the rest, which must start with version: a test of one migration
// over the rows that were there before it.
func across(t *testing.T, eng engine.Name, version int, fixture ...string) (w, r *sql.DB) {
	t.Helper()
	ctx := context.Background()
	w, r, _ = openEmpty(t, eng)
	if _, err := up(ctx, w, until(t, eng, version-1), eng, nil); err != nil {
		t.Fatal(err)
	}
	for _, q := range fixture {
		if _, err := w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	applied, err := Up(ctx, w, eng, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) == 0 || applied[0].Version != version {
		t.Fatalf("applied %v, want %04d first", versions(applied), version)
	}
	return w, r
}

func versions(ms []Migration) []int {
	var out []int
	for _, m := range ms {
		out = append(out, m.Version)
	}
	return out
}

func TestUp(t *testing.T) {
	ctx := context.Background()

	each(t, func(t *testing.T, eng engine.Name) {
		t.Run("applies every embedded migration once and then nothing", func(t *testing.T) {
			w, r, _ := openEmpty(t, eng)
			all, err := List(eng)
			if err != nil || len(all) == 0 {
				t.Fatalf("%d migrations, %v", len(all), err)
			}
			before, err := StatusOf(ctx, r, eng)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range before {
				if s.AppliedAt != nil {
					t.Fatalf("%d applied before Up", s.Version)
				}
			}
			if p, err := Pending(ctx, r, eng); err != nil || !reflect.DeepEqual(versions(p), versions(all)) {
				t.Fatalf("pending %v before Up (%v), want %v", versions(p), err, versions(all))
			}
			var logged []int
			applied, err := Up(ctx, w, eng, func(m Migration) { logged = append(logged, m.Version) })
			if err != nil {
				t.Fatal(err)
			}
			if len(applied) != len(all) || len(logged) != len(all) {
				t.Fatalf("applied %d, logged %d, want %d", len(applied), len(logged), len(all))
			}
			again, err := Up(ctx, w, eng, nil)
			if err != nil || len(again) != 0 {
				t.Fatalf("second Up applied %d (%v)", len(again), err)
			}
			after, _ := StatusOf(ctx, r, eng)
			for _, s := range after {
				if s.AppliedAt == nil {
					t.Fatalf("%d still pending", s.Version)
				}
			}
			if p, err := Pending(ctx, r, eng); err != nil || len(p) != 0 {
				t.Fatalf("pending %v after Up (%v)", versions(p), err)
			}
		})

		t.Run("rolls a failing migration back whole and keeps the ones before it", func(t *testing.T) {
			w, r, _ := openEmpty(t, eng)
			fsys := fstest.MapFS{
				string(eng) + "/0001_a.sql": {Data: []byte("CREATE TABLE a (x INTEGER);")},
				string(eng) + "/0002_b.sql": {Data: []byte("CREATE TABLE b (x INTEGER); INSERT INTO nowhere VALUES (1);")},
			}
			applied, err := up(ctx, w, fsys, eng, nil)
			if err == nil || !strings.Contains(err.Error(), "0002_b") {
				t.Fatalf("err = %v", err)
			}
			if len(applied) != 1 {
				t.Fatalf("applied %d", len(applied))
			}
			if _, err := r.Exec(`SELECT COUNT(*) FROM a`); err != nil {
				t.Fatalf("table a: %v", err)
			}
			if _, err := r.Exec(`SELECT COUNT(*) FROM b`); err == nil {
				t.Fatal("table b exists after the failed migration")
			}
			var n int
			if err := r.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil || n != 1 {
				t.Fatalf("schema_migrations has %d rows (%v)", n, err)
			}
		})

		t.Run("refuses a database that is newer than the binary", func(t *testing.T) {
			w, r, _ := openEmpty(t, eng)
			one := fstest.MapFS{string(eng) + "/0001_a.sql": {Data: []byte("CREATE TABLE a (x INTEGER);")}}
			two := fstest.MapFS{string(eng) + "/0001_a.sql": one[string(eng)+"/0001_a.sql"], string(eng) + "/0002_b.sql": {Data: []byte("CREATE TABLE b (x INTEGER);")}}
			if _, err := up(ctx, w, two, eng, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := up(ctx, w, one, eng, nil); err == nil || !strings.Contains(err.Error(), "newer") {
				t.Fatalf("err = %v", err)
			}
			// A newer schema is built by expand and contract: nothing is pending for the old binary.
			applied, err := appliedVersions(ctx, r, eng)
			if err != nil || len(applied) != 2 {
				t.Fatalf("applied %v, %v", applied, err)
			}
		})
	})

	t.Run("refuses gaps in the version numbers", func(t *testing.T) {
		fsys := fstest.MapFS{"sqlite/0001_a.sql": {Data: []byte("SELECT 1;")}, "sqlite/0003_c.sql": {Data: []byte("SELECT 1;")}}
		if _, err := list(fsys, engine.SQLite); err == nil {
			t.Fatal("want an error")
		}
	})

	t.Run("refuses an engine it has no migrations for", func(t *testing.T) {
		if _, err := List("mysql"); err == nil {
			t.Fatal("want an error")
		}
	})

	t.Run("postgres: two runs at once apply each migration once", func(t *testing.T) {
		_, _, url := openEmpty(t, engine.Postgres)
		fsys := fstest.MapFS{
			"postgres/0001_a.sql": {Data: []byte("CREATE TABLE a (x INTEGER); SELECT pg_sleep(0.2);")},
			"postgres/0002_b.sql": {Data: []byte("CREATE TABLE b (x INTEGER);")},
		}
		var wg sync.WaitGroup
		results := make([][]Migration, 2)
		errs := make([]error, 2)
		for i := range 2 {
			w, r, err := postgres.Open(ctx, postgres.Options{URL: url, MaxOpenConns: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			defer r.Close()
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = up(ctx, w, fsys, engine.Postgres, nil)
			}()
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("errors %v", errs)
		}
		if n := len(results[0]) + len(results[1]); n != 2 || (len(results[0]) != 0 && len(results[1]) != 0) {
			t.Fatalf("applied %v and %v: want both by one run, none by the other", versions(results[0]), versions(results[1]))
		}
	})
}

func TestEnginesHaveTheSameMigrations(t *testing.T) {
	s, err := List(engine.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	p, err := List(engine.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	names := func(ms []Migration) []string {
		var out []string
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%04d_%s", m.Version, m.Name))
		}
		return out
	}
	if !reflect.DeepEqual(names(s), names(p)) {
		t.Fatalf("sqlite has %v, postgres %v", names(s), names(p))
	}
}

// column is one column of a migrated schema, in the terms both engines share.
type column struct {
	Table, Name, Type string
	NotNull, Key      bool // Key: part of the primary key
}

// schemaOf reads the tables and columns of a migrated database, and its own indexes (those the
// migrations create by name, not the ones behind a primary key or UNIQUE).
func schemaOf(t *testing.T, r *sql.DB, eng engine.Name) (cols []column, indexes []string) {
	t.Helper()
	var q, iq string
	switch eng {
	case engine.SQLite:
		q = `SELECT m.name, p.name, upper(p.type), p."notnull" OR p.pk > 0, p.pk > 0
			FROM sqlite_master m JOIN pragma_table_info(m.name) p
			WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY 1, 2`
		iq = `SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY 1`
	case engine.Postgres:
		q = `SELECT c.table_name, c.column_name, upper(c.data_type), c.is_nullable = 'NO',
				EXISTS (SELECT 1 FROM information_schema.table_constraints tc
					JOIN information_schema.key_column_usage k ON k.constraint_name = tc.constraint_name
						AND k.table_schema = tc.table_schema AND k.table_name = tc.table_name
					WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema = c.table_schema
						AND tc.table_name = c.table_name AND k.column_name = c.column_name)
			FROM information_schema.columns c WHERE c.table_schema = current_schema() ORDER BY 1, 2`
		iq = `SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
			WHERE t.relnamespace = current_schema()::regnamespace AND NOT x.indisprimary
				AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid) ORDER BY 1`
	}
	rows, err := r.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.Table, &c.Name, &c.Type, &c.NotNull, &c.Key); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	irows, err := r.Query(iq)
	if err != nil {
		t.Fatal(err)
	}
	defer irows.Close()
	for irows.Next() {
		var n string
		if err := irows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		indexes = append(indexes, n)
	}
	return cols, indexes
}

// goqiteTypes are the one place where the schemas differ by type: goqite's table (0006_jobs)
// is the library's own per flavour, and its PostgreSQL flavour binds time.Time and []byte where
// its SQLite flavour binds fixed-width text and bytes. Keyed by table and SQLite type.
var goqiteTypes = map[string]string{
	"goqite.TEXT": "TIMESTAMP WITH TIME ZONE", // created, updated, timeout
	"goqite.BLOB": "BYTEA",                    // body
}

// rowidKeys are the BIGINT keys that SQLite declares INTEGER PRIMARY KEY, which makes them the
// table's rowid instead of a second b-tree beside it (0026_log_by_reference).
var rowidKeys = map[string]bool{"event_log.seq": true}

// withoutSearchIndex leaves out the full-text index of messages (0025_search), the one table
// each engine builds in its own way: on SQLite an FTS5 virtual table with the shadow tables
// FTS5 makes for it (message_search_data, _idx, _content, _docsize, _config), on PostgreSQL a
// table with a tsvector and its GIN index. storage/search_test.go holds the two to the same
// answers instead.
func withoutSearchIndex(cols []column, indexes []string) ([]column, []string) {
	isSearch := func(name string) bool { return name == "message_search" || strings.HasPrefix(name, "message_search_") }
	cols = slices.DeleteFunc(slices.Clone(cols), func(c column) bool { return isSearch(c.Table) })
	indexes = slices.DeleteFunc(slices.Clone(indexes), isSearch)
	return cols, indexes
}

func TestSchemasMatch(t *testing.T) {
	pgdb.URL(t)
	ctx := context.Background()
	schemas := map[engine.Name][]column{}
	indexes := map[engine.Name][]string{}
	for _, eng := range engines {
		w, r, _ := openEmpty(t, eng)
		if _, err := Up(ctx, w, eng, nil); err != nil {
			t.Fatal(err)
		}
		schemas[eng], indexes[eng] = schemaOf(t, r, eng)
		schemas[eng], indexes[eng] = withoutSearchIndex(schemas[eng], indexes[eng])
	}
	s, p := schemas[engine.SQLite], schemas[engine.Postgres]
	if len(s) < 50 {
		t.Fatalf("read only %d sqlite columns", len(s))
	}
	at := map[string]column{}
	for _, c := range p {
		at[c.Table+"."+c.Name] = c
	}
	for _, c := range s {
		pc, ok := at[c.Table+"."+c.Name]
		if ok && goqiteTypes[c.Table+"."+c.Type] == pc.Type {
			pc.Type = c.Type
		}
		if ok && rowidKeys[c.Table+"."+c.Name] && c.Type == "INTEGER" && pc.Type == "BIGINT" {
			pc.Type = c.Type
		}
		switch {
		case !ok:
			t.Errorf("%s.%s is missing on postgres", c.Table, c.Name)
		case pc != c:
			t.Errorf("%s.%s differs: sqlite %+v, postgres %+v", c.Table, c.Name, c, pc)
		}
		delete(at, c.Table+"."+c.Name)
	}
	for k := range at {
		t.Errorf("%s is missing on sqlite", k)
	}
	if !reflect.DeepEqual(indexes[engine.SQLite], indexes[engine.Postgres]) {
		t.Errorf("indexes differ: sqlite %v, postgres %v", indexes[engine.SQLite], indexes[engine.Postgres])
	}
}
