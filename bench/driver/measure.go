package driverbench

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"time"

	"bothy.dev/bothy/bench/internal/measure"
)

// Rate creates a database in dir with d and writes messages for dur, perCommit of them in each
// transaction, after a short warm-up. It returns the committed writes (with perCommit 1,
// transactions), the wall time and the process's CPU time.
func Rate(ctx context.Context, d Driver, dir string, perCommit int, dur time.Duration) (measure.Run, error) {
	db, fx, err := Create(ctx, d, filepath.Join(dir, d.Name+".db"))
	if err != nil {
		return measure.Run{}, err
	}
	defer db.Close()
	w, err := NewWriter(ctx, db, fx)
	if err != nil {
		return measure.Run{}, err
	}
	defer w.Close()
	for range max(1, 256/perCommit) { // warm-up: page cache, statement plans, WAL file
		if err := w.Commit(ctx, perCommit); err != nil {
			return measure.Run{}, err
		}
	}
	var r measure.Run
	start, cpu := time.Now(), measure.CPUTime()
	for time.Since(start) < dur {
		if err := w.Commit(ctx, perCommit); err != nil {
			return measure.Run{}, err
		}
		r.Ops += int64(perCommit)
	}
	r.Elapsed, r.CPU = time.Since(start), measure.CPUTime()-cpu
	return r, nil
}

// OpenToFirstQuery opens the existing database at path with d (the write connection, with all
// its pragmas) and times from sql.Open to the first query's answer. The first call in a
// process includes the driver's one-time start cost; later calls only a connection's.
func OpenToFirstQuery(ctx context.Context, d Driver, path string) (time.Duration, error) {
	start := time.Now()
	db, err := sql.Open(d.sqlName, dsn(path, writerPragmas))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM threads`).Scan(&n); err != nil {
		return 0, fmt.Errorf("driver: first query with %s: %w", d.Name, err)
	}
	took := time.Since(start)
	if n == 0 {
		return 0, fmt.Errorf("driver: %s has no threads: not a seeded database", path)
	}
	return took, nil
}

// RSSGrowth measures what a process keeps after using d like the appliance does: it creates a
// database in dir, opens a read pool of readers connections, writes writes messages in commits
// of 64 and returns the growth of the resident set, both readings taken after returning the
// Go heap's free memory to the OS. Run it once per fresh process: the first driver to run in a
// process pays for the runtime's own growth.
func RSSGrowth(ctx context.Context, d Driver, dir string, writes, readers int) (int64, error) {
	debug.FreeOSMemory()
	before, err := measure.RSS(0)
	if err != nil {
		return 0, err
	}
	path := filepath.Join(dir, d.Name+".db")
	db, fx, err := Create(ctx, d, path)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	rdb, err := OpenReaders(ctx, d, path, readers)
	if err != nil {
		return 0, err
	}
	defer rdb.Close()
	w, err := NewWriter(ctx, db, fx)
	if err != nil {
		return 0, err
	}
	defer w.Close()
	for done := 0; done < writes; done += 64 {
		if err := w.Commit(ctx, 64); err != nil {
			return 0, err
		}
	}
	if err := readOnEach(ctx, rdb, readers, `SELECT COUNT(*) FROM messages`); err != nil {
		return 0, err
	}
	debug.FreeOSMemory()
	after, err := measure.RSS(0)
	if err != nil {
		return 0, err
	}
	return after - before, nil
}
