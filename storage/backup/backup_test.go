package backup_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage/backup"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/sqlite"
)

// instance is a data directory with a migrated database holding two files' rows, their blobs,
// and a blob no row names.
func instance(t *testing.T) (dataDir string, keys []string) {
	t.Helper()
	ctx := context.Background()
	dataDir = filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	w, r, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(dataDir, backup.DatabaseFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer r.Close()
	if _, err := migrate.Up(ctx, w, engine.SQLite, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	if _, err := w.Exec(`INSERT INTO principals (id, kind, handle, handle_key, display_name, status, is_owner, created_at, updated_at)
		VALUES ('p1', 'person', 'ada', 'ada', 'Ada', 'active', 1, ?, ?)`, now, now); err != nil {
		t.Fatal(err)
	}
	for i, body := range []string{"first file", "second file", "a blob no file names"} {
		sum := sha256.Sum256([]byte(body))
		key := hex.EncodeToString(sum[:])
		path := filepath.Join(dataDir, "files", key[0:2], key[2:4], key)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			continue
		}
		keys = append(keys, key)
		if _, err := w.Exec(`INSERT INTO files (id, uploader_id, name, content_type, size, sha256, thumb_state, created_at)
			VALUES (?, 'p1', 'f', 'text/plain', ?, ?, 'none', ?)`, "f"+key[:8], len(body), key, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Exec(`UPDATE sequence_counters SET value = 42 WHERE name = 'event_seq'`); err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return dataDir, keys
}

func create(t *testing.T, dataDir string) backup.Result {
	t.Helper()
	res, err := backup.Create(context.Background(), backup.CreateOptions{DataDir: dataDir,
		Dir: filepath.Join(t.TempDir(), "backups", "one"), BothyVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestCreateAndVerify(t *testing.T) {
	dataDir, keys := instance(t)
	res := create(t, dataDir)
	m := res.Manifest

	t.Run("the manifest holds the head, the counts and every part the database names", func(t *testing.T) {
		if m.Format != backup.FormatVersion || m.Engine != "sqlite" || m.HeadSeq != 42 || m.SchemaVersion == 0 || m.BothyVersion != "test" {
			t.Fatalf("manifest %+v", m)
		}
		if m.Counts["files"] != 2 || m.Counts["principals"] != 1 || m.Counts["blobs"] != 2 {
			t.Fatalf("counts %v", m.Counts)
		}
		var paths []string
		for _, p := range m.Parts {
			paths = append(paths, p.Path)
		}
		want := []string{backup.DatabaseFile}
		for _, k := range keys {
			want = append(want, "files/"+k[0:2]+"/"+k[2:4]+"/"+k)
		}
		if !slices.Equal(paths, want) {
			t.Fatalf("parts %v, want %v (not the blob no file names)", paths, want)
		}
		if _, err := backup.Verify(context.Background(), res.Dir); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("no temporary is left beside the backup", func(t *testing.T) {
		entries, _ := os.ReadDir(filepath.Dir(res.Dir))
		if len(entries) != 1 || entries[0].Name() != "one" {
			t.Fatalf("the backups' folder holds %v", entries)
		}
	})

	t.Run("a backup into a directory that exists is refused", func(t *testing.T) {
		_, err := backup.Create(context.Background(), backup.CreateOptions{DataDir: dataDir, Dir: res.Dir})
		if err == nil || !strings.Contains(err.Error(), "exists") {
			t.Fatalf("err %v", err)
		}
	})

	damage := []struct {
		name, part, detail string
		do                 func(t *testing.T, dir string)
	}{
		{"a flipped byte in the database", backup.DatabaseFile, "SHA-256", func(t *testing.T, dir string) {
			flip(t, filepath.Join(dir, backup.DatabaseFile), 5000)
		}},
		{"a flipped byte in a file", blobRel(keys[1]), "SHA-256", func(t *testing.T, dir string) {
			flip(t, filepath.Join(dir, filepath.FromSlash(blobRel(keys[1]))), 0)
		}},
		{"a missing file", blobRel(keys[0]), "missing", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(blobRel(keys[0])))); err != nil {
				t.Fatal(err)
			}
		}},
		{"a file the manifest does not list", "files/extra", "not listed", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "files", "extra"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"a missing manifest", backup.ManifestFile, "missing", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, backup.ManifestFile)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, d := range damage {
		t.Run(d.name+" fails verify naming the part", func(t *testing.T) {
			dir := copyDir(t, res.Dir)
			d.do(t, dir)
			_, err := backup.Verify(context.Background(), dir)
			var pe *backup.PartError
			if !errors.As(err, &pe) || pe.Part != d.part || !strings.Contains(pe.Detail, d.detail) {
				t.Fatalf("err %v, want the part %s: %s", err, d.part, d.detail)
			}
			target := filepath.Join(t.TempDir(), "restored")
			if _, err := backup.Restore(context.Background(), dir, target, nil); err == nil {
				t.Fatal("a damaged backup was restored")
			}
			if _, err := os.Stat(target); err == nil {
				t.Fatal("a refused restore left the data directory")
			}
		})
	}
}

func TestRestore(t *testing.T) {
	dataDir, keys := instance(t)
	res := create(t, dataDir)

	t.Run("into a directory that is not empty is refused and changes nothing", func(t *testing.T) {
		target := t.TempDir()
		if err := os.WriteFile(filepath.Join(target, "mine"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := backup.Restore(context.Background(), res.Dir, target, nil); !errors.Is(err, backup.ErrNotEmpty) {
			t.Fatalf("err %v", err)
		}
		if entries, _ := os.ReadDir(target); len(entries) != 1 {
			t.Fatalf("the directory holds %d entries", len(entries))
		}
	})

	for name, target := range map[string]string{"absent": filepath.Join(t.TempDir(), "new"), "empty": t.TempDir()} {
		t.Run("into an "+name+" directory gives the database and the files back", func(t *testing.T) {
			m, err := backup.Restore(context.Background(), res.Dir, target, nil)
			if err != nil {
				t.Fatal(err)
			}
			if m.HeadSeq != 42 {
				t.Fatalf("head %d", m.HeadSeq)
			}
			for _, k := range keys {
				b, err := os.ReadFile(filepath.Join(target, filepath.FromSlash(blobRel(k))))
				if sum := sha256.Sum256(b); err != nil || hex.EncodeToString(sum[:]) != k {
					t.Fatalf("blob %s: %v", k, err)
				}
			}
			db, err := sqlite.OpenReadOnly(context.Background(), filepath.Join(target, backup.DatabaseFile), 0)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var head, files int64
			if err := db.QueryRow(`SELECT (SELECT value FROM sequence_counters WHERE name = 'event_seq'), (SELECT COUNT(*) FROM files)`).Scan(&head, &files); err != nil || head != 42 || files != 2 {
				t.Fatalf("restored head %d, files %d, %v", head, files, err)
			}
			if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o700 {
				t.Fatalf("the data directory: %v %v", fi.Mode(), err)
			}
		})
	}
}

func TestFilesOnly(t *testing.T) {
	dataDir, _ := instance(t)
	res, err := backup.Create(context.Background(), backup.CreateOptions{DataDir: dataDir, Dir: filepath.Join(t.TempDir(), "f"),
		FilesOnly: true, Engine: "postgres"})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Manifest
	if !m.FilesOnly || m.Engine != "postgres" || m.Counts["blobs"] != 3 || len(m.Parts) != 3 {
		t.Fatalf("manifest %+v: want every blob of the directory, no database", m)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, backup.DatabaseFile)); err == nil {
		t.Fatal("a files-only backup holds a database")
	}
	if _, err := backup.Verify(context.Background(), res.Dir); err != nil {
		t.Fatal(err)
	}
}

func TestPrune(t *testing.T) {
	dataDir, _ := instance(t)
	dir := filepath.Join(t.TempDir(), "backups")
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var made []string
	for i := range 4 {
		at := base.Add(time.Duration(i) * time.Hour)
		res, err := backup.Create(context.Background(), backup.CreateOptions{DataDir: dataDir, Dir: filepath.Join(dir, backup.Name(at)),
			Now: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, res.Dir)
	}
	other := filepath.Join(dir, "not-a-backup")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	removed, err := backup.Prune(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if !slices.Equal(removed, made[:2]) {
		t.Fatalf("removed %v, want the two oldest %v", removed, made[:2])
	}
	for _, p := range append(made[2:], other) {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is gone: %v", p, err)
		}
	}
}

func blobRel(key string) string { return "files/" + key[0:2] + "/" + key[2:4] + "/" + key }

func flip(t *testing.T, path string, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x01
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	return dst
}
