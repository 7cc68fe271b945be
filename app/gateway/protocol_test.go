package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
)

func TestDecodeFrame(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		wantOp string
		wantD  string // "" for no payload
		ok     bool
	}{
		{name: "takes op and d", in: `{"op":"identify","d":{"token":"t"}}`, wantOp: "identify", wantD: `{"token":"t"}`, ok: true},
		{name: "takes d before op", in: `{"d":{"a":[1,2]},"op":"x"}`, wantOp: "x", wantD: `{"a":[1,2]}`, ok: true},
		{name: "takes a frame without d", in: `{"op":"heartbeat"}`, wantOp: "heartbeat", ok: true},
		{name: "takes d null as no payload", in: `{"op":"heartbeat","d":null}`, wantOp: "heartbeat", ok: true},
		{name: "takes whitespace around", in: " \n{ \"op\" : \"heartbeat\" }\t", wantOp: "heartbeat", ok: true},
		{name: "takes an escaped op", in: `{"op":"typ\u0069ng.start"}`, wantOp: "typing.start", ok: true},
		{name: "refuses an empty message", in: ``},
		{name: "refuses text", in: `heartbeat`},
		{name: "refuses an array", in: `[]`},
		{name: "refuses a string", in: `"op"`},
		{name: "refuses null", in: `null`},
		{name: "refuses an empty object", in: `{}`},
		{name: "refuses an empty op", in: `{"op":""}`},
		{name: "refuses a numeric op", in: `{"op":3}`},
		{name: "refuses an object op", in: `{"op":{"x":1}}`},
		{name: "refuses an array payload", in: `{"op":"x","d":[1]}`},
		{name: "refuses a string payload", in: `{"op":"x","d":"y"}`},
		{name: "refuses a numeric payload", in: `{"op":"x","d":1}`},
		{name: "refuses an unknown member", in: `{"op":"x","t":"y"}`},
		{name: "refuses op twice", in: `{"op":"x","op":"y"}`},
		{name: "refuses d twice", in: `{"op":"x","d":{},"d":{}}`},
		{name: "refuses a second object", in: `{"op":"x"}{"op":"y"}`},
		{name: "refuses trailing text", in: `{"op":"x"} z`},
		{name: "refuses an unclosed object", in: `{"op":"x"`},
		{name: "refuses a broken payload", in: `{"op":"x","d":{"a":}}`},
		{name: "refuses invalid UTF-8", in: "{\"op\":\"\xff\"}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := DecodeFrame([]byte(tt.in))
			if !tt.ok {
				if !errors.Is(err, ErrDecode) {
					t.Fatalf("DecodeFrame = %+v, %v; want ErrDecode", f, err)
				}
				return
			}
			if err != nil || f.Op != tt.wantOp || string(f.D) != tt.wantD {
				t.Fatalf("DecodeFrame = {%q %s}, %v; want {%q %s}", f.Op, f.D, err, tt.wantOp, tt.wantD)
			}
		})
	}
}

func TestDecodePayload(t *testing.T) {
	refuse := map[string]string{
		"a key that differs from a member only in case": `{"token":"mine","TOKEN":"theirs"}`,
		"a capitalised member":                          `{"Token":"theirs"}`,
		"a member given twice":                          `{"token":"mine","token":"theirs"}`,
		"a member of the wrong type":                    `{"token":1}`,
	}
	for name, d := range refuse {
		t.Run("refuses "+name, func(t *testing.T) {
			var id identifyD
			if err := decodeD(json.RawMessage(d), &id); !errors.Is(err, ErrDecode) {
				t.Fatalf("decodeD(%s) = %+v, %v; want ErrDecode", d, id, err)
			}
		})
	}
	t.Run("ignores members it does not know", func(t *testing.T) {
		var id identifyD
		if err := decodeD(json.RawMessage(`{"token":"mine","colour":"red","Colour":1}`), &id); err != nil || id.Token != "mine" {
			t.Fatalf("%+v, %v", id, err)
		}
	})
}

func TestServerFrames(t *testing.T) {
	id := kernel.NewID()
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"hello", helloFrame(30 * time.Second), `{"op":"hello","d":{"heartbeat_interval_ms":30000}}`},
		{"heartbeat", heartbeatFrame, `{"op":"heartbeat","d":{}}`},
		{"heartbeat.ack", heartbeatAckFrame, `{"op":"heartbeat.ack","d":{}}`},
		{"catchup.complete", catchupCompleteFrame(42), `{"op":"catchup.complete","d":{"head_seq":42}}`},
		{"ready", readyFrame("s1", kernel.Actor{ID: id, Kind: kernel.KindAgent, Handle: "bot"}, 7, nil, nil),
			`{"op":"ready","d":{"session_id":"s1","principal":{"id":"` + string(id) + `","kind":"agent","handle":"bot","is_owner":false},"head_seq":7}}`},
		{"event", EventFrame(kernel.LoggedEvent{Seq: 9, Type: "message.created", Payload: []byte(`{"a":"<b>"}`),
			Scope:     kernel.Scope{ChannelID: id},
			CreatedAt: time.Date(2026, 5, 6, 7, 8, 9, 123456000, time.UTC)}),
			`{"op":"event","d":{"seq":9,"type":"message.created","data":{"a":"<b>"},"created_at":"2026-05-06T07:08:09.123456Z","channel_id":"` + string(id) + `"}}`},
		{"typing.started", typingFrame(id, id),
			`{"op":"event","d":{"type":"typing.started","data":{"principal_id":"` + string(id) + `","thread_id":"` + string(id) + `"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if string(tt.got) != tt.want {
				t.Fatalf("frame\n got %s\nwant %s", tt.got, tt.want)
			}
			if !json.Valid(tt.got) {
				t.Fatal("not JSON")
			}
		})
	}
}

// FuzzDecodeFrame holds that the decoder never panics, takes only frames of the protocol, and
// that what it takes encodes back to a frame it decodes the same.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range []string{
		`{"op":"identify","d":{"token":"bothy_abc","cursor":12}}`,
		`{"op":"resume","d":{"session_id":"0123456789abcdef0123456789abcdef","seq":3}}`,
		`{"op":"heartbeat"}`,
		`{"op":"heartbeat","d":null}`,
		`{"op":"typing.start","d":{"thread_id":"01900000-0000-7000-8000-000000000001"}}`,
		`{"op":"focus","d":{"thread_id":null}}`,
		`{"d":{"x":{"y":[1,2,{"z":"\u00e9"}]}},"op":"x"}`,
		`{"op":"x","op":"y"}`,
		`{"op":"x"} {}`,
		`[{"op":"x"}]`,
		"{\"op\":\"\xff\"}",
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := DecodeFrame(b)
		if err != nil {
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("error %v is not ErrDecode", err)
			}
			return
		}
		if fr.Op == "" {
			t.Fatal("decoded an empty op")
		}
		if fr.D != nil && (!json.Valid(fr.D) || fr.D[0] != '{') {
			t.Fatalf("payload %q is not an object", fr.D)
		}
		enc := EncodeFrame(fr)
		again, err := DecodeFrame(enc)
		if err != nil || again.Op != fr.Op || !bytes.Equal(again.D, fr.D) {
			t.Fatalf("%q decodes to {%q %q}; its encoding %q to {%q %q}, %v", b, fr.Op, fr.D, enc, again.Op, again.D, err)
		}
		// The op decoders never panic on what the frame decoder takes.
		var id identifyD
		_ = decodeD(fr.D, &id)
		var th threadD
		if decodeD(fr.D, &th) == nil {
			_, _ = th.threadID()
		}
	})
}
