package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func mustFile(tb testing.TB, content string) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "bothy.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

func mustLoad(tb testing.TB, in Input) Config {
	tb.Helper()
	c, err := Load(in)
	if err != nil {
		tb.Fatalf("Load: %v", err)
	}
	return c
}

func TestDefaults(t *testing.T) {
	c := mustLoad(t, Input{})
	want := Config{
		Server: ServerConfig{DataDir: "./bothy-data", ListenAddr: "127.0.0.1:8080", InternalListenAddr: "127.0.0.1:8081",
			PublicURL: "", Role: "all"},
		Cluster: ClusterConfig{Mode: "single", PresenceFlushInterval: 2 * time.Second, PresenceTTL: 10 * time.Second},
		Database: DatabaseConfig{Driver: "sqlite", URLRef: "", Synchronous: "FULL", BusyTimeout: 5 * time.Second,
			ReadPoolSize: 4, MaxBatch: 256, MaxOpenConns: 8, StatementTimeout: 5 * time.Second, LockTimeout: 2 * time.Second,
			IdleInTxTimeout: 0, TxRetryMax: 3},
		HTTP: HTTPConfig{MaxJSONBodyBytes: 1048576, MaxJSONDepth: 32, RequestTimeout: 30 * time.Second,
			ReadHeaderTimeout: 5 * time.Second, BodyReadTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second},
		Auth: AuthConfig{SessionTTL: 720 * time.Hour, LoginMaxFailures: 10, LoginMaxFailuresPerAddress: 30, LoginFailureWindow: 10 * time.Minute, CredentialCacheTTL: 5 * time.Second},
		Sync: SyncConfig{OutboundQueueMax: 1024, RunPatchCoalesceInterval: 50 * time.Millisecond, IdempotencyKeyTTL: 24 * time.Hour, IdempotencyCleanupInterval: time.Hour,
			IdempotencyCleanupBatchSize: 1000, RetentionInterval: time.Hour, RetentionBatchSize: 1000},
		Gateway: GatewayConfig{HeartbeatInterval: 30 * time.Second, WriteTimeout: 10 * time.Second, MaxFrameBytes: 65536,
			IdentifyTimeout: 10 * time.Second, ReplayBufferEvents: 10000,
			MaxConnectionsPerPrincipal: 32, MaxConnectionsPerAddress: 256},
		Agent: AgentConfig{InvocationTokenTTL: 15 * time.Minute, SigningKeyRotation: 720 * time.Hour, QueuedTimeout: 5 * time.Minute, StallTimeout: 5 * time.Minute,
			StallCheckInterval: 30 * time.Second, CancelGrace: 30 * time.Second},
		Runs: RunsConfig{MaxHandoffDepth: 5},
		MCP:  MCPConfig{Enabled: false, MaxRequestsPerPrincipal: 8},
		Files: FilesConfig{Storage: "fs", MaxUploadBytes: 100 << 20, UploadTTL: 24 * time.Hour, UnattachedTTL: 24 * time.Hour,
			MaxImagePixels: 50_000_000, StripMetadata: true, S3PathStyle: true},
		Backup:   BackupConfig{Schedule: 0, Dir: "", Keep: 7},
		Log:      LogConfig{Level: "info", Format: "text"},
		Shutdown: ShutdownConfig{TotalTimeout: 30 * time.Second},

		Telemetry: TelemetryConfig{Enabled: true, ServiceName: "bothy", SampleRatio: 1},
	}
	c.sources, c.where = nil, nil
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", c, want)
	}
	if d := Default(); d.Validate() != nil {
		t.Fatalf("the defaults do not validate: %v", d.Validate())
	}
}

