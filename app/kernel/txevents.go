package kernel

import (
	"context"
	"fmt"
	"reflect"
	"sync"
)

// TxBus delivers in-transaction events: synchronously, in the order of registration,
// inside the publisher's Unit of Work. A subscriber may write and append durable events; its
// error vetoes the commit. Subscribers are registered in one place (the appliance wiring) and
// the bus is sealed before the first Unit of Work.
type TxBus struct {
	mu     sync.RWMutex
	sealed bool
	subs   map[reflect.Type][]subscriber
}

type subscriber struct {
	name string
	fn   func(ctx context.Context, ev any) error
}

// NewTxBus returns an empty, unsealed bus.
func NewTxBus() *TxBus { return &TxBus{subs: map[reflect.Type][]subscriber{}} }

// Subscribe registers fn for in-transaction events of type T. name identifies the subscriber in
// errors and in the registration list. It panics after Seal.
func Subscribe[T any](b *TxBus, name string, fn func(ctx context.Context, ev T) error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sealed {
		panic("kernel: subscribe after seal: " + name)
	}
	t := reflect.TypeFor[T]()
	b.subs[t] = append(b.subs[t], subscriber{name: name, fn: func(ctx context.Context, ev any) error {
		return fn(ctx, ev.(T))
	}})
}

// Seal ends registration.
func (b *TxBus) Seal() { b.mu.Lock(); b.sealed = true; b.mu.Unlock() }

// Subscribers lists the registered subscribers of each event type, in delivery order.
func (b *TxBus) Subscribers() map[string][]string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := map[string][]string{}
	for t, ss := range b.subs {
		for _, s := range ss {
			out[t.String()] = append(out[t.String()], s.name)
		}
	}
	return out
}

// Publish delivers ev to its subscribers in registration order and stops at the first error,
// which it returns wrapped with the subscriber's name. A nil bus has no subscribers.
func Publish[T any](ctx context.Context, b *TxBus, ev T) error {
	if b == nil {
		return nil
	}
	b.mu.RLock()
	ss := b.subs[reflect.TypeFor[T]()]
	b.mu.RUnlock()
	for _, s := range ss {
		if err := s.fn(ctx, ev); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}
