// Package backupbench measures `bothy backup create` on a large database while a real bothy
// serve takes messages over HTTP at a fixed rate: the backup's rate in MB/s, and the latency of
// message create while the backup runs (the copy of the database is one read transaction, which
// must hold back no write).
package backupbench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"bothy.dev/bothy/app/kernel"
	httpbench "bothy.dev/bothy/bench/http"
	"bothy.dev/bothy/bench/internal/fixture"
	"bothy.dev/bothy/bench/internal/measure"
)

// Seed grows the database of a stopped serve to about size bytes with messages of about 2 KiB
// each, inserted with SQL in one transaction over the main threads of t (and authored by the
// owner), as bench/inbox seeds: the backup copies pages, whatever wrote them. It answers the
// messages inserted.
func Seed(ctx context.Context, db *sql.DB, t httpbench.Target, size int64) (int, error) {
	type thread struct{ id, channel, space string }
	var threads []thread
	for _, id := range t.Threads {
		var th thread
		if err := db.QueryRowContext(ctx, `SELECT id, channel_id, space_id FROM threads WHERE id = ?`, id).Scan(&th.id, &th.channel, &th.space); err != nil {
			return 0, fmt.Errorf("backupbench: thread %s: %w", id, err)
		}
		threads = append(threads, th)
	}
	if len(threads) == 0 {
		return 0, errors.New("backupbench: no thread to seed")
	}
	var author string
	if err := db.QueryRowContext(ctx, `SELECT id FROM principals WHERE is_owner = 1 LIMIT 1`).Scan(&author); err != nil {
		return 0, fmt.Errorf("backupbench: the owner: %w", err)
	}
	content := strings.Repeat(fixture.Content+" ", 2048/len(fixture.Content))
	const perRow = 4300 // the content, the ids and the indexes' share, as measured
	rows := int(size / perRow)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	const perInsert = 200
	q := `INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, created_at) VALUES ` + values(perInsert, 7)
	stmt, err := tx.PrepareContext(ctx, q)
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	now := fixture.Stamp(time.Now())
	args := make([]any, 0, perInsert*7)
	done := 0
	for done+perInsert <= rows {
		args = args[:0]
		for i := range perInsert {
			th := threads[(done+i)%len(threads)]
			args = append(args, string(kernel.NewID()), th.id, th.channel, th.space, author, content, now)
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return done, fmt.Errorf("backupbench: insert messages: %w", err)
		}
		done += perInsert
	}
	return done, tx.Commit()
}

func values(rows, cols int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(one+", ", rows), ", ")
}

// Result is one backup under load.
type Result struct {
	// Size is the backup's bytes (its parts), Took the whole of backup create (copy, hashes,
	// syncs and the check that reads it all back), Copy the copy of the database alone.
	Size       int64
	Took, Copy time.Duration
	// During are the latencies of the messages due while the backup ran; Outside those due
	// before and after it.
	During, Outside measure.Latencies
	// Posted is how many messages were created; WAL the largest size of the WAL seen.
	Posted int
	WAL    int64
}

// Backup makes the backup being measured and answers its size and how long its copy of the
// database took.
type Backup func(ctx context.Context) (size int64, copyTook time.Duration, err error)

// Measure offers rate messages per second over HTTP to t (workers clients send the due ones,
// open loop: a request's latency runs from when it was due), runs backup after warmup, and goes
// on for after once it has ended. wal is the path of serve's WAL, polled for its size.
func Measure(ctx context.Context, c *http.Client, t httpbench.Target, rate float64, workers int, warmup, after time.Duration,
	wal string, backup Backup) (Result, error) {
	if len(t.Tokens) == 0 || len(t.Threads) == 0 || rate <= 0 || workers < 1 {
		return Result{}, errors.New("backupbench: a target with tokens and threads, a positive rate and workers")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	interval := time.Duration(float64(time.Second) / rate)
	type sample struct {
		due time.Time
		lat time.Duration
	}
	var (
		mu      sync.Mutex
		samples []sample
		firstE  error
	)
	jobs := make(chan time.Time, 1<<16)
	var wg sync.WaitGroup
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				due, ok := <-jobs
				if !ok {
					return
				}
				err := httpbench.PostCreated(ctx, c, t.Base+"/api/v1/threads/"+t.Threads[(w+k)%len(t.Threads)]+"/messages", t.Tokens[w%len(t.Tokens)],
					[]byte(fmt.Sprintf(`{"content":"a message posted while the backup runs","client_msg_id":"b-%s-%d-%d"}`, run, w, k)))
				mu.Lock()
				if err != nil && firstE == nil && ctx.Err() == nil {
					firstE = err
				}
				if err == nil {
					samples = append(samples, sample{due, time.Since(due)})
				}
				mu.Unlock()
			}
		}()
	}
	var walMax int64
	walDone := make(chan struct{})
	go func() {
		defer close(walDone)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if fi, err := os.Stat(wal); err == nil && fi.Size() > walMax {
					walMax = fi.Size()
				}
			}
		}
	}()
	offerDone := make(chan struct{})
	stopOffer := make(chan struct{})
	go func() {
		defer close(offerDone)
		start := time.Now()
		for i := 0; ; i++ {
			due := start.Add(time.Duration(i) * interval)
			if d := time.Until(due); d > 0 {
				select {
				case <-time.After(d):
				case <-stopOffer:
					return
				}
			}
			select {
			case jobs <- due:
			case <-stopOffer:
				return
			}
		}
	}()

	time.Sleep(warmup)
	began := time.Now()
	size, copyTook, berr := backup(ctx)
	ended := time.Now()
	time.Sleep(after)
	close(stopOffer)
	<-offerDone
	close(jobs)
	wg.Wait()
	cancel()
	<-walDone
	if berr != nil {
		return Result{}, fmt.Errorf("backupbench: the backup: %w", berr)
	}
	if firstE != nil {
		return Result{}, fmt.Errorf("backupbench: a message create failed during the run: %w", firstE)
	}
	var during, outside []time.Duration
	for _, s := range samples {
		if !s.due.Before(began) && s.due.Before(ended) {
			during = append(during, s.lat)
		} else if !s.due.Before(began.Add(-warmup / 2)) {
			outside = append(outside, s.lat)
		}
	}
	if len(during) == 0 {
		return Result{}, errors.New("backupbench: no message was due while the backup ran")
	}
	return Result{Size: size, Took: ended.Sub(began), Copy: copyTook, During: measure.Summarise(during),
		Outside: measure.Summarise(outside), Posted: len(samples), WAL: walMax}, nil
}

// MBps is n bytes over d in MB/s (10^6 bytes).
func MBps(n int64, d time.Duration) float64 { return float64(n) / 1e6 / d.Seconds() }

// DirSize is the bytes of the files under dir.
func DirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	return n, err
}
