package config

import (
	"errors"
	"math"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"bothy.dev/bothy/app/gateway"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/appliance/clientaddr"
	"bothy.dev/bothy/storage/engine"
)

type kind int

const (
	kindString kind = iota
	kindInt
	kindBool
	kindDuration
	kindFloat
)

func (k kind) String() string {
	switch k {
	case kindInt:
		return "an integer"
	case kindBool:
		return "true or false"
	case kindDuration:
		return "a duration such as 5s, 10m or 720h"
	case kindFloat:
		return "a number such as 0.25"
	}
	return "a string"
}

// key is one entry of the schema. Parsed values are string, int64, bool or time.Duration.
type key struct {
	name string
	def  string
	kind kind
	// field returns a pointer to the key's field in c: *string, *int, *int64, *bool or
	// *time.Duration.
	field func(c *Config) any
	// check returns why a parsed value is not acceptable, or "". It must not quote the value.
	check func(v any) string
	// normalize rewrites a string value before it is checked and stored (optional).
	normalize func(string) string
}

// The modules' defaults: a setting that a module takes shows the module's own default, so that
// each default is written once.
var (
	gatewayDefaults  = gateway.DefaultConfig()
	identityDefaults = identity.DefaultConfig()
	runsDefaults     = runs.DefaultConfig()
	keyringDefaults  = runs.DefaultKeyringOptions()
)

// dur writes a default duration as a person writes it in the configuration file: 720h, 10m, 50ms.
func dur(d time.Duration) string {
	for _, u := range []struct {
		unit   time.Duration
		suffix string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if d%u.unit == 0 {
			return strconv.FormatInt(int64(d/u.unit), 10) + u.suffix
		}
	}
	return d.String()
}

func num(n int) string { return strconv.Itoa(n) }

