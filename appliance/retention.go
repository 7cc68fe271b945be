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
// event log (sync.event_retention), the earlier versions of edited messages
// (messaging.revision_retention) and the output of ended runs (runs.output_retention). A
// retention of 0 keeps everything of its kind. It never deletes a message.
const JobRetention = "sync.retention"

// retentionSettings are the retentions the job applies (0: keep everything of that kind), how
// often it runs and how many rows one of its transactions removes.
type retentionSettings struct {
	Events, Revisions, RunOutput time.Duration
	Interval                     time.Duration
	BatchSize                    int
}

// set reports whether some retention is set: without one the job is not registered.
func (s retentionSettings) set() bool { return s.Events > 0 || s.Revisions > 0 || s.RunOutput > 0 }

// registerRetention registers JobRetention on q when some retention is set.
func registerRetention(q *jobs.Queue, db *storage.DB, clock kernel.Clock, s retentionSettings, logger *slog.Logger) {
	if !s.set() {
		return
	}
	q.RegisterPeriodic(JobRetention, s.Interval, retentionJob(db, clock, s, logger))
}

// retentionJob is the handler of JobRetention: each prune in batches of s.BatchSize, each batch
// a short Unit of Work of its own, until a batch removes fewer than that. Retention is
// measured from the job's start, so one run ends even while the log grows.
func retentionJob(db *storage.DB, clock kernel.Clock, s retentionSettings, logger *slog.Logger) jobs.Handler {
	type prune struct {
		what   string
		keep   time.Duration
		before func(context.Context, time.Time, int) (int64, error)
	}
	prunes := []prune{
		{"events", s.Events, db.PruneEventsBefore},
		{"message revisions", s.Revisions, db.PruneRevisionsBefore},
		{"run outputs", s.RunOutput, db.PruneRunOutputBefore},
	}
	return func(ctx context.Context, _ json.RawMessage) error {
		now := clock.Now()
		for _, p := range prunes {
			if p.keep <= 0 {
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
