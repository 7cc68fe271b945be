// Package gatewaybench measures the realtime gateway of a running bothy from outside, as its
// users see it: many gateway clients, each on its own WebSocket and gateway session, and a
// poster that creates messages over REST at a fixed rate (open loop). It measures commit →
// client latency (from the moment a message was due, and from the moment the writer logged
// it, to its receipt by each client), the rate each client is delivered at, the server memory
// an idle connection costs (from a reader of the server's RSS that the caller passes), and the
// time of a catch-up.
//
// The clients are lean WebSocket clients of its own (conn.go: coder/websocket read into a
// buffer each client reuses, frames read by their bytes), not the project's client package,
// whose decoding of every frame would cost the load generator more CPU than the server spends
// delivering it; the client package reads the REST catch-up. It talks to the server only over
// HTTP and WebSocket, from its own process (bothybench; the server is a `bothy serve` started
// by bench/serve), and must not import the appliance. A message lost or delivered twice, a seq
// not above the one before, a create answered otherwise than 201, a dropped connection and a
// client that does not get ready are errors, never figures.
package gatewaybench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"bothy.dev/bothy/bench/internal/measure"
	"bothy.dev/bothy/client"
)

// Deliver is a delivery run: clients connected and live, then a poster offering messages at a
// rate into the instance's channels (round-robin), as its people (round-robin).
type Deliver struct {
	// PostBase is where the poster posts and ClientBase where the clients connect; "" is the
	// instance's Base. Two nodes of one database make them differ.
	PostBase, ClientBase string
	// Clients is how many clients connect, client k as person k mod People. Every one must be
	// allowed to read every channel the poster posts into.
	Clients int
	// ConnectParallel is how many clients connect at once.
	ConnectParallel int
	// Rate is messages offered per second, for Warmup + Duration; the messages due in the last
	// Duration are measured.
	Rate             float64
	Warmup, Duration time.Duration
	// Workers are the poster's HTTP clients (a due message waits while all are busy).
	Workers int
	// Drain is how long the clients may take, after the poster's last answer, to receive
	// everything; a client still short then fails the run.
	Drain time.Duration
	// ServerCPU reads the server's CPU time (nil: not reported). With two nodes, the clients'.
	ServerCPU CPUReader
}

// Delivered is what a delivery run measured.
type Delivered struct {
	Plan Plan
	// Latency is receipt − due of every measured message at every client; FromLog receipt −
	// the created_at of the message's event, the moment the writer appended it to the log (the
	// server's clock, on the same machine).
	Latency, FromLog measure.Latencies
	// MinRate is the least, over clients, of messages received / (last receipt − first due).
	MinRate float64
	// Offered is the poster's side: message create latency and CPU.
	Offered Offered
	// ServerCPU and LoadCPU are the server's and this process's CPU time per message, from the
	// first message due to the last one received by the last client, warm-up included.
	ServerCPU, LoadCPU time.Duration
}