// schema is every key of the configuration, in the order `config print` shows them. A key enters
// the schema with the code that reads it: no key without an effect.
var schema = []key{
	{name: "server.data_dir", def: "./bothy-data", kind: kindString,
		field: func(c *Config) any { return &c.Server.DataDir }, check: nonEmpty},
	{name: "server.listen_addr", def: "127.0.0.1:8080", kind: kindString,
		field: func(c *Config) any { return &c.Server.ListenAddr }, check: listenAddr},
	{name: "server.internal_listen_addr", def: "127.0.0.1:8081", kind: kindString,
		field: func(c *Config) any { return &c.Server.InternalListenAddr }, check: listenAddr},
	{name: "server.public_url", def: "", kind: kindString,
		field: func(c *Config) any { return &c.Server.PublicURL }, check: origin},
	{name: "server.trusted_proxies", def: "", kind: kindString,
		field: func(c *Config) any { return &c.Server.TrustedProxies }, check: trustedProxies},
	{name: "server.role", def: "all", kind: kindString, normalize: strings.ToLower,
		field: func(c *Config) any { return &c.Server.Role }, check: role},

	{name: "cluster.mode", def: "single", kind: kindString, normalize: strings.ToLower,
		field: func(c *Config) any { return &c.Cluster.Mode }, check: oneOf("single", "multi")},
	{name: "cluster.presence_flush_interval", def: dur(gatewayDefaults.PresenceFlushInterval), kind: kindDuration,
		field: func(c *Config) any { return &c.Cluster.PresenceFlushInterval }, check: durationBetween(100*time.Millisecond, time.Minute)},
	{name: "cluster.presence_ttl", def: dur(gatewayDefaults.PresenceTTL), kind: kindDuration,
		field: func(c *Config) any { return &c.Cluster.PresenceTTL }, check: positive},

	{name: "database.driver", def: "sqlite", kind: kindString,
		field: func(c *Config) any { return &c.Database.Driver }, check: driver},
	{name: "database.url_ref", def: "", kind: kindString,
		field: func(c *Config) any { return &c.Database.URLRef }, check: reference},
	{name: "database.synchronous", def: "FULL", kind: kindString, normalize: strings.ToUpper,
		field: func(c *Config) any { return &c.Database.Synchronous }, check: oneOf("FULL", "NORMAL", "EXTRA")},
	{name: "database.busy_timeout", def: "5s", kind: kindDuration,
		field: func(c *Config) any { return &c.Database.BusyTimeout }, check: positive},
	{name: "database.read_pool_size", def: "4", kind: kindInt,
		field: func(c *Config) any { return &c.Database.ReadPoolSize }, check: between(1, 1024)},
	{name: "database.max_batch", def: "256", kind: kindInt,
		field: func(c *Config) any { return &c.Database.MaxBatch }, check: between(1, 65536)},
	{name: "database.max_open_conns", def: "8", kind: kindInt,
		field: func(c *Config) any { return &c.Database.MaxOpenConns }, check: between(1, 1024)},
	{name: "database.statement_timeout", def: "5s", kind: kindDuration,
		field: func(c *Config) any { return &c.Database.StatementTimeout }, check: positive},
	{name: "database.lock_timeout", def: "2s", kind: kindDuration,
		field: func(c *Config) any { return &c.Database.LockTimeout }, check: positive},
	{name: "database.idle_in_tx_timeout", def: "0s", kind: kindDuration,
		field: func(c *Config) any { return &c.Database.IdleInTxTimeout }, check: notNegative},
	{name: "database.tx_retry_max", def: "3", kind: kindInt,
		field: func(c *Config) any { return &c.Database.TxRetryMax }, check: between(0, 100)},

	{name: "http.max_json_body_bytes", def: "1048576", kind: kindInt,
		field: func(c *Config) any { return &c.HTTP.MaxJSONBodyBytes }, check: between(1024, 1<<30)},
	{name: "http.max_json_depth", def: "32", kind: kindInt,
		field: func(c *Config) any { return &c.HTTP.MaxJSONDepth }, check: between(2, 1000)},
	{name: "http.request_timeout", def: "30s", kind: kindDuration,
		field: func(c *Config) any { return &c.HTTP.RequestTimeout }, check: positive},
	{name: "http.read_header_timeout", def: "5s", kind: kindDuration,
		field: func(c *Config) any { return &c.HTTP.ReadHeaderTimeout }, check: positive},
	{name: "http.body_read_timeout", def: "10s", kind: kindDuration,
		field: func(c *Config) any { return &c.HTTP.BodyReadTimeout }, check: durationBetween(100*time.Millisecond, time.Hour)},
	{name: "http.idle_timeout", def: "120s", kind: kindDuration,
		field: func(c *Config) any { return &c.HTTP.IdleTimeout }, check: positive},

	{name: "auth.session_ttl", def: dur(identityDefaults.SessionTTL), kind: kindDuration,
		field: func(c *Config) any { return &c.Auth.SessionTTL }, check: positive},
	{name: "auth.login_max_failures", def: num(identityDefaults.LoginFailuresPerHandle), kind: kindInt,
		field: func(c *Config) any { return &c.Auth.LoginMaxFailures }, check: between(1, 1000000)},
	{name: "auth.login_max_failures_per_address", def: num(identityDefaults.LoginFailuresPerIP), kind: kindInt,
		field: func(c *Config) any { return &c.Auth.LoginMaxFailuresPerAddress }, check: between(1, 1000000)},
	{name: "auth.login_failure_window", def: dur(identityDefaults.LoginFailureWindow), kind: kindDuration,
		field: func(c *Config) any { return &c.Auth.LoginFailureWindow }, check: positive},
	{name: "auth.credential_cache_ttl", def: "5s", kind: kindDuration,
		field: func(c *Config) any { return &c.Auth.CredentialCacheTTL }, check: durationBetween(0, time.Minute)},

	{name: "sync.outbound_queue_max", def: num(gatewayDefaults.OutboundQueueMax), kind: kindInt,
		field: func(c *Config) any { return &c.Sync.OutboundQueueMax }, check: between(2, 1<<20)},
	{name: "sync.run_patch_coalesce_interval", def: dur(gatewayDefaults.RunPatchCoalesce), kind: kindDuration,
		field: func(c *Config) any { return &c.Sync.RunPatchCoalesceInterval }, check: durationBetween(0, 10*time.Second)},
	{name: "sync.idempotency_key_ttl", def: "24h", kind: kindDuration,
		field: func(c *Config) any { return &c.Sync.IdempotencyKeyTTL }, check: durationBetween(time.Minute, 8760*time.Hour)},
	{name: "sync.idempotency_cleanup_interval", def: "1h", kind: kindDuration,
		field: func(c *Config) any { return &c.Sync.IdempotencyCleanupInterval }, check: durationBetween(time.Second, 168*time.Hour)},
	{name: "sync.idempotency_cleanup_batch_size", def: "1000", kind: kindInt,
		field: func(c *Config) any { return &c.Sync.IdempotencyCleanupBatchSize }, check: between(1, 100000)},
	{name: "sync.event_retention", def: "0s", kind: kindDuration,
		field: func(c *Config) any { return &c.Sync.EventRetention }, check: retention},
	{name: "sync.retention_interval", def: "1h", kind: kindDuration,
		field: func(c *Config) any { return &c.Sync.RetentionInterval }, check: durationBetween(time.Second, 168*time.Hour)},
	{name: "sync.retention_batch_size", def: "1000", kind: kindInt,
		field: func(c *Config) any { return &c.Sync.RetentionBatchSize }, check: between(1, 100000)},
	{name: "messaging.retention", def: "0s", kind: kindDuration,
		field: func(c *Config) any { return &c.Messaging.Retention }, check: retention},
	{name: "messaging.revision_retention", def: "0s", kind: kindDuration,
		field: func(c *Config) any { return &c.Messaging.RevisionRetention }, check: retention},

	{name: "gateway.heartbeat_interval", def: dur(gatewayDefaults.HeartbeatInterval), kind: kindDuration,
		field: func(c *Config) any { return &c.Gateway.HeartbeatInterval }, check: durationBetween(100*time.Millisecond, time.Hour)},
	{name: "gateway.write_timeout", def: dur(gatewayDefaults.WriteTimeout), kind: kindDuration,
		field: func(c *Config) any { return &c.Gateway.WriteTimeout }, check: positive},
	{name: "gateway.max_frame_bytes", def: "65536", kind: kindInt,
		field: func(c *Config) any { return &c.Gateway.MaxFrameBytes }, check: between(1024, 16<<20)},
	{name: "gateway.identify_timeout", def: dur(gatewayDefaults.IdentifyTimeout), kind: kindDuration,
		field: func(c *Config) any { return &c.Gateway.IdentifyTimeout }, check: positive},
	{name: "gateway.replay_buffer_events", def: num(gatewayDefaults.ReplayBufferEvents), kind: kindInt,
		field: func(c *Config) any { return &c.Gateway.ReplayBufferEvents }, check: between(0, 1000000)},
	{name: "gateway.max_connections_per_principal", def: num(gatewayDefaults.MaxConnectionsPerPrincipal), kind: kindInt,
		field: func(c *Config) any { return &c.Gateway.MaxConnectionsPerPrincipal }, check: between(0, 1000000)},
	{name: "gateway.max_connections_per_address", def: num(gatewayDefaults.MaxConnectionsPerAddress), kind: kindInt,
		field: func(c *Config) any { return &c.Gateway.MaxConnectionsPerAddress }, check: between(0, 1000000)},

	{name: "agent.invocation_token_ttl", def: dur(runsDefaults.TokenTTL), kind: kindDuration,
		field: func(c *Config) any { return &c.Agent.InvocationTokenTTL }, check: durationBetween(time.Second, 24*time.Hour)},
	{name: "agent.signing_key_rotation", def: dur(keyringDefaults.Rotation), kind: kindDuration,
		field: func(c *Config) any { return &c.Agent.SigningKeyRotation }, check: durationBetween(time.Hour, 8760*time.Hour)},
	{name: "agent.queued_timeout", def: dur(runsDefaults.QueuedTimeout), kind: kindDuration,
		field: func(c *Config) any { return &c.Agent.QueuedTimeout }, check: durationBetween(100*time.Millisecond, 168*time.Hour)},
	{name: "agent.stall_timeout", def: dur(runsDefaults.StallTimeout), kind: kindDuration,
		field: func(c *Config) any { return &c.Agent.StallTimeout }, check: durationBetween(100*time.Millisecond, 168*time.Hour)},
	{name: "agent.stall_check_interval", def: "30s", kind: kindDuration,
		field: func(c *Config) any { return &c.Agent.StallCheckInterval }, check: durationBetween(100*time.Millisecond, 24*time.Hour)},
	{name: "agent.cancel_grace", def: dur(runsDefaults.CancelGrace), kind: kindDuration,
		field: func(c *Config) any { return &c.Agent.CancelGrace }, check: durationBetween(100*time.Millisecond, 24*time.Hour)},
	{name: "runs.max_handoff_depth", def: num(runsDefaults.MaxHandoffDepth), kind: kindInt,
		field: func(c *Config) any { return &c.Runs.MaxHandoffDepth }, check: between(0, 100)},
	{name: "runs.output_retention", def: "0s", kind: kindDuration,
		field: func(c *Config) any { return &c.Runs.OutputRetention }, check: retention},

	{name: "push.allow_private_endpoints", def: "false", kind: kindBool,
		field: func(c *Config) any { return &c.Push.AllowPrivateEndpoints }, check: func(any) string { return "" }},
	{name: "push.subject", def: "", kind: kindString,
		field: func(c *Config) any { return &c.Push.Subject }, check: pushSubject},

	{name: "files.storage", def: "fs", kind: kindString, normalize: strings.ToLower,
		field: func(c *Config) any { return &c.Files.Storage }, check: oneOf("fs", "s3")},
	{name: "files.max_upload_bytes", def: "104857600", kind: kindInt,
		field: func(c *Config) any { return &c.Files.MaxUploadBytes }, check: between(1, 1<<40)},
	{name: "files.upload_ttl", def: "24h", kind: kindDuration,
		field: func(c *Config) any { return &c.Files.UploadTTL }, check: durationBetween(time.Second, 30*24*time.Hour)},
	{name: "files.unattached_ttl", def: "24h", kind: kindDuration,
		field: func(c *Config) any { return &c.Files.UnattachedTTL }, check: durationBetween(time.Second, 365*24*time.Hour)},
	{name: "files.max_image_pixels", def: "50000000", kind: kindInt,
		field: func(c *Config) any { return &c.Files.MaxImagePixels }, check: between(1, 1<<34)},
	{name: "files.strip_metadata", def: "true", kind: kindBool,
		field: func(c *Config) any { return &c.Files.StripMetadata }, check: func(any) string { return "" }},
	{name: "files.s3.bucket", def: "", kind: kindString,
		field: func(c *Config) any { return &c.Files.S3Bucket }, check: func(any) string { return "" }},
	{name: "files.s3.prefix", def: "", kind: kindString,
		field: func(c *Config) any { return &c.Files.S3Prefix }, check: func(any) string { return "" }},
	{name: "files.s3.endpoint", def: "", kind: kindString,
		field: func(c *Config) any { return &c.Files.S3Endpoint }, check: func(any) string { return "" }},
	{name: "files.s3.region", def: "", kind: kindString,
		field: func(c *Config) any { return &c.Files.S3Region }, check: func(any) string { return "" }},
	{name: "files.s3.access_key_id_ref", def: "", kind: kindString,
		field: func(c *Config) any { return &c.Files.S3AccessKeyIDRef }, check: reference},
	{name: "files.s3.secret_access_key_ref", def: "", kind: kindString,
		field: func(c *Config) any { return &c.Files.S3SecretAccessKeyRef }, check: reference},
	{name: "files.s3.path_style", def: "true", kind: kindBool,
		field: func(c *Config) any { return &c.Files.S3PathStyle }, check: func(any) string { return "" }},

	{name: "backup.schedule", def: "0s", kind: kindDuration,
		field: func(c *Config) any { return &c.Backup.Schedule }, check: durationZeroOrBetween(time.Minute, 365*24*time.Hour)},
	{name: "backup.dir", def: "", kind: kindString,
		field: func(c *Config) any { return &c.Backup.Dir }, check: func(any) string { return "" }},
	{name: "backup.keep", def: "7", kind: kindInt,
		field: func(c *Config) any { return &c.Backup.Keep }, check: between(1, 10000)},

	{name: "mcp.enabled", def: "false", kind: kindBool,
		field: func(c *Config) any { return &c.MCP.Enabled }, check: func(any) string { return "" }},
	{name: "mcp.max_requests_per_principal", def: "8", kind: kindInt,
		field: func(c *Config) any { return &c.MCP.MaxRequestsPerPrincipal }, check: between(1, 1000)},

	{name: "telemetry.enabled", def: "true", kind: kindBool,
		field: func(c *Config) any { return &c.Telemetry.Enabled }, check: func(any) string { return "" }},
	{name: "telemetry.otlp_endpoint", def: "", kind: kindString,
		field: func(c *Config) any { return &c.Telemetry.OTLPEndpoint }, check: otlpEndpoint},
	{name: "telemetry.service_name", def: "bothy", kind: kindString,
		field: func(c *Config) any { return &c.Telemetry.ServiceName }, check: nonEmpty},
	{name: "telemetry.sample_ratio", def: "1", kind: kindFloat,
		field: func(c *Config) any { return &c.Telemetry.SampleRatio }, check: ratio},

	{name: "log.level", def: "info", kind: kindString, normalize: strings.ToLower,
		field: func(c *Config) any { return &c.Log.Level }, check: oneOf("debug", "info", "warn", "error")},
	{name: "log.format", def: "text", kind: kindString, normalize: strings.ToLower,
		field: func(c *Config) any { return &c.Log.Format }, check: oneOf("text", "json")},

	{name: "shutdown.total_timeout", def: "30s", kind: kindDuration,
		field: func(c *Config) any { return &c.Shutdown.TotalTimeout }, check: positive},
}

