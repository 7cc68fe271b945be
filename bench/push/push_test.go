package pushbench

import (
	"context"
	"testing"
)

// TestRunCountsWhatArrived is the quick check: a small run sends every notification to every
// subscription and the fake push service accepts them all.
func TestRunCountsWhatArrived(t *testing.T) {
	r, err := Run(context.Background(), t.TempDir(), 3, 20, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Sends != 40 || r.PerSecond <= 0 {
		t.Fatalf("%+v", r)
	}
}

// BenchmarkPushSend is the measurement: 3000 sends (1500 notifications to 50 people with two
// browsers each) through the job runner with the appliance's 4 workers.
//
//	go test ./bench/push -run '^$' -bench PushSend -benchtime 1x -count 5
func BenchmarkPushSend(b *testing.B) {
	for b.Loop() {
		r, err := Run(context.Background(), b.TempDir(), 50, 1500, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.PerSecond, "sends/s")
		b.ReportMetric(float64(r.CPU.Microseconds()), "cpu-µs/send")
	}
}