// Every field of Config is bound to exactly one key, so no value can be set without a key or
// shown wrongly by config print.
func TestClusterAndRole(t *testing.T) {
	pg := []string{"BOTHY_DATABASE__DRIVER=postgres", "BOTHY_DATABASE__URL_REF=env:DATABASE_URL"}
	role := func(v string) []Override { return []Override{{Key: "server.role", Value: v, Flag: "--role"}} }
	tests := []struct {
		name       string
		in         Input
		role, mode string
		ttl        time.Duration
	}{
		{name: "takes two api nodes on PostgreSQL", in: Input{Env: append(pg, "BOTHY_CLUSTER__MODE=multi"), Flags: role("api")},
			role: "api", mode: "multi", ttl: 10 * time.Second},
		{name: "takes all on several nodes", in: Input{Env: append(pg, "BOTHY_CLUSTER__MODE=MULTI", "BOTHY_SERVER__ROLE=all")},
			role: "all", mode: "multi", ttl: 10 * time.Second},
		{name: "takes one api node next to a worker on PostgreSQL (level 1)", in: Input{Env: pg, Flags: role("API")},
			role: "api", mode: "single", ttl: 10 * time.Second},
		{name: "takes a worker on PostgreSQL", in: Input{Env: pg, Flags: role("worker")},
			role: "worker", mode: "single", ttl: 10 * time.Second},
		{name: "takes a slower flush with a longer ttl", in: Input{Env: append(pg, "BOTHY_CLUSTER__MODE=multi",
			"BOTHY_CLUSTER__PRESENCE_FLUSH_INTERVAL=5s", "BOTHY_CLUSTER__PRESENCE_TTL=11s")},
			role: "all", mode: "multi", ttl: 11 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, tt.in)
			if c.Server.Role != tt.role || c.Cluster.Mode != tt.mode || c.Cluster.PresenceTTL != tt.ttl {
				t.Fatalf("role %q, cluster %+v; want %s, %s, ttl %s", c.Server.Role, c.Cluster, tt.role, tt.mode, tt.ttl)
			}
		})
	}
	t.Run("names where the role came from", func(t *testing.T) {
		c := mustLoad(t, Input{Env: append(pg, "BOTHY_CLUSTER__MODE=multi"), Flags: role("api")})
		if c.SourceOf("server.role") != FromFlag || c.SourceOf("cluster.mode") != FromEnv {
			t.Fatalf("sources %s, %s", c.SourceOf("server.role"), c.SourceOf("cluster.mode"))
		}
	})
}

func TestSchemaCoversConfig(t *testing.T) {
	var c Config
	seen := map[any]string{}
	for _, k := range schema {
		p := reflect.ValueOf(k.field(&c)).Pointer()
		if other, dup := seen[p]; dup {
			t.Errorf("%s and %s bind the same field", k.name, other)
		}
		seen[p] = k.name
	}
	fields := 0
	ct := reflect.TypeOf(c)
	for i := 0; i < ct.NumField(); i++ {
		if f := ct.Field(i); f.IsExported() {
			fields += f.Type.NumField()
		}
	}
	if fields != len(schema) {
		t.Fatalf("Config has %d fields, the schema %d keys", fields, len(schema))
	}
}

