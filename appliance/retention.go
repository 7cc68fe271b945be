package appliance

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/jobs"
)

// JobRetention is the periodic job that prunes what is kept longer than its retention: the
// messages (messaging.retention), the earlier versions of edited messages
// (messaging.revision_retention), the output of ended runs (runs.output_retention) and the
// event log (sync.event_retention). A retention of 0 keeps everything of its kind, so a message
// is deleted only when messaging.retention says so, and then as a person's delete would.
const JobRetention = "sync.retention"

// retentionSettings are the retentions the job applies (0: keep everything of that kind), how
// often it runs and how many rows one of its transactions removes.
type retentionSettings struct {
	Messages, Revisions, RunOutput, Events time.Duration
	Interval                               time.Duration
	BatchSize                              int
}

// set reports whether some retention is set: without one the job is not registered.
func (s retentionSettings) set() bool {
	return s.Messages > 0 || s.Revisions > 0 || s.RunOutput > 0 || s.Events > 0
}

// messageExpirer deletes up to limit of the messages created before t and returns how many it
// looked at: messaging's ExpireMessages on the message store.
type messageExpirer func(ctx context.Context, before time.Time, limit int) (int64, error)

// registerRetention registers JobRetention on q when some retention is set.
func registerRetention(q *jobs.Queue, db *storage.DB, clock kernel.Clock, s retentionSettings, expire messageExpirer, logger *slog.Logger) {
	if !s.set() {
		return
	}
	q.RegisterPeriodic(JobRetention, s.Interval, retentionJob(db, clock, s, expire, logger))
}

// retentionJob is the handler of JobRetention: each prune in batches of s.BatchSize, each batch
// a short Unit of Work of its own, until a batch removes fewer than that. Retention is
// measured from the job's start, so one run ends even while the log grows. The messages go
// first: the message.deleted each appends is then the newest event, never pruned in that run.
func retentionJob(db *storage.DB, clock kernel.Clock, s retentionSettings, expire messageExpirer, logger *slog.Logger) jobs.Handler {
	type prune struct {
		what   string
		keep   time.Duration
		before func(context.Context, time.Time, int) (int64, error)
	}
	prunes := []prune{
		{"messages", s.Messages, expire},
		{"message revisions", s.Revisions, db.PruneRevisionsBefore},
		{"run outputs", s.RunOutput, db.PruneRunOutputBefore},
		{"events", s.Events, db.PruneEventsBefore},
	}
	return func(ctx context.Context, _ json.RawMessage) error {
		now := clock.Now()
		for _, p := range prunes {
			if p.keep <= 0 || p.before == nil {
				continue
			}
			n, err := inBatches(ctx, s.BatchSize, func(ctx context.Context, limit int) (int64, error) {
				return p.before(ctx, now.Add(-p.keep), limit)
			})
			if n > 0 {
				logger.Info("retention pruned "+p.what, "removed", n, "older_than", p.keep)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// inBatches calls batch until it removes fewer than size rows (or ctx ends), and returns how
// many it removed in all.
func inBatches(ctx context.Context, size int, batch func(ctx context.Context, limit int) (int64, error)) (int64, error) {
	var total int64
	for {
		n, err := batch(ctx, size)
		total += n
		if err != nil || n < int64(size) {
			return total, err
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}
