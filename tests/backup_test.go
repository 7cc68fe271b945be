package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/storage/storetest/pgdb"
)

// TestBackup backs up a running instance while eight writers post through the API, restores
// the backup into a new data directory and starts it: its log is the source's up to the
// backup's head seq, every message acknowledged before the backup began is in it, its files
// download with the same bytes and a person's read position is the same. A damaged backup
// fails verify naming the part, and restore refuses a directory that is not empty.
func TestBackup(t *testing.T) {
	in := mustStartWithOwner(t, sqliteEngine)
	sp := in.owner.mustCreateSpace(t, uniqueName("space"))
	busy := in.owner.mustCreateChannel(t, sp.ID, uniqueName("busy"))
	quiet := in.owner.mustCreateChannel(t, sp.ID, uniqueName("quiet"))

	// A person's read position: bob reads the quiet channel up to its second message; the
	// writers post where he cannot read, so it stays.
	bob, bobc := in.mustCreateUser(t, "bob")
	in.owner.mustGrant(t, quiet.ID, bob.ID, "post")
	var quietMsgs []message
	for i := range 3 {
		quietMsgs = append(quietMsgs, in.owner.mustPost(t, quiet.MainThreadID, fmt.Sprintf("quiet %d", i)))
	}
	bobc.do(t, http.MethodPost, api("threads", quiet.MainThreadID, "read"), map[string]any{"message_id": quietMsgs[1].ID}).
		want(t, http.StatusOK)

	// Files: one attached to a message, one attached nowhere.
	payloads := map[string][]byte{}
	var fileIDs []string
	for i, body := range [][]byte{bytes.Repeat([]byte("backup attached "), 4000), []byte("a file attached nowhere")} {
		f := in.owner.mustUpload(t, fmt.Sprintf("f%d.bin", i), "application/octet-stream", body)
		payloads[f.ID] = body
		fileIDs = append(fileIDs, f.ID)
	}
	in.owner.mustPostFiles(t, quiet.MainThreadID, "with a file", fileIDs[0])

	// Eight writers, each in a thread of its own, post until told to stop.
	type ack struct {
		id string
		at time.Time
	}
	var (
		mu    sync.Mutex
		acks  []ack
		stop  = make(chan struct{})
		wg    sync.WaitGroup
		tids  []string
		fails []string
	)
	for i := range 8 {
		tids = append(tids, in.owner.mustCreateThread(t, busy.ID, fmt.Sprintf("writer %d", i), "first").Thread.ID)
	}
	for i, tid := range tids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				r, err := in.owner.try(t, http.MethodPost, api("threads", tid, "messages"), map[string]any{
					"content": fmt.Sprintf("writer %d message %d", i, n), "client_msg_id": uniqueName("load")})
				at := time.Now()
				mu.Lock()
				switch {
				case err != nil:
					fails = append(fails, err.Error())
				case r.status != http.StatusCreated:
					fails = append(fails, r.String())
				default:
					acks = append(acks, ack{id: r.obj()["id"].(string), at: at})
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond) // the writers are under way

	backups := filepath.Join(t.TempDir(), "backups")
	began := time.Now()
	res := runBothy(t, cleanEnv(), "backup", "create", "--data-dir", in.srv.dataDir, "--to", backups)
	time.Sleep(200 * time.Millisecond) // the writers go on after it
	close(stop)
	wg.Wait()
	if res.code != 0 {
		t.Fatalf("backup create = %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	if len(fails) > 0 {
		t.Fatalf("%d writes failed during the backup, the first: %s", len(fails), fails[0])
	}
	cols := strings.Split(strings.TrimSpace(res.stdout), "\t")
	if len(cols) != 3 || !strings.HasPrefix(cols[0], backups+string(filepath.Separator)) {
		t.Fatalf("backup create printed %q, want <dir>\\t<bytes>\\t<head>", res.stdout)
	}
	dir := cols[0]
	head, err := strconv.ParseInt(cols[2], 10, 64)
	if err != nil || head <= 0 {
		t.Fatalf("head seq %q: %v", cols[2], err)
	}
	if !strings.Contains(res.stderr, "copying the database") || !strings.Contains(res.stderr, "backup complete") {
		t.Errorf("no progress lines on stderr:\n%s", res.stderr)
	}
	var before, after int
	for _, a := range acks {
		if a.at.Before(began) {
			before++
		} else {
			after++
		}
	}
	if before == 0 || after == 0 {
		t.Fatalf("%d writes acknowledged before the backup and %d after it: the load did not span it", before, after)
	}

	// What the source shows at the end, to compare the restored instance with.
	srcEvents, srcHead := in.owner.mustAllEvents(t, 0)
	if srcHead <= head {
		t.Fatalf("the source's head %d is not past the backup's %d: nothing was written during the backup", srcHead, head)
	}
	srcUnread := bobc.do(t, http.MethodGet, api("me", "unread"), nil).want(t, http.StatusOK).obj()

	t.Run("verify accepts the backup", func(t *testing.T) {
		r := runBothy(t, cleanEnv(), "backup", "verify", dir)
		if r.code != 0 || r.stdout != fmt.Sprintf("ok\t%d\t%s\n", head, cols[1]) {
			t.Fatalf("verify = %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("restore refuses a data directory that is not empty, changing nothing", func(t *testing.T) {
		target := t.TempDir()
		keep := filepath.Join(target, "notes.txt")
		if err := os.WriteFile(keep, []byte("mine"), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runBothy(t, cleanEnv(), "backup", "restore", dir, "--data-dir", target)
		if r.code != 2 || !strings.Contains(r.stderr, "not empty") {
			t.Fatalf("restore into a directory that is not empty = %d, stderr:\n%s", r.code, r.stderr)
		}
		entries, _ := os.ReadDir(target)
		if len(entries) != 1 {
			t.Fatalf("the directory holds %d entries after the refusal", len(entries))
		}
	})

	restored := filepath.Join(t.TempDir(), "restored")
	if r := runBothy(t, cleanEnv(), "backup", "restore", dir, "--data-dir", restored); r.code != 0 {
		t.Fatalf("restore = %d, stderr:\n%s", r.code, r.stderr)
	}
	in.srv.stop(t) // the restored instance is a copy: the source need not run beside it
	copySrv := &server{eng: sqliteEngine, dataDir: restored}
	copySrv.mustBoot(t, false)
	t.Cleanup(func() { copySrv.stop(t) })
	owner := mustLogin(t, copySrv, "owner", ownerPassword)

	t.Run("the restored log is the source's up to the backup's head seq", func(t *testing.T) {
		events, gotHead := owner.mustAllEvents(t, 0)
		// Logging in appended events of its own after the head (the session); compare up to it.
		var upTo []event
		for _, e := range events {
			if e.Seq <= head {
				upTo = append(upTo, e)
			}
		}
		var want []event
		for _, e := range srcEvents {
			if e.Seq <= head {
				want = append(want, e)
			}
		}
		if gotHead < head || len(upTo) != len(want) {
			t.Fatalf("restored head %d with %d events up to %d, the source has %d", gotHead, len(upTo), head, len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(upTo[i], want[i]) {
				a, _ := json.Marshal(upTo[i])
				b, _ := json.Marshal(want[i])
				t.Fatalf("event %d differs:\nrestored %s\nsource   %s", i, a, b)
			}
		}
	})

	t.Run("every message acknowledged before the backup began is restored", func(t *testing.T) {
		for _, a := range acks {
			if !a.at.Before(began) {
				continue
			}
			r := owner.do(t, http.MethodGet, api("messages", a.id), nil)
			if r.status != http.StatusOK {
				t.Fatalf("message %s, acknowledged before the backup, answers %s", a.id, r)
			}
		}
	})

	t.Run("the files download with their bytes", func(t *testing.T) {
		for id, body := range payloads {
			r := owner.do(t, http.MethodGet, api("files", id, "content"), nil).want(t, http.StatusOK)
			if !bytes.Equal(r.raw, body) {
				t.Fatalf("file %s: %d bytes, want %d", id, len(r.raw), len(body))
			}
		}
	})

	t.Run("a person's read position is restored", func(t *testing.T) {
		got := mustLogin(t, copySrv, "bob", "bob-password-1").do(t, http.MethodGet, api("me", "unread"), nil).want(t, http.StatusOK).obj()
		if !reflect.DeepEqual(got, srcUnread) {
			t.Fatalf("bob's unread: restored %v, source %v", got, srcUnread)
		}
	})

	t.Run("a flipped byte in the database fails verify naming it", func(t *testing.T) {
		bad := copyTree(t, dir)
		flipByte(t, filepath.Join(bad, "bothy.db"), 4096+100)
		r := runBothy(t, cleanEnv(), "backup", "verify", bad)
		if r.code != 1 || !strings.Contains(r.stderr, "bothy.db") {
			t.Fatalf("verify = %d, stderr:\n%s", r.code, r.stderr)
		}
		if r := runBothy(t, cleanEnv(), "backup", "restore", bad, "--data-dir", filepath.Join(t.TempDir(), "x")); r.code != 1 {
			t.Fatalf("restore of a damaged backup = %d, stderr:\n%s", r.code, r.stderr)
		}
	})

	t.Run("a missing file fails verify naming it", func(t *testing.T) {
		bad := copyTree(t, dir)
		var blob string
		filepath.WalkDir(filepath.Join(bad, "files"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && blob == "" {
				blob = p
			}
			return nil
		})
		if blob == "" {
			t.Fatal("the backup holds no file")
		}
		if err := os.Remove(blob); err != nil {
			t.Fatal(err)
		}
		r := runBothy(t, cleanEnv(), "backup", "verify", bad)
		if r.code != 1 || !strings.Contains(r.stderr, filepath.Base(blob)) || !strings.Contains(r.stderr, "missing") {
			t.Fatalf("verify = %d, stderr:\n%s", r.code, r.stderr)
		}
	})
}

// TestBackupOnPostgres: create refuses the database, which is pg_dump's, and --files-only
// copies the files and writes the manifest.
func TestBackupOnPostgres(t *testing.T) {
	pgdb.URL(t)
	in := mustStartWithOwner(t, postgresEngine)
	body := []byte("bytes kept beside PostgreSQL")
	f := in.owner.mustUpload(t, "pg.bin", "application/octet-stream", body)
	env := envWithDatabase(in.srv.dbURL)
	base := append([]string{"backup", "create", "--data-dir", in.srv.dataDir, "--to", filepath.Join(t.TempDir(), "b")}, postgresFlags...)

	r := runBothy(t, env, base...)
	if r.code != 2 || !strings.Contains(r.stderr, "pg_dump") {
		t.Fatalf("create on PostgreSQL = %d, stderr:\n%s", r.code, r.stderr)
	}
	r = runBothy(t, env, append(base, "--files-only")...)
	if r.code != 0 {
		t.Fatalf("create --files-only = %d, stderr:\n%s", r.code, r.stderr)
	}
	dir := strings.Split(strings.TrimSpace(r.stdout), "\t")[0]
	got, err := os.ReadFile(filepath.Join(dir, "files", f.SHA256[0:2], f.SHA256[2:4], f.SHA256))
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("the file in the backup: %q, %v", got, err)
	}
	var m struct {
		Engine    string `json:"engine"`
		FilesOnly bool   `json:"files_only"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil || json.Unmarshal(b, &m) != nil || m.Engine != "postgres" || !m.FilesOnly {
		t.Fatalf("manifest %s: %v", b, err)
	}
	if r := runBothy(t, cleanEnv(), "backup", "verify", dir); r.code != 0 {
		t.Fatalf("verify of the files-only backup = %d, stderr:\n%s", r.code, r.stderr)
	}
}

// copyTree copies the backup dir into a new temporary directory, to damage the copy.
func copyTree(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func flipByte(t *testing.T, path string, at int64) {
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
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}
