package storage_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/storetest"
)

// BenchmarkRunPatch measures the store's side of one streamed patch (PATCH with 50 bytes of
// output_append) on a run whose output is 1 KiB and on one whose output is 200 KiB:
//
//   - "parts" is what runs.Service.Patch writes: RunHead, then PatchRun with the new part. Its
//     cost must not grow with the output.
//   - "parts+readback" adds the read of the whole run that PATCH answers with.
//   - "whole" is how a patch was stored before migration 0011, for comparison: read the run with
//     its document, append, write the whole document back.
//
// On PostgreSQL wal-B/op is the WAL the patch wrote (pg_current_wal_lsn).
func BenchmarkRunPatch(b *testing.B) {
	storetest.Bench(b, func(b *testing.B, eng storetest.Engine) {
		db := eng.Open(b, storage.Options{})
		st := storage.NewRunStore(db)
		chunk := benchText(49) + "\n"
		for _, size := range []int{1 << 10, 200 << 10} {
			name := map[int]string{1 << 10: "1KiB", 200 << 10: "200KiB"}[size]
			for _, way := range []string{"parts", "parts+readback", "whole"} {
				b.Run(way+"/"+name, func(b *testing.B) {
					// A run takes at most 500 patches (25 KB), so that 200 KiB stays below the bound.
					pool := make([]kernel.ID, (b.N+499)/500)
					for i := range pool {
						pool[i] = benchRun(b, db, st, size).ID
					}
					wal := walBytes(b, db)
					b.ResetTimer()
					for i := range b.N {
						id := pool[i/500]
						switch way {
						case "parts":
							benchPatchParts(b, db, st, id, chunk, false)
						case "parts+readback":
							benchPatchParts(b, db, st, id, chunk, true)
						case "whole":
							benchPatchWhole(b, db, st, id, chunk)
						}
					}
					b.StopTimer()
					b.ReportMetric(float64(walBytes(b, db)-wal)/float64(b.N), "wal-B/op")
				})
			}
		}
	})
}

// benchText is n bytes of random letters: PostgreSQL compresses what it stores out of line, and
// a repeated letter would make the whole document cost nothing to write.
func benchText(n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return string(b)
}

// benchRun makes a running run whose output is size bytes, in one part.
func benchRun(b *testing.B, db *storage.DB, st *storage.RunStore, size int) runs.Run {
	b.Helper()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ts := at.Format("2006-01-02T15:04:05.000000Z")
	p, sp, c, th := kernel.NewID(), kernel.NewID(), kernel.NewID(), kernel.NewID()
	for _, q := range []string{
		`INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at)
			VALUES ('` + string(p) + `', 'agent', 'b` + string(p) + `', 'b` + string(p) + `', 'Bot', '` + ts + `', '` + ts + `')`,
		`INSERT INTO spaces (id, name, created_by, created_at, updated_at) VALUES ('` + string(sp) + `', 'S', '` + string(p) + `', '` + ts + `', '` + ts + `')`,
		`INSERT INTO channels (id, space_id, name, main_thread_id, created_by, created_at, updated_at)
			VALUES ('` + string(c) + `', '` + string(sp) + `', 'c', '` + string(th) + `', '` + string(p) + `', '` + ts + `', '` + ts + `')`,
		`INSERT INTO threads (id, channel_id, space_id, created_by, created_at, updated_at)
			VALUES ('` + string(th) + `', '` + string(c) + `', '` + string(sp) + `', '` + string(p) + `', '` + ts + `', '` + ts + `')`,
	} {
		storage.ExecInTest(b, db, q)
	}
	r := runs.Run{Summary: runs.Summary{ID: kernel.NewID(), AgentID: p, ThreadID: th, ChannelID: c, SpaceID: sp, InvokedBy: p,
		Status: runs.StatusRunning, CreatedAt: at, StartedAt: &at, LastActivityAt: at, UpdatedAt: at},
		Document: runs.Document{Status: "Writing", Output: benchText(size)}}
	if err := db.Do(context.Background(), func(ctx context.Context) error { return st.CreateRun(ctx, r) }); err != nil {
		b.Fatal(err)
	}
	return r
}

// benchPatchParts stores one patch as runs.Service.Patch does.
func benchPatchParts(b *testing.B, db *storage.DB, st *storage.RunStore, id kernel.ID, chunk string, readBack bool) runs.Run {
	var out runs.Run
	err := db.Do(context.Background(), func(ctx context.Context) error {
		r, err := st.RunHead(ctx, id)
		if err != nil {
			return err
		}
		p := runs.Patch{Version: r.Version + 1, OutputAppend: chunk}
		doc, n, err := runs.ApplyHead(r.Document, r.OutputBytes, p)
		if err != nil {
			return err
		}
		r.Document, r.OutputBytes, r.Version = doc, n, doc.Version
		if err := st.PatchRun(ctx, r, p); err != nil {
			return err
		}
		out = r
		if readBack {
			out, err = st.Run(ctx, id)
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// benchPatchWhole stores one patch as the store did before 0011: the whole document, read and
// written back (here into the document column, which then holds the output too).
func benchPatchWhole(b *testing.B, db *storage.DB, st *storage.RunStore, id kernel.ID, chunk string) {
	err := db.Do(context.Background(), func(ctx context.Context) error {
		var text string
		if err := storage.ScanIn(ctx, db, `SELECT document FROM runs WHERE id = ?`, &text, string(id)); err != nil {
			return err
		}
		var doc runs.Document
		if err := json.Unmarshal([]byte(text), &doc); err != nil {
			return err
		}
		if doc.Output == "" {
			whole, err := st.Run(ctx, id)
			if err != nil {
				return err
			}
			doc.Output = whole.Document.Output
		}
		doc, err := runs.Apply(doc, runs.Patch{Version: doc.Version + 1, OutputAppend: chunk})
		if err != nil {
			return err
		}
		enc, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		_, err = storage.ExecIn(ctx, db, `UPDATE runs SET document = ?, last_activity_at = last_activity_at WHERE id = ?`, string(enc), string(id))
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}

// walBytes is PostgreSQL's WAL position in bytes; 0 on SQLite, whose writer checkpoints on its
// own so that the WAL file's size says little.
func walBytes(b *testing.B, db *storage.DB) int64 {
	b.Helper()
	switch db.Dialect().Name() {
	case engine.SQLite:
		return 0
	case engine.Postgres:
		var n int64
		if err := storage.ScanIn(context.Background(), db, `SELECT (pg_current_wal_lsn() - '0/0')::bigint`, &n); err != nil {
			b.Fatal(err)
		}
		return n
	default:
		panic("unknown dialect " + db.Dialect().Name())
	}
}
