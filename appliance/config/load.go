package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FileEnv names the environment variable that points at the configuration file when no
// --config flag is given.
const FileEnv = "BOTHY_CONFIG_FILE"

// testEnvPrefix marks the variables of the test harness; they are not configuration.
const testEnvPrefix = "BOTHY_TEST_"

// Input is everything the configuration is loaded from.
type Input struct {
	// File is the path given with --config; when empty, BOTHY_CONFIG_FILE in Env is used, and
	// when that is empty too, no file is read.
	File string
	// Env is the process environment as "NAME=value" entries (os.Environ()).
	Env []string
	// Flags are the command-line values, in the order given; later ones win.
	Flags []Override
}

// Override is one key set on the command line.
type Override struct {
	Key   string
	Value string
	// Flag is how it was given ("--set", "--data-dir"), for messages.
	Flag string
}

// ParseSet parses the argument of --set key=value.
func ParseSet(arg string) (Override, error) {
	k, v, ok := strings.Cut(arg, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return Override{}, errors.New("--set takes key=value")
	}
	return Override{Key: strings.TrimSpace(k), Value: v, Flag: "--set"}, nil
}

// Problem is one thing wrong with the configuration. It names the key and where it was set,
// never the value.
type Problem struct {
	// Key is the configuration key, or for an unknown name the name as it was given (a YAML
	// path, an environment variable).
	Key    string
	Source Source
	// Where refines Source: the file name, the variable, the flag.
	Where  string
	Detail string
}

func (p *Problem) Error() string {
	where := string(p.Source)
	if p.Where != "" {
		where += " " + p.Where
	}
	if p.Key == "" {
		return where + ": " + p.Detail
	}
	return p.Key + " (" + where + "): " + p.Detail
}

// Error is a configuration that cannot be used. The command line exits with code 2 on it.
type Error struct {
	Problems []*Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return "configuration: " + strings.Join(lines, "; ")
}

// Load builds the configuration from defaults, the file, the environment and the flags, in
// that order of precedence, and checks it. On failure it returns an *Error listing every
// problem it found.
func Load(in Input) (Config, error) {
	c := Default()
	c.sources, c.where = map[string]Source{}, map[string]string{}
	var probs []*Problem

	set := func(name, raw string, src Source, where string) {
		k := byName[name]
		v, err := k.parse(raw)
		if err != nil {
			probs = append(probs, &Problem{Key: name, Source: src, Where: where, Detail: err.Error()})
			return
		}
		k.store(&c, v)
		c.sources[name], c.where[name] = src, where
	}

	env := map[string]string{}
	var envNames []string
	for _, kv := range in.Env {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if _, seen := env[name]; !seen {
			envNames = append(envNames, name)
		}
		env[name] = val
	}

	file := in.File
	if file == "" {
		file = env[FileEnv]
	}
	if file != "" {
		probs = append(probs, readFile(file, set)...)
	}

	sort.Strings(envNames)
	for _, name := range envNames {
		if !strings.HasPrefix(name, "BOTHY_") || name == FileEnv || strings.HasPrefix(name, testEnvPrefix) {
			continue
		}
		k := byEnv[name]
		if k == nil {
			probs = append(probs, &Problem{Key: name, Source: FromEnv, Detail: "unknown variable" + refHint(envKey(name))})
			continue
		}
		set(k.name, env[name], FromEnv, name)
	}

	for _, o := range in.Flags {
		if byName[o.Key] == nil {
			probs = append(probs, &Problem{Key: o.Key, Source: FromFlag, Where: o.Flag, Detail: "unknown key" + refHint(o.Key)})
			continue
		}
		set(o.Key, o.Value, FromFlag, o.Flag)
	}

	if len(probs) > 0 {
		return Config{}, &Error{Problems: probs}
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate checks every value and the conditions between keys. Load calls it; tests that build
// a Config by hand may call it too.
func (c Config) Validate() error {
	var probs []*Problem
	for i := range schema {
		k := &schema[i]
		msg := k.check(k.load(&c))
		if msg == "" {
			msg = secretInPlainKey(k, k.load(&c))
		}
		if msg != "" {
			probs = append(probs, &Problem{Key: k.name, Source: c.SourceOf(k.name), Where: c.where[k.name], Detail: msg})
		}
	}
	probs = append(probs, crossCheck(&c)...)
	if len(probs) > 0 {
		return &Error{Problems: probs}
	}
	return nil
}

// envKey turns an environment variable name back into a key (for hints about unknown names).
func envKey(name string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, "BOTHY_"), "__", "."))
}

// refHint helps the operator who configured a secret directly: it is read only by reference.
func refHint(name string) string {
	if byName[name+"_ref"] != nil {
		return "; secrets are only read by reference: use " + name + "_ref with env:NAME or file:PATH"
	}
	return ""
}

// readFile applies the YAML file at path. Keys are nested like their names (server: {data_dir:
// …}); a dotted key (server.data_dir: …) is accepted too. Every key must be known.
func readFile(path string, set func(name, raw string, src Source, where string)) []*Problem {
	fail := func(detail string) []*Problem {
		return []*Problem{{Source: FromFile, Where: path, Detail: detail}}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fail("cannot read the file: " + err.Error())
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // an empty file sets nothing
		}
		return fail("not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return fail("holds more than one YAML document")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		return fail("the top level must be a mapping of keys")
	}
	var probs []*Problem
	seen := map[string]int{}
	walk(root, "", path, seen, set, &probs)
	return probs
}

func walk(m *yaml.Node, prefix, path string, seen map[string]int, set func(name, raw string, src Source, where string), probs *[]*Problem) {
	at := func(n *yaml.Node) string { return fmt.Sprintf("%s:%d", path, n.Line) }
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn, vn := m.Content[i], m.Content[i+1]
		for vn.Kind == yaml.AliasNode && vn.Alias != nil {
			vn = vn.Alias
		}
		name := prefix + kn.Value
		if kn.Kind != yaml.ScalarNode {
			*probs = append(*probs, &Problem{Source: FromFile, Where: at(kn), Detail: "a key must be a plain name"})
			continue
		}
		switch {
		case byName[name] != nil:
			if line, dup := seen[name]; dup {
				*probs = append(*probs, &Problem{Key: name, Source: FromFile, Where: at(kn),
					Detail: fmt.Sprintf("set twice (first at line %d)", line)})
				continue
			}
			seen[name] = kn.Line
			if vn.Kind != yaml.ScalarNode {
				*probs = append(*probs, &Problem{Key: name, Source: FromFile, Where: at(kn), Detail: "must be a single value, not a list or mapping"})
				continue
			}
			raw := vn.Value
			if vn.Tag == "!!null" {
				raw = ""
			}
			set(name, raw, FromFile, at(kn))
		case sections[name]:
			if vn.Kind == yaml.ScalarNode && vn.Tag == "!!null" {
				continue // "server:" with nothing under it
			}
			if vn.Kind != yaml.MappingNode {
				*probs = append(*probs, &Problem{Key: name, Source: FromFile, Where: at(kn), Detail: "must be a mapping of keys"})
				continue
			}
			walk(vn, name+".", path, seen, set, probs)
		default:
			*probs = append(*probs, &Problem{Key: name, Source: FromFile, Where: at(kn), Detail: "unknown key" + refHint(name)})
		}
	}
}
