// Package agentsbench measures agents and their runs on a running bothy from outside, as an
// agent and its people see them: how long a message that mentions an agent takes to reach the
// agent as its agent.invocation (the agent following the gateway as its consumer, acking), and
// how long a run's patch takes from the agent's PATCH to the run.updated of every client focused
// on the run's thread.
//
// It talks to the server only over HTTP and WebSocket, from its own process (bothybench; the
// server is a `bothy serve` started by bench/serve), with bench/gateway's lean connections, and
// must not import the appliance. An invocation lost or delivered twice, a create answered
// otherwise than 201 or whose trigger_state is not what it should be, a patch refused, a
// version a client never got, got twice or out of order, and a dropped connection are errors,
// never figures.
package agentsbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	gatewaybench "bothy.dev/bothy/bench/gateway"
	httpbench "bothy.dev/bothy/bench/http"
	"bothy.dev/bothy/bench/internal/fixture"
	"bothy.dev/bothy/bench/internal/measure"
)

// Handle is the handle of the agent the benchmarks create.
const Handle = "benchagent"

// Agent is an agent made by CreateAgent.
type Agent struct {
	ID, Handle, Token string
}

// CreateAgent creates the agent as the owner and grants it level (view or post) on channels.
func CreateAgent(ctx context.Context, c *http.Client, base, owner string, channels []string, level string) (Agent, error) {
	var a struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	if err := httpbench.Call(ctx, c, base, owner, "/api/v1/agents", map[string]string{
		"handle": Handle, "display_name": "Bench agent", "description": "the benchmark's agent",
	}, &a); err != nil {
		return Agent{}, err
	}
	if a.ID == "" || a.Token == "" {
		return Agent{}, errors.New("agentsbench: the agent was created without an id or a token")
	}
	for _, ch := range channels {
		if err := httpbench.Call(ctx, c, base, owner, "/api/v1/channels/"+ch+"/grants", map[string]string{"principal_id": a.ID, "level": level}, nil); err != nil {
			return Agent{}, err
		}
	}
	return Agent{ID: a.ID, Handle: Handle, Token: a.Token}, nil
}

// invocation is what the consumer reads of an agent.invocation.
type invocation struct {
	Seq       int64
	RunID     string `json:"run_id"`
	ThreadID  string `json:"thread_id"`
	MessageID string `json:"message_id"`
	Token     string `json:"invocation_token"`
	// At is when the frame was read; Logged the event's created_at (the server's clock).
	At, Logged time.Time
}

// consumer is the agent's gateway connection: it reads every event, checks that seqs rise and
// hands each agent.invocation to onInvocation (on the reading goroutine). It acks the last
// event read once every ackInterval: the gateway closes a connection that sends more than 120
// frames a minute (heartbeats aside) with 4008, acks included, so an agent of a busy channel
// cannot ack each invocation.
type consumer struct {
	c            *gatewaybench.Conn
	onInvocation func(invocation) error
	handled      atomic.Int64 // the seq of the last event read
	acker        *time.Ticker
	r            *gatewaybench.Reader // runs follow

	// onEvent, when set, sees every other logged event (its type, data and when it was read).
	onEvent func(typ, data []byte, at time.Time) error
}

// ackInterval is how often the consumer acks: the server saves acks about once a second. A var
// for the quick test.
var ackInterval = time.Second

// connectConsumer identifies as the agent (live from the head) and returns once its
// catchup.complete arrived.
func connectConsumer(ctx context.Context, base, token string, onInvocation func(invocation) error) (*consumer, error) {
	return connectConsumerWith(ctx, base, token, onInvocation, nil)
}

// connectConsumerWith is connectConsumer with onEvent, which sees the other logged events.
func connectConsumerWith(ctx context.Context, base, token string, onInvocation func(invocation) error,
	onEvent func(typ, data []byte, at time.Time) error) (*consumer, error) {
	conn, err := gatewaybench.Dial(ctx, base)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Identify(token, -1); err != nil {
		conn.Abort()
		return nil, err
	}
	k := &consumer{c: conn, onInvocation: onInvocation, onEvent: onEvent, acker: time.NewTicker(ackInterval), r: gatewaybench.NewReader()}
	k.r.Start(k.follow)
	go k.ackEvery()
	if err := k.r.WaitComplete(ctx); err != nil {
		conn.Abort()
		return nil, fmt.Errorf("the agent's consumer: %w", err)
	}
	return k, nil
}

