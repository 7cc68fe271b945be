package wstransport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/appliance"
	"bothy.dev/bothy/appliance/config"
	"bothy.dev/bothy/appliance/internal/runtest"
	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/postgres"
	"bothy.dev/bothy/storage/storetest/pgdb"
	"github.com/coder/websocket"
)

// engines runs fn on SQLite and, when BOTHY_TEST_POSTGRES_URL is set, on PostgreSQL.
func engines(t *testing.T, fn func(t *testing.T, eng engine.Name)) {
	for _, e := range []engine.Name{engine.SQLite, engine.Postgres} {
		t.Run(string(e), func(t *testing.T) {
			if e == engine.Postgres && os.Getenv(pgdb.EnvURL) == "" {
				t.Skip(pgdb.EnvURL + " is not set")
			}
			fn(t, e)
		})
	}
}

// server is an appliance running in the test process on port 0.
type server struct {
	app  *appliance.App
	base string // http://127.0.0.1:port
	ws   string // ws://127.0.0.1:port/api/v1/gateway
	stop func() error
	logs *bytes.Buffer
}

func testLogger(tb testing.TB) *slog.Logger { return kerneltest.Logger(tb, slog.LevelInfo) }

// mustStart boots an appliance on engine with the defaults changed by tweak.
func mustStart(t *testing.T, eng engine.Name, tweak func(*config.Config)) *server {
	t.Helper()
	cfg := config.Default()
	cfg.Server.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Server.ListenAddr = "127.0.0.1:0"
	cfg.Server.InternalListenAddr = "127.0.0.1:0"
	cfg.Shutdown.TotalTimeout = 15 * time.Second
	if eng == engine.Postgres {
		cfg.Database.Driver = string(engine.Postgres)
		cfg.Database.URLRef = mustPostgres(t)
	}
	if tweak != nil {
		tweak(&cfg)
	}
	a, err := appliance.New(context.Background(), cfg, testLogger(t), io.Discard)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	stop := runtest.Run(t, a, 15*time.Second, 25*time.Second)
	s := &server{app: a, base: "http://" + a.PublicAddr(), ws: "ws://" + a.PublicAddr() + "/api/v1/gateway", stop: stop}
	return s
}

// mustPostgres creates a migrated database and returns a file: reference to its URL.
func mustPostgres(t *testing.T) string {
	t.Helper()
	url := pgdb.Create(t, "")
	w, r, err := postgres.Open(context.Background(), postgres.Options{URL: url, MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer r.Close()
	if _, err := migrate.Up(context.Background(), w, engine.Postgres, nil); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "database-url")
	if err := os.WriteFile(file, []byte(url+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return "file:" + file
}

// do sends a REST request with token and decodes the answer into out (if not nil); it returns the
// status.
func (s *server) do(t *testing.T, method, path, token string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

func (s *server) must(t *testing.T, want int, method, path, token string, body, out any) {
	t.Helper()
	if got := s.do(t, method, path, token, body, out); got != want {
		t.Fatalf("%s %s answered %d, want %d", method, path, got, want)
	}
}

type person struct {
	ID    string `json:"id"`
	token string
}

const ownerPassword = "correct horse battery staple"

// mustOwner creates the first owner and logs it in.
func (s *server) mustOwner(t *testing.T) person {
	t.Helper()
	u, err := s.app.Identity.BootstrapOwner(context.Background(), "owner", "The Owner", ownerPassword)
	if err != nil {
		t.Fatal(err)
	}
	return person{ID: string(u.ID), token: s.mustLogin(t, "owner", ownerPassword)}
}

func (s *server) mustLogin(t *testing.T, handle, password string) string {
	t.Helper()
	var out struct {
		Token string `json:"token"`
	}
	s.must(t, 200, "POST", "/api/v1/auth/login", "", map[string]string{"handle": handle, "password": password}, &out)
	return out.Token
}

// mustPerson has the owner create a person and logs it in.
func (s *server) mustPerson(t *testing.T, owner person, handle string) person {
	t.Helper()
	var p person
	s.must(t, 201, "POST", "/api/v1/users", owner.token,
		map[string]string{"handle": handle, "display_name": handle, "password": handle + "-password-1"}, &p)
	p.token = s.mustLogin(t, handle, handle+"-password-1")
	return p
}

type channel struct {
	ID           string `json:"id"`
	MainThreadID string `json:"main_thread_id"`
}

var names atomic.Int64

func (s *server) mustChannel(t *testing.T, owner person, space string) channel {
	t.Helper()
	var c channel
	s.must(t, 201, "POST", "/api/v1/spaces/"+space+"/channels", owner.token, map[string]string{"name": fmt.Sprint("c", names.Add(1))}, &c)
	return c
}

func (s *server) mustSpace(t *testing.T, owner person) string {
	t.Helper()
	var sp struct {
		ID string `json:"id"`
	}
	s.must(t, 201, "POST", "/api/v1/spaces", owner.token, map[string]string{"name": fmt.Sprint("s", names.Add(1))}, &sp)
	return sp.ID
}

func (s *server) mustGrant(t *testing.T, owner person, ch channel, p person, level string) {
	t.Helper()
	st := s.do(t, "POST", "/api/v1/channels/"+ch.ID+"/grants", owner.token, map[string]string{"principal_id": p.ID, "level": level}, nil)
	if st != 200 && st != 201 {
		t.Fatalf("grant answered %d", st)
	}
}

func (s *server) mustPost(t *testing.T, p person, ch channel, content string) {
	t.Helper()
	s.must(t, 201, "POST", "/api/v1/threads/"+ch.MainThreadID+"/messages", p.token,
		map[string]string{"content": content, "client_msg_id": fmt.Sprint("m", names.Add(1))}, nil)
}

// restEvents reads every event token may see after after through REST catch-up.
func (s *server) restEvents(t *testing.T, token string, after int64) []int64 {
	t.Helper()
	var seqs []int64
	for {
		var page struct {
			Events []struct {
				Seq int64 `json:"seq"`
			} `json:"events"`
			HeadSeq   int64 `json:"head_seq"`
			NextAfter int64 `json:"next_after"`
		}
		s.must(t, 200, "GET", fmt.Sprintf("/api/v1/events?after=%d&limit=1000", after), token, nil, &page)
		for _, e := range page.Events {
			seqs = append(seqs, e.Seq)
		}
		if page.NextAfter >= page.HeadSeq || page.NextAfter == after {
			return seqs
		}
		after = page.NextAfter
	}
}

// wsClient is a gateway connection through coder/websocket's client.
type wsClient struct {
	t *testing.T
	c *websocket.Conn
}

type frame struct {
	Op string          `json:"op"`
	D  json.RawMessage `json:"d"`
}

type event struct {
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
	ChannelID string          `json:"channel_id"`
}

// dial connects and reads hello.
func (s *server) dial(t *testing.T) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, s.ws, nil)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { c.CloseNow() })
	w := &wsClient{t: t, c: c}
	if f := w.next(); f.Op != "hello" {
		t.Fatalf("first frame %s, want hello", f.Op)
	}
	return w
}

func (w *wsClient) send(v any) {
	w.t.Helper()
	b, _ := json.Marshal(v)
	w.sendRaw(b)
}

func (w *wsClient) sendRaw(b []byte) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageText, b); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

