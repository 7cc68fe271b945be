package blobs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFS(t *testing.T) {
	runSuite(t, func(t *testing.T) store {
		dir := filepath.Join(t.TempDir(), "files")
		f, err := NewFS(dir)
		if err != nil {
			t.Fatal(err)
		}
		return store{Blobs: f, contents: func(t *testing.T) []string { return filesUnder(t, dir) }}
	})
}

// filesUnder names every file (not folder) below dir, temporaries included.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if path == dir && errors.Is(err, fs.ErrNotExist) {
			return filepath.SkipDir // nothing written yet: NewFS makes the directory on the first write
		}
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

func TestFSLayout(t *testing.T) {
	dir := t.TempDir()
	f, err := NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b, err := f.Put(ctx, strings.NewReader("hello"), 10)
	if err != nil {
		t.Fatal(err)
	}
	up := "0190b8a0-0000-7000-8000-000000000001"
	if _, err := f.PutPart(ctx, kernelID(up), 3, strings.NewReader("part"), 10); err != nil {
		t.Fatal(err)
	}
	want := []string{b.Key[0:2] + "/" + b.Key[2:4] + "/" + b.Key, "uploads/" + up + "/3"}
	if got := filesUnder(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
}

func TestFSNewSweepsOnlyOldTemporaries(t *testing.T) {
	dir := t.TempDir()
	if _, err := NewFS(dir); err != nil {
		t.Fatal(err)
	}
	old, recent := filepath.Join(dir, "tmp", "put-old"), filepath.Join(dir, "tmp", "put-recent")
	for _, p := range []string{old, recent} {
		if err := os.WriteFile(p, []byte("left by a crash"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	twoHoursAgo := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, twoHoursAgo, twoHoursAgo); err != nil {
		t.Fatal(err)
	}
	f, err := NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := filesUnder(t, dir); !slices.Equal(got, []string{"tmp/put-recent"}) {
		t.Fatalf("after NewFS: %v, want only the recent temporary", got)
	}
	if err := f.Sweep(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if got := filesUnder(t, dir); len(got) != 0 {
		t.Fatalf("after Sweep(0): %v", got)
	}
}

// A Put that is still reading its body keeps its temporary through a Sweep, however old.
func TestFSSweepLeavesAPutInProgress(t *testing.T) {
	dir := t.TempDir()
	f, err := NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	type result struct {
		key string
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := f.Put(context.Background(), pr, 1<<20)
		done <- result{b.Key, err}
	}()
	if _, err := pw.Write([]byte("first half ")); err != nil {
		t.Fatal(err)
	}
	// The write above returned, so Put has read it: its temporary exists.
	if got := filesUnder(t, dir); len(got) != 1 || !strings.HasPrefix(got[0], "tmp/") {
		t.Fatalf("during the put: %v", got)
	}
	if err := f.Sweep(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	pw.Write([]byte("second half"))
	pw.Close()
	r := <-done
	if r.err != nil {
		t.Fatalf("put after a sweep: %v", r.err)
	}
	if r.key != sha([]byte("first half second half")) {
		t.Fatalf("key %s", r.key)
	}
}

const killChildEnv = "BOTHY_BLOBS_KILL_CHILD_DIR"

// killMarker is what the child prints once the first megabyte of its body is on its way to disk.
const killMarker = "blobs: put in progress"

// A process killed in the middle of a Put leaves no blob under a real key, only a temporary
// that Sweep removes.
func TestFSKilledInPut(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		killChild(t, dir)
		return
	}
	dir := filepath.Join(t.TempDir(), "files")
	cmd := exec.Command(os.Args[0], "-test.run=^TestFSKilledInPut$")
	cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	var seen []string
	for lines.Scan() && lines.Text() != killMarker {
		seen = append(seen, lines.Text())
	}
	if lines.Text() != killMarker {
		cmd.Wait()
		t.Fatalf("the child ended before its put was in progress: %s\n%s", strings.Join(seen, "\n"), stderr.String())
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no deferred cleanup runs
		t.Fatal(err)
	}
	cmd.Wait()

	left := filesUnder(t, dir)
	if len(left) != 1 || !strings.HasPrefix(left[0], "tmp/") {
		t.Fatalf("the killed put left %v, want one temporary only", left)
	}
	if info, err := os.Stat(filepath.Join(dir, left[0])); err != nil || info.Size() != killChildBytes {
		t.Fatalf("the temporary: %v, %v; want %d bytes in it (the put was in the middle)", info, err, killChildBytes)
	}
	f, err := NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sweep(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if left := filesUnder(t, dir); len(left) != 0 {
		t.Fatalf("after the sweep: %v", left)
	}
	body := bytes.Repeat([]byte{'x'}, killChildBytes)
	b, err := f.Put(context.Background(), bytes.NewReader(body), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readBlob(t, f, b.Key), body) {
		t.Fatal("the blob put after the crash does not read back")
	}
}

const killChildBytes = 1 << 20

// killChild puts a body whose first megabyte comes at once and whose rest never does, and
// says so on stdout when the megabyte has been written.
func killChild(t *testing.T, dir string) {
	f, err := NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	f.Put(context.Background(), &stallingReader{left: killChildBytes}, 1<<30)
	t.Fatal("the put of a body that never ends returned")
}

type stallingReader struct{ left int }

func (r *stallingReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		// Put has written everything read before asking for more.
		os.Stdout.WriteString("\n" + killMarker + "\n")
		for {
			time.Sleep(time.Hour)
		}
	}
	n := min(len(p), r.left)
	for i := range n {
		p[i] = 'x'
	}
	r.left -= n
	return n, nil
}

// A blob directory that does not exist is made by the first write, not by NewFS: an instance on
// PostgreSQL makes no data directory until a file arrives.
func TestFSMakesItsDirectoryOnTheFirstWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "files")
	f, err := NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sweep(context.Background(), 0); err != nil {
		t.Fatalf("sweep of a directory never written: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("NewFS made %s: %v", filepath.Dir(dir), err)
	}
	b, err := f.Put(context.Background(), strings.NewReader("first"), 100)
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.Open(context.Background(), b.Key)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}
