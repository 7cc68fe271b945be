// Package driverbench is the benchmark that chose bothy's SQLite driver. It runs the same
// message-create transaction against the real schema (migrate/sqlite, applied through each
// driver) on modernc.org/sqlite and github.com/ncruces/go-sqlite3, and measures committed
// writes per second, the cost of opening a database and the memory a process keeps.
//
// It is the only place that may import the ncruces driver: the application uses modernc, in
// storage/sqlite only. It measures drivers, not bothy's write path (that is bench/storage).
package driverbench

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	_ "github.com/ncruces/go-sqlite3/driver" // registers "sqlite3"
	_ "modernc.org/sqlite"                   // registers "sqlite"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/bench/internal/fixture"
	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage/engine"
)

// Driver is one SQLite driver under test.
type Driver struct {
	Name    string // what the benchmark calls it
	sqlName string // what it registers with database/sql
}

// Drivers are the candidates. The ncruces driver of v0.37.0 is SQLite translated to Go by
// wasm2go: importing github.com/ncruces/go-sqlite3/embed is no longer needed (that package is
// deprecated and prints a warning at init), and nothing is compiled at run time.
var Drivers = []Driver{
	{Name: "modernc", sqlName: "sqlite"},
	{Name: "ncruces", sqlName: "sqlite3"},
}

// ByName returns the driver called name.
func ByName(name string) (Driver, error) {
	var names []string
	for _, d := range Drivers {
		if d.Name == name {
			return d, nil
		}
		names = append(names, d.Name)
	}
	return Driver{}, fmt.Errorf("driver: unknown driver %q (have %s)", name, strings.Join(names, ", "))
}

// writerPragmas are storage/sqlite's pragmas for the write connection, except that the WAL
// checkpoints itself (wal_autocheckpoint stays at its default of 1000 pages): this benchmark
// has no writer goroutine that checkpoints between batches, and the cost of checkpoints must
// be in the figure.
var writerPragmas = []string{
	"busy_timeout(5000)",
	"foreign_keys(1)",
	"synchronous(FULL)",
	"temp_store(MEMORY)",
	"journal_mode(WAL)",
	"journal_size_limit(67108864)",
}

// readerPragmas are storage/sqlite's pragmas for the read pool.
var readerPragmas = []string{
	"busy_timeout(5000)",
	"foreign_keys(1)",
	"synchronous(FULL)",
	"temp_store(MEMORY)",
	"query_only(1)",
}

// dsn is the data source name both drivers accept: a file: URI with _pragma parameters.
func dsn(path string, pragmas []string) string {
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	return "file:" + path + "?" + q.Encode()
}

// hasFTS5 reports whether the driver's SQLite has the fts5 module.
func hasFTS5(ctx context.Context, db *sql.DB) bool {
	_, err := db.ExecContext(ctx, `CREATE VIRTUAL TABLE temp.fts5_probe USING fts5(a)`)
	if err == nil {
		_, _ = db.ExecContext(ctx, `DROP TABLE temp.fts5_probe`)
	}
	return err == nil
}

// withoutFullText runs the embedded migrations in order, each in a transaction, leaving out the
// ones that make an FTS5 table.
func withoutFullText(ctx context.Context, db *sql.DB) error {
	ms, err := migrate.List(engine.SQLite)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if strings.Contains(m.SQL, "USING fts5") {
			continue
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			tx.Rollback()
			return fmt.Errorf("%04d_%s: %w", m.Version, m.Name, err)
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// OpenWriter opens the database at path with one write connection, like storage/sqlite.
func OpenWriter(ctx context.Context, d Driver, path string) (*sql.DB, error) {
	db, err := sql.Open(d.sqlName, dsn(path, writerPragmas))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("driver: open %s with %s: %w", path, d.Name, err)
	}
	return db, nil
}

// OpenReaders opens a read pool of n connections on path and opens every one of them, like
// the read pool of storage/sqlite under load.
func OpenReaders(ctx context.Context, d Driver, path string, n int) (*sql.DB, error) {
	db, err := sql.Open(d.sqlName, dsn(path, readerPragmas))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxIdleTime(0)
	if err := readOnEach(ctx, db, n, `SELECT COUNT(*) FROM threads`); err != nil {
		db.Close()
		return nil, fmt.Errorf("driver: read with %s: %w", d.Name, err)
	}
	return db, nil
}

// readOnEach holds n connections of db at once and runs the counting query q on each.
func readOnEach(ctx context.Context, db *sql.DB, n int, q string) error {
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
		var count int
		if err := c.QueryRowContext(ctx, q).Scan(&count); err != nil {
			return err
		}
	}
	return nil
}

// Create makes a new database at path through driver d: the real migrations (migrate.Up runs
// migrate/sqlite/*.sql through the driver) and a fixture of one author, one space and a few
// channels with their main threads. It returns the open write pool and the fixture. A driver
// built without FTS5 (the ncruces one) gets every migration but those that make the full-text
// index of messages (see withoutFullText): the writes measured here are the message rows, which
// the index does not change.
func Create(ctx context.Context, d Driver, path string) (*sql.DB, fixture.Fixture, error) {
	db, err := OpenWriter(ctx, d, path)
	if err != nil {
		return nil, fixture.Fixture{}, err
	}
	if hasFTS5(ctx, db) {
		_, err = migrate.Up(ctx, db, engine.SQLite, nil)
	} else {
		err = withoutFullText(ctx, db)
	}
	if err != nil {
		db.Close()
		return nil, fixture.Fixture{}, fmt.Errorf("driver: migrate with %s: %w", d.Name, err)
	}
	fx, err := fixture.Seed(ctx, db, nil)
	if err != nil {
		db.Close()
		return nil, fixture.Fixture{}, fmt.Errorf("driver: seed with %s: %w", d.Name, err)
	}
	return db, fx, nil
}

