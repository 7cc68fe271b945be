package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"

	"modernc.org/sqlite"
)

// openSnapshotSource opens the existing database at path read-only (mode=ro) for a copy of it.
// It is OpenReadOnly without query_only, which SQLite takes to forbid VACUUM INTO even though
// the source is never written: the copy goes to another file.
func openSnapshotSource(ctx context.Context, path string, busyTimeout time.Duration) (*sql.DB, error) {
	return openReadOnly(ctx, path, busyTimeout, false)
}

// VacuumInto writes a consistent copy of the database at path to dest (which must not exist)
// with VACUUM INTO, on a read-only connection of its own. The copy is one read transaction:
// in WAL mode it sees the database as of its start and blocks no writer, in this process or
// another (a running `bothy serve`). The copy is compacted (no free pages) and in rollback
// journal mode; opening it with Open turns WAL on again.
func VacuumInto(ctx context.Context, path, dest string, busyTimeout time.Duration) error {
	db, err := openSnapshotSource(ctx, path, busyTimeout)
	if err != nil {
		return err
	}
	defer db.Close()
	stop := trickle(dest)
	_, err = db.ExecContext(ctx, "VACUUM INTO ?", dest)
	stop()
	if err != nil {
		return fmt.Errorf("sqlite: copy %s: %w", path, err)
	}
	return nil
}

// trickle starts the writeback of the file at path to the disk as it grows, every few
// megabytes, until stop is called. VACUUM INTO writes the copy into the page cache without a
// sync; left alone, the kernel writes a gigabyte of it in bursts and the fsync at the end
// writes the rest at once, and the server's own fsyncs of its WAL queue behind them. Started
// as it is written, the copy goes to the disk at an even pace.
func trickle(path string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var f *os.File
		defer func() {
			if f != nil {
				f.Close()
			}
		}()
		var started int64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if f == nil {
				var err error
				if f, err = os.Open(path); err != nil {
					f = nil
					continue
				}
			}
			fi, err := f.Stat()
			if err != nil {
				continue
			}
			if n := fi.Size() - started; n >= writebackEvery {
				startWriteback(f, started, n)
				started = fi.Size()
			}
		}
	}()
	return func() { close(done); <-finished }
}

// writebackEvery is how many bytes of the copy wait before their writeback is started.
const writebackEvery = 4 << 20

// BackupInto writes a consistent copy of the database at path to dest with SQLite's online
// backup API, all pages in one step, so that it is one read transaction like VACUUM INTO (in
// smaller steps a write by another connection restarts the copy from the first page, and
// under a steady write load it never ends). It copies pages as they are, free ones included.
// bench/backup compares it with VacuumInto.
func BackupInto(ctx context.Context, path, dest string, busyTimeout time.Duration) error {
	db, err := openSnapshotSource(ctx, path, busyTimeout)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	type backuper interface {
		NewBackup(string) (*sqlite.Backup, error)
	}
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(backuper)
		if !ok {
			return fmt.Errorf("sqlite: the driver's connection has no backup API")
		}
		b, err := c.NewBackup(fileURI(dest))
		if err != nil {
			return err
		}
		if _, err := b.Step(-1); err != nil {
			b.Finish()
			return err
		}
		return b.Finish()
	})
	if err != nil {
		return fmt.Errorf("sqlite: back up %s: %w", path, err)
	}
	// The copy has the source's header, WAL mode included: back to a rollback journal, like
	// VACUUM INTO's, so that it is one file.
	dst, err := sql.Open("sqlite", fileURI(dest))
	if err != nil {
		return err
	}
	defer dst.Close()
	if _, err := dst.ExecContext(ctx, "PRAGMA journal_mode=DELETE"); err != nil {
		return fmt.Errorf("sqlite: the copy of %s: %w", path, err)
	}
	return nil
}
