package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	driverbench "bothy.dev/bothy/bench/driver"
	"bothy.dev/bothy/bench/internal/measure"
)

// The scenarios of bench/driver: the SQLite driver choice.

func driverFlag(fs *flag.FlagSet) *string {
	return fs.String("driver", "modernc", "SQLite driver: modernc or ncruces")
}

// driver is the driver of -driver and the run's temp dir for its database.
func (r *runner) driver(name string) (driverbench.Driver, string, error) {
	d, err := driverbench.ByName(name)
	if err != nil {
		return d, "", err
	}
	dir, err := r.tempDir()
	return d, dir, err
}

func driverRate(fs *flag.FlagSet) runFunc {
	name := driverFlag(fs)
	per := fs.Int("per-commit", 1, "message creates sharing one COMMIT (each in a SAVEPOINT when > 1)")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		if *per < 1 {
			return errors.New("-per-commit must be at least 1")
		}
		d, dir, err := r.driver(*name)
		if err != nil {
			return err
		}
		run, err := driverbench.Rate(ctx, d, dir, *per, *r.duration)
		if err != nil {
			return err
		}
		metric := fmt.Sprintf("driver/%s/message-create/%d-per-commit", d.Name, *per)
		measure.Result(out, metric, run.PerSecond(), "writes/s")
		measure.Result(out, metric+"/cpu", run.CPUPerOp(), "µs/write")
		return nil
	}
}

// driverStart creates a seeded database, then times the first open and query of a fresh child
// process, where the driver has done nothing yet.
func driverStart(fs *flag.FlagSet) runFunc {
	name := driverFlag(fs)
	return func(ctx context.Context, r *runner, out io.Writer) error {
		d, dir, err := r.driver(*name)
		if err != nil {
			return err
		}
		path := filepath.Join(dir, "start.db")
		db, _, err := driverbench.Create(ctx, d, path)
		if err != nil {
			return err
		}
		if err := db.Close(); err != nil {
			return err
		}
		self, err := os.Executable()
		if err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, self, "driver-start-child", "-driver", d.Name, "-db", path)
		cmd.Stdout, cmd.Stderr = out, os.Stderr
		return cmd.Run()
	}
}

func driverStartChild(fs *flag.FlagSet) runFunc {
	name := driverFlag(fs)
	path := fs.String("db", "", "seeded database to open")
	return func(ctx context.Context, _ *runner, out io.Writer) error {
		d, err := driverbench.ByName(*name)
		if err != nil {
			return err
		}
		took, err := driverbench.OpenToFirstQuery(ctx, d, *path)
		if err != nil {
			return err
		}
		measure.Result(out, fmt.Sprintf("driver/%s/open-to-first-query", d.Name), measure.Ms(took), "ms")
		return nil
	}
}

func driverRSS(fs *flag.FlagSet) runFunc {
	name := driverFlag(fs)
	writes := fs.Int("writes", 20000, "message creates to write (in commits of 64)")
	readers := fs.Int("readers", 4, "read connections to open and use, like storage/sqlite's pool")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		d, dir, err := r.driver(*name)
		if err != nil {
			return err
		}
		grew, err := driverbench.RSSGrowth(ctx, d, dir, *writes, *readers)
		if err != nil {
			return err
		}
		measure.Result(out, fmt.Sprintf("driver/%s/rss-growth", d.Name), measure.MiB(grew), "MiB")
		return nil
	}
}
