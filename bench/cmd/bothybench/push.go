package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"bothy.dev/bothy/bench/internal/measure"
	pushbench "bothy.dev/bothy/bench/push"
)

// The scenario of bench/push: a backlog of Web Push sends drained by the job runner to a fake
// push service that decrypts and verifies each (the same run as `go test -bench PushSend
// ./bench/push`, with its own flags).

func pushSend(fs *flag.FlagSet) runFunc {
	people := fs.Int("people", 50, "people, each with two browsers subscribed at the fake push service")
	notifications := fs.Int("notifications", 1500, "notifications enqueued before the runner starts (two sends each)")
	workers := fs.Int("workers", 0, "job runner workers (0: the appliance's default)")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		dir, err := r.tempDir()
		if err != nil {
			return err
		}
		res, err := pushbench.Run(ctx, dir, *people, *notifications, *workers)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("push/send/%d-browsers", 2**people)
		measure.Result(out, name, res.PerSecond, "sends/s")
		measure.Result(out, name+"/cpu", float64(res.CPU.Microseconds()), "µs/send")
		return nil
	}
}