func TestPrecedence(t *testing.T) {
	file := mustFile(t, `
server:
  data_dir: /from/file
  listen_addr: 127.0.0.1:9000
database:
  busy_timeout: 7s
log.level: debug
`)
	other := mustFile(t, "server:\n  data_dir: /from/env-file\n")
	tests := []struct {
		name   string
		in     Input
		key    string
		want   any
		source Source
	}{
		{"a default stays when nothing sets the key", Input{File: file}, "auth.session_ttl", 720 * time.Hour, FromDefault},
		{"the file overrides the default", Input{File: file}, "server.data_dir", "/from/file", FromFile},
		{"a dotted key in the file counts", Input{File: file}, "log.level", "debug", FromFile},
		{"the environment overrides the file", Input{File: file, Env: []string{"BOTHY_SERVER__DATA_DIR=/from/env"}},
			"server.data_dir", "/from/env", FromEnv},
		{"the command line overrides the environment", Input{File: file, Env: []string{"BOTHY_SERVER__DATA_DIR=/from/env"},
			Flags: []Override{{Key: "server.data_dir", Value: "/from/flag", Flag: "--data-dir"}}},
			"server.data_dir", "/from/flag", FromFlag},
		{"the last flag wins", Input{Flags: []Override{{Key: "database.max_batch", Value: "8", Flag: "--set"},
			{Key: "database.max_batch", Value: "16", Flag: "--set"}}}, "database.max_batch", 16, FromFlag},
		{"BOTHY_CONFIG_FILE names the file", Input{Env: []string{"BOTHY_CONFIG_FILE=" + file}}, "database.busy_timeout", 7 * time.Second, FromFile},
		{"--config wins over BOTHY_CONFIG_FILE", Input{File: file, Env: []string{"BOTHY_CONFIG_FILE=" + other}},
			"server.data_dir", "/from/file", FromFile},
		{"an environment value may be empty", Input{Env: []string{"BOTHY_SERVER__PUBLIC_URL="}}, "server.public_url", "", FromEnv},
		{"private push endpoints are off unless set", Input{}, "push.allow_private_endpoints", false, FromDefault},
		{"private push endpoints are allowed by the setting", Input{Flags: []Override{{Key: "push.allow_private_endpoints", Value: "true", Flag: "--set"}}},
			"push.allow_private_endpoints", true, FromFlag},
		{"a push subject may be a mailto: URL", Input{Env: []string{"BOTHY_PUSH__SUBJECT=mailto:ops@example.com"}}, "push.subject", "mailto:ops@example.com", FromEnv},
		{"synchronous is case-insensitive", Input{Env: []string{"BOTHY_DATABASE__SYNCHRONOUS=normal"}}, "database.synchronous", "NORMAL", FromEnv},
		{"test harness variables are no configuration", Input{Env: []string{"BOTHY_TEST_POSTGRES_URL=x", "PATH=/bin"}},
			"server.data_dir", "./bothy-data", FromDefault},
		{"an int64 key parses", Input{Flags: []Override{{Key: "http.max_json_body_bytes", Value: "2097152", Flag: "--set"}}},
			"http.max_json_body_bytes", int64(2097152), FromFlag},
		{"a signing key rotation of one hour is the shortest taken", Input{Env: []string{"BOTHY_AGENT__SIGNING_KEY_ROTATION=1h"}},
			"agent.signing_key_rotation", time.Hour, FromEnv},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, tt.in)
			got := reflect.ValueOf(byName[tt.key].field(&c)).Elem().Interface()
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s = %v, want %v", tt.key, got, tt.want)
			}
			if s := c.SourceOf(tt.key); s != tt.source {
				t.Errorf("source of %s = %s, want %s", tt.key, s, tt.source)
			}
		})
	}
}

func TestEnvName(t *testing.T) {
	if got := EnvName("server.data_dir"); got != "BOTHY_SERVER__DATA_DIR" {
		t.Fatalf("EnvName = %s", got)
	}
	for _, k := range Keys() {
		if envKey(EnvName(k)) != k {
			t.Errorf("the mapping of %s is not reversible", k)
		}
	}
}

// secretish is a value that must never appear in an error or in config print.
const secretish = "hunter2-SECRET"

