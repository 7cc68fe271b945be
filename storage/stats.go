package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"bothy.dev/bothy/app/stats"
	"bothy.dev/bothy/storage/commit"
	"bothy.dev/bothy/storage/engine"
)

// StatsStore implements stats.Store: reads only, on the read pool.
type StatsStore struct{ db *DB }

var _ stats.Store = (*StatsStore)(nil)

// NewStatsStore returns the statistics repository on db.
func NewStatsStore(db *DB) *StatsStore { return &StatsStore{db: db} }

// countsQuery is one round trip. Messages and runs, the tables that grow, are counted with the
// writes (statCounts); principals, spaces and channels stay small.
const countsQuery = `SELECT
	(SELECT COUNT(*) FROM principals WHERE kind = 'person'),
	(SELECT COUNT(*) FROM principals WHERE kind = 'agent'),
	(SELECT COUNT(*) FROM spaces),
	(SELECT COUNT(*) FROM channels WHERE kind = 'channel'),
	COALESCE((SELECT value FROM stat_totals WHERE name = 'messages'), 0),
	COALESCE((SELECT value FROM stat_totals WHERE name = 'runs'), 0)`

// Counts implements stats.Store.
func (s *StatsStore) Counts(ctx context.Context) (stats.Counts, error) {
	var c stats.Counts
	err := s.db.q(ctx).QueryRowContext(ctx, countsQuery).Scan(&c.People, &c.Agents, &c.Spaces, &c.Channels, &c.Messages, &c.Runs)
	return c, s.db.mapErr(err, "stats")
}

// Kinds of counted rows, the names of stat_totals and stat_hours.
const (
	statMessages = "messages"
	statRuns     = "runs"
)

// hourOf is the hour of a fixed-width time: its first 13 characters, 2006-01-02T15.
func hourOf(t time.Time) string { return fmtTime(t)[:13] }

// statCounts are the rows the units of a batch created, by hour and kind (keys "hour name"), added to the totals
// and to the hours once per key at the batch's commit: one statement per key and batch, not per
// row, and none of the COUNT(*) a read would otherwise need.
var statCounts = commit.NewAtCommitAll(func(a, b int64) int64 { return a + b }, func(exec func(q string, args ...any) error, keys []string, vals map[string]int64) error {
	totals := map[string]int64{}
	var names []string
	for _, k := range keys {
		hour, name, _ := strings.Cut(k, " ")
		if _, ok := totals[name]; !ok {
			names = append(names, name)
		}
		totals[name] += vals[k]
		if err := exec(`INSERT INTO stat_hours (hour, name, value) VALUES (?, ?, ?)
			ON CONFLICT (hour, name) DO UPDATE SET value = stat_hours.value + excluded.value`, hour, name, vals[k]); err != nil {
			return fmt.Errorf("count by hour: %w", err)
		}
	}
	for _, name := range names {
		if err := exec(`INSERT INTO stat_totals (name, value) VALUES (?, ?)
			ON CONFLICT (name) DO UPDATE SET value = stat_totals.value + excluded.value`, name, totals[name]); err != nil {
			return fmt.Errorf("count: %w", err)
		}
	}
	return nil
})

// countCreated counts a row of kind name created at t, at the commit of the Unit of Work of ctx.
func (db *DB) countCreated(ctx context.Context, name string, t time.Time) {
	if !statCounts.Record(ctx, hourOf(t)+" "+name, 1) {
		panic("storage: a counted row written outside a unit of work")
	}
}

// Hourly implements stats.Store: the counted rows of the n hours from first, read from
// stat_hours (one range of its primary key).
func (s *StatsStore) Hourly(ctx context.Context, first time.Time, n int) ([]stats.HourCount, error) {
	if n <= 0 {
		return nil, nil
	}
	from, to := hourOf(first), hourOf(first.Add(time.Duration(n)*time.Hour))
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT hour, name, value FROM stat_hours WHERE hour >= ? AND hour < ?`, from, to)
	if err != nil {
		return nil, s.db.mapErr(err, "stats")
	}
	defer rows.Close()
	at := make(map[string]int, n)
	for i := range n {
		at[hourOf(first.Add(time.Duration(i)*time.Hour))] = i
	}
	out := make([]stats.HourCount, n)
	for rows.Next() {
		var hour, name string
		var v int64
		if err := rows.Scan(&hour, &name, &v); err != nil {
			return nil, s.db.mapErr(err, "stats")
		}
		i, ok := at[hour]
		if !ok {
			continue
		}
		switch name {
		case statMessages:
			out[i].Messages = v
		case statRuns:
			out[i].Runs = v
		}
	}
	return out, s.db.mapErr(rows.Err(), "stats")
}

// DatabaseSize implements stats.Store. SQLite: the sizes of the main database file and of its
// write-ahead log, found by PRAGMA database_list (an in-memory database has no file: 0).
// PostgreSQL: pg_database_size of the current database, which includes its indexes.
func (s *StatsStore) DatabaseSize(ctx context.Context) (stats.Database, error) {
	eng := s.db.dialect.Name()
	d := stats.Database{Engine: string(eng)}
	switch eng {
	case engine.SQLite:
		rows, err := s.db.readDB.QueryContext(ctx, `PRAGMA database_list`)
		if err != nil {
			return d, s.db.mapErr(err, "stats")
		}
		defer rows.Close()
		var file string
		for rows.Next() {
			var seq int
			var name, path string
			if err := rows.Scan(&seq, &name, &path); err != nil {
				return d, s.db.mapErr(err, "stats")
			}
			if name == "main" {
				file = path
			}
		}
		if err := rows.Err(); err != nil {
			return d, s.db.mapErr(err, "stats")
		}
		if file == "" {
			return d, nil
		}
		if d.Bytes, err = fileSize(file); err != nil {
			return d, err
		}
		if d.WAL, err = fileSize(file + "-wal"); err != nil {
			return d, err
		}
		return d, nil
	case engine.Postgres:
		err := s.db.q(ctx).QueryRowContext(ctx, `SELECT pg_database_size(current_database())`).Scan(&d.Bytes)
		return d, s.db.mapErr(err, "stats")
	default:
		panic("storage: unknown dialect " + d.Engine)
	}
}

// fileSize is the size of the file at path, 0 when there is none (a WAL after a checkpoint that
// truncated it, or before the first write).
func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
