package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fileServer is httptest with the client of the test's token.
func fileServer(t *testing.T, mux *http.ServeMux) *Client {
	t.Helper()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return New(srv.URL, "tok", WithHTTPClient(srv.Client()), WithBackoff(time.Millisecond, 2*time.Millisecond))
}

func answerJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// closeRecorder is a reader that remembers being closed.
type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestUploadFile(t *testing.T) {
	type seen struct {
		name, ctype, auth string
		length            int64
		chunked           bool
		body              []byte
	}
	var got seen
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/files", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = seen{name: r.URL.Query().Get("name"), ctype: r.Header.Get("Content-Type"), auth: r.Header.Get("Authorization"),
			length: r.ContentLength, chunked: slices.Contains(r.TransferEncoding, "chunked"), body: b}
		answerJSON(w, 201, map[string]any{"id": "f1", "name": "a b.txt", "content_type": "text/plain; charset=utf-8", "size": len(b),
			"sha256": "ab", "created_at": "2026-01-02T03:04:05Z", "uploader_id": "u1", "message_id": nil, "channel_id": nil, "thread_id": nil})
	})
	c := fileServer(t, mux)

	t.Run("a reader of known length goes with its length, and the answer decodes", func(t *testing.T) {
		f, err := c.UploadFile(t.Context(), "a b.txt", "text/plain", strings.NewReader("hello"))
		if err != nil {
			t.Fatal(err)
		}
		if got.name != "a b.txt" || got.ctype != "text/plain" || got.auth != "Bearer tok" || got.length != 5 || got.chunked ||
			string(got.body) != "hello" {
			t.Fatalf("the server saw %+v", got)
		}
		if f.ID != "f1" || f.Size != 5 || f.MessageID != "" || f.Width != 0 || f.UploaderID != "u1" {
			t.Fatalf("file %+v", f)
		}
	})
	t.Run("a reader of unknown length goes chunked, and is not closed", func(t *testing.T) {
		r := &closeRecorder{Reader: io.MultiReader(strings.NewReader("one "), strings.NewReader("two"))}
		if _, err := c.UploadFile(t.Context(), "n", "", r); err != nil {
			t.Fatal(err)
		}
		if !got.chunked || got.length != -1 || string(got.body) != "one two" || got.ctype != "application/octet-stream" {
			t.Fatalf("the server saw %+v", got)
		}
		if r.closed {
			t.Fatal("UploadFile closed the caller's reader")
		}
	})
	t.Run("a refusal is an APIError", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.HandleFunc("POST /api/v1/files", func(w http.ResponseWriter, r *http.Request) {
			answerJSON(w, 413, map[string]any{"status": 413, "code": "file_too_large", "detail": "at most 1 byte"})
		})
		_, err := fileServer(t, mux).UploadFile(t.Context(), "big", "", strings.NewReader("xx"))
		if !IsCode(err, "file_too_large") {
			t.Fatalf("err %v", err)
		}
	})
}

// TestUploadFileStreams holds the second half of the body back until the server has read the
// first: a client that read the whole reader before sending would never send anything.
func TestUploadFileStreams(t *testing.T) {
	firstRead := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/files", func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 5)
		if _, err := io.ReadFull(r.Body, buf); err != nil || string(buf) != "first" {
			t.Errorf("first half %q %v", buf, err)
		}
		close(firstRead)
		rest, _ := io.ReadAll(r.Body)
		answerJSON(w, 201, map[string]any{"id": "f1", "size": 5 + len(rest), "name": string(rest)})
	})
	c := fileServer(t, mux)
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte("first"))
		select {
		case <-firstRead:
			_, _ = pw.Write([]byte("second"))
			pw.Close()
		case <-time.After(10 * time.Second):
			pw.CloseWithError(fmt.Errorf("the server never got the first half: the body was held back"))
		}
	}()
	f, err := c.UploadFile(t.Context(), "s", "", pr)
	if err != nil || f.Size != 11 || f.Name != "second" {
		t.Fatalf("file %+v, %v", f, err)
	}
}

