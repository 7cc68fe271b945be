// Command bothybench runs one of bothy's benchmark scenarios once and prints its measurements as
// "RESULT<TAB>name<TAB>value<TAB>unit" lines, which bench/run collects over several repetitions
// (each in a fresh process) into the target-versus-measured table. Everything it measures runs
// on real SQLite files in a temp directory (TMPDIR, default /tmp), or on PostgreSQL (-engine).
//
//	bothybench driver-rate -driver modernc -per-commit 64 -duration 2s
//	bothybench driver-start -driver ncruces
//	bothybench driver-rss -driver ncruces -writes 20000
//	bothybench storage-rate -writers 256 -commit-delay 2ms -max-batch 1
//	bothybench storage-latency -rate 1000 -duration 5s
//	bothybench http-closed -bin bench/out/bothy -clients 32 -warmup 1s -duration 5s
//	bothybench http-open -bin bench/out/bothy -rate 1000 -warmup 1s -duration 10s
//	bothybench telemetry-overhead -bin bench/out/bothy -clients 32 -rounds 5
//	bothybench serve-start -bin bench/out/bothy -starts 10
//	bothybench storage-rate -engine postgres -events-only -writers 8 -duration 2s
//	bothybench http-closed -engine postgres -bin bench/out/bothy -clients 32
//	bothybench gateway-commit -bin bench/out/bothy -clients 200 -rate 500
//	bothybench gateway-fanout -bin bench/out/bothy -clients 1000 -rate 250
//	bothybench gateway-idle -bin bench/out/bothy -connections 10000
//	bothybench gateway-catchup -bin bench/out/bothy -messages 20000 -events 1000 -repeats 200
//	bothybench gateway-nodes -engine postgres -bin bench/out/bothy -clients 50 -rate 200
//	bothybench agents-invoke -bin bench/out/bothy -rate 200 -every 5
//	bothybench agents-runs -bin bench/out/bothy -clients 100 -runs 8
//	bothybench authz-warm -n 1000000
//	bothybench console -bin bench/out/bothy -messages 10000 -samples 400
//	bothybench files-transfer -bin bench/out/bothy -size 1073741824
//	bothybench backup-create -bin bench/out/bothy -size 1073741824 -rate 1000 -copy vacuum-into
//
// The http-…, serve-…, gateway-… and agents-… scenarios run a `bothy serve` binary (-bin, built by
// bench/run with `go build -o bench/out/bothy .`) as a child process on a temp data directory and
// loopback ports, and load it from this process (gateway-nodes runs two).
//
// With -engine postgres the storage-…, http-… and gateway-… scenarios run on a fresh database
// (CREATE DATABASE, dropped at the end) of the PostgreSQL cluster that -postgres or
// $BOTHY_BENCH_POSTGRES_URL (else $BOTHY_TEST_POSTGRES_URL) names, a superuser's URL; bench/run
// starts a throwaway cluster with .ci/pg when neither is set. The server is migrated with
// `bothy migrate up` and started with --set database.driver=postgres --set
// database.url_ref=env:DATABASE_URL. When the cluster's processes are in this machine's /proc,
// their CPU time per operation is reported too (…/postgres-cpu).
//
// It holds no figure of its own: a scenario that fails prints its error and exits 1.
package main

import (
	"context"
	"fmt"
	"os"
	"time"
)

