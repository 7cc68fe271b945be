// Package runtest runs an appliance in a test: started in the background, waited for until it
// is ready, stopped at the end of the test.
package runtest

import (
	"context"
	"testing"
	"time"
)

// App is what Run runs: an *appliance.App.
type App interface {
	Run(ctx context.Context) error
	Ready() <-chan struct{}
}

// Run runs a until the test ends and returns once it is ready, failing the test when Run ends
// first or is not ready within readyWithin. stop ends Run and returns its result, failing the
// test when Run has not returned within stopWithin; a second stop returns the same result.
func Run(tb testing.TB, a App, readyWithin, stopWithin time.Duration) (stop func() error) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	select {
	case <-a.Ready():
	case err := <-done:
		cancel()
		tb.Fatalf("Run ended before it was ready: %v", err)
	case <-time.After(readyWithin):
		cancel()
		tb.Fatalf("Run was not ready within %s", readyWithin)
	}
	var result error
	stopped := false
	stop = func() error {
		if stopped {
			return result
		}
		stopped = true
		cancel()
		select {
		case result = <-done:
		case <-time.After(stopWithin):
			tb.Fatalf("Run did not return within %s of the end of its context", stopWithin)
		}
		return result
	}
	tb.Cleanup(func() { stop() })
	return stop
}