// pushSubject holds the VAPID contact to a mailto: or https: URL, or nothing (the public URL).
func pushSubject(v any) string {
	s := v.(string)
	if s == "" || strings.HasPrefix(s, "mailto:") && len(s) > len("mailto:") {
		return ""
	}
	if u, err := url.Parse(s); err == nil && u.Scheme == "https" && u.Host != "" {
		return ""
	}
	return "must be a mailto: or https: URL"
}

// Indexes of the schema, built once from the table above.
var byName, byEnv, sections = index()

func index() (byName, byEnv map[string]*key, sections map[string]bool) {
	byName, byEnv, sections = map[string]*key{}, map[string]*key{}, map[string]bool{}
	for i := range schema {
		k := &schema[i]
		byName[k.name] = k
		byEnv[EnvName(k.name)] = k
		parts := strings.Split(k.name, ".")
		for j := 1; j < len(parts); j++ {
			sections[strings.Join(parts[:j], ".")] = true
		}
	}
	return byName, byEnv, sections
}

// parse turns the text form of a value (from YAML, the environment or a flag) into the key's
// type. Its error never contains the text.
func (k *key) parse(s string) (any, error) {
	switch k.kind {
	case kindString:
		if k.normalize != nil {
			s = k.normalize(s)
		}
		return s, nil
	case kindInt:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, errors.New("must be " + k.kind.String())
		}
		return n, nil
	case kindBool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, errors.New("must be " + k.kind.String())
		}
		return b, nil
	case kindDuration:
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return nil, errors.New("must be " + k.kind.String())
		}
		return d, nil
	case kindFloat:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, errors.New("must be " + k.kind.String())
		}
		return f, nil
	}
	panic("config: unknown kind")
}

