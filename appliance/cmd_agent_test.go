package appliance

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

func TestAgentCommand(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(token, []byte("bothy_x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yamlFile := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	typo := yamlFile("typo.yaml", "provider: openai\nmodel: m\nsystem_promt: hi\n")
	noKey := yamlFile("nokey.yaml", "provider: anthropic\nmodel: m\napi_key_ref: env:BOTHY_TEST_NO_SUCH_KEY\n")
	lan := yamlFile("lan.yaml", "provider: openai\nbase_url: http://127.0.0.1:1/v1\nmodel: m\n")
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"status":401,"code":"unauthenticated","detail":"bad token"}`))
	}))
	defer refusing.Close()
	// Knows the token, but not as a consumer of the long poll.
	pollRefusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/me" {
			_, _ = w.Write([]byte(`{"id":"a1","handle":"echo","kind":"agent"}`))
			return
		}
		if r.URL.Path != "/api/v1/agents/me/events" || r.URL.Query().Get("wait") == "" {
			t.Errorf("the agent called %s, want the long poll", r.URL)
		}
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"status":401,"code":"unauthenticated","detail":"bad token"}`))
	}))
	defer pollRefusing.Close()

	tests := []struct {
		name           string
		args           []string
		want           int
		stdout, stderr string
	}{
		{name: "agent echo --help goes to stdout", args: []string{"agent", "echo", "--help"}, want: 0, stdout: `(?s)Usage: bothy agent echo.*--rest.*--token-file.*--url`},
		{name: "agent without an agent is a usage error", args: []string{"agent"}, want: 2, stderr: `Usage: bothy agent echo`},
		{name: "an unknown agent is a usage error", args: []string{"agent", "parrot"}, want: 2, stderr: `unknown agent "parrot"`},
		{name: "agent echo requires --url", args: []string{"agent", "echo", "--token-file", token}, want: 2, stderr: `--url is required`},
		{name: "agent echo refuses a URL that is not http", args: []string{"agent", "echo", "--url", "ftp://x", "--token-file", token}, want: 2, stderr: `http://`},
		{name: "agent echo requires --token-file", args: []string{"agent", "echo", "--url", "http://127.0.0.1:1"}, want: 2, stderr: `--token-file is required`},
		{name: "agent echo refuses an empty token file", args: []string{"agent", "echo", "--url", "http://127.0.0.1:1", "--token-file", empty}, want: 2, stderr: `is empty`},
		{name: "agent echo refuses a missing token file", args: []string{"agent", "echo", "--url", "http://127.0.0.1:1", "--token-file", filepath.Join(dir, "none")}, want: 2},
		{name: "agent echo ends with 1 when the server refuses the token", args: []string{"agent", "echo", "--url", refusing.URL, "--token-file", token}, want: 1, stderr: `refused the token`},
		{name: "agent llm --help goes to stdout with an example agent.yaml", args: []string{"agent", "llm", "--help"}, want: 0, stdout: `(?s)Usage: bothy agent llm.*mcp_servers.*--config.*--rest.*--token-file.*--url`},
		{name: "agent llm requires --config", args: []string{"agent", "llm", "--url", "http://127.0.0.1:1", "--token-file", token}, want: 2, stderr: `--config is required`},
		{name: "agent llm requires --url", args: []string{"agent", "llm", "--token-file", token, "--config", lan}, want: 2, stderr: `--url is required`},
		{name: "agent llm refuses an unknown key of agent.yaml by its name", args: []string{"agent", "llm", "--url", "http://127.0.0.1:1", "--token-file", token, "--config", typo}, want: 2, stderr: `unknown key "system_promt" \(line 3\)`},
		{name: "agent llm refuses an API key reference that names nothing", args: []string{"agent", "llm", "--url", "http://127.0.0.1:1", "--token-file", token, "--config", noKey}, want: 2, stderr: `BOTHY_TEST_NO_SUCH_KEY is not set`},
		{name: "agent llm ends with 1 when the server refuses the token", args: []string{"agent", "llm", "--url", refusing.URL, "--token-file", token, "--config", lan}, want: 1, stderr: `llm: the server refused the token`},
		{name: "agent echo --rest long-polls and ends with 1 when the poll is refused", args: []string{"agent", "echo", "--rest", "--url", pollRefusing.URL, "--token-file", token}, want: 1, stderr: `(?s)rest=true.*client: poll: .*authentication failed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestCLI()
			if got := c.run(tt.args...); got != tt.want {
				t.Errorf("exit code = %d, want %d\nstdout: %s\nstderr: %s", got, tt.want, c.stdout, c.stderr)
			}
			if tt.stdout != "" && !regexp.MustCompile(tt.stdout).MatchString(c.stdout.String()) {
				t.Errorf("stdout %q does not match %q", c.stdout, tt.stdout)
			}
			if tt.stderr != "" && !regexp.MustCompile(tt.stderr).MatchString(c.stderr.String()) {
				t.Errorf("stderr %q does not match %q", c.stderr, tt.stderr)
			}
		})
	}
}
