// Package config loads the operator's configuration of the appliance (see the
// README's configuration table): built-in defaults < YAML file < BOTHY_ environment variables < command line. Every key is typed
// and checked when it is loaded; unknown keys and unknown BOTHY_ variables are errors, so a typo
// never goes unnoticed.
//
// It must not read the environment or files on its own initiative: the caller hands in the
// environment and the file name (Input), so that tests and the command line see the same thing.
// Error messages name the key and where it came from, never its value, because a value may be a
// secret pasted into the wrong key. Secrets are only configured as references in keys ending in
// _ref and are resolved by ResolveRef where they are used.
package config

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Config is the effective configuration. Its zero value is not useful: start from Default or Load.
type Config struct {
	Server   ServerConfig
	Cluster  ClusterConfig
	Database DatabaseConfig
	HTTP     HTTPConfig
	Auth     AuthConfig
	Sync     SyncConfig
	Gateway  GatewayConfig
	Agent    AgentConfig
	Runs     RunsConfig

	// Messaging is the messaging.* group: how long the history of messages is kept.
	Messaging MessagingConfig

	Push   PushConfig
	MCP    MCPConfig
	Files  FilesConfig
	Backup BackupConfig

	// Telemetry is the telemetry.* group: /metrics and the OTLP export of traces and metrics.
	Telemetry TelemetryConfig

	Log      LogConfig
	Shutdown ShutdownConfig

	// sources records where each key that is not a default came from (key → source), and
	// where refines it (the file and line, the variable, the flag).
	sources map[string]Source
	where   map[string]string
}

// ServerConfig is the server.* group.
type ServerConfig struct {
	// DataDir holds the SQLite database (bothy.db) and everything else the instance stores.
	DataDir string
	// ListenAddr is the public listener (REST, gateway, console).
	ListenAddr string
	// InternalListenAddr is the listener of /healthz and /readyz; loopback by default.
	InternalListenAddr string
	// PublicURL is the origin users reach the instance at; empty means derived from the
	// public listener's address (App.PublicURL).
	PublicURL string
	// TrustedProxies are the reverse proxies (CIDRs or addresses, separated by commas) whose
	// Forwarded and X-Forwarded-* headers name the client; empty: none, the TCP peer is the
	// client (appliance/clientaddr).
	TrustedProxies string
	// Role is all (the default: everything in one process), api (the HTTP API and the
	// gateway) or worker (the job runner, with no public listener); api and worker run next to
	// other processes on one PostgreSQL database.
	Role string
}

// ClusterConfig is the cluster.* group: several api processes on one database.
type ClusterConfig struct {
	// Mode is single (one process serves the gateway) or multi (several, on PostgreSQL: they
	// share typing and presence over NOTIFY ephemeral and the table gateway_presence).
	Mode string
	// PresenceFlushInterval is how often a process of a multi cluster writes the presence of
	// its people connections into gateway_presence.
	PresenceFlushInterval time.Duration
	// PresenceTTL is the age after which another process's presence rows count as gone (it
	// died); more than twice PresenceFlushInterval.
	PresenceTTL time.Duration
}

// DatabaseConfig is the database.* group.
type DatabaseConfig struct {
	// Driver is sqlite (the embedded default, in server.data_dir) or postgres.
	Driver string
	// URLRef is a reference (env:NAME or file:PATH) to the PostgreSQL URL, resolved at start
	// and never printed. Required with postgres, unused with sqlite.
	URLRef string
	// Synchronous is SQLite's synchronous pragma: FULL, NORMAL or EXTRA (always upper case).
	Synchronous string
	// BusyTimeout is SQLite's busy_timeout.
	BusyTimeout time.Duration
	// ReadPoolSize is the number of SQLite read connections.
	ReadPoolSize int
	// MaxBatch bounds how many Units of Work share one commit (storage.Options.MaxBatch).
	MaxBatch int
	// MaxOpenConns is the size of PostgreSQL's read pool; the write path has one more
	// connection of its own.
	MaxOpenConns int
	// StatementTimeout and LockTimeout bound each statement and each lock wait on PostgreSQL
	// (set per transaction).
	StatementTimeout time.Duration
	LockTimeout      time.Duration
	// IdleInTxTimeout is PostgreSQL's idle_in_transaction_session_timeout; 0 keeps the
	// server's setting.
	IdleInTxTimeout time.Duration
	// TxRetryMax is how many times a Unit of Work runs again after a deadlock, a serialization
	// failure or a lock timeout (PostgreSQL) or a busy database (SQLite).
	TxRetryMax int
}

