package appliance

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"bothy.dev/bothy/appliance/config"
	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/sqlite"
)

const migrateHelp = `bothy migrate up|status|copy [flags]

  up      applies the pending migrations of the database and prints one line per applied
          migration: <version>_<name>, a tab, "applied". On SQLite that is the database in
          server.data_dir; on PostgreSQL (database.driver postgres) the one database.url_ref
          points to, under an advisory lock, so two runs at once cannot race.
  status  lists every migration known to this binary: <version>_<name>, a tab, and the time
          it was applied (RFC 3339, UTC) or "pending". It only reads; a missing SQLite
          database shows every migration pending and is not created.
  copy    moves the instance from the SQLite database in server.data_dir to an empty,
          migrated PostgreSQL database (--to-url-ref, or database.url_ref): every table,
          keeping ids and seq, so clients resume from their cursors after the move. Stop
          bothy serve first. The source is opened read-only and read as one snapshot; the
          target is written in one transaction of 500-row batches, with a progress line per
          table on stderr, and verified (row counts, head seq) before and after the commit.
          It refuses a target that is not migrated or not empty, and a source written
          during the copy, leaving the target as it was. On success it prints one line on
          stdout: "copied", the number of rows, "head", the head seq (tab-separated).

On the embedded SQLite database serve migrates by itself; migrate up is for scripts and for
checking before a start. On PostgreSQL serve never migrates: run migrate up before starting
a new version, for example
  DATABASE_URL=postgres://… bothy migrate up --set database.driver=postgres --set database.url_ref=env:DATABASE_URL

Exit codes: 0 ok, 1 failure (copy: also a refused or unverified copy), 2 usage or
configuration error.`

func (c *cli) migrate(ctx context.Context, args []string) int {
	f, sub, args := c.newSubFlags("migrate", migrateHelp, args, "up", "status", "copy")
	var cf configFlags
	cf.register(f)
	cf.dataDir(f)
	var toRef string
	if sub == "copy" {
		f.StringVar(&toRef, "to-url-ref", "", "reference (env:NAME or file:PATH) to the target PostgreSQL `URL` (default: database.url_ref)")
	}
	if code, done := f.parse(args); done {
		return code
	}
	cfg, code, ok := cf.load(c)
	if !ok {
		return code
	}
	logger := NewLogger(cfg.Log, c.stderr)

	switch {
	case sub == "copy":
		return c.migrateCopy(ctx, cfg, toRef, f, logger)
	case engineOf(cfg) == engine.Postgres:
		return c.migratePostgres(ctx, cfg, sub, logger)
	case sub == "status":
		return c.migrateStatusSQLite(ctx, cfg, logger)
	}

	w, r, err := openSQLite(ctx, cfg, logger)
	if err != nil {
		logger.Error("migrate up failed", "err", err)
		return ExitFailure
	}
	defer w.Close()
	defer r.Close()
	return c.migrateUp(ctx, w, engine.SQLite, logger)
}

func (c *cli) migrateUp(ctx context.Context, w *sql.DB, eng engine.Name, logger *slog.Logger) int {
	applied, err := migrate.Up(ctx, w, eng, func(m migrate.Migration) {
		logger.Info("migration applied", "version", m.Version, "name", m.Name, "engine", eng)
		fmt.Fprintf(c.stdout, "%s\tapplied\n", migrationName(m))
	})
	if err != nil {
		logger.Error("migrate up failed", "err", err, "engine", eng)
		return ExitFailure
	}
	if len(applied) == 0 {
		logger.Info("the database is up to date", "engine", eng)
	}
	return ExitOK
}

func (c *cli) migrateStatusSQLite(ctx context.Context, cfg config.Config, logger *slog.Logger) int {
	path := filepath.Join(cfg.Server.DataDir, DatabaseFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		ms, err := migrate.List(engine.SQLite)
		if err != nil {
			logger.Error("migrate status failed", "err", err)
			return ExitFailure
		}
		statuses := make([]migrate.Status, len(ms))
		for i, m := range ms {
			statuses[i] = migrate.Status{Migration: m}
		}
		c.printStatus(statuses)
		return ExitOK
	}
	w, r, err := openSQLite(ctx, cfg, logger)
	if err != nil {
		logger.Error("migrate status failed", "err", err)
		return ExitFailure
	}
	defer w.Close()
	defer r.Close()
	statuses, err := migrate.StatusOf(ctx, r, engine.SQLite)
	if err != nil {
		logger.Error("migrate status failed", "err", err)
		return ExitFailure
	}
	c.printStatus(statuses)
	return ExitOK
}

