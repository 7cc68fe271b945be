package wstransport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"bothy.dev/bothy/appliance/config"
	"bothy.dev/bothy/storage/engine"
)

// team is an owner, Ada (who may read both channels) and Bob (only "open") on a running server.
type team struct {
	s          *server
	owner      person
	ada, bob   person
	space      string
	open, shut channel
}

func mustTeam(t *testing.T, s *server) *team {
	t.Helper()
	tm := &team{s: s, owner: s.mustOwner(t)}
	tm.ada = s.mustPerson(t, tm.owner, "ada")
	tm.bob = s.mustPerson(t, tm.owner, "bob")
	tm.space = s.mustSpace(t, tm.owner)
	tm.open, tm.shut = s.mustChannel(t, tm.owner, tm.space), s.mustChannel(t, tm.owner, tm.space)
	s.mustGrant(t, tm.owner, tm.open, tm.ada, "post")
	s.mustGrant(t, tm.owner, tm.open, tm.bob, "post")
	s.mustGrant(t, tm.owner, tm.shut, tm.ada, "post")
	return tm
}

func TestLiveDeliveryAndRevoke(t *testing.T) {
	engines(t, func(t *testing.T, eng engine.Name) {
		s := mustStart(t, eng, nil)
		tm := mustTeam(t, s)
		ada, bob, owner := s.dial(t), s.dial(t), s.dial(t)
		for c, p := range map[*wsClient]person{ada: tm.ada, bob: tm.bob, owner: tm.owner} {
			c.identify(p.token, -1)
			c.catchUp()
		}

		t.Run("a message reaches those who may read its channel only", func(t *testing.T) {
			s.mustPost(t, tm.owner, tm.shut, "for ada")
			s.mustPost(t, tm.owner, tm.open, "for everyone")
			for _, c := range []*wsClient{ada, owner} {
				if e := c.nextEvent(); e.Type != "message.created" || e.ChannelID != tm.shut.ID {
					t.Fatalf("first event %+v", e)
				}
			}
			for _, c := range []*wsClient{ada, owner, bob} {
				if e := c.nextEvent(); e.Type != "message.created" || e.ChannelID != tm.open.ID {
					t.Fatalf("event %+v, want the open channel's message", e)
				}
			}
		})

		t.Run("a revoked grant stops the channel from the revoke on", func(t *testing.T) {
			s.must(t, 204, "DELETE", "/api/v1/channels/"+tm.shut.ID+"/grants/"+tm.ada.ID, tm.owner.token, nil, nil)
			revoke := owner.nextEvent()
			if revoke.Type != "grant.changed" {
				t.Fatalf("owner got %+v", revoke)
			}
			s.mustPost(t, tm.owner, tm.shut, "not for ada any more")
			s.mustPost(t, tm.owner, tm.open, "still for ada")
			e := ada.nextEvent()
			if e.ChannelID != tm.open.ID || e.Seq <= revoke.Seq {
				t.Fatalf("after the revoke at %d ada got %+v", revoke.Seq, e)
			}
		})

		t.Run("a disabled person is closed with 4004", func(t *testing.T) {
			s.must(t, 200, "POST", "/api/v1/users/"+tm.bob.ID+"/disable", tm.owner.token, nil, nil)
			bob.expectClose(4004)
			again := s.dial(t)
			again.send(map[string]any{"op": "identify", "d": map[string]any{"token": tm.bob.token}})
			again.expectClose(4004)
		})
	})
}

// TestCatchUpThenLiveUnderConcurrentWrites identifies while four writers post, and checks the
// stream against REST catch-up: every event the principal may see after the cursor, once, in
// order.
func TestCatchUpThenLiveUnderConcurrentWrites(t *testing.T) {
	engines(t, func(t *testing.T, eng engine.Name) {
		s := mustStart(t, eng, nil)
		tm := mustTeam(t, s)
		const writers, each = 4, 60
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for j := range each {
					ch := tm.open
					if (i+j)%3 == 0 {
						ch = tm.shut
					}
					s.mustPost(t, tm.owner, ch, fmt.Sprintf("w%d m%d", i, j))
				}
			}()
		}
		close(start)
		time.Sleep(50 * time.Millisecond)
		type run struct {
			who    person
			cursor int64
			c      *wsClient
		}
		var runs []run
		for i, p := range []person{tm.ada, tm.bob, tm.ada, tm.bob} {
			time.Sleep(time.Duration(20*i) * time.Millisecond)
			var head struct {
				HeadSeq int64 `json:"head_seq"`
			}
			s.must(t, 200, "GET", "/api/v1/events?after=0&limit=1", p.token, nil, &head)
			cursor := head.HeadSeq / 2
			c := s.dial(t)
			c.identify(p.token, cursor)
			runs = append(runs, run{p, cursor, c})
		}
		wg.Wait()
		for i, r := range runs {
			t.Run(fmt.Sprint("client ", i), func(t *testing.T) {
				want := s.restEvents(t, r.who.token, r.cursor)
				var got []int64
				for len(got) < len(want) {
					f := r.c.next()
					switch f.Op {
					case "event":
						var e event
						json.Unmarshal(f.D, &e)
						got = append(got, e.Seq)
					case "catchup.complete", "heartbeat":
					default:
						t.Fatalf("got %s", f.Op)
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("the gateway sent %d events, REST has %d; they differ", len(got), len(want))
				}
			})
		}
	})
}

