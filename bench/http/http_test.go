package httpbench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeServer answers the routes Prepare and the posters call, the way bothy does, and counts
// what it is asked. It is not bothy: it checks the generator, not the server.
type fakeServer struct {
	t        *testing.T
	mu       sync.Mutex
	ids      int
	tokens   map[string]string // token → handle
	grants   map[string]bool   // principal id + " " + channel id
	users    map[string]string // handle → id
	channels map[string]string // main thread id → channel id
	msgIDs   map[string]bool   // token + client_msg_id
	created  atomic.Int64
	conns    atomic.Int64 // connections accepted
	// failAfter answers 500 to every message create after this many (0: never).
	failAfter int64
}

func newFake(t *testing.T) *fakeServer {
	return &fakeServer{t: t, tokens: map[string]string{}, grants: map[string]bool{}, users: map[string]string{},
		channels: map[string]string{}, msgIDs: map[string]bool{}}
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var in map[string]string
	if r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&in) != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	next := func() string { f.ids++; return fmt.Sprint(f.ids) }
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	who := f.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	path := r.URL.Path
	switch {
	case path == "/api/v1/setup":
		f.users[in["handle"]] = next()
		reply(http.StatusCreated, map[string]string{"id": f.users[in["handle"]]})
	case path == "/api/v1/auth/login":
		if f.users[in["handle"]] == "" || in["password"] != Password {
			reply(http.StatusUnauthorized, nil)
			return
		}
		tok := "tok-" + in["handle"]
		f.tokens[tok] = in["handle"]
		reply(http.StatusOK, map[string]string{"token": tok})
	case who != "owner" && !strings.HasSuffix(path, "/messages"):
		reply(http.StatusForbidden, nil)
	case path == "/api/v1/spaces":
		reply(http.StatusCreated, map[string]string{"id": next()})
	case strings.HasSuffix(path, "/channels"):
		ch, th := next(), next()
		f.channels[th] = ch
		reply(http.StatusCreated, map[string]string{"id": ch, "main_thread_id": th})
	case path == "/api/v1/users":
		f.users[in["handle"]] = next()
		reply(http.StatusCreated, map[string]string{"id": f.users[in["handle"]]})
	case strings.HasSuffix(path, "/grants"):
		f.grants[in["principal_id"]+" "+strings.Split(path, "/")[4]] = in["level"] == "post"
		reply(http.StatusCreated, nil)
	case strings.HasSuffix(path, "/messages"):
		ch := f.channels[strings.Split(path, "/")[4]]
		if who == "" || ch == "" || (who != "owner" && !f.grants[f.users[who]+" "+ch]) {
			reply(http.StatusForbidden, nil)
			return
		}
		if f.failAfter > 0 && f.created.Load() >= f.failAfter {
			reply(http.StatusInternalServerError, map[string]string{"code": "internal"})
			return
		}
		key := who + " " + in["client_msg_id"]
		if f.msgIDs[key] {
			reply(http.StatusOK, nil) // the stored message, as bothy answers a repeat
			return
		}
		f.msgIDs[key] = true
		f.created.Add(1)
		reply(http.StatusCreated, map[string]string{"id": next()})
	default:
		reply(http.StatusNotFound, nil)
	}
}

func mustPrepare(t *testing.T, f *fakeServer, people int) (Target, *http.Client) {
	t.Helper()
	srv := httptest.NewUnstartedServer(f)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			f.conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c := Client(8)
	tg, err := Prepare(context.Background(), c, srv.URL, "code", people, 3)
	if err != nil {
		t.Fatal(err)
	}
	return tg, c
}

