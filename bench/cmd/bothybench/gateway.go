package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"

	gatewaybench "bothy.dev/bothy/bench/gateway"
	"bothy.dev/bothy/bench/internal/measure"
	"bothy.dev/bothy/storage/engine"
)

// The scenarios of bench/gateway: a real bothy serve and, in this process, lean gateway clients
// and an open-loop poster over REST.

// deliverTiming are the warm-up and duration of the delivery scenarios.
var deliverTiming = &timing{warmup: time.Second, warming: offering, duration: 10 * time.Second}

// deliverFlags are the flags of the delivery scenarios besides the timing.
type deliverFlags struct {
	clients, workers *int
	rate             *float64
	drain            *time.Duration
	cpuProfile       *string
}

func addDeliverFlags(fs *flag.FlagSet, clients int, rate float64) deliverFlags {
	return deliverFlags{
		clients: fs.Int("clients", clients, "gateway clients, each on its own connection and session"),
		workers: fs.Int("workers", 32, "the poster's HTTP clients (a due message waits while all are busy)"),
		rate:    fs.Float64("rate", rate, "messages offered per second, each at its scheduled time (open loop)"),
		drain:   fs.Duration("drain", 10*time.Second, "how long the clients may take after the last create to receive everything"),
		cpuProfile: fs.String("cpuprofile", "", "write a CPU profile of this process (the poster and the clients, not the server) "+
			"from the first post to the last receipt to this file"),
	}
}

func (d deliverFlags) run(ctx context.Context, r *runner, ns *nodes, postNode, clientNode int) (gatewaybench.Delivered, error) {
	if *d.cpuProfile != "" {
		f, err := os.Create(*d.cpuProfile)
		if err != nil {
			return gatewaybench.Delivered{}, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return gatewaybench.Delivered{}, err
		}
		defer pprof.StopCPUProfile()
	}
	res, err := gatewaybench.RunDeliver(ctx, ns.client, ns.inst, gatewaybench.Deliver{
		PostBase: ns.servers[postNode].Public, ClientBase: ns.servers[clientNode].Public,
		Clients: *d.clients, Rate: *d.rate, Warmup: *r.warmup, Duration: *r.duration, Workers: *d.workers, Drain: *d.drain,
		ServerCPU: ns.servers[clientNode].CPU,
	})
	if err != nil {
		return res, fmt.Errorf("%w\n%s", err, ns.logs())
	}
	return res, nil
}

// deliveryResults writes the latency rows of a delivery run and its information rows.
func deliveryResults(out io.Writer, name string, r gatewaybench.Delivered) {
	latencies(out, name, r.Latency)
	measure.Result(out, name+"/logged-to-client/p50", measure.Ms(r.FromLog.P50), "ms")
	measure.Result(out, name+"/logged-to-client/p99", measure.Ms(r.FromLog.P99), "ms")
	measure.Result(out, name+"/create-p99", measure.Ms(r.Offered.Create.P99), "ms")
	measure.Result(out, name+"/server-cpu", us(r.ServerCPU), "µs/message")
	measure.Result(out, name+"/loadgen-cpu", us(r.LoadCPU), "µs/message")
	// bench/gateway's clients do not reconnect: a dropped connection fails the scenario. The row
	// stays, always 0, so that the table keeps its names.
	measure.Result(out, name+"/reconnects", 0, "reconnects")
}

// deliver is a delivery scenario with these defaults: the poster posts through node A, the
// clients follow the last of nodes (more than one: PostgreSQL only), and report writes the
// results.
func deliver(clients int, rate float64, nodes int, report func(out io.Writer, r *runner, d deliverFlags, res gatewaybench.Delivered)) func(*flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		d := addDeliverFlags(fs, clients, rate)
		return func(ctx context.Context, r *runner, out io.Writer) error {
			if nodes > 1 && *r.engine != engine.Postgres {
				return errors.New("two nodes share one PostgreSQL database: -engine postgres")
			}
			ns, err := r.startGateway(ctx, nodes, r.layout())
			if err != nil {
				return err
			}
			res, err := d.run(ctx, r, ns, 0, nodes-1)
			if err != nil {
				return err
			}
			report(out, r, d, res)
			return nil
		}
	}
}

