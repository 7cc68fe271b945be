package appliance

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"bothy.dev/bothy/migrate"
)

const migrateHelp = `bothy migrate up|status [flags]

  up      applies the pending migrations of the database in server.data_dir and prints one
          line per applied migration: <version>_<name>, a tab, "applied".
  status  lists every migration known to this binary: <version>_<name>, a tab, and the time
          it was applied (RFC 3339, UTC) or "pending". It only reads; a missing database
          shows every migration pending and is not created.

On the embedded SQLite database serve migrates by itself; migrate up is for scripts and
for checking before a start. Exit codes: 0 ok, 1 failure, 2 usage or configuration error.`

func (c *cli) migrate(ctx context.Context, args []string) int {
	f := c.newFlags("migrate", migrateHelp)
	var sub string
	if len(args) > 0 && (args[0] == "up" || args[0] == "status") {
		sub, args = args[0], args[1:]
		f = c.newFlags("migrate "+sub, migrateHelp)
	}
	var cf configFlags
	cf.register(f)
	cf.named(f, "data-dir", "server.data_dir", "data `directory`")
	if code, done := f.parse(args); done {
		return code
	}
	if sub == "" {
		if f.NArg() > 0 {
			return f.usageError("unknown subcommand %q: want up or status", f.Arg(0))
		}
		return f.usageError("missing subcommand: up or status")
	}
	if f.NArg() > 0 {
		return f.usageError("unexpected argument %q", f.Arg(0))
	}
	cfg, code, ok := cf.load(c)
	if !ok {
		return code
	}
	logger := NewLogger(cfg.Log, c.stderr)

	if sub == "status" {
		path := filepath.Join(cfg.Server.DataDir, DatabaseFile)
		var statuses []migrate.Status
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			ms, err := migrate.List("sqlite")
			if err != nil {
				logger.Error("migrate status failed", "err", err)
				return ExitFailure
			}
			for _, m := range ms {
				statuses = append(statuses, migrate.Status{Migration: m})
			}
		} else {
			w, r, err := openSQLite(ctx, cfg, logger)
			if err != nil {
				logger.Error("migrate status failed", "err", err)
				return ExitFailure
			}
			defer w.Close()
			defer r.Close()
			statuses, err = migrate.StatusOf(ctx, r, "sqlite")
			if err != nil {
				logger.Error("migrate status failed", "err", err)
				return ExitFailure
			}
		}
		for _, s := range statuses {
			state := "pending"
			if s.AppliedAt != nil {
				state = s.AppliedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(c.stdout, "%s\t%s\n", migrationName(s.Migration), state)
		}
		return ExitOK
	}

	w, r, err := openSQLite(ctx, cfg, logger)
	if err != nil {
		logger.Error("migrate up failed", "err", err)
		return ExitFailure
	}
	defer w.Close()
	defer r.Close()
	applied, err := migrate.Up(ctx, w, "sqlite", func(m migrate.Migration) {
		logger.Info("migration applied", "version", m.Version, "name", m.Name, "engine", "sqlite")
		fmt.Fprintf(c.stdout, "%s\tapplied\n", migrationName(m))
	})
	if err != nil {
		logger.Error("migrate up failed", "err", err)
		return ExitFailure
	}
	if len(applied) == 0 {
		logger.Info("the database is up to date")
	}
	return ExitOK
}

func migrationName(m migrate.Migration) string { return fmt.Sprintf("%04d_%s", m.Version, m.Name) }