// TestSlowConsumer has a client stop reading while messages flow: its queue overflows and it is
// closed with 4014 once it reads again, while another client gets every message.
func TestSlowConsumer(t *testing.T) {
	s := mustStart(t, engine.SQLite, func(c *config.Config) { c.Sync.OutboundQueueMax = 16 })
	tm := mustTeam(t, s)
	fast := s.dial(t)
	fast.identify(tm.ada.token, -1)
	fast.catchUp()
	slow := dialSmallWindow(t, s)
	slow.identify(tm.bob.token, -1)
	slow.catchUp()

	// The server's send buffer grows to 4 MiB (tcp_wmem) before a write blocks: send more.
	content := strings.Repeat("x", 39000)
	for i := range 150 {
		s.mustPost(t, tm.owner, tm.open, fmt.Sprint(i, content))
		if e := fast.nextEvent(); e.Type != "message.created" {
			t.Fatalf("the fast reader got %+v", e)
		}
	}
	slow.expectClose(4014) // it reads again: what was written, then the close frame
}

// dialSmallWindow dials with a small receive buffer, so that a client that stops reading fills
// the server's writes soon.
func dialSmallWindow(t *testing.T, s *server) *wsClient {
	t.Helper()
	d := &net.Dialer{Control: func(network, address string, c syscall.RawConn) error {
		var err error
		c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return err
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, s.ws, &websocket.DialOptions{HTTPClient: &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { c.CloseNow() })
	w := &wsClient{t: t, c: c}
	if f := w.next(); f.Op != "hello" {
		t.Fatalf("got %s", f.Op)
	}
	return w
}

func TestCloseCodes(t *testing.T) {
	s := mustStart(t, engine.SQLite, func(c *config.Config) { c.Gateway.MaxFrameBytes = 4096 })
	tm := mustTeam(t, s)
	identify := `{"op":"identify","d":{"token":"` + tm.ada.token + `"}}`
	tests := []struct {
		name   string
		frames []string // sent in order; "BINARY" sends a binary frame
		ready  bool     // expect ready after the first frame
		want   websocket.StatusCode
	}{
		{"an unknown op closes with 4001", []string{`{"op":"subscribe"}`}, false, 4001},
		{"a malformed frame closes with 4002", []string{`{"op":`}, false, 4002},
		{"a binary frame closes with 4002", []string{"BINARY"}, false, 4002},
		{"an op before identify closes with 4003", []string{`{"op":"focus","d":{}}`}, false, 4003},
		{"a bad token closes with 4004", []string{`{"op":"identify","d":{"token":"bothy_nope"}}`}, false, 4004},
		{"a second identify closes with 4005", []string{identify, identify}, true, 4005},
		{"a resume of an unknown session closes with 4006", []string{`{"op":"resume","d":{"session_id":"00000000000000000000000000000000","seq":0}}`}, false, 4006},
		{"a cursor beyond the head closes with 4016", []string{`{"op":"identify","d":{"token":"` + tm.ada.token + `","cursor":999999}}`}, false, 4016},
		{"a frame above gateway.max_frame_bytes closes with 1009", []string{`{"op":"heartbeat","d":{"x":"` + strings.Repeat("x", 5000) + `"}}`}, false, 1009},
		{"a frame of 4 MiB closes with 1009 while the client still writes it", []string{"HUGE"}, false, 1009},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := s.dial(t)
			for i, f := range tt.frames {
				if f == "HUGE" {
					// The server closes while the frame is still being written: the write may
					// fail, the close must still arrive.
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					c.c.Write(ctx, websocket.MessageText, []byte(`{"op":"heartbeat","d":{"x":"`+strings.Repeat("x", 4<<20)+`"}}`))
					cancel()
				} else if f == "BINARY" {
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					c.c.Write(ctx, websocket.MessageBinary, []byte(`{"op":"heartbeat"}`))
					cancel()
				} else {
					c.sendRaw([]byte(f))
				}
				if i == 0 && tt.ready {
					if got := c.next(); got.Op != "ready" {
						t.Fatalf("got %s", got.Op)
					}
				}
			}
			c.expectClose(tt.want)
		})
	}
}

