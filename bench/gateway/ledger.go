package gatewaybench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"bothy.dev/bothy/bench/internal/fixture"
)

// Every message the poster creates says when it was due and which it is: its content starts
// with "t=<unix nanoseconds> i=<index> ", followed by the body every benchmark writes. A client
// reads both back from the message.created it receives.

// stampedContent appends message i's content, JSON-encoded (with its quotes), to b.
func stampedContent(b []byte, due time.Time, i int) []byte {
	b = append(b, `"t=`...)
	b = strconv.AppendInt(b, due.UnixNano(), 10)
	b = append(b, " i="...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, ' ')
	b = append(b, escapedBody...)
	return append(b, '"')
}

// escapedBody is fixture.Content JSON-encoded, without its quotes.
var escapedBody = func() []byte {
	b, err := json.Marshal(fixture.Content)
	if err != nil {
		panic(err)
	}
	return b[1 : len(b)-1]
}()

var contentKey = []byte(`"content":"t=`)

// readStamp returns the due time and index a message.created payload carries. It looks for the
// content member by its bytes (a full decode of every delivery would cost the load generator
// more than the server's own work), and falls back to decoding when it is not where expected.
func readStamp(data []byte) (due int64, i int, ok bool) {
	if k := bytes.Index(data, contentKey); k >= 0 {
		if due, i, ok = parseStamp(data[k+len(contentKey)-2:]); ok {
			return due, i, true
		}
	}
	var m struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(data, &m) != nil {
		return 0, 0, false
	}
	return parseStamp([]byte(m.Content))
}

// parseStamp reads "t=<n> i=<n> " at the start of s.
func parseStamp(s []byte) (due int64, i int, ok bool) {
	rest, ok := bytes.CutPrefix(s, []byte("t="))
	if !ok {
		return 0, 0, false
	}
	var n int64
	if n, rest, ok = leadingInt(rest); !ok || n <= 0 {
		return 0, 0, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(" i=")); !ok {
		return 0, 0, false
	}
	idx, rest, ok := leadingInt(rest)
	if !ok || len(rest) == 0 || rest[0] != ' ' {
		return 0, 0, false
	}
	return n, int(idx), true
}

func leadingInt(s []byte) (int64, []byte, bool) {
	k := 0
	for k < len(s) && k < 19 && s[k] >= '0' && s[k] <= '9' {
		k++
	}
	if k == 0 {
		return 0, s, false
	}
	n, err := strconv.ParseInt(string(s[:k]), 10, 64)
	return n, s[k:], err == nil
}

// ledger is what one client received of the poster's messages. Only the client's reader
// writes it (member.follow); it is read once the client has stopped.
type ledger struct {
	seen     []bool // by message index
	received int
	dups     int
	foreign  int // message.created whose content carries no stamp of this run
	first    time.Time
	last     time.Time
	// lat holds receive − due of every message with an index at or above measureFrom, and
	// fromLog receive − the created_at of its event (when the writer appended it to the log,
	// in the transaction that commits it).
	lat, fromLog []time.Duration
	measureFrom  int
}

func newLedger(total, measureFrom int) *ledger {
	n := max(0, total-measureFrom)
	return &ledger{seen: make([]bool, total), measureFrom: measureFrom, lat: make([]time.Duration, 0, n), fromLog: make([]time.Duration, 0, n)}
}

// record notes message i, due at due (unix nanoseconds), logged at logged (zero: unknown),
// received at now.
func (l *ledger) record(due int64, i int, logged, now time.Time) {
	if i < 0 || i >= len(l.seen) {
		l.foreign++
		return
	}
	if l.seen[i] {
		l.dups++
		return
	}
	l.seen[i] = true
	l.received++
	if l.first.IsZero() {
		l.first = now
	}
	l.last = now
	if i >= l.measureFrom {
		l.lat = append(l.lat, now.Sub(time.Unix(0, due)))
		if !logged.IsZero() {
			l.fromLog = append(l.fromLog, now.Sub(logged))
		}
	}
}

// check returns an error unless every message arrived exactly once.
func (l *ledger) check() error {
	if l.received == len(l.seen) && l.dups == 0 && l.foreign == 0 {
		return nil
	}
	var missing []string
	for i, ok := range l.seen {
		if !ok {
			if len(missing) == 5 {
				missing = append(missing, "…")
				break
			}
			missing = append(missing, strconv.Itoa(i))
		}
	}
	return fmt.Errorf("received %d of %d messages (missing %s), %d twice, %d unknown",
		l.received, len(l.seen), strings.Join(missing, " "), l.dups, l.foreign)
}

// rate is messages received per second from firstSend to the last receipt.
func (l *ledger) rate(firstSend time.Time) float64 {
	d := l.last.Sub(firstSend)
	if l.received == 0 || d <= 0 {
		return 0
	}
	return float64(l.received) / d.Seconds()
}