func (k *key) store(c *Config, v any) {
	switch p := k.field(c).(type) {
	case *string:
		*p = v.(string)
	case *int:
		*p = int(v.(int64))
	case *int64:
		*p = v.(int64)
	case *bool:
		*p = v.(bool)
	case *time.Duration:
		*p = v.(time.Duration)
	case *float64:
		*p = v.(float64)
	default:
		panic("config: unsupported field type of " + k.name)
	}
}

// load returns the key's value in c as a parsed value (the inverse of store).
func (k *key) load(c *Config) any {
	switch p := k.field(c).(type) {
	case *string:
		return *p
	case *int:
		return int64(*p)
	case *int64:
		return *p
	case *bool:
		return *p
	case *time.Duration:
		return *p
	case *float64:
		return *p
	}
	panic("config: unsupported field type of " + k.name)
}

// format is the text form of a parsed value; parse(format(v)) == v.
func (k *key) format(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case bool:
		return strconv.FormatBool(v)
	case time.Duration:
		return formatDuration(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	panic("config: unsupported value type")
}

// formatDuration drops the zero tails of time.Duration.String: 720h0m0s → 720h, 10m0s → 10m.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// The checks. Their messages describe what is expected and never repeat the value.

func nonEmpty(v any) string {
	if v.(string) == "" {
		return "must not be empty"
	}
	return ""
}

func oneOf(allowed ...string) func(any) string {
	return func(v any) string {
		for _, a := range allowed {
			if v.(string) == a {
				return ""
			}
		}
		return "must be one of " + strings.Join(allowed, ", ")
	}
}

func between(lo, hi int64) func(any) string {
	return func(v any) string {
		if n := v.(int64); n < lo || n > hi {
			return "must be between " + strconv.FormatInt(lo, 10) + " and " + strconv.FormatInt(hi, 10)
		}
		return ""
	}
}

func positive(v any) string {
	if v.(time.Duration) <= 0 {
		return "must be a positive duration"
	}
	return ""
}

func durationBetween(lo, hi time.Duration) func(any) string {
	return func(v any) string {
		if d := v.(time.Duration); d < lo || d > hi {
			return "must be a duration from " + formatDuration(lo) + " to " + formatDuration(hi)
		}
		return ""
	}
}

// durationZeroOrBetween is durationBetween(lo, hi) that also takes 0, which turns a schedule off.
func durationZeroOrBetween(lo, hi time.Duration) func(any) string {
	return func(v any) string {
		if d := v.(time.Duration); d != 0 && (d < lo || d > hi) {
			return "must be 0 (off) or a duration from " + formatDuration(lo) + " to " + formatDuration(hi)
		}
		return ""
	}
}

// otlpEndpoint is an OTLP/HTTP collector's base URL, or nothing (no traces).
func otlpEndpoint(v any) string {
	s := v.(string)
	if s == "" {
		return ""
	}
	if u, err := url.Parse(s); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil {
		return ""
	}
	return "must be an http: or https: URL without credentials, such as http://collector:4318"
}

// ratio is a share from 0 to 1.
func ratio(v any) string {
	if f := v.(float64); f < 0 || f > 1 {
		return "must be from 0 to 1"
	}
	return ""
}

func notNegative(v any) string {
	if v.(time.Duration) < 0 {
		return "must not be negative (0 turns it off)"
	}
	return ""
}

func listenAddr(v any) string {
	if _, _, err := splitListenAddr(v.(string)); err != nil {
		return "must be host:port with a port from 0 to 65535 (port 0 picks a free port)"
	}
	return ""
}

// splitListenAddr splits host:port and checks the port.
func splitListenAddr(s string) (host string, port int, err error) {
	host, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return "", 0, errors.New("bad port")
	}
	return host, n, nil
}