func TestDownloadFile(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/files/f1", func(w http.ResponseWriter, r *http.Request) {
		answerJSON(w, 200, map[string]any{"id": "f1", "name": "cat.png", "content_type": "image/png", "size": 3, "width": 2, "height": 1,
			"message_id": "m1", "channel_id": "c1", "thread_id": "t1", "thumbnail": map[string]any{"content_type": "image/jpeg", "width": 2, "height": 1}})
	})
	mux.HandleFunc("GET /api/v1/files/f1/content", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			t.Errorf("auth %q", r.Header.Get("Authorization"))
		}
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("ETag", `"abc"`)
		w.Header().Set("Content-Disposition", `inline; filename="cat photo.png"`)
		w.Header().Set("Content-Length", "3")
		_, _ = w.Write([]byte("png"))
	})
	mux.HandleFunc("GET /api/v1/files/f2/content", func(w http.ResponseWriter, r *http.Request) {
		answerJSON(w, 404, map[string]any{"status": 404, "code": "not_found", "detail": "no such file"})
	})
	mux.HandleFunc("GET /api/v1/files/f1/thumbnail", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "2")
		answerJSON(w, 404, map[string]any{"status": 404, "code": "thumbnail_unavailable", "detail": "not yet"})
	})
	c := fileServer(t, mux)

	f, err := c.File(t.Context(), "f1")
	if err != nil || f.Width != 2 || f.MessageID != "m1" || f.ThreadID != "t1" || f.Thumbnail == nil || f.Thumbnail.ContentType != "image/jpeg" {
		t.Fatalf("File = %+v, %v", f, err)
	}
	d, err := c.DownloadFile(t.Context(), "f1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(d)
	d.Close()
	if err != nil || string(b) != "png" || d.Name != "cat photo.png" || d.ContentType != "image/png" || d.Size != 3 || d.SHA256 != "abc" {
		t.Fatalf("download %q %v %+v", b, err, d)
	}
	if _, err := c.DownloadFile(t.Context(), "f2"); !IsCode(err, "not_found") {
		t.Fatalf("a file the token may not read: %v", err)
	}
	_, err = c.Thumbnail(t.Context(), "f1")
	var ae *APIError
	if !IsCode(err, "thumbnail_unavailable") || !errors.As(err, &ae) || ae.RetryAfter != 2*time.Second {
		t.Fatalf("a thumbnail not made yet: %v", err)
	}
}

// fakeUploads is the server side of resumable uploads, with scripted failures.
type fakeUploads struct {
	t        *testing.T
	partSize int64
	// fail answers the n-th request of a part (from 1) with a status, by "part/attempt".
	fail map[string]int
	// lose forgets the last part once, at the first complete.
	lose bool

	mu       sync.Mutex
	size     int64
	parts    map[int][]byte
	attempts map[int]int
	puts     []int
	created  map[string]any
}