// scenarios are the benchmarks: bothybench NAME runs the one of that name. Each file of this
// command holds the scenarios of one bench/ package; runner.go holds what they share.
var scenarios = []scenario{
	{name: "driver-rate", about: "message-create writes/s through one SQLite driver (bench/driver)",
		timing: &timing{duration: 2 * time.Second, durationNote: ", after a warm-up of 256 writes"}, flags: driverRate},
	{name: "driver-start", about: "open-to-first-query of a driver, cold, in a fresh child process", flags: driverStart},
	{name: "driver-start-child", about: "(internal) the child of driver-start", flags: driverStartChild},
	{name: "driver-rss", about: "RSS growth of a process using a driver (1 writer, 4 readers)", flags: driverRSS},

	{name: "storage-rate", about: "durable events/s through storage.DB.Do from many writers (bench/storage)", store: true,
		timing: &timing{warmup: 500 * time.Millisecond, warming: "run", duration: 3 * time.Second}, flags: storageRate},
	{name: "storage-latency", about: "latency of storage.DB.Do at a fixed offered rate", store: true,
		timing: &timing{warmup: 500 * time.Millisecond, warming: offering, duration: 5 * time.Second}, flags: storageLatency},

	{name: "http-closed", about: "messages/s over HTTP from clients posting back to back to a real bothy serve", serve: httpServe,
		timing: &timing{warmup: time.Second, warming: "post", duration: 5 * time.Second}, flags: httpClosed},
	{name: "http-open", about: "latency of message create over HTTP at a fixed offered rate (open loop)", serve: httpServe,
		timing: &timing{warmup: time.Second, warming: offering, duration: 10 * time.Second}, flags: httpOpen},
	{name: "telemetry-overhead", about: "message create over HTTP with telemetry off, on (metrics) and on with every request traced to OTLP, interleaved (appliance/telemetry)",
		serve: httpServe, timing: &timing{warmup: time.Second, warming: "post", duration: 5 * time.Second}, flags: telemetryOverhead},
	{name: "serve-start", about: "exec to /readyz 200 of bothy serve, on empty and existing data dirs; RSS at ready and idle", serve: httpServe,
		flags: serveStart},

	{name: "gateway-commit", about: "commit → client latency: clients live on every channel, messages posted open loop (bench/gateway)",
		serve: gatewayServe(20, 4), timing: deliverTiming, flags: gatewayCommit},
	{name: "gateway-fanout", about: "fan-out to clients in one channel: delivered rate per client and latency (bench/gateway)",
		serve: gatewayServe(50, 1), timing: deliverTiming, flags: gatewayFanout},
	{name: "gateway-idle", about: "server RSS per idle, identified gateway connection (bench/gateway)",
		serve: gatewayServe(50, 4), flags: gatewayIdle},
	{name: "gateway-catchup", about: "identify with a cursor to catchup.complete, replaying N visible events (bench/gateway)",
		serve: gatewayServe(1, 8), flags: gatewayCatchup},
	{name: "gateway-nodes", about: "PostgreSQL, two serve --role=api nodes: post on node A, clients on node B (bench/gateway)",
		serve: gatewayServe(10, 4), timing: deliverTiming, flags: gatewayNodes},

	{name: "agents-invoke", about: "message mentioning an agent → the agent's agent.invocation on its gateway consumer (bench/agents)",
		serve: gatewayServe(4, 4), timing: &timing{warmup: 2 * time.Second, warming: offering, duration: 20 * time.Second}, flags: agentsInvoke},
	{name: "agents-runs", about: "an agent's run patch → run.updated at every client focused on the thread (bench/agents)",
		serve: gatewayServe(20, 1), timing: &timing{warmup: 2 * time.Second, warming: "patch", duration: 15 * time.Second}, flags: agentsRuns},
	{name: "agents-first-token", about: "a mention of `bothy agent llm` (a fake model streaming at once) → its first streamed token at a client focused on the thread (bench/agents)",
		serve: gatewayServe(1, 1), timing: &timing{warmup: 2 * time.Second, warming: "mention", duration: 20 * time.Second}, flags: agentsFirstToken},
	{name: "agents-approval", about: "a person decides a run's approval → the agent's approval.decided on its gateway consumer (bench/agents)",
		serve: gatewayServe(1, 1), timing: &timing{warmup: 2 * time.Second, warming: "ask and decide", duration: 20 * time.Second}, flags: agentsApproval},

	{name: "backup-create", about: "bothy backup create of a large database while a real bothy serve takes messages over HTTP at a fixed rate: MB/s and create latency during the backup (bench/backup)",
		serve: httpServe, flags: backupCreate},

	{name: "files-transfer", about: "one large file uploaded as a raw body and downloaded again over loopback: rates and the server's RSS growth (bench/files)",
		serve: httpServe, flags: filesTransfer},

	{name: "db-size", about: "bytes a message costs in the database, every table and index counted, after posting over HTTP (bench/size)",
		serve: httpServe, flags: dbSize},

	{name: "scale", about: "the figures of an empty instance again with millions of messages seeded into its SQLite file, and their ratios (bench/scale)",
		serve: httpServe, flags: scaleScenario},

	{name: "search-query", about: "search.Service.Search for a person who reads a tenth of the channels, a million messages in the database (bench/search)",
		store: true, flags: searchQuery},
	{name: "inbox-unread", about: "GET /api/v1/me/unread for a person in many channels and DMs, a million messages in the database (bench/inbox)",
		serve: inboxServe, flags: inboxUnread},

	{name: "notify-mention", about: "a mention in a channel of 1,000 members at default levels → the person's notification.created on the gateway (bench/notify)",
		serve: httpServe, flags: notifyMention},

	{name: "push-send", about: "Web Push sends/s from the job runner to a fake push service that decrypts and verifies each (bench/push)",
		flags: pushSend},

	{name: "authz-warm", about: "delivery decision from the warm permission cache, p50/p99/max (bench/authz)", flags: authzWarm},
	{name: "console", about: "console pages' render p99 at the client, and the chat view's first-load bytes (bench/console)", serve: httpServe,
		flags: consolePages},
}

func main() {
	var sc *scenario
	if len(os.Args) >= 2 {
		sc = find(os.Args[1])
	}
	if sc == nil {
		usage()
		os.Exit(2)
	}
	if err := sc.main(context.Background(), os.Args[2:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "bothybench %s: %v\n", sc.name, err)
		os.Exit(1)
	}
}

// find is the scenario of that name, or nil.
func find(name string) *scenario {
	for k := range scenarios {
		if scenarios[k].name == name {
			return &scenarios[k]
		}
	}
	return nil
}
