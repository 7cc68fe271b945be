package llm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Config is agent.yaml: which model answers and which tools it may use.
type Config struct {
	// Provider is the wire format of the model's API: openai (chat completions, also Ollama,
	// vLLM, llama.cpp and other compatible servers) or anthropic (the Messages API).
	Provider string `yaml:"provider"`
	// BaseURL is the API's root: https://api.openai.com/v1 and https://api.anthropic.com by
	// default; for Ollama on the LAN http://host:11434/v1.
	BaseURL string `yaml:"base_url"`
	Model   string `yaml:"model"`
	// APIKeyRef says where the key is: env:NAME or file:PATH. Empty sends none (a LAN server).
	APIKeyRef    string `yaml:"api_key_ref"`
	SystemPrompt string `yaml:"system_prompt"`
	// History is how many earlier messages of the thread the model is given (0: none, only
	// the invoking one). At most 200.
	History     int         `yaml:"history"`
	MaxTokens   int         `yaml:"max_tokens"`
	Temperature *float64    `yaml:"temperature"`
	MCPServers  []MCPServer `yaml:"mcp_servers"`
	// Pricing turns the tokens into the run's cost, which budgets may bound; none reports 0.
	Pricing *Pricing `yaml:"pricing"`
}

// Pricing is what the model costs, in US dollars per million tokens.
type Pricing struct {
	InputUSDPerMTok  float64 `yaml:"input_usd_per_mtok"`
	OutputUSDPerMTok float64 `yaml:"output_usd_per_mtok"`
}

// Cost is what u cost at these prices; 0 without prices.
func (p *Pricing) Cost(u Usage) float64 {
	if p == nil {
		return 0
	}
	return (float64(u.InputTokens)*p.InputUSDPerMTok + float64(u.OutputTokens)*p.OutputUSDPerMTok) / 1e6
}

// MCPServer is one MCP server whose tools the model may call: a command started as a child
// process that speaks MCP on its stdin and stdout, or the URL of a streamable HTTP server.
type MCPServer struct {
	Name    string            `yaml:"name"`
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	URL     string            `yaml:"url"`
	// Ask lists the tools of this server that a person must approve before each call.
	Ask []string `yaml:"ask"`
}

// Defaults of the optional keys.
const (
	DefaultHistory   = 20
	DefaultMaxTokens = 4096
	maxHistory       = 200
)

var serverName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,32}$`)

// LoadConfig reads and checks agent.yaml.
func LoadConfig(path string) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	return ParseConfig(raw)
}

var unknownField = regexp.MustCompile(`line (\d+): field (\S+) not found in type \S+`)

// ParseConfig decodes agent.yaml, refusing keys it does not know (by name) and checking the
// values.
func ParseConfig(raw []byte) (Config, error) {
	c := Config{History: -1}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		msg := err.Error()
		if m := unknownField.FindAllStringSubmatch(msg, -1); m != nil {
			var keys []string
			for _, k := range m {
				keys = append(keys, fmt.Sprintf("%q (line %s)", k[2], k[1]))
			}
			return Config{}, fmt.Errorf("unknown key %s", strings.Join(keys, ", "))
		}
		return Config{}, fmt.Errorf("%s", strings.TrimPrefix(msg, "yaml: "))
	}
	switch c.Provider {
	case "openai", "anthropic":
	case "":
		return Config{}, errors.New("provider is required: openai or anthropic")
	default:
		return Config{}, fmt.Errorf("provider %q: want openai or anthropic", c.Provider)
	}
	if c.Model == "" {
		return Config{}, errors.New("model is required")
	}
	if c.BaseURL != "" && !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		return Config{}, fmt.Errorf("base_url %q: want an http:// or https:// URL", c.BaseURL)
	}
	if c.APIKeyRef != "" {
		kind, rest, _ := strings.Cut(c.APIKeyRef, ":")
		if (kind != "env" && kind != "file") || rest == "" {
			return Config{}, fmt.Errorf("api_key_ref %q: want env:NAME or file:PATH", c.APIKeyRef)
		}
	}
	switch {
	case c.History == -1:
		c.History = DefaultHistory
	case c.History < 0 || c.History > maxHistory:
		return Config{}, fmt.Errorf("history %d: want 0 to %d", c.History, maxHistory)
	}
	switch {
	case c.MaxTokens == 0:
		c.MaxTokens = DefaultMaxTokens
	case c.MaxTokens < 0:
		return Config{}, fmt.Errorf("max_tokens %d: want a positive number", c.MaxTokens)
	}
	if c.Temperature != nil && (*c.Temperature < 0 || *c.Temperature > 2) {
		return Config{}, fmt.Errorf("temperature %v: want 0 to 2", *c.Temperature)
	}
	if p := c.Pricing; p != nil && (p.InputUSDPerMTok < 0 || p.OutputUSDPerMTok < 0) {
		return Config{}, errors.New("pricing: a price is not negative")
	}
	seen := map[string]bool{}
	for i, s := range c.MCPServers {
		at := fmt.Sprintf("mcp_servers[%d]", i)
		if !serverName.MatchString(s.Name) {
			return Config{}, fmt.Errorf("%s.name %q: want 1 to 32 letters, digits, _ or -", at, s.Name)
		}
		if seen[s.Name] {
			return Config{}, fmt.Errorf("%s.name %q: two servers have that name", at, s.Name)
		}
		seen[s.Name] = true
		switch {
		case (s.Command == "") == (s.URL == ""):
			return Config{}, fmt.Errorf("%s (%s): give either command or url", at, s.Name)
		case s.URL != "" && (len(s.Args) > 0 || len(s.Env) > 0):
			return Config{}, fmt.Errorf("%s (%s): args and env go with command, not url", at, s.Name)
		case s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
			return Config{}, fmt.Errorf("%s.url %q: want an http:// or https:// URL", at, s.URL)
		}
	}
	return c, nil
}

// APIKey reads the key APIKeyRef names; "" when it names none.
func (c Config) APIKey() (string, error) {
	kind, rest, _ := strings.Cut(c.APIKeyRef, ":")
	switch kind {
	case "":
		return "", nil
	case "env":
		v := strings.TrimSpace(os.Getenv(rest))
		if v == "" {
			return "", fmt.Errorf("api_key_ref: the environment variable %s is not set", rest)
		}
		return v, nil
	default:
		b, err := os.ReadFile(rest)
		if err != nil {
			return "", fmt.Errorf("api_key_ref: %w", err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("api_key_ref: %s is empty", rest)
		}
		return v, nil
	}
}
