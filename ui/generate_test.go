package ui

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedFilesAreCurrent regenerates every templ component into a copy of ui/ and fails
// when a committed *_templ.go differs from what its .templ generates, or is missing (CI must build what is committed):
// `make generate` was not run after a change.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	tmp := t.TempDir()
	committed := map[string][]byte{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !strings.HasSuffix(p, ".templ") && !strings.HasSuffix(p, "_templ.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, "_templ.go") {
			committed[p] = b
			return nil
		}
		dst := filepath.Join(tmp, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "tool", "templ", "generate", "-path", tmp, "-log-level", "warn")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go tool templ generate: %v\n%s", err, out)
	}
	generated := 0
	err = filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, "_templ.go") {
			return err
		}
		generated++
		rel, _ := filepath.Rel(tmp, p)
		want, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		got, ok := committed[rel]
		switch {
		case !ok:
			t.Errorf("%s is not committed: run make generate", rel)
		case !bytes.Equal(got, want):
			t.Errorf("%s is stale: run make generate", rel)
		}
		delete(committed, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range committed {
		t.Errorf("%s has no .templ any more: delete it", p)
	}
	if generated == 0 {
		t.Fatal("no templ file generated anything")
	}
}