// Writer runs message-create transactions on one connection with prepared statements.
type Writer struct {
	conn *sql.Conn
	fx   fixture.Fixture
	seq  int64 // event_seq, kept in Go as storage's writer does
	n    int   // messages written, for client_msg_id and thread rotation

	findIdem, findThread, insertMessage, updateThread, insertEvent, updateSeq *sql.Stmt
}

// NewWriter takes the one connection of db and prepares the statements of a message create.
func NewWriter(ctx context.Context, db *sql.DB, fx fixture.Fixture) (*Writer, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	w := &Writer{conn: conn, fx: fx}
	if err := conn.QueryRowContext(ctx, `SELECT value FROM sequence_counters WHERE name = 'event_seq'`).Scan(&w.seq); err != nil {
		conn.Close()
		return nil, err
	}
	for _, p := range []struct {
		s **sql.Stmt
		q string
	}{
		{&w.findIdem, `SELECT id FROM messages WHERE author_id = ? AND client_msg_id = ?`},
		{&w.findThread, `SELECT channel_id, space_id, message_count FROM threads WHERE id = ?`},
		{&w.insertMessage, `INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, client_msg_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`},
		{&w.updateThread, `UPDATE threads SET message_count = message_count + 1, last_message_at = ?, updated_at = ? WHERE id = ?`},
		{&w.insertEvent, `INSERT INTO event_log (seq, type, space_id, channel_id, thread_id, principal_id, subject_id, actor_id, payload, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&w.updateSeq, `UPDATE sequence_counters SET value = ? WHERE name = 'event_seq'`},
	} {
		if *p.s, err = conn.PrepareContext(ctx, p.q); err != nil {
			w.Close()
			return nil, fmt.Errorf("driver: prepare %q: %w", p.q, err)
		}
	}
	return w, nil
}

// Close releases the statements and the connection.
func (w *Writer) Close() error {
	for _, s := range []*sql.Stmt{w.findIdem, w.findThread, w.insertMessage, w.updateThread, w.insertEvent, w.updateSeq} {
		if s != nil {
			s.Close()
		}
	}
	return w.conn.Close()
}

func (w *Writer) exec(ctx context.Context, q string) error {
	_, err := w.conn.ExecContext(ctx, q)
	return err
}

// Commit writes n messages in one transaction: BEGIN IMMEDIATE, n message creates, COMMIT.
// With n > 1 each create runs in its own SAVEPOINT, as storage's group commit does.
func (w *Writer) Commit(ctx context.Context, n int) error {
	if err := w.exec(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	seq := w.seq
	for range n {
		if n > 1 {
			if err := w.exec(ctx, "SAVEPOINT uow"); err != nil {
				_ = w.exec(ctx, "ROLLBACK")
				return err
			}
		}
		if err := w.create(ctx, seq+1); err != nil {
			_ = w.exec(ctx, "ROLLBACK")
			return err
		}
		seq++
		if n > 1 {
			if err := w.exec(ctx, "RELEASE SAVEPOINT uow"); err != nil {
				_ = w.exec(ctx, "ROLLBACK")
				return err
			}
		}
	}
	if err := w.exec(ctx, "COMMIT"); err != nil {
		_ = w.exec(ctx, "ROLLBACK")
		return err
	}
	w.seq = seq
	return nil
}

// create is the body of one message create (without its transaction): the idempotency check,
// the thread, the message row, the thread's counters, the event and the event_seq counter.
func (w *Writer) create(ctx context.Context, seq int64) error {
	th := w.fx.Threads[w.n%len(w.fx.Threads)]
	w.n++
	clientMsgID := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), w.n)
	author := string(w.fx.AuthorID)
	var existing string
	switch err := w.findIdem.QueryRowContext(ctx, author, clientMsgID).Scan(&existing); {
	case err == nil:
		return fmt.Errorf("driver: client_msg_id %s already used", clientMsgID)
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	var channelID, spaceID string
	var count int64
	if err := w.findThread.QueryRowContext(ctx, string(th.ID)).Scan(&channelID, &spaceID, &count); err != nil {
		return err
	}
	id := kernel.NewID()
	at := time.Now()
	now := fixture.Stamp(at)
	if _, err := w.insertMessage.ExecContext(ctx, string(id), string(th.ID), channelID, spaceID, author, fixture.Content, clientMsgID, now); err != nil {
		return err
	}
	if _, err := w.updateThread.ExecContext(ctx, now, now, string(th.ID)); err != nil {
		return err
	}
	payload, err := json.Marshal(messaging.Message{ID: id, ThreadID: th.ID, ChannelID: kernel.ID(channelID), SpaceID: kernel.ID(spaceID),
		AuthorID: w.fx.AuthorID, Content: fixture.Content, ClientMsgID: messaging.ClientMsgID(clientMsgID), Mentions: []kernel.ID{},
		Version: 1, CreatedAt: at})
	if err != nil {
		return err
	}
	if _, err := w.insertEvent.ExecContext(ctx, seq, messaging.EvMessageCreated.Name, spaceID, channelID, string(th.ID), nil, string(id), author, string(payload), now); err != nil {
		return err
	}
	_, err = w.updateSeq.ExecContext(ctx, seq)
	return err
}
