package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// The channel the write path notifies after each commit that appended events, with the new
// head as its only payload (storage's commit phase sends it with pg_notify).
const notifyChannel = "event_log"

// Backoff of the listeners' reconnects: doubled from the first to the cap
// (a fixed cap: no configuration key sets it).
const (
	listenBackoffMin = 100 * time.Millisecond
	listenBackoffCap = 10 * time.Second
)

// Listen holds one connection of its own (application_name bothy-log-tail) that LISTENs on
// event_log and calls onHead with each notified head, in the order PostgreSQL delivers them
// (heads only grow, but onHead must accept an old one). After each (re)connect it also calls
// onHead with the head it reads from sequence_counters, so that commits made while it was away
// are not left for the poll. It reconnects with a doubling backoff capped at 10 s until ctx
// ends and returns ctx.Err(); only a URL it cannot parse ends it early.
func Listen(ctx context.Context, url string, onHead func(head int64), log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return listen(ctx, url, "bothy-log-tail", notifyChannel, log,
		func(ctx context.Context, conn *pgx.Conn) error {
			var head int64
			if err := conn.QueryRow(ctx, `SELECT value FROM sequence_counters WHERE name = 'event_seq'`).Scan(&head); err != nil {
				return fmt.Errorf("read event_seq: %w", err)
			}
			onHead(head)
			return nil
		},
		func(payload string) {
			h, err := strconv.ParseInt(payload, 10, 64)
			if err != nil { // not ours: the poll still finds every commit
				log.Warn("ignored a notification on event_log that is not a head", "payload_bytes", len(payload))
				return
			}
			onHead(h)
		})
}

// listen is the loop of a LISTEN connection of its own (application_name app, unless the URL
// names one) on channel: it connects, LISTENs, calls listening (which may read what was missed
// meanwhile), then hands each payload to onPayload until the connection fails, and reconnects
// with a doubling backoff until ctx ends. It returns ctx.Err(), or at once an error for a URL it
// cannot parse.
func listen(ctx context.Context, url, app, channel string, log *slog.Logger,
	listening func(ctx context.Context, conn *pgx.Conn) error, onPayload func(payload string)) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("postgres: the database URL: %w", err)
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = app
	}
	backoff := listenBackoffMin
	for {
		err := listenOnce(ctx, cfg, channel, listening, onPayload, func() { backoff = listenBackoffMin })
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Warn(channel+" listener lost its connection; reconnecting", "err", err, "after", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, listenBackoffCap)
	}
}

// listenOnce connects, listens and delivers payloads until the connection fails or ctx ends.
func listenOnce(ctx context.Context, cfg *pgx.ConnConfig, channel string, listening func(context.Context, *pgx.Conn) error,
	onPayload func(string), reset func()) error {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	if listening != nil {
		if err := listening(ctx, conn); err != nil {
			return err
		}
	}
	reset()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		onPayload(n.Payload)
	}
}
