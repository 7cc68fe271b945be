package appliance

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"bothy.dev/bothy/app/instance"
	"bothy.dev/bothy/appliance/config"
	"bothy.dev/bothy/storage/backup"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/jobs"
	"bothy.dev/bothy/ui"
)

const backupHelp = `bothy backup create|verify|restore [flags]

  create [--to DIR] [--files-only]
          backs up the instance of server.data_dir into a new folder of DIR (default
          backup.dir, else <data_dir>/backups) named by the UTC time: a consistent copy of
          the SQLite database taken in one read transaction (VACUUM INTO), which holds back
          no write of a running bothy serve, the files of files.storage fs that the copy
          names, and manifest.json (format, versions, head seq, counts, the size and SHA-256
          of every part). It writes into a temporary folder, syncs, renames it, then verifies
          it; progress goes to stderr. It works the same whether serve runs or not. On
          success it prints one line on stdout: the folder, its size in bytes, and the head
          seq (tab-separated). On PostgreSQL the database is pg_dump's to back up: create
          says so and exits 2; --files-only still copies the files of files.storage fs.
  verify DIR
          checks the backup in DIR: the manifest, every part's size and SHA-256, no part
          missing or added, PRAGMA integrity_check, the head seq and the counts. It prints
          "ok", the head seq and the size; a failure names the part.
  restore DIR --data-dir NEW
          verifies the backup in DIR, then restores it as the data directory NEW, which must
          be empty or absent. bothy serve --data-dir NEW then starts the restored instance,
          its clients resuming from their cursors up to the backup's head seq.

Exit codes: 0 ok, 1 failure (verify: the backup is damaged), 2 usage or configuration
error (also: create on PostgreSQL without --files-only, restore into a directory that is
not empty).`

func (c *cli) backup(ctx context.Context, args []string) int {
	f, sub, args := c.newSubFlags("backup", backupHelp, args, "create", "verify", "restore")
	var cf configFlags
	var to, restoreDir string
	var filesOnly bool
	switch sub {
	case "create", "":
		cf.register(f)
		cf.dataDir(f)
		f.StringVar(&to, "to", "", "`directory` the backup's folder goes into (default: backup.dir)")
		f.BoolVar(&filesOnly, "files-only", false, "copy the files alone, without the database (PostgreSQL)")
	case "restore":
		f.StringVar(&restoreDir, "data-dir", "", "the new data `directory` (empty or absent)")
	}
	dir, code, done := f.parseOneArg(args, sub == "verify" || sub == "restore")
	if done {
		return code
	}
	progress := func(format string, a ...any) { fmt.Fprintf(c.stderr, "bothy backup: "+format+"\n", a...) }
	switch sub {
	case "verify":
		m, err := backup.Verify(ctx, dir)
		if err != nil {
			fmt.Fprintf(c.stderr, "bothy backup verify: %s: %v\n", dir, err)
			return ExitFailure
		}
		fmt.Fprintf(c.stdout, "ok\t%d\t%d\n", m.HeadSeq, m.Size())
		return ExitOK
	case "restore":
		if restoreDir == "" {
			return f.usageError("--data-dir is required: the new data directory, empty or absent")
		}
		m, err := backup.Restore(ctx, dir, restoreDir, progress)
		if errors.Is(err, backup.ErrNotEmpty) {
			fmt.Fprintf(c.stderr, "bothy backup restore: %v\n", err)
			return ExitUsage
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "bothy backup restore: %v\n", err)
			return ExitFailure
		}
		fmt.Fprintf(c.stdout, "restored\t%s\t%d\n", restoreDir, m.HeadSeq)
		return ExitOK
	}

	cfg, code, ok := cf.load(c)
	if !ok {
		return code
	}
	logger := NewLogger(cfg.Log, c.stderr)
	o, err := backupOptions(cfg, to, filesOnly)
	var ue usageErr
	if errors.As(err, &ue) {
		fmt.Fprintf(c.stderr, "bothy backup create: %v\n", err)
		return ExitUsage
	}
	if err != nil {
		logger.Error("backup failed", "err", err)
		return ExitFailure
	}
	o.Progress = progress
	res, err := backup.Create(ctx, o)
	if err != nil {
		logger.Error("backup failed", "err", err)
		return ExitFailure
	}
	fmt.Fprintf(c.stdout, "%s\t%d\t%d\n", res.Dir, res.Manifest.Size(), res.Manifest.HeadSeq)
	return ExitOK
}

