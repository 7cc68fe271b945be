package appliance

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"bothy.dev/bothy/appliance/config"
)

const configHelp = `bothy config check|print [flags]

Like every command that reads the configuration it takes --config, --set and --data-dir
and reads the same environment, so it checks or prints what those commands would run with.

  check   loads and checks the configuration without starting anything: every problem is
          named (key and source, never the value) and the exit code is 2. A *_ref key that
          reads a secret from the environment gets a warning on stderr. With --secrets every
          reference is resolved too, and one line per key says "secret <key>: ok" or
          "secret <key>: <error code>" (exit code 1 when one fails).
  print   prints the effective value of every key with its source (default, file, env,
          flag) as a configuration file. References are printed as references: no secret is
          resolved or shown.

Exit codes: 0 ok, 1 a secret could not be resolved (check --secrets), 2 usage or
configuration error.`

func (c *cli) config(ctx context.Context, args []string) int {
	f, sub, args := c.newSubFlags("config", configHelp, args, "check", "print")
	var cf configFlags
	cf.register(f)
	cf.dataDir(f)
	secrets := false
	if sub == "check" {
		f.BoolVar(&secrets, "secrets", false, "also resolve every *_ref reference")
	}
	if code, done := f.parse(args); done {
		return code
	}
	cfg, code, ok := cf.load(c)
	if !ok {
		return code
	}
	if sub == "print" {
		if err := cfg.WriteYAML(c.stdout); err != nil {
			fmt.Fprintf(c.stderr, "bothy: config print: %v\n", err)
			return ExitFailure
		}
		return ExitOK
	}

	for _, s := range cfg.RefKeys() {
		if strings.HasPrefix(s.Value, "env:") {
			fmt.Fprintf(c.stderr, "bothy: warning: %s reads its secret from the environment, which child processes inherit; prefer file:\n", s.Key)
		}
	}
	code = ExitOK
	if secrets {
		for _, s := range cfg.RefKeys() {
			_, err := config.ResolveRef(s.Value)
			var re *config.RefError
			switch {
			case err == nil:
				fmt.Fprintf(c.stdout, "secret %s: ok\n", s.Key)
			case errors.As(err, &re):
				fmt.Fprintf(c.stdout, "secret %s: %s\n", s.Key, re.Code)
				code = ExitFailure
			default:
				fmt.Fprintf(c.stdout, "secret %s: error\n", s.Key)
				code = ExitFailure
			}
		}
	}
	if code == ExitOK {
		fmt.Fprintln(c.stdout, "configuration ok")
	}
	return code
}
