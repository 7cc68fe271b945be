package appliance

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/push"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/appliance/config"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/blobs"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/jobs"
	"bothy.dev/bothy/storage/postgres"
	"bothy.dev/bothy/storage/sqlite"
)

// The roles of server.role: all runs everything in one process; api serves the
// public listener (REST, gateway) and only enqueues jobs; worker runs the jobs and serves no
// public listener, only the internal one (/healthz, /readyz). api and worker need PostgreSQL
// (config.crossCheck): an SQLite file belongs to one process, which is role all.

// servesAPI reports whether role opens the public listener and runs the gateway.
func servesAPI(role string) bool { return role != "worker" }

// runsJobs reports whether role runs the job runner.
func runsJobs(role string) bool { return role != "api" }

// JobIdempotencyCleanup is the periodic job that deletes the Idempotency-Key answers older than
// sync.idempotency_key_ttl.
const JobIdempotencyCleanup = "sync.idempotency_cleanup"

// registerRunJobs registers the handlers of the jobs of runs (see docs/runs.md, When the server ends a run) on q: the two a run's
// Unit of Work enqueues, the periodic stall check every interval (agent.stall_check_interval),
// and the rotation of the invocation signing key every runs.KeyRotationCheck.
func registerRunJobs(q *jobs.Queue, svc *runs.Service, interval time.Duration, logger *slog.Logger) {
	q.Register(runs.JobQueuedExpiry, runJob(svc.ExpireQueued))
	q.Register(runs.JobCancelTimeout, runJob(svc.TimeoutCancel))
	q.Register(runs.JobApprovalTimeout, func(ctx context.Context, raw json.RawMessage) error {
		var args runs.ApprovalJobArgs
		if err := json.Unmarshal(raw, &args); err != nil {
			return fmt.Errorf("decode the job's arguments: %w", err)
		}
		if args.ApprovalID.IsZero() {
			return fmt.Errorf("the job names no approval")
		}
		return svc.TimeoutApproval(ctx, args.ApprovalID)
	})
	q.RegisterPeriodic(runs.JobStallCheck, interval, func(ctx context.Context, _ json.RawMessage) error {
		n, err := svc.FailStalled(ctx)
		if n > 0 {
			logger.Info("stalled runs failed", "runs", n)
		}
		return err
	})
	q.RegisterPeriodic(runs.JobSigningKeyRotation, runs.KeyRotationCheck, func(ctx context.Context, _ json.RawMessage) error {
		r, err := svc.RotateSigningKey(ctx)
		if r.Rotated {
			logger.Info("invocation signing key rotated", "kid", r.KID)
		}
		if r.Deleted > 0 {
			logger.Info("retired signing keys deleted", "keys", r.Deleted)
		}
		return err
	})
}

// runJob adapts a use case on one run to a job handler whose args are runs.JobArgs. Args that do
// not decode, or name no run, are a bug of the enqueuer: the job fails and is dropped after its
// attempts, with the error in the log.
func runJob(fn func(context.Context, kernel.ID) error) jobs.Handler {
	return func(ctx context.Context, raw json.RawMessage) error {
		var args runs.JobArgs
		if err := json.Unmarshal(raw, &args); err != nil {
			return fmt.Errorf("decode the job's arguments: %w", err)
		}
		if args.RunID.IsZero() {
			return fmt.Errorf("the job names no run")
		}
		return fn(ctx, args.RunID)
	}
}

// registerPushJobs registers the jobs that drain the outbox of Web Push sends: push.deliver,
// its tail push.deliver_tail and the periodic push.deliver_sweep (see push.JobDeliver). A
// subscription the push service says is gone is deleted and a send it refuses for good is
// dropped, each with a line in the log (counts only).
func registerPushJobs(q *jobs.Queue, svc *push.Service, logger *slog.Logger) {
	logged := func(drain func(context.Context) (push.Report, error)) jobs.Handler {
		return func(ctx context.Context, _ json.RawMessage) error {
			r, err := drain(ctx)
			if r.Removed > 0 {
				logger.Info("push subscriptions removed: their push service says they are gone", "sends", r.Removed)
			}
			if r.Refused > 0 || r.Dropped > 0 {
				logger.Warn("push notifications dropped", "refused", r.Refused, "after_last_attempt", r.Dropped)
			}
			return err
		}
	}
	q.Register(push.JobDeliver, logged(svc.HandleDeliver))
	q.Register(push.JobDeliverTail, logged(svc.HandleTail))
	q.RegisterPeriodic(push.JobSweep, push.SweepInterval, logged(svc.Deliver))
}

// pushConfig is push's configuration from the settings: the VAPID contact is push.subject, else
// the public URL.
func pushConfig(cfg config.Config) push.Config {
	c := push.DefaultConfig()
	c.AllowPrivateEndpoints = cfg.Push.AllowPrivateEndpoints
	c.Subject = cfg.Push.Subject
	if c.Subject == "" {
		c.Subject = cfg.Server.PublicURL
	}
	return c
}

