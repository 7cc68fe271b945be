// Package size measures what a message costs on disk: it posts messages of a given length
// through a real bothy serve over HTTP, the whole write path (the message row, its event in the
// log, the search index, the counters, every index), and reads how much the database grew,
// table by table and index by index: dbstat on SQLite, pg_total_relation_size on PostgreSQL.
package size

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	httpbench "bothy.dev/bothy/bench/http"
)

// Relation is the bytes one table or index uses (with its TOAST and indexes, on PostgreSQL).
type Relation struct {
	Name  string
	Bytes int64
}

// Sizes reads the bytes of every relation of a bothy database.
type Sizes func(ctx context.Context) ([]Relation, error)

// SQLite reads dbstat of the database on db: the pages each table and index uses, the WAL's
// pages included, free pages not.
func SQLite(db *sql.DB) Sizes {
	return func(ctx context.Context) ([]Relation, error) {
		return relations(ctx, db, `SELECT name, SUM(pgsize) FROM dbstat GROUP BY name`)
	}
}

// Postgres reads the size of every table of the public schema (heap and TOAST, pg_table_size)
// and of every index on them (pg_relation_size): together pg_total_relation_size of the tables.
func Postgres(db *sql.DB) Sizes {
	return func(ctx context.Context) ([]Relation, error) {
		return relations(ctx, db, `SELECT c.relname, CASE WHEN c.relkind = 'i' THEN pg_relation_size(c.oid) ELSE pg_table_size(c.oid) END
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'm', 'i')`)
	}
}

func relations(ctx context.Context, db *sql.DB, q string) ([]Relation, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Relation
	for rows.Next() {
		var r Relation
		if err := rows.Scan(&r.Name, &r.Bytes); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Content is a message of n bytes: words of a typical chat line, cut to length.
func Content(n int) string {
	const line = "the deploy finished on node two and the canary looks healthy, ping me if the p99 moves again. "
	s := strings.Repeat(line, n/len(line)+1)[:n]
	return strings.TrimRight(s, " ") + strings.Repeat(".", n-len(strings.TrimRight(s, " ")))
}

// Result is the growth of a database by n messages.
type Result struct {
	Messages int
	// Growth is each relation's growth, largest first.
	Growth []Relation
	Total  int64
}

// PerMessage is the bytes a message costs, every relation counted.
func (r Result) PerMessage() float64 { return float64(r.Total) / float64(r.Messages) }

// Measure posts n messages of content to the target's threads with 8 clients, each with a
// client_msg_id as the console sends, and returns how much the relations of sizes grew.
func Measure(ctx context.Context, c *http.Client, t httpbench.Target, sizes Sizes, n int, content string) (Result, error) {
	before, err := sizes(ctx)
	if err != nil {
		return Result{}, err
	}
	if err := post(ctx, c, t, n, content); err != nil {
		return Result{}, err
	}
	after, err := sizes(ctx)
	if err != nil {
		return Result{}, err
	}
	was := map[string]int64{}
	for _, r := range before {
		was[r.Name] = r.Bytes
	}
	res := Result{Messages: n}
	for _, r := range after {
		g := Relation{Name: r.Name, Bytes: r.Bytes - was[r.Name]}
		if g.Bytes != 0 {
			res.Growth = append(res.Growth, g)
		}
		res.Total += g.Bytes
	}
	sort.Slice(res.Growth, func(i, j int) bool { return res.Growth[i].Bytes > res.Growth[j].Bytes })
	return res, nil
}

func post(ctx context.Context, c *http.Client, t httpbench.Target, n int, content string) error {
	if len(t.Tokens) == 0 || len(t.Threads) == 0 {
		return errors.New("size: the target has no token or no thread")
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int(next.Add(1)); k <= n && ctx.Err() == nil; k = int(next.Add(1)) {
				body, _ := json.Marshal(map[string]string{"content": content, "client_msg_id": fmt.Sprintf("%s-%d", run, k)})
				url := t.Base + "/api/v1/threads/" + t.Threads[k%len(t.Threads)] + "/messages"
				if err := httpbench.PostCreated(ctx, c, url, t.Tokens[w%len(t.Tokens)], body); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