// HTTPConfig is the http.* group.
type HTTPConfig struct {
	MaxJSONBodyBytes  int64
	MaxJSONDepth      int
	RequestTimeout    time.Duration
	ReadHeaderTimeout time.Duration
	// BodyReadTimeout bounds the time a request body may take to arrive after its header.
	BodyReadTimeout time.Duration
	IdleTimeout     time.Duration
}

// AuthConfig is the auth.* group.
type AuthConfig struct {
	SessionTTL time.Duration
	// LoginMaxFailures bounds the failed logins of one handle from one address; as many from
	// all addresses slow down the addresses that failed against the handle.
	LoginMaxFailures int
	// LoginMaxFailuresPerAddress bounds the failed logins of one address over all handles.
	LoginMaxFailuresPerAddress int
	LoginFailureWindow         time.Duration
	// CredentialCacheTTL bounds how long a node keeps a checked session or API token in memory;
	// 0 reads the credential at every request.
	CredentialCacheTTL time.Duration
}

// SyncConfig is the sync.* group.
type SyncConfig struct {
	// OutboundQueueMax bounds each gateway connection's queue of frames; a connection whose
	// queue overflows is closed with 4014 (slow consumer).
	OutboundQueueMax int
	// RunPatchCoalesceInterval is the window in which a run's patches are merged into one
	// run.updated frame per focused client; the first patch after a quiet spell goes at once.
	// 0: every patch is a frame of its own.
	RunPatchCoalesceInterval time.Duration
	// IdempotencyKeyTTL is how long the answer to a request with an Idempotency-Key is kept for
	// the client's retries; the job sync.idempotency_cleanup deletes older ones.
	IdempotencyKeyTTL time.Duration
	// IdempotencyCleanupInterval is how often sync.idempotency_cleanup runs.
	IdempotencyCleanupInterval time.Duration
	// IdempotencyCleanupBatchSize is how many keys one transaction of the job deletes.
	IdempotencyCleanupBatchSize int
	// EventRetention is how long an event stays in the log; the job sync.retention prunes
	// older ones (never the newest). A cursor older than what is kept is refused with 410
	// resync_required (REST) or 4016 (gateway). 0 keeps every event.
	EventRetention time.Duration
	// RetentionInterval is how often the job sync.retention runs (when some retention is set).
	RetentionInterval time.Duration
	// RetentionBatchSize is how many rows one transaction of sync.retention removes.
	RetentionBatchSize int
}

// MessagingConfig is the messaging.* group.
type MessagingConfig struct {
	// Retention is how long a message is kept; the job sync.retention deletes older ones as
	// a person's delete would (a tombstone stays, the content leaves the log, the files and
	// the search index follow). 0, the default, never deletes a message.
	Retention time.Duration
	// RevisionRetention is how long the earlier versions of an edited message are kept; the
	// job sync.retention prunes older ones. The message itself stays. 0 keeps them all.
	RevisionRetention time.Duration
}

// AgentConfig is the agent.* group: what the server grants an agent for its runs.
type AgentConfig struct {
	// InvocationTokenTTL is how long an invocation token is valid; the agent renews it with
	// POST /api/v1/runs/{id}/token.
	InvocationTokenTTL time.Duration
	// SigningKeyRotation is how long a key signs invocation tokens before the job
	// runs.signing_key_rotation makes a new one the signer; the retired key keeps verifying
	// until every token it signed has expired, then the job deletes it.
	SigningKeyRotation time.Duration
	// QueuedTimeout is how long a run may stay queued before the job runs.queued_expiry fails it
	// with agent_unavailable.
	QueuedTimeout time.Duration
	// StallTimeout is how long a running or waiting run may go without a start or patch before
	// the job runs.stall_check fails it with stale.
	StallTimeout time.Duration
	// StallCheckInterval is how often runs.stall_check looks.
	StallCheckInterval time.Duration
	// CancelGrace is how long an agent has to confirm a cancel request before the job
	// runs.cancel_timeout ends the run cancelled with cancel_timeout.
	CancelGrace time.Duration
}