func TestHeartbeatTimeout(t *testing.T) {
	s := mustStart(t, engine.SQLite, func(c *config.Config) { c.Gateway.HeartbeatInterval = 200 * time.Millisecond })
	tm := mustTeam(t, s)
	c := s.dial(t)
	c.identify(tm.ada.token, -1)
	c.catchUp()
	start := time.Now()
	if f := c.next(); f.Op != "heartbeat" {
		t.Fatalf("got %s, want the server's heartbeat", f.Op)
	}
	c.expectClose(4009)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("closed after %s", d)
	}

	t.Run("a client that heartbeats stays", func(t *testing.T) {
		c := s.dial(t)
		c.identify(tm.ada.token, -1)
		c.catchUp()
		for range 8 {
			c.send(map[string]any{"op": "heartbeat"})
			for {
				f := c.next()
				if f.Op == "heartbeat.ack" {
					break
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

func TestShutdownClosesWith4013(t *testing.T) {
	engines(t, func(t *testing.T, eng engine.Name) {
		s := mustStart(t, eng, nil)
		tm := mustTeam(t, s)
		a, b := s.dial(t), s.dial(t)
		a.identify(tm.ada.token, -1)
		a.catchUp()
		done := make(chan error, 1)
		go func() { done <- s.stop() }()
		a.expectClose(4013)
		b.expectClose(4013)
		if err := <-done; err != nil {
			t.Fatalf("Run = %v, want an orderly end", err)
		}
	})
}

func TestOrigin(t *testing.T) {
	s := mustStart(t, engine.SQLite, func(c *config.Config) { c.Server.PublicURL = "https://chat.example.com" })
	host := strings.TrimPrefix(s.base, "http://")
	tests := []struct {
		origin string
		want   int
	}{
		{"", http.StatusSwitchingProtocols},
		{"https://chat.example.com", http.StatusSwitchingProtocols},
		{"HTTPS://Chat.Example.com", http.StatusSwitchingProtocols},
		{"http://" + host, http.StatusSwitchingProtocols},
		{"https://evil.example.com", http.StatusForbidden},
		{"http://chat.example.com", http.StatusForbidden},
		{"https://chat.example.com.evil.example", http.StatusForbidden},
		{"null", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("origin %q answers %d", tt.origin, tt.want), func(t *testing.T) {
			h := http.Header{}
			if tt.origin != "" {
				h.Set("Origin", tt.origin)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, resp, err := websocket.Dial(ctx, s.ws, &websocket.DialOptions{HTTPHeader: h})
			if c != nil {
				c.CloseNow()
			}
			if resp == nil {
				t.Fatalf("no response: %v", err)
			}
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d (%v)", resp.StatusCode, tt.want, err)
			}
			if tt.want == http.StatusForbidden && (resp.Header.Get("Content-Type") != "application/problem+json" || resp.Header.Get("Correlation-Id") == "") {
				t.Fatalf("403 without problem+json or correlation id: %v", resp.Header)
			}
		})
	}
	t.Run("a plain GET answers 426 and another method 405", func(t *testing.T) {
		resp, err := http.Get(s.base + "/api/v1/gateway")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUpgradeRequired {
			t.Fatalf("GET answered %d", resp.StatusCode)
		}
		resp, err = http.Post(s.base+"/api/v1/gateway", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET" {
			t.Fatalf("POST answered %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
		}
	})
}

func TestTypingAndResume(t *testing.T) {
	s := mustStart(t, engine.SQLite, nil)
	tm := mustTeam(t, s)
	ada, bob := s.dial(t), s.dial(t)
	ada.identify(tm.ada.token, -1)
	ada.catchUp()
	bob.send(map[string]any{"op": "identify", "d": map[string]any{"token": tm.bob.token}})
	var ready struct {
		SessionID string `json:"session_id"`
		HeadSeq   int64  `json:"head_seq"`
	}
	f := bob.next()
	json.Unmarshal(f.D, &ready)
	bob.catchUp()

	t.Run("typing reaches the others who may read the thread", func(t *testing.T) {
		ada.send(map[string]any{"op": "typing.start", "d": map[string]any{"thread_id": tm.open.MainThreadID}})
		e := bob.nextEvent()
		if e.Type != "typing.started" || e.Seq != 0 || !strings.Contains(string(e.Data), tm.ada.ID) {
			t.Fatalf("bob got %+v", e)
		}
	})
	t.Run("a resume after a drop replays what was missed", func(t *testing.T) {
		bob.c.CloseNow()
		s.mustPost(t, tm.owner, tm.open, "while bob was away")
		back := s.dial(t)
		back.send(map[string]any{"op": "resume", "d": map[string]any{"session_id": ready.SessionID, "seq": ready.HeadSeq}})
		if f := back.next(); f.Op != "ready" || !strings.Contains(string(f.D), ready.SessionID) {
			t.Fatalf("got %s %s", f.Op, f.D)
		}
		if seqs := back.catchUp(); len(seqs) != 1 {
			t.Fatalf("replayed %v", seqs)
		}
	})
}
