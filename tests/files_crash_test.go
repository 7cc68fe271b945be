package tests

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFileUploadKilled kills the server with SIGKILL while two uploads are half way in: a whole
// file and a part of a resumable upload, each of whose clients has sent about half its body and
// then goes quiet. Neither leaves anything under a real name in the store (only temporaries,
// and on S3 unfinished multipart uploads, for the sweep); after the restart neither is listed
// anywhere, the file uploaded before is intact, and the resumable upload takes its parts and
// completes. It runs on each blob driver and each engine.
func TestFileUploadKilled(t *testing.T) {
	t.Parallel()
	onEachBlobStore(t, func(t *testing.T, eng engine, st blobStore) {
		in := mustStartWithOwner(t, eng, st.args...)
		_, bobc := in.mustCreateUser(t, "bob")
		keptBody := []byte("uploaded before the crash")
		kept := bobc.mustUpload(t, "kept.txt", "text/plain", keptBody)

		data := make([]byte, 9_000_000)
		for i := range data {
			data[i] = byte(i * 13)
		}
		var up struct {
			ID       string `json:"id"`
			PartSize int    `json:"part_size"`
			Parts    int    `json:"parts"`
			Received []int  `json:"received"`
		}
		bobc.do(t, http.MethodPost, api("uploads"), map[string]any{"name": "data.bin", "size": len(data), "content_type": "application/octet-stream"}).
			want(t, http.StatusCreated).decode(t, &up)
		if up.Parts != 2 {
			t.Fatalf("upload %+v, want 2 parts", up)
		}

		whole := bytes.Repeat([]byte("half of a large file "), 24<<20/21)
		stalls := []*stalledBody{
			sendStalled(t, bobc, "/api/v1/files?name=half.bin", whole, 12<<20),
			sendStalled(t, bobc, api("uploads", up.ID, "parts", "1"), data[:up.PartSize], 6<<20),
		}
		t.Cleanup(func() {
			for _, s := range stalls {
				s.close()
			}
		})
		waitHalfWay(t, st, in.srv, stalls)
		in.srv.kill9(t)
		for _, s := range stalls {
			s.close()
		}

		t.Run("the killed uploads leave nothing under a real name", func(t *testing.T) {
			if got := st.blobs(t, in.srv); !slices.Equal(got, blobNames(st, kept.SHA256)) {
				t.Fatalf("the store holds the blobs %v after the kill, want only %v", got, blobNames(st, kept.SHA256))
			}
			left := 0
			for _, name := range st.contents(t, in.srv) {
				switch {
				case strings.HasPrefix(name, "tmp/") || strings.HasPrefix(name, "unfinished:"):
					left++
				case !slices.Contains(blobNames(st, kept.SHA256), name):
					t.Fatalf("the kill left %s in the store, which is no temporary", name)
				}
			}
			if left != len(stalls) {
				t.Fatalf("the kill left %d temporaries, want one of each upload cut off: %v", left, st.contents(t, in.srv))
			}
		})

		in.srv.mustRestart(t)
		t.Run("after the restart the half upload is listed nowhere", func(t *testing.T) {
			if ids := fileIDs(t, in.srv); !slices.Equal(ids, []string{kept.ID}) {
				t.Fatalf("files rows %v, want only %s", ids, kept.ID)
			}
			r := bobc.do(t, http.MethodGet, api("files", kept.ID, "content"), nil).want(t, http.StatusOK)
			if !bytes.Equal(r.raw, keptBody) {
				t.Fatalf("the file uploaded before the crash reads %q", r.raw)
			}
			bobc.do(t, http.MethodGet, api("uploads", up.ID), nil).want(t, http.StatusOK).decode(t, &up)
			if len(up.Received) != 0 {
				t.Fatalf("the part cut off counts as received: %v", up.Received)
			}
		})
		t.Run("the server takes the parts again and completes the upload", func(t *testing.T) {
			for n, b := range [][]byte{data[:up.PartSize], data[up.PartSize:]} {
				bobc.do(t, http.MethodPut, api("uploads", up.ID, "parts", strconv.Itoa(n+1)), nil, rawBody(b),
					header("Content-Type", "application/octet-stream")).want(t, http.StatusOK)
			}
			var f fileAnswer
			bobc.do(t, http.MethodPost, api("uploads", up.ID, "complete"), nil).want(t, http.StatusCreated).decode(t, &f)
			got := bobc.do(t, http.MethodGet, api("files", f.ID, "content"), nil).want(t, http.StatusOK)
			if f.SHA256 != sha(data) || !bytes.Equal(got.raw, data) {
				t.Fatalf("the upload completed after the crash is not its parts: %+v", f)
			}
			if ids := fileIDs(t, in.srv); len(ids) != 2 || !slices.Contains(ids, f.ID) {
				t.Fatalf("files rows %v, want %s and %s", ids, kept.ID, f.ID)
			}
		})
	})
}