// RunsConfig is the runs.* group: what the trigger allows agents among themselves.
type RunsConfig struct {
	// MaxHandoffDepth is how many agent-to-agent handoffs a chain may take: a mention in an
	// agent's answer deeper than this invokes nobody (handoff_depth_exceeded).
	MaxHandoffDepth int
	// OutputRetention is how long the output of a run that ended is kept; the job
	// sync.retention empties older ones (the run, its status and steps stay). 0 keeps it.
	OutputRetention time.Duration
}

// PushConfig is the push.* group: Web Push to people's browsers.
type PushConfig struct {
	// AllowPrivateEndpoints takes push endpoints on private, loopback and local hosts and over
	// http, and lets the sender connect to them: for a push service of one's own on the local
	// network, or a test's fake. Off, an endpoint must be https on a public host and every
	// connection to a private address is refused.
	AllowPrivateEndpoints bool
	// Subject is the VAPID contact (a mailto: or https: URL) the push services may write to;
	// empty means the instance's public URL.
	Subject string
}

// BackupConfig is the backup.* group: the scheduled backups of an SQLite instance.
type BackupConfig struct {
	// Schedule is how often the job backup.scheduled makes a backup; 0 turns it off.
	Schedule time.Duration
	// Dir is where backups go, one folder each; empty: server.data_dir/backups.
	Dir string
	// Keep is how many of the newest backups in Dir each run leaves; older ones are removed.
	Keep int
}

// FilesConfig is the files.* group: uploads, where their bytes live, thumbnails.
type FilesConfig struct {
	// Storage is where the bytes go: fs (under server.data_dir/files) or s3 (a bucket, for
	// several nodes).
	Storage string
	// MaxUploadBytes bounds one file; a larger upload is refused (413) with nothing kept.
	MaxUploadBytes int64
	// UploadTTL is how long a resumable upload may take before its parts are removed.
	UploadTTL time.Duration
	// UnattachedTTL is how long a file that no message carries is kept.
	UnattachedTTL time.Duration
	// MaxImagePixels bounds the images that get a thumbnail (a small file can decode to
	// gigabytes of pixels).
	MaxImagePixels int64
	// StripMetadata removes EXIF, XMP and text chunks from stored JPEG, PNG and WebP images
	// (where a photo was taken must not travel with it).
	StripMetadata bool
	// S3Bucket, S3Prefix (put before every key, so that one bucket serves several instances),
	// S3Endpoint (the service's URL: https://s3.eu-west-1.amazonaws.com, http://minio:9000)
	// and S3Region place the bytes of storage s3.
	S3Bucket   string
	S3Prefix   string
	S3Endpoint string
	S3Region   string
	// S3AccessKeyIDRef and S3SecretAccessKeyRef are references (env:NAME, file:PATH) to the
	// credentials; both empty, the AWS environment variables are read, then the machine's
	// IAM role.
	S3AccessKeyIDRef     string
	S3SecretAccessKeyRef string
	// S3PathStyle addresses the bucket in the path (endpoint/bucket/key), as MinIO and most
	// self-hosted services want, instead of as a subdomain.
	S3PathStyle bool
}

// MCPConfig is the mcp.* group: the endpoint /api/v1/mcp for outside agents (Model Context
// Protocol clients), who call its tools with an API token or an agent token.
type MCPConfig struct {
	// Enabled serves the endpoint; off (the default), the path answers 404 like any unknown one.
	Enabled bool
	// MaxRequestsPerPrincipal bounds the requests of one person or agent that the endpoint
	// serves at once; the next is answered 429.
	MaxRequestsPerPrincipal int
}

// GatewayConfig is the gateway.* group: the realtime gateway at /api/v1/gateway.
type GatewayConfig struct {
	// HeartbeatInterval is announced in hello; a client silent for 1.5 intervals is closed.
	HeartbeatInterval time.Duration
	// WriteTimeout bounds each write to a connection; a missed deadline closes it (4014).
	WriteTimeout time.Duration
	// MaxFrameBytes is the largest frame a client may send; a larger one closes with 1009.
	MaxFrameBytes int64
	// IdentifyTimeout is how long a connection may stay open without identifying (4003).
	IdentifyTimeout time.Duration
	// ReplayBufferEvents is how many of the last events are kept in memory as frames for the
	// catch-up of clients that were away briefly; 0 keeps none.
	ReplayBufferEvents int
	// MaxConnectionsPerPrincipal bounds the identified connections of one person or agent;
	// MaxConnectionsPerAddress the connections from one peer address. The next is closed with
	// 4018; 0 is no bound.
	MaxConnectionsPerPrincipal int
	MaxConnectionsPerAddress   int
}

