package llm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	t.Run("reads a full file and fills the defaults", func(t *testing.T) {
		c, err := ParseConfig([]byte(`
provider: anthropic
model: claude-sonnet-4-5
api_key_ref: env:ANTHROPIC_API_KEY
system_prompt: Be brief.
temperature: 0.2
pricing: {input_usd_per_mtok: 3, output_usd_per_mtok: 15}
mcp_servers:
  - name: files
    command: mcp-files
    args: [--root, /srv]
    env: {LOG: debug}
    ask: [write_file]
  - name: web
    url: http://tools.lan/mcp
`))
		if err != nil {
			t.Fatal(err)
		}
		if c.History != DefaultHistory || c.MaxTokens != DefaultMaxTokens || *c.Temperature != 0.2 ||
			len(c.MCPServers) != 2 || c.MCPServers[0].Ask[0] != "write_file" || c.MCPServers[1].URL != "http://tools.lan/mcp" || c.Pricing.Cost(Usage{InputTokens: 1e6, OutputTokens: 2e6}) != 33 {
			t.Errorf("config %+v", c)
		}
	})
	t.Run("keeps history 0", func(t *testing.T) {
		c, err := ParseConfig([]byte("provider: openai\nmodel: m\nhistory: 0\n"))
		if err != nil || c.History != 0 {
			t.Errorf("history %d, err %v", c.History, err)
		}
	})
	for _, c := range []struct{ name, yaml, want string }{
		{"refuses an unknown key by its name", "provider: openai\nmodel: m\nmodle: x\n", `unknown key "modle" (line 3)`},
		{"refuses an unknown key of a server", "provider: openai\nmodel: m\nmcp_servers:\n  - name: a\n    command: x\n    asks: [y]\n", `unknown key "asks" (line 6)`},
		{"refuses an unknown provider", "provider: gemini\nmodel: m\n", `provider "gemini"`},
		{"wants a model", "provider: openai\n", "model is required"},
		{"refuses a key reference of another kind", "provider: openai\nmodel: m\napi_key_ref: vault:x\n", "want env:NAME or file:PATH"},
		{"refuses a server with a command and a url", "provider: openai\nmodel: m\nmcp_servers: [{name: a, command: x, url: http://h}]\n", "either command or url"},
		{"refuses two servers of one name", "provider: openai\nmodel: m\nmcp_servers: [{name: a, command: x}, {name: a, command: y}]\n", "two servers"},
		{"refuses a negative price", "provider: openai\nmodel: m\npricing: {input_usd_per_mtok: -1}\n", "pricing"},
		{"refuses a temperature out of range", "provider: openai\nmodel: m\ntemperature: 3\n", "temperature 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

func TestAPIKey(t *testing.T) {
	t.Setenv("LLM_TEST_KEY", " sk-env\n")
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte("sk-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]string{"": "", "env:LLM_TEST_KEY": "sk-env", "file:" + file: "sk-file"} {
		if got, err := (Config{APIKeyRef: ref}).APIKey(); err != nil || got != want {
			t.Errorf("APIKey(%q) = %q, %v", ref, got, err)
		}
	}
	if _, err := (Config{APIKeyRef: "env:LLM_TEST_UNSET"}).APIKey(); err == nil || !strings.Contains(err.Error(), "LLM_TEST_UNSET") {
		t.Errorf("an unset variable: %v", err)
	}
}