var headKey = []byte(`"head_seq":`)

func (k *consumer) follow() error {
	var order gatewaybench.Order
	for {
		f, at, err := k.c.Read()
		if err != nil {
			if k.c.Closing() {
				return nil
			}
			return err
		}
		op, _ := gatewaybench.FrameOp(f)
		switch string(op) {
		case "ready":
			if err := order.Ready(); err != nil {
				return err
			}
		case "catchup.complete":
			if err := order.Complete(); err != nil {
				return err
			}
			if i := bytes.Index(f, headKey); i >= 0 {
				if head, err := strconv.ParseInt(string(bytes.TrimRight(f[i+len(headKey):], "}")), 10, 64); err == nil && head > order.Last() {
					order.From(head)
					k.handled.Store(head)
				}
			}
			k.r.Completed()
		case "event":
			e, err := gatewaybench.ParseEvent(f)
			switch {
			case err != nil:
				return err
			case e.Seq == 0:
				continue
			}
			if err := order.Event(e.Seq); err != nil {
				return err
			}
			if string(e.Type) != "agent.invocation" {
				if k.onEvent != nil {
					if err := k.onEvent(e.Type, e.Data, at); err != nil {
						return err
					}
				}
				k.handled.Store(e.Seq)
				continue
			}
			inv := invocation{Seq: e.Seq, At: at, Logged: e.CreatedAt}
			if err := json.Unmarshal(e.Data, &inv); err != nil || inv.RunID == "" || inv.MessageID == "" || inv.Token == "" {
				return fmt.Errorf("agent.invocation %d without its run, message or token (%v): %.300s", e.Seq, err, e.Data)
			}
			if err := k.onInvocation(inv); err != nil {
				return err
			}
			k.handled.Store(e.Seq)
		}
	}
}

// ackEvery acks the last event read, when it moved, every ackInterval until the reader returns.
// A failed write is the reader's error to report (the connection is gone).
func (k *consumer) ackEvery() {
	var acked int64
	for {
		select {
		case <-k.r.Done():
			return
		case <-k.acker.C:
			if seq := k.handled.Load(); seq > acked && !k.c.Closing() {
				if k.c.Send(fmt.Appendf(nil, `{"op":"ack","d":{"seq":%d}}`, seq)) != nil {
					return
				}
				acked = seq
			}
		}
	}
}

// failed returns the consumer's error once its reader has returned, else nil.
func (k *consumer) failed() error {
	if err := k.r.Failed(); err != nil {
		return fmt.Errorf("the agent's consumer: %w", err)
	}
	return nil
}

// stop closes the connection and returns the reader's error, if any.
func (k *consumer) stop() error {
	k.acker.Stop()
	k.c.Close()
	if err := k.r.Wait(); err != nil {
		return fmt.Errorf("the agent's consumer: %w", err)
	}
	return nil
}

// poster creates messages over REST, open loop: message i goes into threads[i] as tokens[i]
// (both modulo their length); when every > 0, each every-th message (i mod every == 0)
// mentions the agent, and its answer must say trigger_state "triggered".
type poster struct {
	c            *http.Client
	urls, tokens []string
	mention      string
	every        int
	run          string
	ids          []string // ids[i]: the id of message i, from its 201
}

func newPoster(c *http.Client, base string, threads, tokens []string, handle string, every, total int) (*poster, error) {
	if len(threads) == 0 || len(tokens) == 0 {
		return nil, errors.New("agentsbench: nothing to post into, or nobody to post as")
	}
	p := &poster{c: c, mention: "@" + handle + " ", every: every, ids: make([]string, total),
		run: "ag-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	for _, th := range threads {
		p.urls = append(p.urls, base+"/api/v1/threads/"+th+"/messages")
	}
	for _, t := range tokens {
		p.tokens = append(p.tokens, "Bearer "+t)
	}
	return p, nil
}

// triggers reports whether message i mentions the agent.
func (p *poster) triggers(i int) bool { return p.every > 0 && i%p.every == 0 }