// usageErr is a backup the configuration does not allow: exit code 2.
type usageErr struct{ msg string }

func (e usageErr) Error() string { return e.msg }

// backupOptions are the options of a backup of cfg's instance into a new folder of to (empty:
// backupDir).
func backupOptions(cfg config.Config, to string, filesOnly bool) (backup.CreateOptions, error) {
	if to == "" {
		to = backupDir(cfg)
	}
	o := backup.CreateOptions{DataDir: cfg.Server.DataDir, Dir: filepath.Join(to, backup.Name(time.Now())),
		FilesOnly: filesOnly, Engine: string(engineOf(cfg)), BothyVersion: Version, BusyTimeout: cfg.Database.BusyTimeout}
	if engineOf(cfg) == engine.Postgres && !filesOnly {
		return o, usageErr{"the database is PostgreSQL: back it up with pg_dump (pg_dump --format=custom …), " +
			"and the files of files.storage fs with bothy backup create --files-only"}
	}
	if cfg.Files.Storage != "fs" {
		if filesOnly {
			return o, usageErr{"files.storage is " + cfg.Files.Storage + ": the files are in the bucket, which its own tools back up"}
		}
		o.BlobsElsewhere = true
	}
	if _, err := os.Stat(filepath.Join(cfg.Server.DataDir, DatabaseFile)); !filesOnly && errors.Is(err, fs.ErrNotExist) {
		return o, fmt.Errorf("no database at %s: check server.data_dir", filepath.Join(cfg.Server.DataDir, DatabaseFile))
	}
	return o, nil
}

// backupDir is backup.dir, or <data_dir>/backups.
func backupDir(cfg config.Config) string {
	if cfg.Backup.Dir != "" {
		return cfg.Backup.Dir
	}
	return filepath.Join(cfg.Server.DataDir, "backups")
}

// parseOneArg parses args, flags before or after the one positional argument a command with
// want takes (a command without it takes none).
func (f *flags) parseOneArg(args []string, want bool) (arg string, code int, done bool) {
	if !want || f.subs != nil {
		code, done = f.parse(args)
		return "", code, done
	}
	var pos []string
	for {
		err := f.Parse(args)
		switch {
		case errors.Is(err, flag.ErrHelp):
			f.printHelp(f.c.stdout)
			return "", ExitOK, true
		case err != nil:
			fmt.Fprintf(f.c.stderr, "Run '%s --help' for usage.\n", f.Name())
			return "", ExitUsage, true
		}
		if f.NArg() == 0 {
			break
		}
		pos = append(pos, f.Arg(0))
		args = f.Args()[1:]
	}
	switch len(pos) {
	case 0:
		return "", f.usageError("missing the backup's directory"), true
	case 1:
		return pos[0], 0, false
	}
	return "", f.usageError("unexpected argument %q", pos[1]), true
}

// JobBackup is the periodic job of backup.schedule.
const JobBackup = "backup.scheduled"

// lastRunFile is where the scheduler keeps its last run, beside the backups, so that the
// overview shows it after a restart.
const lastRunFile = "last-run.json"

// backupScheduler makes the scheduled backups. The periodic job only wakes it: a backup of a
// large database takes longer than a job may hold its turn (jobs.RunnerOptions.Timeout), so
// the work runs in a background task of the App, one at a time, and a wake-up during a run is
// dropped.
type backupScheduler struct {
	cfg    config.Config
	log    *instance.BackupLog
	logger *slog.Logger
	wake   chan struct{}
	// backup makes one backup (backup.Create; tests replace it).
	backup func(ctx context.Context, o backup.CreateOptions) (backup.Result, error)

	mu     sync.Mutex
	last   lastRun
	loaded bool
}