// wireJobs registers the appliance's own jobs on q and sets a.Jobs; in roles all and worker it
// opens the runner's pool and runs the runner as a background task, stopped in the shutdown
// within its budget. wire calls it after the modules have registered their handlers.
//
// The runner's stop is registered after the gateway's, so it runs before it (stops run in
// reverse): the jobs in hand finish while the WebSockets are still open, and the events they
// commit still reach the clients through the log tail, which stops after every stop hook.
func wireJobs(ctx context.Context, a *App, q *jobs.Queue) error {
	cfg := a.Config
	q.RegisterPeriodic(JobIdempotencyCleanup, cfg.Sync.IdempotencyCleanupInterval,
		idempotencyCleanup(a.DB, a.Clock, cfg.Sync.IdempotencyKeyTTL, cfg.Sync.IdempotencyCleanupBatchSize, a.Logger))
	a.Jobs = q
	if !runsJobs(cfg.Server.Role) {
		return nil
	}
	pool, url, err := openJobPool(ctx, cfg)
	if err != nil {
		return fmt.Errorf("open the job runner's connection: %w", err)
	}
	a.jobPool = pool
	r := jobs.NewRunner(q, jobs.RunnerOptions{Pool: pool, Logger: a.Logger, Observe: a.jobObserver()})
	a.jobBacklog = r.Backlog
	a.Background("job runner", r.Run)
	a.OnStop("job runner", r.Stop)
	if engineOf(cfg) == engine.Postgres {
		// api processes wake the runners when they enqueue a job due now (jobs.QueueOptions.
		// NotifyOthers); one LISTEN connection of its own, bothy-jobs, beside the poll.
		logger := a.Logger
		a.Background("job listener", func(ctx context.Context) error {
			return postgres.ListenWake(ctx, url, "bothy-jobs", jobs.NotifyChannel, r.Wake, logger)
		})
	}
	return nil
}

// openJobPool opens the job runner's own writable connection to the store's database (see
// jobs.RunnerOptions.Pool): one connection, with the store's settings, to the database the
// store has opened (and on SQLite created and migrated) already. On PostgreSQL it also returns
// the URL, for the runner's listener; it is never logged.
func openJobPool(ctx context.Context, cfg config.Config) (pool *sql.DB, url string, err error) {
	var r *sql.DB
	switch engineOf(cfg) {
	case engine.Postgres:
		url, pool, r, err = openPostgres(ctx, cfg, cfg.Database.URLRef)
	default:
		pool, r, err = sqlite.Open(ctx, sqliteOptions(cfg))
	}
	if err != nil {
		return nil, "", err
	}
	r.Close() // its read pool is the store's
	return pool, url, nil
}

// idempotencyCleanup is the handler of JobIdempotencyCleanup: it deletes the answers stored
// before now - ttl, batch by batch, each batch a short Unit of Work of its own, until a batch
// finds fewer than batch to delete.
func idempotencyCleanup(db *storage.DB, clock kernel.Clock, ttl time.Duration, batch int, logger *slog.Logger) jobs.Handler {
	return func(ctx context.Context, _ json.RawMessage) error {
		cutoff := clock.Now().Add(-ttl)
		var total int64
		for {
			n, err := db.DeleteIdempotencyBefore(ctx, cutoff, batch)
			total += n
			if err != nil {
				return err
			}
			if n < int64(batch) {
				break
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if total > 0 {
			logger.Info("idempotency keys expired", "deleted", total, "older_than", ttl)
		}
		return nil
	}
}

// registerFileJobs registers the jobs of files: a new image's thumbnail, the removal of a file
// never attached and of an upload never completed, and of bytes no file names any more.
func registerFileJobs(q *jobs.Queue, svc *files.Service) {
	q.Register(files.JobThumbnail, fileJob(svc.MakeThumbnail))
	q.Register(files.JobUnattachedExpiry, fileJob(svc.ExpireUnattached))
	q.Register(files.JobUploadExpiry, func(ctx context.Context, raw json.RawMessage) error {
		var args files.UploadJobArgs
		if err := json.Unmarshal(raw, &args); err != nil {
			return fmt.Errorf("decode the job's arguments: %w", err)
		}
		if args.UploadID.IsZero() {
			return fmt.Errorf("the job names no upload")
		}
		return svc.ExpireUpload(ctx, args.UploadID)
	})
	q.Register(files.JobBlobRemoval, func(ctx context.Context, raw json.RawMessage) error {
		var args files.BlobJobArgs
		if err := json.Unmarshal(raw, &args); err != nil {
			return fmt.Errorf("decode the job's arguments: %w", err)
		}
		if args.Key == "" {
			return fmt.Errorf("the job names no blob")
		}
		return svc.RemoveBlob(ctx, args.Key)
	})
}

// JobBlobSweep is the periodic job that removes what uploads cut off by a crash left in the
// blob store (blobs.Sweeper): temporaries, and on S3 unfinished multipart uploads.
const JobBlobSweep = "files.blob_sweep"

// blobSweepEvery is how often the blob store is swept, and blobSweepAge how old a temporary
// must be to go: longer than any upload takes, since on S3 the uploads of other processes
// sharing the bucket are in flight in the same folder.
const (
	blobSweepEvery = time.Hour
	blobSweepAge   = time.Hour
)

// registerBlobSweep registers JobBlobSweep on q for store, when the store sweeps.
func registerBlobSweep(q *jobs.Queue, store files.Blobs, logger *slog.Logger) {
	s, ok := store.(blobs.Sweeper)
	if !ok {
		return
	}
	q.RegisterPeriodic(JobBlobSweep, blobSweepEvery, func(ctx context.Context, _ json.RawMessage) error {
		if err := s.Sweep(ctx, blobSweepAge); err != nil {
			return err
		}
		logger.Debug("blob store swept", "older_than", blobSweepAge)
		return nil
	})
}

// fileJob adapts a use case on one file to a job handler whose args are files.FileJobArgs.
func fileJob(fn func(context.Context, kernel.ID) error) jobs.Handler {
	return func(ctx context.Context, raw json.RawMessage) error {
		var args files.FileJobArgs
		if err := json.Unmarshal(raw, &args); err != nil {
			return fmt.Errorf("decode the job's arguments: %w", err)
		}
		if args.FileID.IsZero() {
			return fmt.Errorf("the job names no file")
		}
		return fn(ctx, args.FileID)
	}
}
