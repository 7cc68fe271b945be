package notifybench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/bench/internal/fixture"
)

// TestSeedMembers holds that the seed writes each member as an active person with the grant the
// channel's first member holds, and no notification level.
func TestSeedMembers(t *testing.T) {
	ctx := context.Background()
	w, r, err := fixture.OpenMigrated(ctx, filepath.Join(t.TempDir(), "bothy.db"), "NORMAL")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fx, err := fixture.Seed(ctx, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch := fx.Threads[0].ChannelID
	now := fixture.Stamp(time.Now())
	if _, err := w.ExecContext(ctx, `INSERT INTO grants (id, resource_kind, resource_id, principal_id, level, level_rank, created_by, created_at) VALUES (?, 'channel', ?, ?, 'post', 2, ?, ?)`,
		string(kernel.NewID()), string(ch), string(fx.AuthorID), string(fx.AuthorID), now); err != nil {
		t.Fatal(err)
	}
	if err := SeedMembers(ctx, w, Instance{ChannelID: string(ch)}, 25); err != nil {
		t.Fatal(err)
	}
	var people, grants, levels int
	if err := w.QueryRowContext(ctx, `SELECT COUNT(*) FROM principals WHERE kind = 'person' AND status = 'active' AND handle LIKE 'member%'`).Scan(&people); err != nil {
		t.Fatal(err)
	}
	if err := w.QueryRowContext(ctx, `SELECT COUNT(*) FROM grants WHERE resource_id = ? AND level = 'post' AND level_rank = 2`, string(ch)).Scan(&grants); err != nil {
		t.Fatal(err)
	}
	if err := w.QueryRowContext(ctx, `SELECT COUNT(*) FROM notification_levels`).Scan(&levels); err != nil {
		t.Fatal(err)
	}
	if people != 25 || grants != 26 || levels != 0 {
		t.Fatalf("%d members, %d grants, %d levels; want 25, 26, 0", people, grants, levels)
	}
}