// LogConfig is the log.* group.
type LogConfig struct {
	// Level is debug, info, warn or error.
	Level string
	// Format is text or json.
	Format string
}

// TelemetryConfig is the telemetry.* group (appliance/telemetry).
type TelemetryConfig struct {
	// Enabled serves /metrics on the internal listener and watches the work for it; false
	// turns every part of telemetry off.
	Enabled bool
	// OTLPEndpoint is the base URL of an OTLP/HTTP collector: traces (made only when it is set)
	// and metrics are pushed to it. Empty: no traces, metrics on /metrics only.
	OTLPEndpoint string
	// ServiceName names the process in traces and metrics (service.name).
	ServiceName string
	// SampleRatio is the share of traces kept, from 0 to 1; a request that carries a
	// traceparent follows its caller's decision.
	SampleRatio float64
}

// ShutdownConfig is the shutdown.* group.
type ShutdownConfig struct {
	// TotalTimeout bounds the whole graceful shutdown.
	TotalTimeout time.Duration
}

// Source says where an effective value came from.
type Source string

const (
	FromDefault Source = "default"
	FromFile    Source = "file"
	FromEnv     Source = "env"
	FromFlag    Source = "flag"
)

// Setting is one key's effective value, for `bothy config print`.
type Setting struct {
	Key string
	// Value is the value in the form the loader accepts. For a *_ref key it is the reference
	// itself (env:NAME, file:PATH), never the secret it points to.
	Value  string
	Source Source
	// Quoted tells whether Value is a string (printed in quotes) rather than a number.
	Quoted bool
}

// Default returns the built-in defaults. Tests start from it and change what they need.
func Default() Config {
	var c Config
	for _, k := range schema {
		v, err := k.parse(k.def)
		if err != nil {
			panic("config: bad default of " + k.name + ": " + err.Error())
		}
		k.store(&c, v)
	}
	return c
}

// Settings lists every key in schema order with its effective value and source.
func (c Config) Settings() []Setting {
	out := make([]Setting, 0, len(schema))
	for _, k := range schema {
		src := c.sources[k.name]
		if src == "" {
			src = FromDefault
		}
		out = append(out, Setting{Key: k.name, Value: k.format(k.load(&c)), Source: src,
			Quoted: k.kind == kindString || k.kind == kindDuration})
	}
	return out
}

// SourceOf returns where key's value came from.
func (c Config) SourceOf(key string) Source {
	if s := c.sources[key]; s != "" {
		return s
	}
	return FromDefault
}

// RefKeys lists the keys that hold secret references and are set.
func (c Config) RefKeys() []Setting {
	var out []Setting
	for _, s := range c.Settings() {
		if strings.HasSuffix(s.Key, "_ref") && s.Value != "" {
			out = append(out, s)
		}
	}
	return out
}

// EnvName returns the environment variable that sets key: BOTHY_ + key in upper case with "."
// replaced by "__" (server.data_dir → BOTHY_SERVER__DATA_DIR).
func EnvName(key string) string {
	return "BOTHY_" + strings.ToUpper(strings.ReplaceAll(key, ".", "__"))
}

// Keys lists every configuration key in schema order.
func Keys() []string {
	out := make([]string, len(schema))
	for i, k := range schema {
		out[i] = k.name
	}
	return out
}

// WriteYAML writes every key with its effective value and, as a comment, its source, one line
// per key ("server.data_dir: "./bothy-data"  # default"). The output is itself a valid
// configuration file. References are written as references; nothing is resolved.
func (c Config) WriteYAML(w io.Writer) error {
	var b strings.Builder
	for _, s := range c.Settings() {
		v := s.Value
		if s.Quoted {
			v = strconv.Quote(v)
		}
		fmt.Fprintf(&b, "%s: %s  # %s\n", s.Key, v, s.Source)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