func origin(v any) string {
	s := v.(string)
	if s == "" {
		return ""
	}
	const want = "must be an origin such as https://chat.example.com (http or https, a host, an optional port, no path, query or fragment)"
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" ||
		u.User != nil || u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" {
		return want
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return want
		}
	}
	return ""
}

// trustedProxies is a list of CIDRs or addresses; clientaddr reads it the same way at start.
func trustedProxies(v any) string {
	if _, err := clientaddr.ParseProxies(v.(string)); err != nil {
		return "must be CIDRs or addresses separated by commas: " + err.Error()
	}
	return ""
}

func role(v any) string {
	switch v.(string) {
	case "all", "api", "worker":
		return ""
	}
	return "must be all, api or worker"
}

func driver(v any) string {
	switch engine.Name(v.(string)) {
	case engine.SQLite, engine.Postgres:
		return ""
	}
	return "must be sqlite or postgres"
}

func reference(v any) string {
	s := v.(string)
	if s == "" {
		return ""
	}
	scheme, target, err := parseRef(s)
	if err != nil {
		return "must be a reference env:NAME or file:PATH (secrets are never written into the configuration)"
	}
	// A BOTHY_ variable is read as a configuration key and refused as unknown; the harness's
	// BOTHY_TEST_ variables are the exception.
	if scheme == "env" && strings.HasPrefix(target, "BOTHY_") && !strings.HasPrefix(target, testEnvPrefix) {
		return "must name a variable without the BOTHY_ prefix, which is kept for configuration keys (for example env:DATABASE_URL)"
	}
	return ""
}

