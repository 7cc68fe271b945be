package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"bothy.dev/bothy/bench/internal/measure"
)

// invocations are the bothybench command lines that bench/run and bench/README.md give, each
// as the scenario's name and its arguments.
func invocations(t *testing.T) [][]string {
	t.Helper()
	var lines [][]string
	for file, re := range map[string]*regexp.Regexp{
		"../../run":       regexp.MustCompile(`^\s*scenario ([a-z].*)$`),
		"../../README.md": regexp.MustCompile(`^(?:\S+=\S+ )*bench/out/bothybench ([a-z].*?)( &)?$`),
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			m := re.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			line := strings.NewReplacer(`"$bothy"`, "bench/out/bothy", `"$d"`, "modernc",
				`"--set database.max_batch=64"`, "--set=database.max_batch=64").Replace(m[1])
			lines = append(lines, strings.Fields(line))
		}
	}
	if len(lines) < 40 {
		t.Fatalf("found %d invocations in bench/run and bench/README.md, want the 40 or more they hold", len(lines))
	}
	return lines
}

func TestScenarios(t *testing.T) {
	t.Run("every invocation of bench/run and the README parses with its scenario's flags", func(t *testing.T) {
		for _, args := range invocations(t) {
			sc := find(args[0])
			if sc == nil {
				t.Errorf("%q: no such scenario", strings.Join(args, " "))
				continue
			}
			if _, _, err := sc.parse(args[1:]); err != nil {
				t.Errorf("%q: %v", strings.Join(args, " "), err)
			}
		}
	})

	t.Run("every scenario declares its flags once, with the shared ones it asks for", func(t *testing.T) {
		names := map[string]bool{}
		for _, sc := range scenarios {
			if names[sc.name] {
				t.Errorf("two scenarios are named %s", sc.name)
			}
			names[sc.name] = true
			r, run, err := sc.parse(nil) // a flag declared twice panics here
			if err != nil || run == nil {
				t.Errorf("%s: parse(nil) = %v, want its run", sc.name, err)
				continue
			}
			if (r.engine != nil) != (sc.serve != nil || sc.store) {
				t.Errorf("%s: -engine declared %v, want it with the server's or the store's flags", sc.name, r.engine != nil)
			}
			if (r.duration != nil) != (sc.timing != nil) {
				t.Errorf("%s: -duration declared %v, want it with the timing", sc.name, r.duration != nil)
			}
		}
	})

	t.Run("a scenario refuses an engine other than sqlite and postgres, and stray arguments", func(t *testing.T) {
		for _, args := range [][]string{{"-engine", "mysql"}, {"-clients", "8", "extra"}} {
			if _, _, err := find("http-closed").parse(args); err == nil {
				t.Errorf("http-closed %q parsed, want an error", args)
			}
		}
	})

	t.Run("a run's results are printed once what it started has ended, and not at all when that fails", func(t *testing.T) {
		for _, stopErr := range []error{nil, errors.New("stop failed")} {
			var order []string
			sc := scenario{name: "fake", flags: func(*flag.FlagSet) runFunc {
				return func(_ context.Context, r *runner, out io.Writer) error {
					r.atEnd(func() error { order = append(order, "first"); return nil })
					r.atEnd(func() error { order = append(order, "second"); return stopErr })
					measure.Result(out, "fake/figure", 1, "ms")
					order = append(order, "run")
					return nil
				}
			}}
			var stdout bytes.Buffer
			err := sc.main(context.Background(), nil, &stdout)
			if got := strings.Join(order, " "); got != "run second first" {
				t.Errorf("order %q, want the run, then what it started last, then first", got)
			}
			if stopErr == nil && (err != nil || !strings.Contains(stdout.String(), "fake/figure")) {
				t.Errorf("without errors: %v, printed %q", err, stdout.String())
			}
			if stopErr != nil && (!errors.Is(err, stopErr) || stdout.Len() > 0) {
				t.Errorf("with a failed stop: %v, printed %q", err, stdout.String())
			}
		}
	})
}
