package appliance

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"bothy.dev/bothy/appliance/config"
)

// Exit codes of every command, the same for all so that scripts can rely on them. From 3 on
// they are per command.
const (
	ExitOK      = 0
	ExitFailure = 1 // runtime failure: start failed, fatal error, shutdown overran, negative check
	ExitUsage   = 2 // invocation or configuration error
	// ExitForced is serve's code for a second signal during shutdown, and setup
	// bootstrap-owner's when setup is already complete.
	ExitForced        = 3
	ExitSetupComplete = 3
)

// Main runs the command line (args without the program name) and returns the exit code.
// Output meant for scripts goes to stdout alone; logs and errors go to stderr.
func Main(args []string, stdout, stderr io.Writer) int {
	c := &cli{
		stdin:  os.Stdin,
		stdout: stdout,
		stderr: stderr,
		env:    os.Environ(),
		signals: func() (<-chan os.Signal, func()) {
			ch := make(chan os.Signal, 2)
			signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
			return ch, func() { signal.Stop(ch) }
		},
	}
	return c.run(context.Background(), args)
}

// cli is one invocation of the command line. Tests build it with their own environment, input
// and signals.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	env            []string
	// signals subscribes to SIGTERM and SIGINT and returns a function that unsubscribes.
	signals func() (<-chan os.Signal, func())
	// onReady, if set, is called by serve once the App is ready (for tests).
	onReady func(*App)
}

type command struct {
	name    string
	summary string
	run     func(c *cli, ctx context.Context, args []string) int
}

func commands() []command {
	return []command{
		{"serve", "start the server", (*cli).serve},
		{"migrate", "apply or list database migrations (up, status)", (*cli).migrate},
		{"setup", "set up the instance (bootstrap-owner)", (*cli).setup},
		{"config", "check or print the configuration (check, print)", (*cli).config},
		{"backup", "back up, verify or restore the instance (create, verify, restore)", (*cli).backup},
		{"agent", "run a bundled agent (echo, llm)", (*cli).agent},
		{"healthcheck", "check a health endpoint of the internal listener", (*cli).healthcheck},
		{"version", "print the version", (*cli).version},
	}
}

func (c *cli) run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		c.usage(c.stderr)
		return ExitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		c.usage(c.stdout)
		return ExitOK
	}
	for _, cmd := range commands() {
		if cmd.name == args[0] {
			return cmd.run(c, ctx, args[1:])
		}
	}
	fmt.Fprintf(c.stderr, "bothy: unknown command %q\n", args[0])
	c.usage(c.stderr)
	return ExitUsage
}

func (c *cli) usage(w io.Writer) {
	fmt.Fprintln(w, "bothy: a chat hub for people and AI agents, in one file.")
	fmt.Fprintln(w, "\nUsage: bothy <command> [flags]\n\nCommands:")
	for _, cmd := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintln(w, "\nRun 'bothy <command> --help' for the flags of a command.")
	fmt.Fprintln(w, "Exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error; 3 and up per command.")
}

// flags is a flag set whose help goes to stdout (exit 0) and whose errors go to stderr (exit 2).
type flags struct {
	*flag.FlagSet
	c    *cli
	help string // what the command does, its arguments and its own exit codes
	// subs are the subcommands of a command called without one of them (newSubFlags): parse
	// refuses the call.
	subs []string
}