// content is message i's content: the mention when it triggers, its index and the fixture's
// body (which mentions @ops, a handle nobody has).
func (p *poster) content(i int) string {
	s := "i=" + strconv.Itoa(i) + " " + fixture.Content
	if p.triggers(i) {
		s = p.mention + s
	}
	return s
}

// post creates message i and keeps its id; an answer other than 201, or a trigger_state
// other than "triggered" for a mention (null for the others), is an error.
func (p *poster) post(ctx context.Context, i int) error {
	body, err := json.Marshal(map[string]string{"content": p.content(i), "client_msg_id": p.run + "-" + strconv.Itoa(i)})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.urls[i%len(p.urls)], bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", p.tokens[i%len(p.tokens)])
	resp, err := p.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("message create: %d %s", resp.StatusCode, httpbench.Snippet(b))
	}
	var m struct {
		ID           string  `json:"id"`
		TriggerState *string `json:"trigger_state"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.ID == "" {
		return fmt.Errorf("message create: an answer without an id (%v): %s", err, httpbench.Snippet(b))
	}
	switch {
	case p.triggers(i) && (m.TriggerState == nil || *m.TriggerState != "triggered"):
		return fmt.Errorf("message %d mentions @%s but its trigger_state is %v", i, p.mention[1:len(p.mention)-1], deref(m.TriggerState))
	case !p.triggers(i) && m.TriggerState != nil:
		return fmt.Errorf("message %d mentions no agent but its trigger_state is %q", i, *m.TriggerState)
	}
	p.ids[i] = m.ID
	return nil
}

func deref(s *string) string {
	if s == nil {
		return "null"
	}
	return strconv.Quote(*s)
}

// offered is what the poster saw: when message 0 was due and each message's create latency
// (due → 201).
type offered struct {
	start  time.Time
	create []time.Duration
}

// offer posts plan open loop with gatewaybench.Offer: message i, at the moment it is due, goes
// to the first free one of workers clients (it queues while all are busy), so a stall of the
// server shows in full in the latencies instead of slowing the offered load.
func offer(ctx context.Context, p *poster, plan gatewaybench.Plan, workers int) (offered, error) {
	start, lat, err := gatewaybench.Offer(ctx, plan, max(1, workers), func() gatewaybench.PostFunc {
		return func(ctx context.Context, i int, _ time.Time) error { return p.post(ctx, i) }
	})
	if err != nil {
		return offered{}, err
	}
	return offered{start: start, create: lat}, nil
}

// Invoke is an invocation run: the agent connected as its consumer, a poster offering Rate
// messages/s round-robin over the instance's threads and people (who must hold invoke), one in
// Every mentioning the agent.
type Invoke struct {
	Rate             float64
	Every            int
	Warmup, Duration time.Duration
	Workers          int
	// Drain is how long the agent may take, after the poster's last answer, to receive every
	// invocation.
	Drain     time.Duration
	ServerCPU gatewaybench.CPUReader
}

// Invoked is what an invocation run measured.
type Invoked struct {
	Plan     gatewaybench.Plan
	Triggers int // invocations measured
	// Latency is the agent's receipt of the agent.invocation − the moment its message was due;
	// FromLog the receipt − the invocation event's created_at (the writer's stamp before COMMIT).
	Latency, FromLog measure.Latencies
	// Create is due → 201 of the measured triggering messages.
	Create measure.Latencies
	// ServerCPU and LoadCPU are CPU time per message (all of them, warm-up included).
	ServerCPU, LoadCPU time.Duration
}

// RunInvoke connects the agent, posts the plan and checks that the agent received the
// invocation of every triggering message exactly once, and no other.
func RunInvoke(ctx context.Context, c *http.Client, in gatewaybench.Instance, a Agent, cfg Invoke) (Invoked, error) {
	plan, err := gatewaybench.NewPlan(cfg.Rate, cfg.Warmup, cfg.Duration)
	if err != nil {
		return Invoked{}, err
	}
	if cfg.Every < 1 {
		return Invoked{}, errors.New("agentsbench: Every must be at least 1")
	}
	p, err := newPoster(c, in.Base, in.Threads, in.Tokens, a.Handle, cfg.Every, plan.Total)
	if err != nil {
		return Invoked{}, err
	}
	got := map[string][]invocation{} // by message id; written by the consumer's reader only
	var received int64
	var mu sync.Mutex
	k, err := connectConsumer(ctx, in.Base, a.Token, func(inv invocation) error {
		mu.Lock()
		got[inv.MessageID] = append(got[inv.MessageID], inv)
		received++
		mu.Unlock()
		return nil
	})
	if err != nil {
		return Invoked{}, err
	}
	triggers := 0
	for i := range plan.Total {
		if p.triggers(i) {
			triggers++
		}
	}
	cpu0, err := readCPU(cfg.ServerCPU)
	own0 := measure.CPUTime()
	var off offered
	if err == nil {
		off, err = offer(ctx, p, plan, max(1, cfg.Workers))
	}
	if err == nil {
		err = waitFor(ctx, cfg.Drain, k.failed, func() (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			return received >= int64(triggers), fmt.Sprintf("the agent received %d of %d invocations", received, triggers)
		})
	}
	cpu1, cpuErr := readCPU(cfg.ServerCPU)
	own1 := measure.CPUTime()
	if err = errors.Join(err, cpuErr, k.stop()); err != nil {
		return Invoked{}, err
	}
	out := Invoked{Plan: plan, ServerCPU: (cpu1 - cpu0) / time.Duration(plan.Total), LoadCPU: (own1 - own0) / time.Duration(plan.Total)}
	lat, fromLog, create, err := joinInvocations(p, plan, off, got)
	if err != nil {
		return Invoked{}, err
	}
	out.Triggers = len(lat)
	out.Latency, out.FromLog, out.Create = measure.Summarise(lat), measure.Summarise(fromLog), measure.Summarise(create)
	return out, nil
}

// joinInvocations matches the invocations the agent received to the triggering messages: each
// exactly once, none for another message, each run once; it returns the measured latencies.
func joinInvocations(p *poster, plan gatewaybench.Plan, off offered, got map[string][]invocation) (lat, fromLog, create []time.Duration, err error) {
	runs := map[string]bool{}
	matched := 0
	var missing []int
	for i := range plan.Total {
		if !p.triggers(i) {
			if len(got[p.ids[i]]) > 0 {
				return nil, nil, nil, fmt.Errorf("an invocation for message %d, which mentions no agent", i)
			}
			continue
		}
		invs := got[p.ids[i]]
		switch len(invs) {
		case 0:
			missing = append(missing, i)
			continue
		case 1:
		default:
			return nil, nil, nil, fmt.Errorf("message %d: %d invocations (seqs %d and %d)", i, len(invs), invs[0].Seq, invs[1].Seq)
		}
		inv := invs[0]
		if runs[inv.RunID] {
			return nil, nil, nil, fmt.Errorf("run %s invoked for two messages", inv.RunID)
		}
		runs[inv.RunID] = true
		matched++
		if i >= plan.MeasureFrom {
			due := off.start.Add(time.Duration(i) * plan.Interval)
			lat = append(lat, inv.At.Sub(due))
			fromLog = append(fromLog, inv.At.Sub(inv.Logged))
			create = append(create, off.create[i])
		}
	}
	if len(missing) > 0 {
		return nil, nil, nil, fmt.Errorf("no invocation for %d triggering messages (the first: %d)", len(missing), missing[0])
	}
	total := 0
	for _, invs := range got {
		total += len(invs)
	}
	if total != matched {
		return nil, nil, nil, fmt.Errorf("%d invocations for messages the poster did not make", total-matched)
	}
	return lat, fromLog, create, nil
}

// waitFor polls done every 5 ms until it says true, failed says the connection ended, or
// within has passed after the call.
func waitFor(ctx context.Context, within time.Duration, failed func() error, done func() (bool, string)) error {
	deadline := time.Now().Add(within)
	for {
		if err := failed(); err != nil {
			return err
		}
		ok, state := done()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s, %s after the last answer", state, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func readCPU(r gatewaybench.CPUReader) (time.Duration, error) {
	if r == nil {
		return 0, nil
	}
	return r()
}
