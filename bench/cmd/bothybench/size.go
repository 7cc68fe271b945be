package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"bothy.dev/bothy/bench/internal/measure"
	sizebench "bothy.dev/bothy/bench/size"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/postgres"
	"bothy.dev/bothy/storage/sqlite"
)

// The scenario of bench/size: the bytes a message costs in the database, on both engines.

func dbSize(fs *flag.FlagSet) runFunc {
	messages := fs.Int("messages", 20000, "messages posted over HTTP")
	length := fs.Int("content-bytes", 70, "bytes of each message's content")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		s, err := r.startServer(ctx, 8)
		if err != nil {
			return err
		}
		var db *sql.DB
		var sizes sizebench.Sizes
		if *r.engine == engine.Postgres {
			w, rd, err := postgres.Open(ctx, postgres.Options{URL: s.dbURL, MaxOpenConns: 1})
			if err != nil {
				return err
			}
			w.Close()
			db, sizes = rd, sizebench.Postgres(rd)
		} else {
			if db, err = sqlite.OpenReadOnly(ctx, filepath.Join(s.dataDir, "bothy.db"), 5*time.Second); err != nil {
				return err
			}
			sizes = sizebench.SQLite(db)
		}
		defer db.Close()
		res, err := sizebench.Measure(ctx, s.client, s.target, sizes, *messages, sizebench.Content(*length))
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%sstorage/bytes-per-message@%d-bytes", r.prefix(), *length)
		measure.Result(out, name, res.PerMessage(), "bytes")
		for _, g := range res.Growth {
			fmt.Fprintf(os.Stderr, "bothybench: %-40s %12d bytes  %8.1f per message\n", g.Name, g.Bytes, float64(g.Bytes)/float64(res.Messages))
		}
		return nil
	}
}
