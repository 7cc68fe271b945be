package gatewaybench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"bothy.dev/bothy/bench/internal/measure"

	httpbench "bothy.dev/bothy/bench/http"
)

// poster creates messages over REST: message i goes into Threads[i] as Tokens[i] (both modulo
// their length), with client_msg_id "<run>-<i>", so that every request creates a new message.
type poster struct {
	c      *http.Client
	urls   []string
	tokens []string
	run    []byte
}

func newPoster(c *http.Client, base string, threads, tokens []string) (*poster, error) {
	if len(threads) == 0 || len(tokens) == 0 {
		return nil, errors.New("gatewaybench: nothing to post into, or nobody to post as")
	}
	p := &poster{c: c, run: strconv.AppendInt([]byte("gw-"), time.Now().UnixNano(), 36)}
	for _, th := range threads {
		p.urls = append(p.urls, base+"/api/v1/threads/"+th+"/messages")
	}
	for _, t := range tokens {
		p.tokens = append(p.tokens, "Bearer "+t)
	}
	return p, nil
}

// post creates message i, stamped with due, and returns an error unless the answer is 201.
func (p *poster) post(ctx context.Context, i int, due time.Time, buf *[]byte) error {
	b := append((*buf)[:0], `{"content":`...)
	b = stampedContent(b, due, i)
	b = append(b, `,"client_msg_id":"`...)
	b = append(b, p.run...)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `"}`...)
	*buf = b
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.urls[i%len(p.urls)], bytes.NewReader(b))
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
	if resp.StatusCode != http.StatusCreated {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("message create: %d %s", resp.StatusCode, httpbench.Snippet(body))
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// Plan is an open-loop schedule: message i is due at Start + i·Interval, for i < Total; those
// from MeasureFrom on (due after the warm-up) are measured.
type Plan struct {
	Interval           time.Duration
	Total, MeasureFrom int
}

// MaxMessages bounds a plan: a generator that went wrong stops here.
const MaxMessages = 1_000_000

// NewPlan schedules rate messages a second for warmup + dur.
func NewPlan(rate float64, warmup, dur time.Duration) (Plan, error) {
	if rate <= 0 || dur <= 0 || warmup < 0 {
		return Plan{}, errors.New("gatewaybench: the rate and the duration must be positive")
	}
	iv := time.Duration(float64(time.Second) / rate)
	if iv <= 0 {
		return Plan{}, fmt.Errorf("gatewaybench: rate %g is too high", rate)
	}
	p := Plan{Interval: iv, Total: int((warmup + dur) / iv), MeasureFrom: int((warmup + iv - 1) / iv)}
	if p.Total > MaxMessages {
		return Plan{}, fmt.Errorf("gatewaybench: %d messages is more than the bound of %d", p.Total, MaxMessages)
	}
	if p.Total <= p.MeasureFrom {
		return Plan{}, errors.New("gatewaybench: no message is due in the measured window")
	}
	return p, nil
}

// CPUReader reads a process's CPU time so far (bench/serve's Server.CPU); nil reads nothing.
type CPUReader func() (time.Duration, error)

// Offered is what the poster saw.
type Offered struct {
	// Start is when message 0 was due.
	Start time.Time
	// Create is the latency of the measured message creates, from due to 201.
	Create measure.Latencies
}

// offer posts the plan open loop with Offer, each worker with its own body buffer, and
// summarises the measured creates.
func offer(ctx context.Context, p *poster, plan Plan, workers int) (Offered, error) {
	start, lat, err := Offer(ctx, plan, workers, func() PostFunc {
		var buf []byte
		return func(ctx context.Context, i int, due time.Time) error { return p.post(ctx, i, due, &buf) }
	})
	if err != nil {
		return Offered{}, err
	}
	return Offered{Start: start, Create: measure.Summarise(lat[plan.MeasureFrom:])}, nil
}

// PostFunc posts message i of a plan, due at due, and returns an error unless it was created.
type PostFunc func(ctx context.Context, i int, due time.Time) error

// Offer posts the plan open loop: a dispatcher hands message i, at the moment it is due, to the
// first free one of workers clients (it waits in a queue while all are busy), whatever the
// server does, so a stall shows in full in the latencies instead of slowing the offered load.
// Each worker posts with the PostFunc that worker() made for it. It returns when message 0 was
// due and each message's create latency (due → created); the first error stops the run.
func Offer(ctx context.Context, plan Plan, workers int, worker func() PostFunc) (start time.Time, create []time.Duration, err error) {
	if workers < 1 {
		return time.Time{}, nil, errors.New("gatewaybench: at least one worker")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(plan.Total)*plan.Interval+time.Minute)
	defer cancel()
	var (
		once     sync.Once
		firstErr error
	)
	fail := func(err error) { once.Do(func() { firstErr = err; cancel() }) }
	type job struct {
		i   int
		due time.Time
	}
	jobs := make(chan job, plan.Total)
	lat := make([]time.Duration, plan.Total)
	var wg sync.WaitGroup
	for range workers {
		post := worker()
		wg.Go(func() {
			for j := range jobs {
				if ctx.Err() != nil {
					continue
				}
				if err := post(ctx, j.i, j.due); err != nil {
					fail(fmt.Errorf("message %d: %w", j.i, err))
					continue
				}
				lat[j.i] = time.Since(j.due)
			}
		})
	}
	start = time.Now()
	for i := 0; i < plan.Total && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(i) * plan.Interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		jobs <- job{i, due}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return time.Time{}, nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return time.Time{}, nil, err
	}
	return start, lat, nil
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// seed creates n messages with 8 clients posting back to back.
func seed(ctx context.Context, p *poster, n int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		once     sync.Once
		firstErr error
		next     atomic.Int64
		wg       sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			var buf []byte
			for i := int(next.Add(1)) - 1; i < n && ctx.Err() == nil; i = int(next.Add(1)) - 1 {
				if err := p.post(ctx, i, time.Now(), &buf); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}
