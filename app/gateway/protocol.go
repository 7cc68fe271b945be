package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/jsonkeys"
)

// Ops of the protocol (docs/gateway.md). A frame is a JSON text message {"op": …, "d": {…}}.
const (
	// Sent by the client.
	OpIdentify    = "identify"
	OpResume      = "resume"
	OpTypingStart = "typing.start"
	OpFocus       = "focus"
	OpAck         = "ack"

	// Sent by both sides: a heartbeat is answered with heartbeat.ack.
	OpHeartbeat    = "heartbeat"
	OpHeartbeatAck = "heartbeat.ack"

	// Sent by the server.
	OpHello           = "hello"
	OpReady           = "ready"
	OpEvent           = "event"
	OpCatchupComplete = "catchup.complete"
)

// Presence statuses of presence.updated.
const (
	StatusOnline  = "online"
	StatusOffline = "offline"
)

// Frame is one decoded client frame: the op and its payload, still raw (nil when the frame had no
// "d" or "d" was null).
type Frame struct {
	Op string
	D  json.RawMessage
}

// ErrDecode is what DecodeFrame and the payload decoders return for a frame that is not a frame
// of the protocol (close code 4002).
var ErrDecode = errors.New("gateway: malformed frame")

func decodeErr(msg string) error { return &decodeError{msg} }

type decodeError struct{ msg string }

func (e *decodeError) Error() string { return "gateway: malformed frame: " + e.msg }
func (e *decodeError) Is(target error) bool {
	return target == ErrDecode
}

// DecodeFrame parses one client frame. The frame must be valid UTF-8 and exactly one JSON object
// with a non-empty string "op" and an optional "d" that is an object or null; any other member, a
// member given twice or anything after the object is refused with ErrDecode. What "d" holds is
// checked by the op's own decoder, which ignores members it does not know.
func DecodeFrame(b []byte) (Frame, error) {
	if !utf8.Valid(b) {
		return Frame{}, decodeErr("not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return Frame{}, decodeErr("not a JSON object")
	}
	var f Frame
	var seenOp, seenD bool
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Frame{}, decodeErr("not a JSON object")
		}
		key, _ := tok.(string)
		switch key {
		case "op":
			if seenOp {
				return Frame{}, decodeErr(`"op" given twice`)
			}
			seenOp = true
			tok, err := dec.Token()
			op, ok := tok.(string)
			if err != nil || !ok || op == "" {
				return Frame{}, decodeErr(`"op" must be a non-empty string`)
			}
			f.Op = op
		case "d":
			if seenD {
				return Frame{}, decodeErr(`"d" given twice`)
			}
			seenD = true
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return Frame{}, decodeErr(`"d" is not JSON`)
			}
			switch {
			case bytes.Equal(raw, []byte("null")):
			case len(raw) > 0 && raw[0] == '{':
				f.D = raw
			default:
				return Frame{}, decodeErr(`"d" must be an object`)
			}
		default:
			return Frame{}, decodeErr("unknown member " + strconv.Quote(key))
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return Frame{}, decodeErr("not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return Frame{}, decodeErr("data after the object")
	}
	if !seenOp {
		return Frame{}, decodeErr(`no "op"`)
	}
	return f, nil
}

// EncodeFrame is the text form of a frame; DecodeFrame(EncodeFrame(f)) == f for every frame
// DecodeFrame returns.
func EncodeFrame(f Frame) []byte {
	op, _ := json.Marshal(f.Op)
	out := append([]byte(`{"op":`), op...)
	if f.D != nil {
		out = append(out, `,"d":`...)
		out = append(out, f.D...)
	}
	return append(out, '}')
}

// decodeD decodes a frame's payload into v; a missing payload leaves v as it is. Members v does
// not know are ignored (a newer client may send more); a member of the wrong type, a member
// given twice, or a key that differs from a member's name only in case ("TOKEN", which
// encoding/json would bind to "token"), is ErrDecode.
func decodeD(d json.RawMessage, v any) error {
	if d == nil {
		return nil
	}
	if err := jsonkeys.Exact(d, v); err != nil {
		var me *jsonkeys.MismatchError
		var de *jsonkeys.DuplicateError
		switch {
		case errors.As(err, &me):
			return decodeErr("payload: key " + strconv.Quote(me.Path) + " is not " + strconv.Quote(me.Member))
		case errors.As(err, &de):
			return decodeErr("payload: key " + strconv.Quote(de.Path) + " given twice")
		}
		return decodeErr("payload: not JSON")
	}
	if err := json.Unmarshal(d, v); err != nil {
		return decodeErr("payload: " + err.Error())
	}
	return nil
}

// Payloads of the client ops.

type identifyD struct {
	Token  string `json:"token"`
	Cursor *int64 `json:"cursor"`
	// DeviceID names the client's device (a UUID it keeps): a newer connection of the same
	// device closes this one with 4017.
	DeviceID string `json:"device_id"`
}

