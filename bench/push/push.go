// Package pushbench measures the Web Push consumer: how many notifications per second the job runner,
// with the appliance's defaults, sends through push.Service and the egress client to a push
// service (appliance/pushtest's fake, on loopback, which decrypts and verifies every request, so
// its CPU is counted too: the machine does both sides). It is for benchmarks only.
package pushbench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/app/push"
	"bothy.dev/bothy/appliance/egress"
	"bothy.dev/bothy/appliance/pushtest"
	"bothy.dev/bothy/bench/internal/fixture"
	"bothy.dev/bothy/bench/internal/measure"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/jobs"
	"bothy.dev/bothy/storage/sqlite"
)

// Result is one measurement.
type Result struct {
	Sends   int
	Elapsed time.Duration
	// PerSecond is Sends / Elapsed: from the runner's start to the last notification the fake
	// push service accepted.
	PerSecond float64
	// CPU is this process's CPU time per send (the runner, the client and the fake service).
	CPU time.Duration
}

// Run subscribes people browsers (two each) of a fake push service, enqueues notifications
// notifications in a Unit of Work each (round robin over the people: two sends each) while no
// runner runs, then starts a job runner with workers workers (0: the appliance's default) on
// the SQLite file in dir and waits until every send arrived: the time of a backlog's drain.
func Run(ctx context.Context, dir string, people, notifications, workers int) (Result, error) {
	w, r, err := fixture.OpenMigrated(ctx, filepath.Join(dir, "bothy.db"), "FULL")
	if err != nil {
		return Result{}, err
	}
	db, err := storage.Open(ctx, sqlite.Dialect{}, w, r, storage.Options{})
	if err != nil {
		return Result{}, err
	}
	defer db.Close()
	fake := pushtest.New()
	defer fake.Close()

	q := jobs.NewQueue(db, jobs.QueueOptions{})
	svc := push.New(push.Deps{Store: storage.NewPushStore(db), Jobs: q, UoW: db, Authz: &kerneltest.Authz{},
		Clock: kernel.SystemClock{}, Sender: egress.New(egress.Options{AllowPrivate: true})}, kerneltest.With(push.DefaultConfig(), func(c *push.Config) { c.Subject, c.AllowPrivateEndpoints = "mailto:bench@example.com", true }))
	// As the appliance registers them (appliance/jobs.go).
	handler := func(drain func(context.Context) (push.Report, error)) jobs.Handler {
		return func(ctx context.Context, _ json.RawMessage) error { _, err := drain(ctx); return err }
	}
	q.Register(push.JobDeliver, handler(svc.HandleDeliver))
	q.Register(push.JobDeliverTail, handler(svc.HandleTail))
	q.RegisterPeriodic(push.JobSweep, push.SweepInterval, handler(svc.Deliver))
	ids := storage.NewIdentityStore(db)
	var actors []kernel.Actor
	now := time.Now().UTC()
	for i := range people {
		a := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: fmt.Sprintf("p%d", i)}
		if err := db.Do(ctx, func(ctx context.Context) error {
			return ids.CreatePrincipal(ctx, identity.User{ID: a.ID, Kind: a.Kind, Handle: a.Handle, DisplayName: a.Handle,
				Status: identity.StatusActive, CreatedAt: now, UpdatedAt: now}, identity.HandleKey(a.Handle))
		}); err != nil {
			return Result{}, err
		}
		for range 2 {
			b := fake.Subscribe()
			if _, _, err := svc.Subscribe(ctx, a, push.SubscribeInput{Endpoint: b.Endpoint, P256DH: b.Keys.P256DH, Auth: b.Keys.Auth}); err != nil {
				return Result{}, err
			}
		}
		actors = append(actors, a)
	}
	for i := range notifications {
		a := actors[i%len(actors)]
		n := push.Notification{MessageID: kernel.NewID(), ChannelID: kernel.NewID(), ThreadID: kernel.NewID(), Reason: "mention"}
		if err := db.Do(ctx, func(ctx context.Context) error { return svc.Enqueue(ctx, a.ID, n) }); err != nil {
			return Result{}, err
		}
	}
	sends := 2 * notifications

	pool, pr, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(dir, "bothy.db"), Synchronous: "FULL"})
	if err != nil {
		return Result{}, err
	}
	pr.Close()
	defer pool.Close()
	runner := jobs.NewRunner(q, jobs.RunnerOptions{Pool: pool, Workers: workers, Logger: slog.New(slog.DiscardHandler)})
	cpu0 := measure.CPUTime()
	start := time.Now()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- runner.Run(rctx) }()
	ok := fake.Wait(5*time.Minute, func(s *pushtest.Service) bool { return len(s.Received()) >= sends })
	elapsed := time.Since(start)
	cpu := measure.CPUTime() - cpu0
	cancel()
	stopCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	runner.Stop(stopCtx)
	<-done
	if !ok {
		return Result{}, fmt.Errorf("pushbench: %d of %d sends arrived; refused: %v", len(fake.Received()), sends, fake.Refused())
	}
	if refused := fake.Refused(); len(refused) > 0 {
		return Result{}, fmt.Errorf("pushbench: the push service refused %d requests: %s", len(refused), refused[0])
	}
	return Result{Sends: sends, Elapsed: elapsed, PerSecond: float64(sends) / elapsed.Seconds(), CPU: cpu / time.Duration(sends)}, nil
}
