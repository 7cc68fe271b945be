package migrate

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"bothy.dev/bothy/storage/engine"
)

// 0011 moves the output of the runs out of their document into run_output: each run reads back
// whole (its document without output, its output in part 0 with its length), and a run without
// output has no part.
func TestRunOutputMigration(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, eng engine.Name) {
		w, r, _ := openEmpty(t, eng)
		if _, err := up(ctx, w, until(t, eng, 10), eng, nil); err != nil {
			t.Fatal(err)
		}
		const at = "2026-03-01T10:00:00.000000Z"
		output := "Hello, wörld — \"quoted\"\n\t" + strings.Repeat("é", 1000)
		doc, err := json.Marshal(map[string]any{"version": 3, "status": "Writing",
			"steps":  []map[string]string{{"id": "s1", "kind": "thought", "title": "Think", "status": "done", "detail": ""}},
			"output": output})
		if err != nil {
			t.Fatal(err)
		}
		run := func(id, doc string) string {
			return `INSERT INTO runs (id, agent_id, thread_id, channel_id, space_id, invoked_by, status, version, document,
				created_at, last_activity_at, updated_at)
				VALUES ('` + id + `', 'p2', 't1', 'c1', 'sp1', 'p1', 'running', 3, '` + strings.ReplaceAll(doc, "'", "''") + `',
				'` + at + `', '` + at + `', '` + at + `')`
		}
		for _, q := range []string{
			`INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at)
				VALUES ('p1', 'person', 'pia', 'pia', 'Pia', '` + at + `', '` + at + `'),
				('p2', 'agent', 'bot', 'bot', 'Bot', '` + at + `', '` + at + `')`,
			`INSERT INTO spaces (id, name, created_by, created_at, updated_at) VALUES ('sp1', 'Home', 'p1', '` + at + `', '` + at + `')`,
			`INSERT INTO channels (id, space_id, name, main_thread_id, created_by, created_at, updated_at)
				VALUES ('c1', 'sp1', 'general', 't1', 'p1', '` + at + `', '` + at + `')`,
			`INSERT INTO threads (id, channel_id, space_id, created_by, created_at, updated_at)
				VALUES ('t1', 'c1', 'sp1', 'p1', '` + at + `', '` + at + `')`,
			run("r1", string(doc)),
			run("r2", `{"version":3,"status":"","steps":[],"output":""}`),
		} {
			if _, err := w.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		applied, err := Up(ctx, w, eng, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) == 0 || applied[0].Version != 11 {
			t.Fatalf("applied %v, want 0011 first", versions(applied))
		}

		read := func(id string) (doc map[string]any, bytes int, parts []string) {
			t.Helper()
			var text string
			if err := r.QueryRowContext(ctx, `SELECT document, output_bytes FROM runs WHERE id = '`+id+`'`).Scan(&text, &bytes); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(text), &doc); err != nil {
				t.Fatalf("%s: %v", text, err)
			}
			rows, err := r.QueryContext(ctx, `SELECT part, text FROM run_output WHERE run_id = '`+id+`' ORDER BY part`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var part int
				var s string
				if err := rows.Scan(&part, &s); err != nil {
					t.Fatal(err)
				}
				if part != 0 {
					t.Fatalf("part %d", part)
				}
				parts = append(parts, s)
			}
			return doc, bytes, parts
		}
		doc1, n, parts := read("r1")
		if _, ok := doc1["output"]; ok || doc1["status"] != "Writing" || len(doc1["steps"].([]any)) != 1 {
			t.Fatalf("document after 0011: %v", doc1)
		}
		if n != len(output) || len(parts) != 1 || parts[0] != output {
			t.Fatalf("output after 0011: %d bytes, parts %q", n, parts)
		}
		doc2, n, parts := read("r2")
		if _, ok := doc2["output"]; ok || n != 0 || len(parts) != 0 {
			t.Fatalf("a run without output after 0011: %v, %d bytes, parts %q", doc2, n, parts)
		}
	})
}
