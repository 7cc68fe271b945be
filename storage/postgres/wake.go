package postgres

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5"
)

// ListenWake holds one connection of its own (application_name app) that LISTENs on channel
// and calls wake at each notification, whatever its payload, and once after each (re)connect,
// for what was notified while it was away. It is the cross-process wake-up of a poller that
// needs no content: storage/jobs's runners, woken by the api processes that enqueue (channel
// jobs.NotifyChannel). It reconnects with a doubling backoff capped at 10 s until ctx ends and
// returns ctx.Err(); only a URL it cannot parse ends it early. wake must not block.
func ListenWake(ctx context.Context, url, app, channel string, wake func(), log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return listen(ctx, url, app, channel, log,
		func(context.Context, *pgx.Conn) error { wake(); return nil },
		func(string) { wake() })
}
