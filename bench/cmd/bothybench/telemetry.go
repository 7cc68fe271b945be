package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"

	httpbench "bothy.dev/bothy/bench/http"
	"bothy.dev/bothy/bench/internal/measure"
)

// The scenario of the telemetry's cost (appliance/telemetry): message create over HTTP, closed
// loop, on three bothy serve processes that differ only in telemetry, measured in turn.

// telemetryModes are the processes telemetry-overhead compares: telemetry off; on as it is by
// default (metrics, read by /metrics, no traces); on with requests traced (every one with
// -sample-ratio 1) and the spans and metrics pushed to an OTLP collector (a sink in this process
// that answers 200).
func telemetryModes(sink string, ratio float64) []struct {
	name string
	args []string
} {
	return []struct {
		name string
		args []string
	}{
		{"off", []string{"--set", "telemetry.enabled=false"}},
		{"metrics", nil},
		{"traces", []string{"--set", "telemetry.otlp_endpoint=" + sink, "--set", fmt.Sprintf("telemetry.sample_ratio=%g", ratio)}},
	}
}

// telemetryOverhead starts one server per mode, then measures them in rounds, each mode once a
// round and the order turned by one each round, so that the machine's drift reaches every mode
// alike. It prints each round's rate and server CPU per message of each mode and, from the
// medians over the rounds, each mode's rate and CPU as shares of off's.
func telemetryOverhead(fs *flag.FlagSet) runFunc {
	clients := fs.Int("clients", 32, "concurrent clients, each posting back to back on its own keep-alive connection")
	rounds := fs.Int("rounds", 5, "rounds; each measures every mode once for -duration")
	ratio := fs.Float64("sample-ratio", 1, "telemetry.sample_ratio of the traced server")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		var received atomic.Int64
		sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			n, _ := io.Copy(io.Discard, req.Body)
			received.Add(n)
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.WriteHeader(http.StatusOK)
		}))
		r.atEnd(func() error { sink.Close(); return nil }) // after the servers: the last export reaches it
		modes := telemetryModes(sink.URL, *ratio)

		base, err := r.tempDir()
		if err != nil {
			return err
		}
		servers := make([]*server, len(modes))
		for k, m := range modes {
			// Each server on a directory of its own: startServer names its data directory
			// after the run's.
			r.dir = filepath.Join(base, m.name)
			if err := os.Mkdir(r.dir, 0o700); err != nil {
				return err
			}
			s, err := r.startServerWith(ctx, *clients, m.args)
			r.dir = base
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			servers[k] = s
		}

		name := fmt.Sprintf("telemetry-overhead/%smessage-create/closed-loop/%d-clients", r.prefix(), *clients)
		rates, cpu := make([][]float64, len(modes)), make([][]float64, len(modes))
		for round := range *rounds {
			for i := range modes {
				k := (i + round) % len(modes)
				s := servers[k]
				res, err := httpbench.Closed(ctx, s.client, s.target, *clients, *r.warmup, *r.duration, s.cpu)
				if err != nil {
					return fmt.Errorf("%s: %w", modes[k].name, err)
				}
				rates[k], cpu[k] = append(rates[k], res.PerSecond()), append(cpu[k], res.ServerCPUPerOp())
				measure.Result(out, name+"/"+modes[k].name, res.PerSecond(), "messages/s")
				measure.Result(out, name+"/"+modes[k].name+"/server-cpu", res.ServerCPUPerOp(), "µs/message")
			}
		}
		// On a shared machine the rate of one round swings by a third; the server's CPU time per
		// message, which another process's load hardly moves, says the cost more steadily.
		off, offCPU := median(rates[0]), median(cpu[0])
		for k, m := range modes[1:] {
			measure.Result(out, name+"/"+m.name+"-of-off", 100*median(rates[k+1])/off, "%")
			measure.Result(out, name+"/"+m.name+"-server-cpu-of-off", 100*median(cpu[k+1])/offCPU, "%")
		}
		if received.Load() == 0 {
			return fmt.Errorf("the OTLP sink received nothing: the traced server exported no spans")
		}
		return nil
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// startServerWith is startServer with args for bothy serve before -serve-args.
func (r *runner) startServerWith(ctx context.Context, conns int, args []string) (*server, error) {
	ns, err := r.startFirst(ctx, 1, args, conns)
	if err != nil {
		return nil, err
	}
	s := ns.servers[0]
	t, err := httpbench.Prepare(ctx, ns.client, s.Public, s.SetupCode, *r.server.people, *r.server.channels)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w\n%s", err, s.Logs())
	}
	return &server{Server: s, target: t, client: ns.client, dataDir: ns.opts[0].DataDir, dbURL: ns.dbURL, stop: ns.stop,
		cpu: httpbench.CPUReaders{Server: s.CPU, DB: ns.dbCPU}}, nil
}
