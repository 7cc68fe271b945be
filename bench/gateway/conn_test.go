package gatewaybench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"bothy.dev/bothy/app/gateway"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// messageFrame is the frame of message i, due at due, logged at seq, as the server writes it;
// the message's data has a created_at of its own, an hour before the event's.
func messageFrame(t testing.TB, seq int64, i int, due, logged time.Time) []byte {
	t.Helper()
	var content string
	if err := json.Unmarshal(stampedContent(nil, due, i), &content); err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(map[string]any{"id": fmt.Sprint("m", i), "content": content, "created_at": logged.Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return gateway.EventFrame(kernel.LoggedEvent{Seq: seq, Type: messaging.EvMessageCreated.Name, Payload: payload, CreatedAt: logged,
		Scope: kernel.Scope{SpaceID: "s1", ChannelID: "c1", ThreadID: "t1"}})
}

func TestParseEventReadsTheFramesTheServerWrites(t *testing.T) {
	due, logged := time.Unix(1_780_000_000, 5), time.Unix(1_780_000_000, 120_000_000).In(time.FixedZone("x", 3600))
	e, err := parseEvent(messageFrame(t, 42, 7, due, logged))
	if err != nil || e.seq != 42 || string(e.typ) != "message.created" || !e.createdAt.Equal(logged) {
		t.Fatalf("message.created: %+v, %v", e, err)
	}
	if n, i, ok := readStamp(e.data); !ok || n != due.UnixNano() || i != 7 {
		t.Fatalf("the stamp of its data: %d, %d, %v", n, i, ok)
	}
	bare, err := parseEvent(gateway.EventFrame(kernel.LoggedEvent{Seq: 3, Type: "user.created", CreatedAt: logged}))
	if err != nil || bare.seq != 3 || string(bare.data) != "null" || !bare.createdAt.Equal(logged) {
		t.Fatalf("an event without payload nor scope: %+v, %v", bare, err)
	}
	typing, err := parseEvent([]byte(`{"op":"event","d":{"type":"typing.started","data":{"thread_id":"t","principal_id":"p"}}}`))
	if err != nil || typing.seq != 0 {
		t.Fatalf("an ephemeral event: %+v, %v", typing, err)
	}
	for _, bad := range []string{
		`{"op":"event","d":{"data":{},"seq":1}}`,
		`{"op":"event","d":{"seq":0,"type":"x","data":{},"created_at":"2026-01-01T00:00:00Z"}}`,
		`{"op":"event","d":{"seq":1,"data":{},"type":"x","created_at":"2026-01-01T00:00:00Z"}}`,
		`{"op":"event","d":{"seq":1,"type":"x","data":{}}}`,
		`{"op":"event","d":{"seq":1,"type":"x","data":{},"created_at":"yesterday"}}`,
	} {
		if _, err := parseEvent([]byte(bad)); err == nil {
			t.Errorf("parseEvent(%s) took it", bad)
		}
	}
}

func TestParseUTCReadsRFC3339Nano(t *testing.T) {
	for _, when := range []time.Time{
		time.Date(2026, 11, 30, 2, 45, 1, 0, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 100_000_000, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 123_456_789, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 1, time.UTC),
		time.Date(2026, 6, 1, 12, 0, 0, 5_000, time.FixedZone("CEST", 2*3600)), // not UTC: time.Parse
	} {
		s := when.Format(time.RFC3339Nano)
		if got, ok := parseUTC([]byte(s)); !ok || !got.Equal(when) {
			t.Errorf("parseUTC(%s) = %v, %v", s, got, ok)
		}
	}
	for _, bad := range []string{"", "2026-01-02T03:04:05.Z", "2026-01-02 03:04:05Z", "2026-0x-02T03:04:05Z"} {
		if _, ok := parseUTC([]byte(bad)); ok {
			t.Errorf("parseUTC(%q) took it", bad)
		}
	}
}

// fakeGateway is a gateway that says hello, checks the identify and plays script on every
// connection, then reads until the client closes. It reports what went wrong on the server's
// side with t.Error; the test waits for its handlers, which end when the clients close.
func fakeGateway(t *testing.T, wantIdentify string, script func(ctx context.Context, ws *websocket.Conn) error) string {
	t.Helper()
	var handlers sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		if r.URL.Path != "/api/v1/gateway" {
			http.NotFound(w, r)
			return
		}
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		defer ws.CloseNow()
		ctx := r.Context()
		if err := ws.Write(ctx, websocket.MessageText, []byte(`{"op":"hello","d":{"heartbeat_interval_ms":30000}}`)); err != nil {
			t.Error(err)
			return
		}
		if _, b, err := ws.Read(ctx); err != nil || string(b) != wantIdentify {
			t.Errorf("identify: %s, %v; want %s", b, err, wantIdentify)
			return
		}
		if err := script(ctx, ws); err != nil {
			t.Error(err)
			return
		}
		for {
			if _, _, err := ws.Read(ctx); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	// Before srv.Close (cleanups run last first): Close does not wait for hijacked connections.
	t.Cleanup(handlers.Wait)
	return srv.URL
}

// send writes frames in order, and after a server heartbeat expects the client's answer.
func send(ctx context.Context, ws *websocket.Conn, frames ...[]byte) error {
	for _, f := range frames {
		if err := ws.Write(ctx, websocket.MessageText, f); err != nil {
			return err
		}
		if string(f) == `{"op":"heartbeat","d":{}}` {
			if _, b, err := ws.Read(ctx); err != nil || string(b) != `{"op":"heartbeat","d":{}}` {
				return fmt.Errorf("the answer to a heartbeat: %s, %v", b, err)
			}
		}
	}
	return nil
}

var (
	readyFrame    = []byte(`{"op":"ready","d":{"session_id":"s","principal":{"id":"p","kind":"person","handle":"h","is_owner":false},"head_seq":9,"online":["p"]}}`)
	presenceFrame = []byte(`{"op":"event","d":{"type":"presence.updated","data":{"principal_id":"q","status":"online"}}}`)
	completeFrame = []byte(`{"op":"catchup.complete","d":{"head_seq":9}}`)
)

func TestCatchUpOnceWantsExactlyTheReplay(t *testing.T) {
	now := time.Now()
	ev := func(seq int64) []byte { return messageFrame(t, seq, int(seq), now, now) }
	for _, tc := range []struct {
		name   string
		replay [][]byte
		err    string
	}{
		{"times an exact replay, heartbeats and presence aside", [][]byte{ev(5), presenceFrame, ev(7), []byte(`{"op":"heartbeat","d":{}}`), ev(9)}, ""},
		{"refuses a replay short of an event", [][]byte{ev(5), ev(9)}, "is seq 9, want 7"},
		{"refuses an event more", [][]byte{ev(5), ev(7), ev(9), ev(11)}, "after the 3 events"},
		{"refuses an event repeated", [][]byte{ev(5), ev(5), ev(7), ev(9)}, "is seq 5, want 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := fakeGateway(t, `{"op":"identify","d":{"token":"tok","cursor":4}}`, func(ctx context.Context, ws *websocket.Conn) error {
				frames := append(append([][]byte{readyFrame}, tc.replay...), completeFrame)
				if err := send(ctx, ws, frames...); err != nil && tc.err == "" {
					return err
				}
				return nil
			})
			toComplete, toLast, err := catchUpOnce(context.Background(), base, "tok", 4, []int64{5, 7, 9})
			if tc.err == "" {
				if err != nil || toComplete <= 0 || toLast <= 0 || toLast > toComplete {
					t.Fatalf("catchUpOnce = %v, %v, %v", toComplete, toLast, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("catchUpOnce = %v, want an error with %q", err, tc.err)
			}
		})
	}
}

func TestFleetChecksEveryDelivery(t *testing.T) {
	due := time.Now()
	msg := func(seq int64, i int) []byte { return messageFrame(t, seq, i, due, due) }
	for _, tc := range []struct {
		name string
		live [][]byte
		err  string
	}{
		{"records each message once, other events aside", [][]byte{msg(10, 0), presenceFrame,
			gateway.EventFrame(kernel.LoggedEvent{Seq: 11, Type: "thread.created", Payload: []byte(`{}`), CreatedAt: due}), msg(12, 1), msg(14, 2)}, ""},
		{"fails a seq delivered twice", [][]byte{msg(10, 0), msg(12, 1), msg(12, 1), msg(14, 2)}, "seq 12 after seq 12"},
		{"fails a message of another run", [][]byte{msg(10, 0), msg(12, 1), msg(14, 2), msg(16, 9)}, "1 unknown"},
		{"fails a dropped connection", [][]byte{msg(10, 0)}, "4014"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := fakeGateway(t, `{"op":"identify","d":{"token":"tok"}}`, func(ctx context.Context, ws *websocket.Conn) error {
				err := send(ctx, ws, append([][]byte{readyFrame, completeFrame}, tc.live...)...)
				if tc.err == "4014" {
					_ = ws.Close(4014, "slow consumer")
				}
				if tc.err != "" {
					return nil // the client may be gone
				}
				return err
			})
			f, err := connectFleet(context.Background(), base, []string{"tok"}, 3, 2, func() *ledger { return newLedger(3, 1) })
			if err != nil {
				t.Fatal(err)
			}
			err = f.waitDelivered(context.Background(), 3, time.Second)
			err = errors.Join(err, f.stop())
			for _, m := range f.members {
				if err == nil {
					err = m.ledger.check()
				}
			}
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				for k, m := range f.members {
					if len(m.ledger.lat) != 2 || len(m.ledger.fromLog) != 2 || m.ledger.fromLog[0] <= 0 {
						t.Fatalf("client %d measured %v and from the log %v, want messages 1 and 2", k, m.ledger.lat, m.ledger.fromLog)
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want an error with %q", err, tc.err)
			}
		})
	}
}

func BenchmarkParseEvent(b *testing.B) {
	now := time.Now()
	f := messageFrame(b, 123456, 7, now, now)
	for b.Loop() {
		if _, err := parseEvent(f); err != nil {
			b.Fatal(err)
		}
	}
}
