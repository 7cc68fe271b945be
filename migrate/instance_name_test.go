package migrate

import (
	"context"
	"testing"

	"bothy.dev/bothy/storage/engine"
)

// 0009 names an instance that exists already, with its setup done and messages in it: the row
// keeps its setup and gets the default name, and the messages stay.
func TestInstanceNameMigration(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, eng engine.Name) {
		_, r := across(t, eng, 9, append([]string{`UPDATE instance SET setup_completed_at = '` + fixtureAt + `' WHERE id = 1`}, chatFixture...)...)
		var name, done string
		if err := r.QueryRowContext(ctx, `SELECT name, setup_completed_at FROM instance WHERE id = 1`).Scan(&name, &done); err != nil {
			t.Fatal(err)
		}
		if name != "bothy" || done != fixtureAt {
			t.Fatalf("instance after 0009: name %q, setup_completed_at %q", name, done)
		}
		var n int
		if err := r.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages WHERE created_at >= '`+fixtureAt+`'`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d messages after 0009, %v", n, err)
		}
	})
}