func TestRefusals(t *testing.T) {
	tests := []struct {
		name string
		file string // YAML, if any
		in   Input
		// wantKey must appear in the error, as must every wantText.
		wantKey  string
		wantText []string
	}{
		{name: "refuses an unknown top-level key in the file", file: "sever:\n  data_dir: " + secretish + "\n",
			wantKey: "sever", wantText: []string{"unknown key"}},
		{name: "refuses an unknown nested key in the file", file: "server:\n  dat_dir: " + secretish + "\n",
			wantKey: "server.dat_dir", wantText: []string{"unknown key", ":2"}},
		{name: "refuses a secret written directly into the file", file: "database:\n  url: postgres://u:" + secretish + "@h/db\n",
			wantKey: "database.url", wantText: []string{"database.url_ref"}},
		{name: "refuses a key set twice in the file", file: "server:\n  data_dir: a\nserver.data_dir: " + secretish + "\n",
			wantKey: "server.data_dir", wantText: []string{"set twice"}},
		{name: "refuses a mapping where a value belongs", file: "server:\n  data_dir:\n    x: " + secretish + "\n",
			wantKey: "server.data_dir", wantText: []string{"single value"}},
		{name: "refuses a value where a section belongs", file: "server: " + secretish + "\n",
			wantKey: "server", wantText: []string{"mapping"}},
		{name: "refuses a file that is not a mapping", file: "- " + secretish + "\n",
			wantText: []string{"top level"}},
		{name: "refuses a file that is not YAML", file: "server: [" + secretish + "\n",
			wantText: []string{"not valid YAML"}},
		{name: "refuses a missing file", in: Input{File: "/nonexistent/bothy.yaml"},
			wantText: []string{"/nonexistent/bothy.yaml", "cannot read"}},
		{name: "refuses an unknown BOTHY_ variable", in: Input{Env: []string{"BOTHY_SERVER__DATADIR=" + secretish}},
			wantKey: "BOTHY_SERVER__DATADIR", wantText: []string{"unknown variable"}},
		{name: "refuses an unknown --set key", in: Input{Flags: []Override{{Key: "server.port", Value: secretish, Flag: "--set"}}},
			wantKey: "server.port", wantText: []string{"unknown key", "--set"}},
		{name: "refuses a bad duration", in: Input{Env: []string{"BOTHY_DATABASE__BUSY_TIMEOUT=" + secretish}},
			wantKey: "database.busy_timeout", wantText: []string{"duration", "env BOTHY_DATABASE__BUSY_TIMEOUT"}},
		{name: "refuses a duration of zero", in: Input{Env: []string{"BOTHY_SHUTDOWN__TOTAL_TIMEOUT=0s"}},
			wantKey: "shutdown.total_timeout", wantText: []string{"positive", "env BOTHY_SHUTDOWN__TOTAL_TIMEOUT"}},
		{name: "refuses a bad integer", file: "database:\n  read_pool_size: " + secretish + "\n",
			wantKey: "database.read_pool_size", wantText: []string{"integer", "bothy.yaml:2"}},
		{name: "refuses an integer out of range", in: Input{Flags: []Override{{Key: "database.max_batch", Value: "0", Flag: "--set"}}},
			wantKey: "database.max_batch", wantText: []string{"between 1 and"}},
		{name: "refuses a trusted proxy that is no CIDR", in: Input{Env: []string{"BOTHY_SERVER__TRUSTED_PROXIES=10.0.0.0/8, " + secretish}},
			wantKey: "server.trusted_proxies", wantText: []string{"CIDR", "entry 2"}},
		{name: "refuses a trusted proxy CIDR out of range", file: "server:\n  trusted_proxies: 10.0.0.0/33\n",
			wantKey: "server.trusted_proxies", wantText: []string{"CIDR", "bothy.yaml:2"}},
		{name: "refuses a port out of range", in: Input{Flags: []Override{{Key: "server.listen_addr", Value: "127.0.0.1:70000", Flag: "--listen-addr"}}},
			wantKey: "server.listen_addr", wantText: []string{"port", "flag --listen-addr"}},
		{name: "refuses an address without a port", in: Input{Env: []string{"BOTHY_SERVER__INTERNAL_LISTEN_ADDR=" + secretish}},
			wantKey: "server.internal_listen_addr", wantText: []string{"host:port"}},
		{name: "refuses an empty data dir", in: Input{Env: []string{"BOTHY_SERVER__DATA_DIR="}},
			wantKey: "server.data_dir", wantText: []string{"empty"}},
		{name: "refuses a public url with a path", in: Input{Env: []string{"BOTHY_SERVER__PUBLIC_URL=https://chat.example.com/" + secretish}},
			wantKey: "server.public_url", wantText: []string{"origin"}},
		{name: "refuses a public url with user info", in: Input{Env: []string{"BOTHY_SERVER__PUBLIC_URL=https://u:" + secretish + "@chat.example.com"}},
			wantKey: "server.public_url", wantText: []string{"origin"}},
		{name: "refuses a push subject that is neither mailto: nor https:", in: Input{Env: []string{"BOTHY_PUSH__SUBJECT=http://ops.example.com/" + secretish}},
			wantKey: "push.subject", wantText: []string{"mailto: or https:"}},
		{name: "refuses a push subject of mailto: alone", in: Input{Env: []string{"BOTHY_PUSH__SUBJECT=mailto:"}},
			wantKey: "push.subject", wantText: []string{"mailto: or https:"}},
		{name: "refuses the postgres driver without a url reference", in: Input{Env: []string{"BOTHY_DATABASE__DRIVER=postgres"}},
			wantKey: "database.url_ref", wantText: []string{"required with database.driver postgres", "env:DATABASE_URL"}},
		{name: "refuses an unknown driver", in: Input{Env: []string{"BOTHY_DATABASE__DRIVER=" + secretish}},
			wantKey: "database.driver", wantText: []string{"must be sqlite or postgres"}},
		{name: "refuses a plain URL in the url reference", in: Input{Flags: []Override{{Key: "database.url_ref", Value: "postgres://bothy:" + secretish + "@db/bothy", Flag: "--set"}}},
			wantKey: "database.url_ref", wantText: []string{"env:NAME or file:PATH", "flag --set"}},
		{name: "refuses a plain URL in a database.url key", in: Input{Env: []string{"BOTHY_DATABASE__URL=postgres://bothy:" + secretish + "@db/bothy"}},
			wantKey: "BOTHY_DATABASE__URL", wantText: []string{"unknown variable", "use database.url_ref"}},
		{name: "refuses a URL with a password in a key that is no reference", in: Input{Env: []string{"BOTHY_SERVER__DATA_DIR=postgres://bothy:" + secretish + "@db/bothy"}},
			wantKey: "server.data_dir", wantText: []string{"URL with a password", "database.url_ref"}},
		{name: "refuses a reference to a BOTHY_ variable", in: Input{Env: []string{"BOTHY_DATABASE__URL_REF=env:BOTHY_DATABASE_URL"}},
			wantKey: "database.url_ref", wantText: []string{"without the BOTHY_ prefix", "env:DATABASE_URL"}},
		{name: "refuses a read pool of zero", in: Input{Flags: []Override{{Key: "database.max_open_conns", Value: "0", Flag: "--set"}}},
			wantKey: "database.max_open_conns", wantText: []string{"between 1 and 1024"}},
		{name: "refuses a statement timeout of zero", in: Input{Env: []string{"BOTHY_DATABASE__STATEMENT_TIMEOUT=0s"}},
			wantKey: "database.statement_timeout", wantText: []string{"positive"}},
		{name: "refuses a lock timeout that is no duration", in: Input{Env: []string{"BOTHY_DATABASE__LOCK_TIMEOUT=" + secretish}},
			wantKey: "database.lock_timeout", wantText: []string{"duration"}},
		{name: "refuses a negative idle-in-transaction timeout", in: Input{Env: []string{"BOTHY_DATABASE__IDLE_IN_TX_TIMEOUT=-1s"}},
			wantKey: "database.idle_in_tx_timeout", wantText: []string{"negative"}},
		{name: "refuses a negative retry count", in: Input{Env: []string{"BOTHY_DATABASE__TX_RETRY_MAX=-1"}},
			wantKey: "database.tx_retry_max", wantText: []string{"between 0 and 100"}},
		{name: "refuses the worker role on SQLite", in: Input{Flags: []Override{{Key: "server.role", Value: "worker", Flag: "--role"}}},
			wantKey: "server.role", wantText: []string{"worker needs database.driver postgres", "use all", "flag --role"}},
		{name: "refuses an unknown role", in: Input{Env: []string{"BOTHY_SERVER__ROLE=" + secretish}},
			wantKey: "server.role", wantText: []string{"must be all, api or worker"}},
		{name: "refuses the api role on SQLite", in: Input{Flags: []Override{{Key: "server.role", Value: "api", Flag: "--role"}}},
			wantKey: "server.role", wantText: []string{"needs database.driver postgres", "flag --role"}},
		{name: "refuses several nodes on SQLite", in: Input{Env: []string{"BOTHY_CLUSTER__MODE=multi"}},
			wantKey: "cluster.mode", wantText: []string{"multi needs database.driver postgres", "env BOTHY_CLUSTER__MODE"}},
		{name: "refuses an unknown cluster mode", in: Input{Env: []string{"BOTHY_CLUSTER__MODE=" + secretish}},
			wantKey: "cluster.mode", wantText: []string{"single, multi"}},
		{name: "refuses a presence ttl of two flush intervals", in: Input{Flags: []Override{
			{Key: "cluster.presence_flush_interval", Value: "5s", Flag: "--set"}}},
			wantKey: "cluster.presence_ttl", wantText: []string{"more than twice cluster.presence_flush_interval"}},
		{name: "refuses a presence flush interval below 100ms", in: Input{Env: []string{"BOTHY_CLUSTER__PRESENCE_FLUSH_INTERVAL=10ms"}},
			wantKey: "cluster.presence_flush_interval", wantText: []string{"from 100ms to 1m"}},
		{name: "refuses an outbound queue of one frame", in: Input{Env: []string{"BOTHY_SYNC__OUTBOUND_QUEUE_MAX=1"}},
			wantKey: "sync.outbound_queue_max", wantText: []string{"between 2 and 1048576"}},
		{name: "refuses idempotency keys kept less than a minute", in: Input{Env: []string{"BOTHY_SYNC__IDEMPOTENCY_KEY_TTL=30s"}},
			wantKey: "sync.idempotency_key_ttl", wantText: []string{"from 1m"}},
		{name: "refuses an idempotency cleanup batch of zero", in: Input{Env: []string{"BOTHY_SYNC__IDEMPOTENCY_CLEANUP_BATCH_SIZE=0"}},
			wantKey: "sync.idempotency_cleanup_batch_size", wantText: []string{"between 1 and 100000"}},
		{name: "refuses a signing key rotation below an hour", in: Input{Flags: []Override{{Key: "agent.signing_key_rotation", Value: "59m", Flag: "--set"}}},
			wantKey: "agent.signing_key_rotation", wantText: []string{"from 1h", "flag --set"}},
		{name: "refuses a signing key rotation of zero", in: Input{Env: []string{"BOTHY_AGENT__SIGNING_KEY_ROTATION=0s"}},
			wantKey: "agent.signing_key_rotation", wantText: []string{"from 1h"}},
		{name: "refuses a heartbeat interval below 100ms", in: Input{Env: []string{"BOTHY_GATEWAY__HEARTBEAT_INTERVAL=10ms"}},
			wantKey: "gateway.heartbeat_interval", wantText: []string{"from 100ms to 1h"}},
		{name: "refuses a write timeout of zero", in: Input{Flags: []Override{{Key: "gateway.write_timeout", Value: "0s", Flag: "--set"}}},
			wantKey: "gateway.write_timeout", wantText: []string{"positive"}},
		{name: "refuses a frame limit below 1024 bytes", file: "gateway:\n  max_frame_bytes: 100\n",
			wantKey: "gateway.max_frame_bytes", wantText: []string{"between 1024 and 16777216"}},
		{name: "refuses an identify timeout that is no duration", in: Input{Env: []string{"BOTHY_GATEWAY__IDENTIFY_TIMEOUT=" + secretish}},
			wantKey: "gateway.identify_timeout", wantText: []string{"duration"}},
		{name: "refuses an unknown synchronous mode", in: Input{Env: []string{"BOTHY_DATABASE__SYNCHRONOUS=OFF"}},
			wantKey: "database.synchronous", wantText: []string{"FULL, NORMAL, EXTRA"}},
		{name: "refuses an unknown log format", in: Input{Env: []string{"BOTHY_LOG__FORMAT=xml"}},
			wantKey: "log.format", wantText: []string{"text, json"}},
		{name: "refuses a secret where a reference belongs", in: Input{Env: []string{"BOTHY_DATABASE__URL_REF=postgres://u:" + secretish + "@h/db"}},
			wantKey: "database.url_ref", wantText: []string{"env:NAME or file:PATH"}},
		{name: "refuses the same port for both listeners", in: Input{Flags: []Override{
			{Key: "server.listen_addr", Value: "0.0.0.0:9000", Flag: "--listen-addr"},
			{Key: "server.internal_listen_addr", Value: "127.0.0.1:9000", Flag: "--internal-listen-addr"}}},
			wantKey: "server.internal_listen_addr", wantText: []string{"same port", "--internal-listen-addr"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			if tt.file != "" {
				in.File = mustFile(t, tt.file)
			}
			_, err := Load(in)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("Load = %v, want a *config.Error", err)
			}
			msg := err.Error()
			if tt.wantKey != "" && !strings.Contains(msg, tt.wantKey) {
				t.Errorf("error %q does not name %s", msg, tt.wantKey)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			if strings.Contains(msg, secretish) || strings.Contains(msg, "70000") {
				t.Errorf("error %q repeats the value", msg)
			}
		})
	}
}

