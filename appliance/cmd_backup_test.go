package appliance

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/instance"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/backup"
	"bothy.dev/bothy/storage/jobs"
	"bothy.dev/bothy/storage/storetest"
)

func TestBackupCommand(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		want   int
		stream string // "out" or "err"
		match  string
	}{
		{"help goes to stdout", []string{"backup", "--help"}, 0, "out", "Usage: bothy backup create|verify|restore"},
		{"a subcommand is required", []string{"backup"}, 2, "err", "missing subcommand: create, verify or restore"},
		{"verify needs the backup's directory", []string{"backup", "verify"}, 2, "err", "missing the backup's directory"},
		{"verify takes one directory", []string{"backup", "verify", "a", "b"}, 2, "err", `unexpected argument "b"`},
		{"restore needs --data-dir", []string{"backup", "restore", "a"}, 2, "err", "--data-dir is required"},
		{"verify of what is no backup fails", []string{"backup", "verify", t.TempDir()}, 1, "err", "manifest.json: missing"},
		{"create without a database fails", []string{"backup", "create", "--data-dir", t.TempDir()}, 1, "err", "no database at"},
		{"create on PostgreSQL names pg_dump", []string{"backup", "create", "--set", "database.driver=postgres", "--set", "database.url_ref=env:NOPE"}, 2, "err", "pg_dump"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCLI()
			if got := c.run(tc.args...); got != tc.want {
				t.Fatalf("exit %d, want %d; stderr:\n%s", got, tc.want, c.stderr)
			}
			out := c.stdout.String()
			if tc.stream == "err" {
				out = c.stderr.String()
			}
			if !strings.Contains(out, tc.match) {
				t.Fatalf("std%s %q does not hold %q", tc.stream, out, tc.match)
			}
		})
	}
}

// The scheduled backup makes a backup into backup.dir, keeps the backup.keep newest, appends
// backup.completed (or backup.failed) personal to each owner, and leaves its last run for the
// overview, also for the next process.
func TestScheduledBackups(t *testing.T) {
	cfg := testConfig(t)
	cfg.Backup.Schedule, cfg.Backup.Keep = time.Hour, 2
	cfg.Backup.Dir = filepath.Join(t.TempDir(), "backups")
	a := mustNew(t, cfg)
	ctx := context.Background()
	owner := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "ada", IsOwner: true}
	storetest.Principal(t, a.DB, owner)
	log := instance.NewBackupLog(instance.BackupLogDeps{UoW: a.DB, Events: a.DB, Owners: storage.NewAgentStore(a.DB)})
	s := registerBackupJob(a, jobs.NewQueue(a.DB, jobs.QueueOptions{}), log)
	if s == nil {
		t.Fatal("backup.schedule is set, and no scheduler")
	}
	if _, _, ok := s.LastBackup(); ok {
		t.Fatal("a last backup before any ran")
	}
	backupEvents := func() []kernel.LoggedEvent {
		evs, err := a.DB.EventsAfter(ctx, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var out []kernel.LoggedEvent
		for _, e := range evs {
			if strings.HasPrefix(e.Type, "backup.") {
				out = append(out, e)
			}
		}
		return out
	}

	for range 3 {
		s.once(ctx)
		time.Sleep(2 * time.Millisecond) // backups are named by the millisecond
	}
	entries, err := os.ReadDir(cfg.Backup.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
			if _, err := backup.Verify(ctx, filepath.Join(cfg.Backup.Dir, e.Name())); err != nil {
				t.Errorf("backup %s: %v", e.Name(), err)
			}
		}
	}
	if len(dirs) != 2 {
		t.Fatalf("backup.dir holds %v, want the 2 newest (backup.keep)", dirs)
	}
	evs := backupEvents()
	if len(evs) != 3 {
		t.Fatalf("%d backup events, want 3", len(evs))
	}
	last := evs[2]
	run, err := instance.EvBackupCompleted.Decode(last)
	if err != nil || last.Type != "backup.completed" || last.Scope.PrincipalID != owner.ID {
		t.Fatalf("event %+v: %v", last, err)
	}
	if run.Bytes == 0 || run.HeadSeq == 0 || filepath.Base(run.Path) != dirs[1] {
		t.Fatalf("the run %+v, want the newest backup %s with its size and head", run, dirs[1])
	}
	if got, failed, ok := s.LastBackup(); !ok || failed || got.Path != run.Path || !got.StartedAt.Equal(run.StartedAt) || got.Bytes != run.Bytes || got.HeadSeq != run.HeadSeq {
		t.Fatalf("last backup %+v failed=%v ok=%v, want %+v", got, failed, ok, run)
	}

	t.Run("a failed run appends backup.failed with its error", func(t *testing.T) {
		s.backup = func(context.Context, backup.CreateOptions) (backup.Result, error) {
			return backup.Result{}, errors.New("the disk is full")
		}
		s.once(ctx)
		evs := backupEvents()
		e := evs[len(evs)-1]
		run, err := instance.EvBackupFailed.Decode(e)
		if err != nil || e.Type != "backup.failed" || run.Error != "the disk is full" || e.Scope.PrincipalID != owner.ID {
			t.Fatalf("event %+v %+v: %v", e, run, err)
		}
		if _, failed, ok := s.LastBackup(); !ok || !failed {
			t.Fatal("the last backup is not the failed run")
		}
	})

	t.Run("the next process reads the last run from backup.dir", func(t *testing.T) {
		next := &backupScheduler{cfg: cfg}
		got, failed, ok := next.LastBackup()
		if !ok || !failed || got.Error != "the disk is full" {
			t.Fatalf("last backup %+v failed=%v ok=%v", got, failed, ok)
		}
	})

	t.Run("no scheduler when backup.schedule is 0", func(t *testing.T) {
		off := testConfig(t)
		b := mustNew(t, off)
		if s := registerBackupJob(b, jobs.NewQueue(b.DB, jobs.QueueOptions{}), log); s != nil || s.status() != nil {
			t.Fatal("a scheduler with backup.schedule 0")
		}
	})
}
