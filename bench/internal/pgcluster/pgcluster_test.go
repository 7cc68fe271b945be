package pgcluster

import (
	"context"
	"testing"

	"bothy.dev/bothy/storage/postgres"
	"bothy.dev/bothy/storage/storetest/pgdb"
)

// TestCluster needs BOTHY_TEST_POSTGRES_URL (a cluster on this machine, as .ci/pg starts one).
func TestCluster(t *testing.T) {
	ctx := context.Background()
	c, err := Connect(ctx, pgdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before, err := c.CPU()
	if err != nil || before <= 0 {
		t.Fatalf("the cluster's CPU: %v, %v (its postmaster is %d)", before, err, c.postmaster)
	}
	d, err := c.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, r, err := postgres.Open(ctx, postgres.Options{URL: d.URL, MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	var name string
	if err := w.QueryRowContext(ctx, `SELECT current_database()`).Scan(&name); err != nil || name != d.Name {
		t.Fatalf("connected to %q, %v; want %q", name, err, d.Name)
	}
	w.Close()
	r.Close()
	if err := d.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := pgdb.Exists(ctx, c.admin, d.Name); err != nil || ok {
		t.Fatalf("%s still exists (%v)", d.Name, err)
	}
	after, err := c.CPU()
	if err != nil || after < before { // 10 ms ticks: a cheap create and drop may not show
		t.Fatalf("the cluster's CPU went from %v to %v, %v", before, after, err)
	}
}