func TestLoad(t *testing.T) {
	ctx := context.Background()
	t.Run("prepares people with post on every channel and a session each", func(t *testing.T) {
		f := newFake(t)
		tg, _ := mustPrepare(t, f, 2)
		if len(tg.Tokens) != 2 || len(tg.Threads) != 3 {
			t.Fatalf("target %+v", tg)
		}
		for _, tok := range tg.Tokens {
			if f.tokens[tok] == "owner" {
				t.Errorf("the owner posts although there are people")
			}
		}
		if len(f.grants) != 6 {
			t.Errorf("%d grants, want 2 people × 3 channels", len(f.grants))
		}
	})
	t.Run("the closed loop counts only new messages answered in the window, on kept-alive connections", func(t *testing.T) {
		f := newFake(t)
		tg, c := mustPrepare(t, f, 2)
		before := f.conns.Load()
		var reads, dbReads atomic.Int64
		cpu := CPUReaders{
			Server: func() (time.Duration, error) {
				return time.Duration(reads.Add(1)) * time.Millisecond, nil
			},
			DB: func() (time.Duration, error) {
				return time.Duration(dbReads.Add(1)) * 3 * time.Millisecond, nil
			},
		}
		r, err := Closed(ctx, c, tg, 4, 30*time.Millisecond, 100*time.Millisecond, cpu)
		if err != nil {
			t.Fatal(err)
		}
		if r.Ops <= 0 || r.Ops >= f.created.Load() || int64(r.Latencies.N) != r.Ops || r.Elapsed != 100*time.Millisecond {
			t.Fatalf("result %+v; %d created in all", r, f.created.Load())
		}
		if reads.Load() != 2 || r.ServerCPU != time.Millisecond || r.LoadCPU <= 0 || dbReads.Load() != 2 || r.DBCPU != 3*time.Millisecond {
			t.Fatalf("server CPU read %d times, %v; load CPU %v; database CPU read %d times, %v",
				reads.Load(), r.ServerCPU, r.LoadCPU, dbReads.Load(), r.DBCPU)
		}
		// A request may dial once more while its client's connection is still on its way back
		// to the pool (net/http's race between the body's end and the next request), so a
		// loaded machine sees a few extra; without keep-alive it would be one per request.
		if n := f.conns.Load() - before; n > 2*4 || n >= r.Ops {
			t.Fatalf("%d new connections for 4 clients and %d requests: keep-alive does not hold", n, r.Ops)
		}
	})
	t.Run("the open loop sends every due request and times it from when it was due", func(t *testing.T) {
		f := newFake(t)
		tg, c := mustPrepare(t, f, 0)
		began := time.Now()
		r, err := Open(ctx, c, tg, 500, 4, 40*time.Millisecond, 100*time.Millisecond, CPUReaders{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Ops != 50 || r.Latencies.N != 50 || f.created.Load() != 70 {
			t.Fatalf("result %+v; %d created, want 50 measured of 70", r, f.created.Load())
		}
		if took := time.Since(began); took < 138*time.Millisecond {
			t.Fatalf("70 requests at 500/s took %v: not paced", took)
		}
	})
	t.Run("a failed request ends the run with its status", func(t *testing.T) {
		f := newFake(t)
		tg, c := mustPrepare(t, f, 1)
		f.failAfter = 20
		_, err := Closed(ctx, c, tg, 4, 10*time.Millisecond, 5*time.Second, CPUReaders{})
		if err == nil || !strings.Contains(err.Error(), "500") {
			t.Fatalf("err = %v, want the 500", err)
		}
		f.created.Store(0)
		_, err = Open(ctx, c, tg, 1000, 4, 0, 5*time.Second, CPUReaders{})
		if err == nil || !strings.Contains(err.Error(), "500") {
			t.Fatalf("open loop: err = %v, want the 500", err)
		}
	})
	t.Run("a repeated client_msg_id is no message and ends the run", func(t *testing.T) {
		f := newFake(t)
		tg, c := mustPrepare(t, f, 1)
		if err := Seed(ctx, c, tg, 30); err != nil || f.created.Load() != 30 {
			t.Fatalf("seed: %v, %d created", err, f.created.Load())
		}
		p, err := newPoster(c, tg)
		if err != nil {
			t.Fatal(err)
		}
		var buf []byte
		if err := p.post(ctx, 100, 1, &buf); err != nil {
			t.Fatal(err)
		}
		if err := p.post(ctx, 100, 1, &buf); err == nil || !strings.Contains(err.Error(), "200") {
			t.Fatalf("err = %v, want the 200 of a repeat refused", err)
		}
	})
}
