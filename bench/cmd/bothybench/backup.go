package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	backupbench "bothy.dev/bothy/bench/backup"
	httpbench "bothy.dev/bothy/bench/http"
	"bothy.dev/bothy/bench/internal/measure"
	"bothy.dev/bothy/storage/backup"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/sqlite"
)

// The scenario of bench/backup: a backup of a large database while a real bothy serve takes
// messages over HTTP at a fixed rate.

// copiedLine is backup create's progress line of the copy of the database, with its time.
var copiedLine = regexp.MustCompile(`database copied: .* in (\S+)`)

func backupCreate(fs *flag.FlagSet) runFunc {
	size := fs.Int64("size", 1<<30, "bytes of messages seeded into the database before the backup")
	rate := fs.Float64("rate", 1000, "messages offered per second over HTTP while the backup runs")
	workers := fs.Int("workers", 64, "clients that send the due messages")
	warmup := fs.Duration("warmup", 3*time.Second, "how long the load runs before the backup starts")
	after := fs.Duration("after", 2*time.Second, "how long the load runs after the backup has ended")
	method := fs.String("copy", "vacuum-into", "how the database is copied: vacuum-into (`bothy backup create`, run as a child process) or backup-api (SQLite's online backup API, all pages in one step, from this process)")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		if *r.engine != engine.SQLite {
			return errors.New("backup-create backs up serve's SQLite file: -engine sqlite only")
		}
		if *method != "vacuum-into" && *method != "backup-api" {
			return fmt.Errorf("-copy %q: want vacuum-into or backup-api", *method)
		}
		ns, err := r.startFirst(ctx, 1, nil, *workers)
		if err != nil {
			return err
		}
		t, err := httpbench.Prepare(ctx, ns.client, ns.servers[0].Public, ns.servers[0].SetupCode, *r.server.people, *r.server.channels)
		if err != nil {
			return fmt.Errorf("prepare: %w\n%s", err, ns.logs())
		}
		var seeded int
		if err := ns.seedStopped(ctx, func(db *sql.DB) error {
			seeded, err = backupbench.Seed(ctx, db, t, *size)
			return err
		}); err != nil {
			return err
		}
		t.Base = ns.servers[0].Public
		dataDir := ns.opts[0].DataDir
		dbBytes, err := backupbench.DirSize(dataDir)
		if err != nil {
			return err
		}
		tmp, err := r.tempDir()
		if err != nil {
			return err
		}
		dest := filepath.Join(tmp, "backups")
		run := func(ctx context.Context) (int64, time.Duration, error) {
			if *method == "backup-api" {
				res, err := backup.Create(ctx, backup.CreateOptions{DataDir: dataDir, Dir: filepath.Join(dest, backup.Name(time.Now())),
					BothyVersion: "bench", Copy: sqlite.BackupInto})
				return res.Manifest.Size(), res.Copy, err
			}
			cmd := exec.CommandContext(ctx, *r.server.bin, "backup", "create", "--data-dir", dataDir, "--to", dest)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				return 0, 0, fmt.Errorf("bothy backup create: %w\n%s", err, stderr.String())
			}
			cols := strings.Split(strings.TrimSpace(stdout.String()), "\t")
			if len(cols) != 3 {
				return 0, 0, fmt.Errorf("bothy backup create printed %q", stdout.String())
			}
			n, err := strconv.ParseInt(cols[1], 10, 64)
			if err != nil {
				return 0, 0, err
			}
			var took time.Duration
			if m := copiedLine.FindStringSubmatch(stderr.String()); m != nil {
				took, _ = time.ParseDuration(m[1])
			}
			return n, took, nil
		}
		res, err := backupbench.Measure(ctx, ns.client, t, *rate, *workers, *warmup, *after, filepath.Join(dataDir, "bothy.db-wal"), run)
		if err != nil {
			return fmt.Errorf("%w\n%s", err, ns.logs())
		}
		name := fmt.Sprintf("backup/%s/%dMiB@%g-messages-per-s", *method, *size>>20, *rate)
		measure.Result(out, name+"/rate", backupbench.MBps(res.Size, res.Took), "MB/s")
		if res.Copy > 0 {
			measure.Result(out, name+"/copy-rate", backupbench.MBps(res.Size, res.Copy), "MB/s")
		}
		measure.Result(out, name+"/took", res.Took.Seconds(), "s")
		latencies(out, name+"/create-during-backup", res.During)
		measure.Result(out, name+"/create-outside-backup/p99", measure.Ms(res.Outside.P99), "ms")
		measure.Result(out, name+"/backup-size", measure.MiB(res.Size), "MiB")
		measure.Result(out, name+"/data-dir-before", measure.MiB(dbBytes), "MiB")
		measure.Result(out, name+"/wal-max", measure.MiB(res.WAL), "MiB")
		measure.Result(out, name+"/seeded", float64(seeded), "messages")
		measure.Result(out, name+"/posted", float64(res.Posted), "messages")
		return nil
	}
}