// gatewayCommit: every client may read every channel, so each message reaches all of them.
var gatewayCommit = deliver(200, 500, 1, func(out io.Writer, r *runner, d deliverFlags, res gatewaybench.Delivered) {
	deliveryResults(out, fmt.Sprintf("gateway/%scommit-to-client/%d-clients@%g/s", r.prefix(), *d.clients, *d.rate), res)
})

// gatewayFanout: every client in one channel; the figure is the slowest client's rate.
var gatewayFanout = deliver(1000, 250, 1, func(out io.Writer, r *runner, d deliverFlags, res gatewaybench.Delivered) {
	name := fmt.Sprintf("gateway/%sfan-out/%d-clients", r.prefix(), *d.clients)
	measure.Result(out, name+"/delivered-per-client", res.MinRate, "messages/s")
	deliveryResults(out, name, res)
})

// gatewayNodes: PostgreSQL, two api nodes on one database; the poster posts through node A,
// the clients follow node B.
var gatewayNodes = deliver(50, 200, 2, func(out io.Writer, _ *runner, _ deliverFlags, res gatewaybench.Delivered) {
	deliveryResults(out, "gateway/postgres/node-a-to-node-b", res)
})

// gatewayIdle prepares the instance, restarts the server (so that the argon2id garbage of the
// logins is not in its heap), reads its RSS, opens the connections and reads it again.
func gatewayIdle(fs *flag.FlagSet) runFunc {
	conns := fs.Int("connections", 10000, "identified connections to open (person k mod people, one session each)")
	parallel := fs.Int("parallel", 64, "connections being opened at once")
	settle := fs.Duration("settle", time.Second, "wait after the restart before the first RSS reading")
	hold := fs.Duration("hold", 2*time.Second, "wait after the last catchup.complete before the second reading")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		ns, err := r.startGateway(ctx, 1, r.layout())
		if err != nil {
			return err
		}
		if err := ns.restart(ctx); err != nil {
			return err
		}
		res, err := gatewaybench.RunIdle(ctx, ns.inst.Base, ns.inst.Tokens, gatewaybench.Idle{
			Connections: *conns, ConnectParallel: *parallel, Settle: *settle, Hold: *hold, RSS: ns.servers[0].RSS})
		if err != nil {
			return err
		}
		name := fmt.Sprintf("gateway/%sidle/%d-connections", r.prefix(), *conns)
		measure.Result(out, name+"/rss-per-conn", res.PerConn()/1024, "KiB")
		measure.Result(out, name+"/rss-before", measure.MiB(res.Before), "MiB")
		measure.Result(out, name+"/rss-after", measure.MiB(res.After), "MiB")
		measure.Result(out, name+"/connect-rate", float64(res.Connections)/res.ConnectTime.Seconds(), "connections/s")
		return nil
	}
}

// gatewayCatchup seeds the log, then identifies again and again with a cursor that leaves
// exactly -events visible events to replay, as a reader who may see half of the channels.
func gatewayCatchup(fs *flag.FlagSet) runFunc {
	messages := fs.Int("messages", 20000, "messages to post first, round-robin over the channels")
	events := fs.Int("events", 1000, "visible events each replay holds")
	repeats := fs.Int("repeats", 200, "identifies, one after the other")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		ns, err := r.startGateway(ctx, 1, gatewaybench.CatchUpLayout(*r.server.channels))
		if err != nil {
			return err
		}
		var readable []string
		for c, id := range ns.inst.ChannelIDs {
			if c%2 == 0 {
				readable = append(readable, id)
			}
		}
		err = gatewaybench.Seed(ctx, ns.client, ns.inst, *messages)
		var res gatewaybench.CaughtUp
		if err == nil {
			res, err = gatewaybench.RunCatchUp(ctx, ns.inst.Base, ns.inst.Tokens[0], readable, *events, *repeats, ns.servers[0].CPU)
		}
		if err != nil {
			return err
		}
		name := fmt.Sprintf("gateway/%scatch-up/%d-events", r.prefix(), *events)
		latencies(out, name, res.ToComplete)
		measure.Result(out, name+"/to-last-event/p99", measure.Ms(res.ToLast.P99), "ms")
		measure.Result(out, name+"/server-cpu", measure.Ms(res.ServerCPU), "ms/catch-up")
		measure.Result(out, name+"/loadgen-cpu", measure.Ms(res.LoadCPU), "ms/catch-up")
		return nil
	}
}