// blobNames is the name in st of the blob of key, as blobStore.blobs answers it.
func blobNames(st blobStore, key string) []string {
	if st.driver == "fs" {
		return []string{key[0:2] + "/" + key[2:4] + "/" + key}
	}
	return []string{key}
}

// stalledBody is the body of a request that sends its first bytes and then nothing more, as
// a client on a link that went quiet does.
type stalledBody struct {
	w    *io.PipeWriter
	done chan struct{}
}

func (s *stalledBody) close() {
	s.w.CloseWithError(io.ErrUnexpectedEOF)
	<-s.done
}

// sendStalled sends an upload of body to path that declares its whole length and sends only
// its first half bytes (in pieces, as a slow link does), then waits.
func sendStalled(tb testing.TB, c *client, path string, body []byte, half int) *stalledBody {
	tb.Helper()
	pr, pw := io.Pipe()
	method := http.MethodPost
	if strings.Contains(path, "/parts/") {
		method = http.MethodPut
	}
	req, err := http.NewRequest(method, c.srv.public+path, pr)
	if err != nil {
		tb.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	s := &stalledBody{w: pw, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		// The answer never comes: the server is killed first. Whatever the error, it is the kill's.
		resp, err := (&http.Client{}).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		pr.Close()
	}()
	go func() {
		for off := 0; off < half; off += 256 << 10 {
			if _, err := pw.Write(body[off:min(off+256<<10, half)]); err != nil {
				return
			}
		}
	}()
	return s
}

// waitHalfWay waits until the store shows both stalled uploads in the middle of their write:
// on fs two temporaries with 10 MiB between them, on S3 two unfinished multipart uploads.
func waitHalfWay(tb testing.TB, st blobStore, srv *server, stalls []*stalledBody) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	last := ""
	for {
		switch st.driver {
		case "fs":
			var n int
			var size int64
			for _, name := range st.contents(tb, srv) {
				if strings.HasPrefix(name, "tmp/") {
					if info, err := os.Stat(filepath.Join(srv.dataDir, "files", name)); err == nil {
						n, size = n+1, size+info.Size()
					}
				}
			}
			if n == len(stalls) && size >= 10<<20 {
				return
			}
			last = strconv.Itoa(n) + " temporaries of " + strconv.FormatInt(size, 10) + " bytes"
		case "s3":
			u := st.s3Unfinished(tb)
			if len(u) == len(stalls) {
				return
			}
			last = "unfinished uploads " + strings.Join(u, ", ")
		}
		for _, s := range stalls {
			select {
			case <-s.done:
				tb.Fatalf("a stalled upload got its answer before the kill (store: %s)", last)
			default:
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the stalled uploads are not half way in the store after 20 s: %s", last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fileIDs reads the ids of the files rows of srv's database, sorted.
func fileIDs(tb testing.TB, srv *server) []string {
	tb.Helper()
	var db *sql.DB
	switch srv.eng {
	case sqliteEngine:
		var err error
		db, err = sql.Open("sqlite", "file:"+filepath.Join(srv.dataDir, "bothy.db")+"?mode=ro")
		if err != nil {
			tb.Fatal(err)
		}
		defer db.Close()
	case postgresEngine:
		db = srv.mustOpenPostgres(tb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, `SELECT id FROM files ORDER BY id`)
	if err != nil {
		tb.Fatalf("read the files rows: %v", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			tb.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return ids
}