// lastRun is the file lastRunFile.
type lastRun struct {
	Run    instance.BackupRun `json:"run"`
	Failed bool               `json:"failed"`
}

// registerBackupJob registers JobBackup on q when backup.schedule is set on SQLite, with the
// background task that makes the backups, and answers the scheduler (nil when off) for the
// overview.
func registerBackupJob(a *App, q *jobs.Queue, log *instance.BackupLog) *backupScheduler {
	cfg := a.Config
	if cfg.Backup.Schedule > 0 && engineOf(cfg) != engine.SQLite {
		a.Logger.Warn("backup.schedule is for SQLite: back up PostgreSQL with pg_dump, and the files with bothy backup create --files-only")
	}
	if cfg.Backup.Schedule <= 0 || engineOf(cfg) != engine.SQLite || !runsJobs(cfg.Server.Role) {
		return nil
	}
	s := &backupScheduler{cfg: cfg, log: log, logger: a.Logger, wake: make(chan struct{}, 1), backup: backup.Create}
	q.RegisterPeriodic(JobBackup, cfg.Backup.Schedule, func(ctx context.Context, _ json.RawMessage) error {
		select {
		case s.wake <- struct{}{}:
		default:
		}
		return nil
	})
	a.Background("scheduled backups", s.run)
	return s
}

func (s *backupScheduler) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
			s.once(ctx)
		}
	}
}

// once makes one backup, prunes the old ones to backup.keep, records the run in the log (and
// the logger) and in lastRunFile.
func (s *backupScheduler) once(ctx context.Context) {
	start := time.Now()
	run := instance.BackupRun{StartedAt: start.UTC()}
	o, err := backupOptions(s.cfg, "", false)
	run.Path = o.Dir
	var res backup.Result
	if err == nil {
		res, err = s.backup(ctx, o)
	}
	run.DurationMS = time.Since(start).Milliseconds()
	if ctx.Err() != nil {
		return // shutdown: the next start runs the schedule again
	}
	if err == nil {
		run.Bytes, run.HeadSeq = res.Manifest.Size(), res.Manifest.HeadSeq
		removed, perr := backup.Prune(backupDir(s.cfg), s.cfg.Backup.Keep)
		if perr != nil {
			s.logger.Warn("old backups not all removed", "err", perr)
		}
		s.logger.Info("backup completed", "path", run.Path, "bytes", run.Bytes, "head_seq", run.HeadSeq,
			"duration", time.Since(start).Round(time.Millisecond), "removed", len(removed))
	} else {
		run.Error = err.Error()
		s.logger.Error("backup failed", "path", run.Path, "err", err)
	}
	failed := err != nil
	s.mu.Lock()
	s.last, s.loaded = lastRun{Run: run, Failed: failed}, true
	s.mu.Unlock()
	if err := s.writeLast(); err != nil {
		s.logger.Warn("the last backup's record not written", "err", err)
	}
	if err := s.log.Record(ctx, run, failed); err != nil {
		s.logger.Error("the backup's event not appended", "err", err)
	}
}

func (s *backupScheduler) writeLast() error {
	s.mu.Lock()
	b, err := json.Marshal(s.last)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	dir := backupDir(s.cfg)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+lastRunFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, lastRunFile))
}

// status is s as the console's ui.BackupStatus: nil when backups are not scheduled.
func (s *backupScheduler) status() ui.BackupStatus {
	if s == nil {
		return nil
	}
	return s
}

// LastBackup implements ui.BackupStatus: the last run of this process, or before it the one
// lastRunFile records.
func (s *backupScheduler) LastBackup() (instance.BackupRun, bool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.loaded {
		b, err := os.ReadFile(filepath.Join(backupDir(s.cfg), lastRunFile))
		if err != nil {
			return instance.BackupRun{}, false, false
		}
		var l lastRun
		if json.Unmarshal(b, &l) != nil || l.Run.StartedAt.IsZero() {
			return instance.BackupRun{}, false, false
		}
		s.last, s.loaded = l, true
	}
	return s.last.Run, s.last.Failed, true
}
