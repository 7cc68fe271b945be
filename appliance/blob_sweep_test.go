package appliance

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The periodic sweep of the blob store runs when the job runner starts: a temporary older than
// an hour that appeared after the store was opened (so the store's own sweep at its opening
// did not see it) goes, a recent one and a blob stay.
func TestBlobSweepJob(t *testing.T) {
	cfg := testConfig(t)
	a := mustNew(t, cfg)
	dir := filepath.Join(cfg.Server.DataDir, "files")
	key := "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	blob := filepath.Join(dir, key[0:2], key[2:4], key)
	old, recent := filepath.Join(dir, "tmp", "put-old"), filepath.Join(dir, "tmp", "put-recent")
	for _, d := range []string{filepath.Dir(blob), filepath.Dir(old)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{blob, old, recent} {
		if err := os.WriteFile(p, []byte("hello"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	twoHoursAgo := time.Now().Add(-2 * time.Hour)
	for _, p := range []string{blob, old} {
		if err := os.Chtimes(p, twoHoursAgo, twoHoursAgo); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, a)
	deadline := time.Now().Add(10 * time.Second)
	for exists(old) {
		if time.Now().After(deadline) {
			t.Fatal("the temporary older than an hour is still there 10 s after the runner started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var left []string
	for _, p := range []string{blob, recent} {
		if exists(p) {
			left = append(left, p)
		}
	}
	if !slices.Equal(left, []string{blob, recent}) {
		t.Fatalf("after the sweep %v is left, want the blob and the recent temporary", left)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