// secretInPlainKey refuses a URL with a password (postgres://user:secret@host/db) in any string
// key but a reference: a secret pasted into the configuration would show in config print.
func secretInPlainKey(k *key, v any) string {
	s, ok := v.(string)
	if !ok || strings.HasSuffix(k.name, "_ref") || !strings.Contains(s, "://") {
		return ""
	}
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			return "holds a URL with a password: secrets are only read by reference (a *_ref key such as database.url_ref, with env:NAME or file:PATH)"
		}
	}
	return ""
}

// CheckRef reports why ref cannot serve as a secret reference (the check of the *_ref keys,
// for a reference given as a command's flag), without repeating it; nil when it can.
func CheckRef(ref string) error {
	if ref == "" {
		return errors.New("must not be empty")
	}
	if msg := reference(ref); msg != "" {
		return errors.New(msg)
	}
	return nil
}

// crossCheck holds the conditions between keys (such as: roles api and worker need PostgreSQL). It returns problems naming the
// key that has to change.
func crossCheck(c *Config) []*Problem {
	var out []*Problem
	if portsClash(c.Server.ListenAddr, c.Server.InternalListenAddr) {
		out = append(out, &Problem{Key: "server.internal_listen_addr", Source: c.SourceOf("server.internal_listen_addr"),
			Where: c.where["server.internal_listen_addr"], Detail: "must not use the same port as server.listen_addr on an overlapping host"})
	}
	if c.Cluster.Mode == "multi" && engine.Name(c.Database.Driver) != engine.Postgres {
		out = append(out, &Problem{Key: "cluster.mode", Source: c.SourceOf("cluster.mode"), Where: c.where["cluster.mode"],
			Detail: "multi needs database.driver postgres: several nodes share one PostgreSQL database, and SQLite belongs to one process"})
	}
	if (c.Server.Role == "api" || c.Server.Role == "worker") && engine.Name(c.Database.Driver) != engine.Postgres {
		out = append(out, &Problem{Key: "server.role", Source: c.SourceOf("server.role"), Where: c.where["server.role"],
			Detail: c.Server.Role + " needs database.driver postgres: it runs next to other processes on one database, and SQLite belongs to one process (use all)"})
	}
	if c.Cluster.PresenceTTL <= 2*c.Cluster.PresenceFlushInterval {
		out = append(out, &Problem{Key: "cluster.presence_ttl", Source: c.SourceOf("cluster.presence_ttl"), Where: c.where["cluster.presence_ttl"],
			Detail: "must be more than twice cluster.presence_flush_interval, or a live node's rows would age out between two of its flushes"})
	}
	if c.Files.Storage == "s3" && (c.Files.S3Bucket == "" || c.Files.S3Endpoint == "") {
		out = append(out, &Problem{Key: "files.storage", Source: c.SourceOf("files.storage"), Where: c.where["files.storage"],
			Detail: "s3 needs files.s3.bucket and files.s3.endpoint"})
	}
	if (c.Files.S3AccessKeyIDRef == "") != (c.Files.S3SecretAccessKeyRef == "") {
		out = append(out, &Problem{Key: "files.s3.access_key_id_ref", Source: c.SourceOf("files.s3.access_key_id_ref"),
			Where: c.where["files.s3.access_key_id_ref"], Detail: "files.s3.access_key_id_ref and files.s3.secret_access_key_ref go together"})
	}
	if engine.Name(c.Database.Driver) == engine.Postgres && c.Database.URLRef == "" {
		out = append(out, &Problem{Key: "database.url_ref", Source: c.SourceOf("database.url_ref"),
			Where: c.where["database.url_ref"], Detail: "is required with database.driver postgres: a reference such as env:DATABASE_URL or file:/run/secrets/db"})
	}
	return out
}

// portsClash reports whether two listen addresses would compete for one port: same port other
// than 0, and the same host or one of them a wildcard. An IPv4-mapped IPv6 address counts as
// its IPv4 address.
func portsClash(a, b string) bool {
	ha, pa, errA := splitListenAddr(a)
	hb, pb, errB := splitListenAddr(b)
	if errA != nil || errB != nil || pa == 0 || pa != pb {
		return false
	}
	ha, hb = canonicalHost(ha), canonicalHost(hb)
	return ha == hb || wildcard(ha) || wildcard(hb)
}

func canonicalHost(h string) string {
	if i := strings.IndexByte(h, '%'); i >= 0 {
		h = h[:i]
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.Unmap().String()
	}
	return strings.ToLower(h)
}

func wildcard(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