// migratePostgres runs up or status on the database of database.url_ref.
func (c *cli) migratePostgres(ctx context.Context, cfg config.Config, sub string, logger *slog.Logger) int {
	_, w, r, err := openPostgres(ctx, cfg, cfg.Database.URLRef)
	if err != nil {
		logger.Error("migrate "+sub+" failed", "err", err)
		return ExitFailure
	}
	defer w.Close()
	defer r.Close()
	if sub == "up" {
		return c.migrateUp(ctx, w, engine.Postgres, logger)
	}
	statuses, err := migrate.StatusOf(ctx, r, engine.Postgres)
	if err != nil {
		logger.Error("migrate status failed", "err", err)
		return ExitFailure
	}
	c.printStatus(statuses)
	return ExitOK
}

func (c *cli) printStatus(statuses []migrate.Status) {
	for _, s := range statuses {
		state := "pending"
		if s.AppliedAt != nil {
			state = s.AppliedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(c.stdout, "%s\t%s\n", migrationName(s.Migration), state)
	}
}

// migrateCopy moves the instance from the SQLite database of server.data_dir to PostgreSQL.
func (c *cli) migrateCopy(ctx context.Context, cfg config.Config, toRef string, f *flags, logger *slog.Logger) int {
	if toRef == "" {
		toRef = cfg.Database.URLRef
	}
	if toRef == "" {
		return f.usageError("--to-url-ref is required (a reference such as env:DATABASE_URL), or set database.url_ref")
	}
	if err := config.CheckRef(toRef); err != nil {
		return f.usageError("--to-url-ref %v", err)
	}
	fail := func(msg string, args ...any) int {
		logger.Error("migrate copy: "+msg, args...)
		return ExitFailure
	}

	path := filepath.Join(cfg.Server.DataDir, DatabaseFile)
	src, err := sqlite.OpenReadOnly(ctx, path, cfg.Database.BusyTimeout)
	if err != nil {
		return fail("cannot open the source (server.data_dir)", "err", err)
	}
	defer src.Close()
	if pending, err := migrate.Pending(ctx, src, engine.SQLite); err != nil {
		return fail("cannot read the source's schema version", "err", err)
	} else if len(pending) > 0 {
		return fail(fmt.Sprintf("the source is not migrated to this version (%d pending, the first %s): run `bothy migrate up --set database.driver=sqlite` first", len(pending), migrationName(pending[0])))
	}

	_, w, r, err := openPostgres(ctx, cfg, toRef)
	if err != nil {
		return fail("cannot open the target", "err", err)
	}
	defer w.Close()
	defer r.Close()
	upHint := "run `bothy migrate up --set database.driver=postgres --set database.url_ref=" + toRef + "` first"
	if pending, err := migrate.Pending(ctx, r, engine.Postgres); err != nil {
		return fail("cannot read the target's schema version", "err", err)
	} else if len(pending) > 0 {
		return fail(fmt.Sprintf("the target is not migrated (%d pending, the first %s): %s", len(pending), migrationName(pending[0]), upHint))
	}

	logger.Info("migrate copy: copying", "from", path, "to", toRef)
	start := time.Now()
	rep, err := storage.Copy(ctx, src, sqlite.Dialect{}, w, postgresDialect(cfg), storage.CopyOptions{
		Progress: func(p storage.CopyProgress) {
			if p.Done {
				fmt.Fprintf(c.stderr, "copy: %-18s %9d rows  %s\n", p.Table, p.Copied, p.Elapsed.Round(time.Millisecond))
			} else {
				fmt.Fprintf(c.stderr, "copy: %-18s %9d of %d rows\n", p.Table, p.Copied, p.Rows)
			}
		},
	})
	switch {
	case errors.Is(err, storage.ErrTargetNotEmpty):
		return fail("refused, nothing was changed: the target already holds an instance; copy into a new, migrated database", "err", err)
	case errors.Is(err, storage.ErrSchemaMismatch):
		return fail("refused, nothing was changed: "+upHint+" (both databases must be migrated to this version)", "err", err)
	case errors.Is(err, storage.ErrSourceChanged):
		return fail("refused, nothing was changed: stop bothy serve on "+path+" and run the copy again", "err", err)
	case err != nil:
		return fail("failed", "err", err)
	}
	var rows int64
	for _, n := range rep.Rows {
		rows += n
	}
	logger.Info("migrate copy: done and verified", "tables", len(rep.Rows), "rows", rows, "head", rep.Head,
		"took", time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(c.stdout, "copied\t%d\thead\t%d\n", rows, rep.Head)
	return ExitOK
}

func migrationName(m migrate.Migration) string { return fmt.Sprintf("%04d_%s", m.Version, m.Name) }
