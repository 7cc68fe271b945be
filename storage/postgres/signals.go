package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync/atomic"
)

// SignalChannel is the channel of the ephemeral signals between the nodes of a cluster:
// typing, presence and, later, the other modules' id-only wake-ups, each a small JSON
// object whose kind names its route.
const SignalChannel = "ephemeral"

// signalBuffer bounds the signals received and not yet taken; more are dropped (at most once).
const signalBuffer = 1024

// Signals is the channel ephemeral of one process: Publish notifies every node, Listen holds the
// process's one LISTEN connection on it (application_name bothy-ephemeral, a sibling of the log
// tail's bothy-log-tail: a different channel with different rules after a reconnect, since a lost
// head is read again but a lost signal stays lost) and hands each payload to Received. It
// implements the gateway's Signals port.
type Signals struct {
	url      string
	pool     *sql.DB
	log      *slog.Logger
	received chan []byte
	dropping atomic.Bool
}

// NewSignals returns the channel ephemeral for the database at url. Publish runs pg_notify on
// pool, the read pool: pg_notify is allowed in a read-only transaction (only a standby refuses
// it), and outside a transaction PostgreSQL delivers it at once, without the write path.
func NewSignals(url string, pool *sql.DB, log *slog.Logger) *Signals {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Signals{url: url, pool: pool, log: log, received: make(chan []byte, signalBuffer)}
}

// Publish sends payload to every node listening on the channel, this one included. PostgreSQL
// refuses a payload of 8000 bytes or more; signals carry ids only.
func (s *Signals) Publish(ctx context.Context, payload []byte) error {
	if _, err := s.pool.ExecContext(ctx, `SELECT pg_notify($1, $2)`, SignalChannel, string(payload)); err != nil {
		return fmt.Errorf("postgres: notify %s: %w", SignalChannel, err)
	}
	return nil
}

// Received is where the payloads arrive, in the order PostgreSQL delivered them. When the reader
// falls more than signalBuffer behind, new ones are dropped (logged once per burst).
func (s *Signals) Received() <-chan []byte { return s.received }

// Listen holds the LISTEN connection until ctx ends, reconnecting with the log tail's backoff;
// signals sent while it reconnects are lost. It returns ctx.Err(), or at once an error for a URL
// it cannot parse.
func (s *Signals) Listen(ctx context.Context) error {
	return listen(ctx, s.url, "bothy-ephemeral", SignalChannel, s.log, nil, func(payload string) {
		select {
		case s.received <- []byte(payload):
			if s.dropping.Swap(false) {
				s.log.Info("ephemeral listener: taking signals again")
			}
		default:
			if !s.dropping.Swap(true) {
				s.log.Warn("ephemeral listener: signals dropped, the reader is behind", "buffer", signalBuffer)
			}
		}
	})
}