func (c *cli) newFlags(name, help string) *flags {
	fs := flag.NewFlagSet("bothy "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	f := &flags{FlagSet: fs, c: c, help: help}
	fs.Usage = func() {}
	return f
}

// newSubFlags is newFlags for a command whose first argument names one of subs: it takes
// that subcommand off args, and names the flag set after both. Without one of subs, parse
// refuses the call once it has the flags (so that --help still answers).
func (c *cli) newSubFlags(name, help string, args []string, subs ...string) (f *flags, sub string, rest []string) {
	if len(args) > 0 && slices.Contains(subs, args[0]) {
		return c.newFlags(name+" "+args[0], help), args[0], args[1:]
	}
	f = c.newFlags(name, help)
	f.subs = subs
	return f, "", args
}

// parse parses args, which must hold only flags. done reports that the command should return
// code at once (help or a usage error).
func (f *flags) parse(args []string) (code int, done bool) {
	err := f.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		f.printHelp(f.c.stdout)
		return ExitOK, true
	case err != nil:
		fmt.Fprintf(f.c.stderr, "Run '%s --help' for usage.\n", f.Name())
		return ExitUsage, true
	case f.subs != nil && f.NArg() > 0:
		return f.usageError("unknown subcommand %q: want %s", f.Arg(0), orList(f.subs)), true
	case f.subs != nil:
		return f.usageError("missing subcommand: %s", orList(f.subs)), true
	case f.NArg() > 0:
		return f.usageError("unexpected argument %q", f.Arg(0)), true
	}
	return 0, false
}

// orList is "a", "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

func (f *flags) printHelp(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n", strings.TrimSpace(f.help))
	fmt.Fprintln(w, "\nFlags:")
	f.VisitAll(func(fl *flag.Flag) {
		name, usage := flag.UnquoteUsage(fl)
		line := "  --" + fl.Name
		if name != "" {
			line += " " + name
		}
		if fl.DefValue != "" && fl.DefValue != "false" {
			usage += " (default " + fl.DefValue + ")"
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, usage)
	})
}

// usageError reports a wrong invocation and returns ExitUsage.
func (f *flags) usageError(format string, args ...any) int {
	fmt.Fprintf(f.c.stderr, "%s: %s\nRun '%s --help' for usage.\n", f.Name(), fmt.Sprintf(format, args...), f.Name())
	return ExitUsage
}

// configFlags are the flags of every command that reads the configuration.
type configFlags struct {
	file      string
	overrides []config.Override
}

func (cf *configFlags) register(f *flags) {
	f.StringVar(&cf.file, "config", "", "YAML configuration `file` (default: $"+config.FileEnv+")")
	f.Func("set", "set a configuration `key=value`; repeatable, wins over the file and the environment", func(s string) error {
		o, err := config.ParseSet(s)
		if err != nil {
			return err
		}
		cf.overrides = append(cf.overrides, o)
		return nil
	})
}

// named adds a flag that sets one key, in order with --set.
func (cf *configFlags) named(f *flags, name, key, usage string) {
	f.Func(name, usage+" (sets "+key+")", func(s string) error {
		cf.overrides = append(cf.overrides, config.Override{Key: key, Value: s, Flag: "--" + name})
		return nil
	})
}

// dataDir adds --data-dir, which every command that reads the configuration takes: the data
// directory is where a newcomer's instance lives, and it must be one flag away everywhere.
func (cf *configFlags) dataDir(f *flags) {
	cf.named(f, "data-dir", "server.data_dir", "data `directory`")
}

// load loads the configuration; on failure it prints every problem and returns ExitUsage.
func (cf *configFlags) load(c *cli) (config.Config, int, bool) {
	cfg, err := config.Load(config.Input{File: cf.file, Env: c.env, Flags: cf.overrides})
	if err != nil {
		printConfigError(c.stderr, err)
		return config.Config{}, ExitUsage, false
	}
	return cfg, 0, true
}

func printConfigError(w io.Writer, err error) {
	var ce *config.Error
	if errors.As(err, &ce) {
		for _, p := range ce.Problems {
			fmt.Fprintf(w, "bothy: configuration: %s\n", p.Error())
		}
		return
	}
	fmt.Fprintf(w, "bothy: configuration: %v\n", err)
}

// codeOf is the exit code err stands for: a configuration error is 2, anything else 1.
func codeOf(err error) int {
	var ce *config.Error
	if errors.As(err, &ce) {
		return ExitUsage
	}
	return ExitFailure
}

func (c *cli) version(ctx context.Context, args []string) int {
	f := c.newFlags("version", "bothy version\n\nPrints the version of the binary and of Go it was built with.")
	if code, done := f.parse(args); done {
		return code
	}
	fmt.Fprintf(c.stdout, "bothy %s %s\n", Version, runtime.Version())
	return ExitOK
}