// RunDeliver connects d.Clients, posts the plan and checks that every client received every
// message exactly once.
func RunDeliver(ctx context.Context, c *http.Client, in Instance, d Deliver) (Delivered, error) {
	plan, err := NewPlan(d.Rate, d.Warmup, d.Duration)
	if err != nil {
		return Delivered{}, err
	}
	postBase, clientBase := orDefault(d.PostBase, in.Base), orDefault(d.ClientBase, in.Base)
	p, err := newPoster(c, postBase, in.Threads, in.Tokens)
	if err != nil {
		return Delivered{}, err
	}
	f, err := connectFleet(ctx, clientBase, in.Tokens, d.Clients, orDefault(d.ConnectParallel, 32),
		func() *ledger { return newLedger(plan.Total, plan.MeasureFrom) })
	if err != nil {
		return Delivered{}, fmt.Errorf("connect: %w", err)
	}
	cpu0, err := readCPU(d.ServerCPU)
	own0 := measure.CPUTime()
	var off Offered
	if err == nil {
		off, err = offer(ctx, p, plan, orDefault(d.Workers, 32))
	}
	if err == nil {
		err = f.waitDelivered(ctx, int64(plan.Total), orDefault(d.Drain, 10*time.Second))
	}
	cpu1, cpuErr := readCPU(d.ServerCPU)
	own1 := measure.CPUTime()
	if err = errors.Join(err, cpuErr, f.stop()); err != nil {
		return Delivered{}, err
	}
	out := Delivered{Plan: plan, Offered: off, MinRate: -1,
		ServerCPU: (cpu1 - cpu0) / time.Duration(plan.Total), LoadCPU: (own1 - own0) / time.Duration(plan.Total)}
	var all, fromLog []time.Duration
	for k, m := range f.members {
		if err := m.ledger.check(); err != nil {
			return Delivered{}, fmt.Errorf("client %d: %w", k, err)
		}
		all = append(all, m.ledger.lat...)
		fromLog = append(fromLog, m.ledger.fromLog...)
		if r := m.ledger.rate(off.Start); out.MinRate < 0 || r < out.MinRate {
			out.MinRate = r
		}
	}
	out.Latency, out.FromLog = measure.Summarise(all), measure.Summarise(fromLog)
	return out, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Idle is an idle-memory run.
type Idle struct {
	Connections, ConnectParallel int
	// Settle is the wait before the first reading, Hold the wait between the last connection's
	// catchup.complete and the second.
	Settle, Hold time.Duration
	// RSS reads the server's resident memory in bytes.
	RSS func() (int64, error)
}

// Idled is what an idle run measured.
type Idled struct {
	Before, After int64
	Connections   int
	// ConnectTime is from the first dial to the last catchup.complete.
	ConnectTime time.Duration
}

// PerConn is the growth of the server's RSS per connection, in bytes.
func (r Idled) PerConn() float64 { return float64(r.After-r.Before) / float64(r.Connections) }

// RunIdle reads the server's RSS, connects cfg.Connections clients (each identified, as person
// k mod len(tokens), and caught up), waits, and reads it again.
func RunIdle(ctx context.Context, base string, tokens []string, cfg Idle) (Idled, error) {
	if cfg.RSS == nil {
		return Idled{}, errors.New("gatewaybench: no RSS reader")
	}
	if !sleepUntil(ctx, time.Now().Add(cfg.Settle)) {
		return Idled{}, ctx.Err()
	}
	before, err := cfg.RSS()
	if err != nil {
		return Idled{}, err
	}
	start := time.Now()
	f, err := connectFleet(ctx, base, tokens, cfg.Connections, orDefault(cfg.ConnectParallel, 64), nil)
	if err != nil {
		return Idled{}, fmt.Errorf("connect: %w", err)
	}
	took := time.Since(start)
	if !sleepUntil(ctx, time.Now().Add(cfg.Hold)) {
		return Idled{}, errors.Join(ctx.Err(), f.stop())
	}
	after, err := cfg.RSS()
	// A connection dropped while idle fails the stop.
	if err = errors.Join(err, f.stop()); err != nil {
		return Idled{}, err
	}
	return Idled{Before: before, After: after, Connections: cfg.Connections, ConnectTime: took}, nil
}

// CatchUpLayout is the instance of a catch-up run: one reader (person 0) with view on the even
// channels and nothing on the odd ones, so that the replay authorizes each event and skips half
// of the log.
func CatchUpLayout(channels int) Layout {
	return Layout{Channels: channels, People: 1, Grant: func(_, c int) string {
		if c%2 == 0 {
			return "view"
		}
		return ""
	}}
}

// Seed creates n messages over REST as the owner, round-robin over the instance's channels.
func Seed(ctx context.Context, c *http.Client, in Instance, n int) error {
	p, err := newPoster(c, in.Base, in.Threads, []string{in.Owner})
	if err != nil {
		return err
	}
	return seed(ctx, p, n)
}

// CaughtUp is what a catch-up run measured.
type CaughtUp struct {
	// Cursor is the cursor of every identify; Head the last event replayed.
	Cursor, Head int64
	// ToComplete is from the write of identify to the read of catchup.complete; ToLast from
	// the write of identify to the read of the last replayed event.
	ToComplete, ToLast measure.Latencies
	// ServerCPU and LoadCPU are the server's and this process's CPU time per timed catch-up
	// (the load generator's includes each client's connect and stop).
	ServerCPU, LoadCPU time.Duration
}

// readCPU reads r, or 0 when r is nil.
func readCPU(r CPUReader) (time.Duration, error) {
	if r == nil {
		return 0, nil
	}
	return r()
}

// catchUpWarmup is how many catch-ups RunCatchUp runs untimed first: the first pays for what a
// server that has just been seeded has not needed yet (code paths, the session lookup's
// statements), which a reconnect storm on a running server does not.
const catchUpWarmup = 5

// RunCatchUp identifies repeats times (after catchUpWarmup untimed ones), one after the other, as token with a cursor chosen so
// that the replay holds exactly events events the principal may see, and times each
// catch-up. readable are the channels the token may read: an event of another channel in the
// replay is an error. serverCPU (nil: none) reads the server's CPU time.
func RunCatchUp(ctx context.Context, base, token string, readable []string, events, repeats int, serverCPU CPUReader) (CaughtUp, error) {
	if repeats < 1 {
		return CaughtUp{}, errors.New("gatewaybench: at least one catch-up")
	}
	seqs, err := visibleSeqs(ctx, client.New(base, token), readable)
	if err != nil {
		return CaughtUp{}, err
	}
	cursor, want, err := cursorBefore(seqs, events)
	if err != nil {
		return CaughtUp{}, err
	}
	out := CaughtUp{Cursor: cursor, Head: want[len(want)-1]}
	var toComplete, toLast []time.Duration
	var cpu0, own0 time.Duration
	for r := range catchUpWarmup + repeats {
		if r == catchUpWarmup {
			if cpu0, err = readCPU(serverCPU); err != nil {
				return CaughtUp{}, err
			}
			own0 = measure.CPUTime()
		}
		c, l, err := catchUpOnce(ctx, base, token, cursor, want)
		if err != nil {
			return CaughtUp{}, fmt.Errorf("catch-up %d: %w", r, err)
		}
		if r >= catchUpWarmup {
			toComplete, toLast = append(toComplete, c), append(toLast, l)
		}
	}
	cpu1, err := readCPU(serverCPU)
	if err != nil {
		return CaughtUp{}, err
	}
	out.ServerCPU, out.LoadCPU = (cpu1-cpu0)/time.Duration(repeats), (measure.CPUTime()-own0)/time.Duration(repeats)
	out.ToComplete, out.ToLast = measure.Summarise(toComplete), measure.Summarise(toLast)
	return out, nil
}

// visibleSeqs reads the whole log the token may see over the REST catch-up and returns the
// seqs of its events, checking that each belongs to a readable channel (or to none).
func visibleSeqs(ctx context.Context, cl *client.Client, readable []string) ([]int64, error) {
	var seqs []int64
	for after := int64(0); ; {
		page, err := cl.Events(ctx, after, 1000)
		if err != nil {
			return nil, err
		}
		for _, e := range page.Events {
			if e.ChannelID != "" && !slices.Contains(readable, e.ChannelID) {
				return nil, fmt.Errorf("the REST catch-up returned seq %d of channel %s, which the reader may not read", e.Seq, e.ChannelID)
			}
			seqs = append(seqs, e.Seq)
		}
		if page.NextAfter <= after || page.NextAfter >= page.HeadSeq {
			return seqs, nil
		}
		after = page.NextAfter
	}
}

// cursorBefore returns the cursor after which exactly the last n of seqs follow, and those n.
func cursorBefore(seqs []int64, n int) (int64, []int64, error) {
	if n < 1 || len(seqs) < n+1 {
		return 0, nil, fmt.Errorf("gatewaybench: the reader sees %d events, a replay of %d needs %d", len(seqs), n, n+1)
	}
	return seqs[len(seqs)-n-1], seqs[len(seqs)-n:], nil
}

// catchUpOnce connects, identifies once with cursor and reads up to catchup.complete: the
// replay must be exactly want, in order.
func catchUpOnce(ctx context.Context, base, token string, cursor int64, want []int64) (toComplete, toLast time.Duration, err error) {
	c, err := dial(ctx, base)
	if err != nil {
		return 0, 0, err
	}
	defer c.close()
	// The reads have no context (it would cost a timer per read): the deadline drops the
	// connection instead, which ends the read in progress.
	dctx, cancel := context.WithTimeout(ctx, completeDeadline)
	defer cancel()
	defer context.AfterFunc(dctx, c.abort)()
	sent, err := c.identify(token, cursor)
	if err != nil {
		return 0, 0, err
	}
	got, ready := 0, false
	var lastAt time.Time
	for {
		f, at, err := c.read()
		if err != nil {
			if dctx.Err() != nil {
				return 0, 0, fmt.Errorf("no catchup.complete within %s (%d of %d events): %w", completeDeadline, got, len(want), dctx.Err())
			}
			return 0, 0, err
		}
		op, _ := frameOp(f)
		switch string(op) {
		case "ready":
			if ready {
				return 0, 0, errors.New("a second ready")
			}
			ready = true
		case "event":
			e, err := parseEvent(f)
			switch {
			case err != nil:
				return 0, 0, err
			case e.seq == 0: // ephemeral
				continue
			case !ready:
				return 0, 0, fmt.Errorf("seq %d before ready", e.seq)
			case got >= len(want):
				return 0, 0, fmt.Errorf("seq %d after the %d events of the replay", e.seq, len(want))
			case e.seq != want[got]:
				return 0, 0, fmt.Errorf("replay event %d is seq %d, want %d", got, e.seq, want[got])
			}
			got++
			lastAt = at
		case "catchup.complete":
			if !ready || got != len(want) {
				return 0, 0, fmt.Errorf("catchup.complete after %d of the %d events of the replay (ready: %v)", got, len(want), ready)
			}
			return at.Sub(sent), lastAt.Sub(sent), nil
		}
	}
}