func TestPostgresKeys(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want DatabaseConfig // compared on the keys PostgreSQL reads
	}{
		{name: "postgres with an env reference and the defaults",
			in:   Input{Env: []string{"BOTHY_DATABASE__DRIVER=postgres", "BOTHY_DATABASE__URL_REF=env:DATABASE_URL"}},
			want: DatabaseConfig{Driver: "postgres", URLRef: "env:DATABASE_URL", MaxOpenConns: 8, StatementTimeout: 5 * time.Second, LockTimeout: 2 * time.Second, TxRetryMax: 3}},
		{name: "postgres with a file reference and every key set",
			in: Input{File: mustFile(t, `
database:
  driver: postgres
  url_ref: file:/run/secrets/db
  max_open_conns: 20
  statement_timeout: 10s
  lock_timeout: 500ms
  idle_in_tx_timeout: 1m
  tx_retry_max: 0
`)},
			want: DatabaseConfig{Driver: "postgres", URLRef: "file:/run/secrets/db", MaxOpenConns: 20, StatementTimeout: 10 * time.Second,
				LockTimeout: 500 * time.Millisecond, IdleInTxTimeout: time.Minute, TxRetryMax: 0}},
		{name: "the harness's own variable may be referenced",
			in:   Input{Flags: []Override{{Key: "database.driver", Value: "postgres"}, {Key: "database.url_ref", Value: "env:BOTHY_TEST_POSTGRES_URL"}}},
			want: DatabaseConfig{Driver: "postgres", URLRef: "env:BOTHY_TEST_POSTGRES_URL", MaxOpenConns: 8, StatementTimeout: 5 * time.Second, LockTimeout: 2 * time.Second, TxRetryMax: 3}},
		{name: "sqlite ignores a url reference",
			in:   Input{Flags: []Override{{Key: "database.url_ref", Value: "env:DATABASE_URL"}}},
			want: DatabaseConfig{Driver: "sqlite", URLRef: "env:DATABASE_URL", MaxOpenConns: 8, StatementTimeout: 5 * time.Second, LockTimeout: 2 * time.Second, TxRetryMax: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustLoad(t, tt.in).Database
			got := DatabaseConfig{Driver: d.Driver, URLRef: d.URLRef, MaxOpenConns: d.MaxOpenConns, StatementTimeout: d.StatementTimeout,
				LockTimeout: d.LockTimeout, IdleInTxTimeout: d.IdleInTxTimeout, TxRetryMax: d.TxRetryMax}
			if got != tt.want {
				t.Fatalf("database:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestAcceptsDistinctPortsAndPortZeroTwice(t *testing.T) {
	for _, pair := range [][2]string{
		{"127.0.0.1:0", "127.0.0.1:0"},
		{"127.0.0.1:9000", "127.0.0.2:9000"},
		{"[::1]:9000", "127.0.0.1:9001"},
	} {
		_, err := Load(Input{Flags: []Override{{Key: "server.listen_addr", Value: pair[0]}, {Key: "server.internal_listen_addr", Value: pair[1]}}})
		if err != nil {
			t.Errorf("%v: %v", pair, err)
		}
	}
	if !portsClash("[::ffff:127.0.0.1]:9000", "127.0.0.1:9000") {
		t.Error("an IPv4-mapped address does not count as its IPv4 address")
	}
	if !portsClash(":9000", "[::1]:9000") {
		t.Error("an empty host does not count as a wildcard")
	}
}

func TestCollectsEveryProblem(t *testing.T) {
	_, err := Load(Input{Env: []string{"BOTHY_NOPE=1", "BOTHY_LOG__LEVEL=loud", "BOTHY_HTTP__IDLE_TIMEOUT=soon"}})
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("Load = %v", err)
	}
	// Type errors and unknown names are reported together; value checks run once they are fixed.
	if len(ce.Problems) != 2 {
		t.Fatalf("problems = %v, want the unknown variable and the bad duration", ce.Problems)
	}
}

func TestPrintShowsSourcesAndNoSecret(t *testing.T) {
	file := mustFile(t, "http:\n  request_timeout: 45s\n")
	c := mustLoad(t, Input{File: file,
		Env:   []string{"BOTHY_DATABASE__URL_REF=env:BOTHY_TEST_DB_URL", "BOTHY_TEST_DB_URL=postgres://u:" + secretish + "@h/db"},
		Flags: []Override{{Key: "server.data_dir", Value: "/srv/bothy", Flag: "--data-dir"}}})
	var b bytes.Buffer
	if err := c.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`server.data_dir: "/srv/bothy"  # flag`,
		`database.url_ref: "env:BOTHY_TEST_DB_URL"  # env`,
		`http.request_timeout: "45s"  # file`,
		`auth.session_ttl: "720h"  # default`,
		`database.read_pool_size: 4  # default`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("print lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, secretish) {
		t.Fatalf("print shows the secret:\n%s", out)
	}
	if n := strings.Count(out, "\n"); n != len(schema) {
		t.Fatalf("print has %d lines, want one per key (%d)", n, len(schema))
	}
	if refs := c.RefKeys(); len(refs) != 1 || refs[0].Key != "database.url_ref" {
		t.Fatalf("RefKeys = %v", refs)
	}

	// The printed configuration is a configuration file that loads to the same values.
	again := mustLoad(t, Input{File: mustFile(t, out)})
	again.sources, c.sources, again.where, c.where = nil, nil, nil, nil
	if !reflect.DeepEqual(again, c) {
		t.Fatalf("reloading the print:\n got %+v\nwant %+v", again, c)
	}
}

func TestResolveRef(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv("BOTHY_TEST_SECRET", secretish)
	t.Setenv("BOTHY_TEST_EMPTY", "")
	tests := []struct {
		name, ref, want, code string
	}{
		{"reads an environment variable", "env:BOTHY_TEST_SECRET", secretish, ""},
		{"reads a file without its trailing newline", "file:" + write("s", secretish+"\n"), secretish, ""},
		{"reads a file with a CRLF ending", "file:" + write("crlf", secretish+"\r\n"), secretish, ""},
		{"refuses an unset variable", "env:BOTHY_TEST_NOT_SET_ANYWHERE", "", "env_unset"},
		{"refuses an empty variable", "env:BOTHY_TEST_EMPTY", "", "env_empty"},
		{"refuses a missing file", "file:" + filepath.Join(dir, "missing"), "", "file_unreadable"},
		{"refuses an empty file", "file:" + write("empty", "\n"), "", "file_empty"},
		{"refuses an oversized file", "file:" + write("big", strings.Repeat("x", maxSecretFile+1)), "", "file_too_large"},
		{"refuses a literal secret", secretish, "", "ref_invalid"},
		{"refuses an unknown scheme", "vault:" + secretish, "", "ref_invalid"},
		{"refuses a bad variable name", "env:1" + secretish, "", "ref_invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveRef(tt.ref)
			if tt.code == "" {
				if err != nil || got != tt.want {
					t.Fatalf("ResolveRef = %q, %v", got, err)
				}
				return
			}
			var re *RefError
			if !errors.As(err, &re) || re.Code != tt.code {
				t.Fatalf("ResolveRef error = %v, want code %s", err, tt.code)
			}
			if strings.Contains(err.Error(), secretish) {
				t.Fatalf("error %q shows the secret", err)
			}
		})
	}
}

func TestParseSet(t *testing.T) {
	o, err := ParseSet("log.level=debug")
	if err != nil || o.Key != "log.level" || o.Value != "debug" || o.Flag != "--set" {
		t.Fatalf("ParseSet = %+v, %v", o, err)
	}
	if o, err := ParseSet("server.public_url=http://a=b"); err != nil || o.Value != "http://a=b" {
		t.Fatalf("ParseSet keeps everything after the first =: %+v, %v", o, err)
	}
	for _, bad := range []string{"log.level", "=x", ""} {
		if _, err := ParseSet(bad); err == nil {
			t.Errorf("ParseSet(%q) accepted", bad)
		}
	}
}

func TestParsesEveryKind(t *testing.T) {
	b := &key{name: "x.flag", kind: kindBool}
	if v, err := b.parse("true"); err != nil || v != true {
		t.Fatalf("bool: %v %v", v, err)
	}
	if _, err := b.parse("yes please"); err == nil || strings.Contains(err.Error(), "yes") {
		t.Fatalf("bool error: %v", err)
	}
	if got := formatDuration(90 * time.Minute); got != "1h30m" {
		t.Fatalf("formatDuration = %s", got)
	}
	if got := formatDuration(1500 * time.Millisecond); got != "1.5s" {
		t.Fatalf("formatDuration = %s", got)
	}
}

func TestCheckRef(t *testing.T) {
	for _, ok := range []string{"env:DATABASE_URL", "file:/run/secrets/db", "env:BOTHY_TEST_POSTGRES_URL"} {
		if err := CheckRef(ok); err != nil {
			t.Errorf("CheckRef(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "postgres://u:" + secretish + "@h/db", "env:BOTHY_DATABASE_URL", "vault:" + secretish} {
		err := CheckRef(bad)
		if err == nil {
			t.Errorf("CheckRef(%q) accepted", bad)
		} else if strings.Contains(err.Error(), secretish) {
			t.Errorf("CheckRef repeats the value: %v", err)
		}
	}
}