func newFakeUploads(t *testing.T, partSize int64) (*fakeUploads, *Client) {
	fu := &fakeUploads{t: t, partSize: partSize, fail: map[string]int{}, parts: map[int][]byte{}, attempts: map[int]int{}}
	mux := http.NewServeMux()
	state := func() map[string]any {
		parts := int((fu.size + fu.partSize - 1) / fu.partSize)
		received := []int{}
		for n := range fu.parts {
			received = append(received, n)
		}
		slices.Sort(received)
		return map[string]any{"id": "u1", "size": fu.size, "part_size": fu.partSize, "parts": parts, "received": received}
	}
	mux.HandleFunc("POST /api/v1/uploads", func(w http.ResponseWriter, r *http.Request) {
		fu.mu.Lock()
		defer fu.mu.Unlock()
		_ = json.NewDecoder(r.Body).Decode(&fu.created)
		fu.size = int64(fu.created["size"].(float64))
		answerJSON(w, 201, state())
	})
	mux.HandleFunc("GET /api/v1/uploads/u1", func(w http.ResponseWriter, r *http.Request) {
		fu.mu.Lock()
		defer fu.mu.Unlock()
		answerJSON(w, 200, state())
	})
	mux.HandleFunc("PUT /api/v1/uploads/u1/parts/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		b, _ := io.ReadAll(r.Body)
		fu.mu.Lock()
		defer fu.mu.Unlock()
		fu.attempts[n]++
		fu.puts = append(fu.puts, n)
		if r.ContentLength != int64(len(b)) || r.Header.Get("Content-Type") != "application/octet-stream" {
			t.Errorf("part %d: length %d of %d, type %q", n, r.ContentLength, len(b), r.Header.Get("Content-Type"))
		}
		if status := fu.fail[fmt.Sprintf("%d/%d", n, fu.attempts[n])]; status != 0 {
			answerJSON(w, status, map[string]any{"status": status, "code": "scripted", "detail": "scripted"})
			return
		}
		fu.parts[n] = b
		answerJSON(w, 200, state())
	})
	mux.HandleFunc("POST /api/v1/uploads/u1/complete", func(w http.ResponseWriter, r *http.Request) {
		fu.mu.Lock()
		defer fu.mu.Unlock()
		st := state()
		if fu.lose {
			fu.lose = false
			delete(fu.parts, st["parts"].(int))
		}
		var all []byte
		for n := 1; n <= st["parts"].(int); n++ {
			p, ok := fu.parts[n]
			if !ok {
				answerJSON(w, 409, map[string]any{"status": 409, "code": "upload_incomplete", "detail": "parts missing"})
				return
			}
			all = append(all, p...)
		}
		answerJSON(w, 201, map[string]any{"id": "f1", "size": len(all), "name": string(all)})
	})
	return fu, fileServer(t, mux)
}