type ackD struct {
	Seq *int64 `json:"seq"`
}

type resumeD struct {
	SessionID string `json:"session_id"`
	Seq       *int64 `json:"seq"`
}

type threadD struct {
	// ThreadID is required by typing.start; focus takes null (or no member) to clear the focus.
	ThreadID *string `json:"thread_id"`
}

// threadID parses the thread id of typing.start and focus: absent or null gives NilID; a value
// that is not a UUIDv7 is ErrDecode.
func (d threadD) threadID() (kernel.ID, error) {
	if d.ThreadID == nil {
		return kernel.NilID, nil
	}
	id, err := kernel.ParseID(*d.ThreadID)
	if err != nil {
		return kernel.NilID, decodeErr("thread_id must be an id")
	}
	return id, nil
}

// Server frames. Each is encoded once; an event's frame is shared by every connection that gets it.

func encodeServer(op string, d any) []byte {
	b, err := json.Marshal(struct {
		Op string `json:"op"`
		D  any    `json:"d"`
	}{op, d})
	if err != nil {
		panic("gateway: encode " + op + ": " + err.Error()) // only our own types are encoded
	}
	return b
}

func helloFrame(interval time.Duration) []byte {
	return encodeServer(OpHello, map[string]int64{"heartbeat_interval_ms": interval.Milliseconds()})
}

var (
	heartbeatFrame    = encodeServer(OpHeartbeat, struct{}{})
	heartbeatAckFrame = encodeServer(OpHeartbeatAck, struct{}{})
)

// PrincipalJSON is who a session acts as, in ready.
type PrincipalJSON struct {
	ID      kernel.ID            `json:"id"`
	Kind    kernel.PrincipalKind `json:"kind"`
	Handle  string               `json:"handle"`
	IsOwner bool                 `json:"is_owner"`
}

// readyFrame is ready; online, the people online (the principal included), is given to people
// and left out (nil) for agents.
// readyFrame is ready; online is set for people, acked for an agent's consumer (the seq its
// replay starts after).
func readyFrame(sessionID string, a kernel.Actor, head int64, online []kernel.ID, acked *int64) []byte {
	var on *[]kernel.ID
	if online != nil {
		on = &online
	}
	return encodeServer(OpReady, struct {
		SessionID string        `json:"session_id"`
		Principal PrincipalJSON `json:"principal"`
		HeadSeq   int64         `json:"head_seq"`
		Online    *[]kernel.ID  `json:"online,omitempty"`
		AckedSeq  *int64        `json:"acked_seq,omitempty"`
	}{sessionID, PrincipalJSON{a.ID, a.Kind, a.Handle, a.IsOwner}, head, on, acked})
}

func catchupCompleteFrame(head int64) []byte {
	return encodeServer(OpCatchupComplete, map[string]int64{"head_seq": head})
}

// EventFrame is the frame of a logged event: {"op":"event","d":{"seq","type","data",
// "created_at", and the space_id, channel_id and thread_id of its scope when set}}, the same
// members as an event of REST catch-up (GET /api/v1/events). data is the payload as logged.
func EventFrame(e kernel.LoggedEvent) []byte {
	b := make([]byte, 0, len(e.Payload)+192)
	b = append(b, `{"op":"event","d":{"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"type":`...)
	b = strconv.AppendQuote(b, e.Type)
	b = append(b, `,"data":`...)
	if len(e.Payload) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, e.Payload...)
	}
	b = append(b, `,"created_at":"`...)
	b = e.CreatedAt.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	for _, m := range [...]struct {
		name string
		id   kernel.ID
	}{{"space_id", e.Scope.SpaceID}, {"channel_id", e.Scope.ChannelID}, {"thread_id", e.Scope.ThreadID}} {
		if !m.id.IsZero() {
			b = append(b, `,"`...)
			b = append(b, m.name...)
			b = append(b, `":`...)
			b = strconv.AppendQuote(b, string(m.id))
		}
	}
	return append(b, "}}"...)
}

// typingFrame is the ephemeral typing.started: an event frame without seq.
func typingFrame(thread, principal kernel.ID) []byte {
	return ephemeralFrame(EvTypingStarted, TypingStarted{PrincipalID: principal, ThreadID: thread})
}

// presenceFrame is the ephemeral presence.updated about a person.
func presenceFrame(principal kernel.ID, online bool) []byte {
	status := StatusOffline
	if online {
		status = StatusOnline
	}
	return ephemeralFrame(EvPresenceUpdated, PresenceUpdated{PrincipalID: principal, Status: status})
}

// ephemeralFrame is an event frame without seq of type t carrying p.
func ephemeralFrame[P any](t kernel.EventType[P], p P) []byte {
	return encodeServer(OpEvent, struct {
		Type string `json:"type"`
		Data P      `json:"data"`
	}{t.Name, p})
}
