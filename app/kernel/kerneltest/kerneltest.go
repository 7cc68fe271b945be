// Package kerneltest holds hand-written fakes of the kernel ports for the domain modules' unit
// tests: a Unit of Work that runs inline and keeps the events and jobs of committed units, and
// an Authorizer that records every decision. Only _test.go files import it.
package kerneltest

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"bothy.dev/bothy/app/kernel"
)

// Tx is a Unit of Work and event log in memory: a unit's events are kept only when it succeeds;
// nested units join the outer one.
type Tx struct {
	mu     sync.Mutex
	events []kernel.Event
	jobs   []kernel.Job
}

type txKey struct{}

type txBuf struct {
	events []kernel.Event
	jobs   []kernel.Job
}

var (
	_ kernel.UnitOfWork = (*Tx)(nil)
	_ kernel.EventLog   = (*Tx)(nil)
	_ kernel.Jobs       = (*Tx)(nil)
)

// Do implements kernel.UnitOfWork.
func (f *Tx) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if ctx.Value(txKey{}) != nil {
		return fn(ctx)
	}
	b := &txBuf{}
	if err := fn(context.WithValue(ctx, txKey{}, b)); err != nil {
		return err
	}
	f.mu.Lock()
	f.events = append(f.events, b.events...)
	f.jobs = append(f.jobs, b.jobs...)
	f.mu.Unlock()
	return nil
}

// Append implements kernel.EventLog; it panics outside a unit, as the store does, and on an event
// that is not of a defined type with its payload type (kernel.CheckEvent).
func (f *Tx) Append(ctx context.Context, e kernel.Event) {
	b, _ := ctx.Value(txKey{}).(*txBuf)
	if b == nil {
		panic("event " + e.Type + " appended outside a unit of work")
	}
	if err := kernel.CheckEvent(e); err != nil {
		panic(err)
	}
	b.events = append(b.events, e)
}

// Enqueue implements kernel.Jobs like the store: the job is kept when its unit succeeds (a unit
// of its own when ctx carries none). It refuses a job without a name, as the queue does.
func (f *Tx) Enqueue(ctx context.Context, j kernel.Job) error {
	if j.Name == "" {
		return errors.New("kerneltest: a job without a name")
	}
	return f.Do(ctx, func(ctx context.Context) error {
		b := ctx.Value(txKey{}).(*txBuf)
		b.jobs = append(b.jobs, j)
		return nil
	})
}

// Jobs returns the jobs of the units that succeeded, in order.
func (f *Tx) Jobs() []kernel.Job {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.jobs)
}

// Events returns the events of the units that succeeded, in order.
func (f *Tx) Events() []kernel.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.events)
}

// Authz decides with Fn (nil allows everything), records each call in Calls and in the
// request's check log.
type Authz struct {
	Fn    func(actor kernel.Actor, action kernel.Action, r kernel.Resource) error
	mu    sync.Mutex
	Calls []AuthzCall
}

// AuthzCall is one recorded decision.
type AuthzCall struct {
	Action   kernel.Action
	Resource kernel.Resource
}

var _ kernel.Authorizer = (*Authz)(nil)

// Authorize implements kernel.Authorizer.
func (a *Authz) Authorize(ctx context.Context, actor kernel.Actor, action kernel.Action, r kernel.Resource) error {
	a.mu.Lock()
	a.Calls = append(a.Calls, AuthzCall{action, r})
	a.mu.Unlock()
	kernel.RecordCheck(ctx, action)
	if a.Fn == nil {
		return nil
	}
	return a.Fn(actor, action, r)
}

// Last returns the latest recorded decision.
func (a *Authz) Last() AuthzCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.Calls[len(a.Calls)-1]
}

// Everything is a Scoper whose visibility holds every space and channel, for a test whose
// decisions are an Authz's and whose lists are not under test.
type Everything struct{}

var _ kernel.Scoper = Everything{}

// Visible implements kernel.Scoper.
func (Everything) Visible(context.Context, kernel.Actor, kernel.Action) (kernel.Visibility, error) {
	return Everything{}, nil
}

// Space, Channel and All implement kernel.Visibility.
func (Everything) Space(kernel.ID) bool   { return true }
func (Everything) Channel(kernel.ID) bool { return true }
func (Everything) All() bool              { return true }

// InUnit reports whether ctx carries a unit of a Tx, for fakes of ports that must run in one.
func InUnit(ctx context.Context) bool { return ctx.Value(txKey{}) != nil }

// Buffer is a bytes.Buffer that a running server's goroutines may write (its log, a command's
// output) while the test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Logger is a logger into tb's log, where lines show only when the test fails. A goroutine a
// test leaves running on purpose (a shutdown that overran its timeout) may still log after the
// test ended, which testing refuses with a panic: from the test's cleanup on, lines are dropped.
func Logger(tb testing.TB, level slog.Level) *slog.Logger {
	w := &tbWriter{tb: tb}
	tb.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.ended = true
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

type tbWriter struct {
	tb    testing.TB
	mu    sync.Mutex
	ended bool
}

func (w *tbWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended {
		w.tb.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// With returns c as tune changes it: a module's default configuration, tuned for one test.
func With[T any](c T, tune func(*T)) T {
	tune(&c)
	return c
}
