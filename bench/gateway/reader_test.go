package gatewaybench

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestReader(t *testing.T) {
	t.Run("Wait returns the error the reader returns after the stop, not what it held before", func(t *testing.T) {
		stop, boom := make(chan struct{}), errors.New("a seq out of order in the last frames")
		r := NewReader()
		r.Start(func() error { <-stop; time.Sleep(10 * time.Millisecond); return boom })
		if err := r.Failed(); err != nil {
			t.Fatalf("Failed() = %v while the reader runs, want nil", err)
		}
		close(stop) // the connection is closed; the reader still has frames to check
		if err := r.Wait(); !errors.Is(err, boom) {
			t.Fatalf("Wait() = %v, want the reader's %v", err, boom)
		}
		if err := r.Failed(); !errors.Is(err, boom) {
			t.Fatalf("Failed() = %v after the end, want %v", err, boom)
		}
	})
	t.Run("a reader that returns nil has had its connection closed", func(t *testing.T) {
		r := NewReader()
		r.Start(func() error { return nil })
		<-r.Done()
		if err := r.Failed(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Failed() = %v, want ErrClosed", err)
		}
		if err := r.Wait(); err != nil {
			t.Fatalf("Wait() = %v, want nil", err)
		}
	})
	t.Run("WaitComplete returns at catchup.complete, and fails when the reader ends first", func(t *testing.T) {
		r := NewReader()
		hold := make(chan struct{})
		r.Start(func() error { r.Completed(); <-hold; return nil })
		if err := r.WaitComplete(context.Background()); err != nil {
			t.Fatalf("WaitComplete() = %v, want nil", err)
		}
		close(hold)

		boom := errors.New("dropped")
		r = NewReader()
		r.Start(func() error { return boom })
		if err := r.WaitComplete(context.Background()); !errors.Is(err, boom) {
			t.Fatalf("WaitComplete() = %v, want the reader's %v", err, boom)
		}
	})
	t.Run("WaitComplete ends with its context", func(t *testing.T) {
		r := NewReader()
		hold := make(chan struct{})
		defer close(hold)
		r.Start(func() error { <-hold; return nil })
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := r.WaitComplete(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("WaitComplete() = %v, want context.Canceled", err)
		}
	})
}