// read returns the next frame or the error that ended the connection. It skips presence.updated
// events: people come and go while these tests look at something else.
func (w *wsClient) read(timeout time.Duration) (frame, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		_, b, err := w.c.Read(ctx)
		if err != nil {
			return frame{}, err
		}
		var f frame
		if err := json.Unmarshal(b, &f); err != nil {
			w.t.Fatalf("server sent %q: %v", b, err)
		}
		var e struct {
			Type string `json:"type"`
		}
		if f.Op == "event" && json.Unmarshal(f.D, &e) == nil && e.Type == "presence.updated" {
			continue
		}
		return f, nil
	}
}

func (w *wsClient) next() frame {
	w.t.Helper()
	f, err := w.read(10 * time.Second)
	if err != nil {
		w.t.Fatalf("read: %v", err)
	}
	return f
}

// identify sends identify (cursor < 0: none) and reads ready.
func (w *wsClient) identify(token string, cursor int64) {
	w.t.Helper()
	d := map[string]any{"token": token}
	if cursor >= 0 {
		d["cursor"] = cursor
	}
	w.send(map[string]any{"op": "identify", "d": d})
	if f := w.next(); f.Op != "ready" {
		w.t.Fatalf("got %s %s, want ready", f.Op, f.D)
	}
}

// catchUp reads the replay up to catchup.complete.
func (w *wsClient) catchUp() []int64 {
	w.t.Helper()
	var seqs []int64
	for {
		f := w.next()
		switch f.Op {
		case "event":
			var e event
			json.Unmarshal(f.D, &e)
			seqs = append(seqs, e.Seq)
		case "catchup.complete":
			return seqs
		default:
			w.t.Fatalf("got %s during catch-up", f.Op)
		}
	}
}

// nextEvent skips heartbeats and returns the next event.
func (w *wsClient) nextEvent() event {
	w.t.Helper()
	for {
		f := w.next()
		if f.Op == "heartbeat" || f.Op == "heartbeat.ack" {
			continue
		}
		if f.Op != "event" {
			w.t.Fatalf("got %s, want event", f.Op)
		}
		var e event
		if err := json.Unmarshal(f.D, &e); err != nil {
			w.t.Fatal(err)
		}
		return e
	}
}

// expectClose reads until the connection ends and checks the close code.
func (w *wsClient) expectClose(want websocket.StatusCode) {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		f, err := w.read(time.Until(deadline))
		if err != nil {
			if got := websocket.CloseStatus(err); got != want {
				w.t.Fatalf("closed with %d (%v), want %d", got, err, want)
			}
			return
		}
		_ = f
	}
	w.t.Fatalf("not closed within 10s, want %d", want)
}