func TestUploadFileResumable(t *testing.T) {
	body := []byte("0123456789")
	t.Run("sends every part, again after a failure that may pass, and completes", func(t *testing.T) {
		fu, c := newFakeUploads(t, 4)
		fu.fail["2/1"], fu.fail["2/2"], fu.fail["3/1"] = 503, 429, 500
		f, err := c.UploadFileResumable(t.Context(), "digits.txt", "text/plain", int64(len(body)), bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if f.Name != string(body) || f.Size != 10 {
			t.Fatalf("the parts put together: %+v", f)
		}
		if !slices.Equal(fu.puts, []int{1, 2, 2, 2, 3, 3}) {
			t.Fatalf("puts %v", fu.puts)
		}
		if fu.created["name"] != "digits.txt" || fu.created["content_type"] != "text/plain" {
			t.Fatalf("created %v", fu.created)
		}
	})
	t.Run("a refusal ends it at once, and ResumeUpload sends only what is missing", func(t *testing.T) {
		fu, c := newFakeUploads(t, 4)
		fu.fail["2/1"] = 400
		_, err := c.UploadFileResumable(t.Context(), "d", "", int64(len(body)), bytes.NewReader(body))
		if !IsCode(err, "scripted") || !strings.Contains(err.Error(), "u1") {
			t.Fatalf("err %v", err)
		}
		if !slices.Equal(fu.puts, []int{1, 2}) {
			t.Fatalf("puts %v", fu.puts)
		}
		f, err := c.ResumeUpload(t.Context(), "u1", bytes.NewReader(body))
		if err != nil || f.Name != string(body) {
			t.Fatalf("resumed: %+v %v", f, err)
		}
		if !slices.Equal(fu.puts, []int{1, 2, 2, 3}) {
			t.Fatalf("puts %v", fu.puts)
		}
	})
	t.Run("a part the server lost is sent again before completing once more", func(t *testing.T) {
		fu, c := newFakeUploads(t, 4)
		fu.lose = true
		f, err := c.UploadFileResumable(t.Context(), "d", "", int64(len(body)), bytes.NewReader(body))
		if err != nil || f.Name != string(body) || !slices.Equal(fu.puts, []int{1, 2, 3, 3}) {
			t.Fatalf("file %+v %v, puts %v", f, err, fu.puts)
		}
	})
	t.Run("a part that keeps failing gives up after the attempts", func(t *testing.T) {
		fu, c := newFakeUploads(t, 4)
		for i := 1; i <= partAttempts+1; i++ {
			fu.fail[fmt.Sprintf("1/%d", i)] = 502
		}
		_, err := c.UploadFileResumable(t.Context(), "d", "", int64(len(body)), bytes.NewReader(body))
		if !IsCode(err, "scripted") || fu.attempts[1] != partAttempts {
			t.Fatalf("err %v after %d attempts", err, fu.attempts[1])
		}
	})
}

// TestAttachments: a message's attachments decode, Post sends attachment_ids, and an invocation
// carries the files of its message, from the event or else from the message read.
func TestAttachments(t *testing.T) {
	var mu sync.Mutex
	var posted []map[string]any
	var tokens []string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/messages/{id}", func(w http.ResponseWriter, r *http.Request) {
		answerJSON(w, 200, map[string]any{"id": r.PathValue("id"), "thread_id": "t1", "content": "look",
			"attachments": []any{map[string]any{"id": "f9", "name": "from-message.txt", "content_type": "text/plain", "size": 4}}})
	})
	mux.HandleFunc("POST /api/v1/threads/t1/messages", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		posted = append(posted, body)
		tokens = append(tokens, r.Header.Get("Invocation-Token"))
		mu.Unlock()
		var atts []any
		for _, id := range body["attachment_ids"].([]any) {
			atts = append(atts, map[string]any{"id": id, "name": "x.png", "content_type": "image/png", "size": 7, "width": 3, "height": 2})
		}
		answerJSON(w, 201, map[string]any{"id": "m2", "thread_id": "t1", "attachments": atts})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	a := NewAgent(srv.URL, "agent-token", WithHTTPClient(srv.Client()))

	t.Run("Post sends attachment_ids and the answer carries the files", func(t *testing.T) {
		m, err := a.Client().Post(t.Context(), "t1", NewMessage{AttachmentIDs: []string{"f1", "f2"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Attachments) != 2 || m.Attachments[1].ID != "f2" || m.Attachments[0].Width != 3 || m.Attachments[0].Size != 7 {
			t.Fatalf("message %+v", m)
		}
		if ids := posted[0]["attachment_ids"].([]any); len(ids) != 2 || ids[0] != "f1" || posted[0]["content"] != "" {
			t.Fatalf("posted %v", posted[0])
		}
	})
	invoke := func(t *testing.T, data map[string]any, handle func(context.Context, *Invocation) error) {
		t.Helper()
		raw, _ := json.Marshal(data)
		if err := a.invoke(t.Context(), Event{Seq: 7, Type: "agent.invocation", Data: raw}, handle); err != nil {
			t.Fatal(err)
		}
	}
	base := func() map[string]any {
		return map[string]any{"run_id": "r1", "thread_id": "t1", "message_id": "m1", "invocation_token": "itok",
			"expires_at": time.Now().Add(time.Hour)}
	}
	t.Run("an invocation carries the event's attachments, and answers with files of its own", func(t *testing.T) {
		data := base()
		data["attachments"] = []any{map[string]any{"id": "f1", "name": "notes.md", "content_type": "text/markdown", "size": 12}}
		var got []Attachment
		invoke(t, data, func(ctx context.Context, inv *Invocation) error {
			got = inv.Attachments
			if inv.Client() != a.Client() {
				t.Error("Invocation.Client is not the agent's client")
			}
			_, err := inv.ReplyWith(ctx, NewMessage{Content: "here", AttachmentIDs: []string{"f3"}})
			return err
		})
		if len(got) != 1 || got[0].ID != "f1" || got[0].Name != "notes.md" || got[0].Size != 12 {
			t.Fatalf("attachments %+v", got)
		}
		mu.Lock()
		defer mu.Unlock()
		last := posted[len(posted)-1]
		if ids := last["attachment_ids"].([]any); len(ids) != 1 || ids[0] != "f3" || last["client_msg_id"] != "run-r1" ||
			tokens[len(tokens)-1] != "itok" {
			t.Fatalf("the answer %v with token %q", last, tokens[len(tokens)-1])
		}
	})
	t.Run("without them in the event, an invocation takes the message's", func(t *testing.T) {
		var got []Attachment
		invoke(t, base(), func(ctx context.Context, inv *Invocation) error {
			got = inv.Attachments
			return nil
		})
		if len(got) != 1 || got[0].ID != "f9" {
			t.Fatalf("attachments %+v", got)
		}
	})
}
