package appliance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
)

const setupHelp = `bothy setup bootstrap-owner --handle HANDLE --password-file FILE|- [--display-name NAME] [flags]

Creates the first owner of the instance without the setup link (system action
instance.bootstrap). The password is read from FILE, or from standard input with -; one
trailing newline is removed. The display name defaults to the handle. On success the new
owner's id is printed alone on stdout.

Exit codes: 0 created, 1 failure, 2 usage or configuration error (also a handle, name or
password the instance does not accept), 3 the setup is already complete.`

// maxPasswordInput bounds what is read as a password; identity checks the real limit.
const maxPasswordInput = 4096

func (c *cli) setup(ctx context.Context, args []string) int {
	f, _, args := c.newSubFlags("setup", setupHelp, args, "bootstrap-owner")
	var cf configFlags
	cf.register(f)
	cf.dataDir(f)
	handle := f.String("handle", "", "`handle` of the owner (required)")
	displayName := f.String("display-name", "", "display `name` of the owner (default: the handle)")
	passwordFile := f.String("password-file", "", "`file` holding the password, or - for standard input (required)")
	if code, done := f.parse(args); done {
		return code
	}
	if *handle == "" {
		return f.usageError("--handle is required")
	}
	if *passwordFile == "" {
		return f.usageError("--password-file is required (- reads standard input)")
	}
	if *displayName == "" {
		*displayName = *handle
	}
	password, err := c.readPassword(*passwordFile)
	if err != nil {
		return f.usageError("%v", err)
	}
	cfg, code, ok := cf.load(c)
	if !ok {
		return code
	}
	logger := NewLogger(cfg.Log, c.stderr)

	app, err := New(ctx, cfg, logger, c.stdout)
	if err != nil {
		logger.Error("start failed", "err", err)
		return codeOf(err)
	}
	defer app.Close()
	if app.Identity == nil {
		logger.Error("setup bootstrap-owner: the identity module is not wired")
		return ExitFailure
	}
	u, err := app.Identity.BootstrapOwner(ctx, *handle, *displayName, password)
	switch {
	case kernel.IsCode(err, identity.CodeSetupComplete):
		fmt.Fprintln(c.stderr, "bothy setup bootstrap-owner: the setup is already complete")
		return ExitSetupComplete
	case kernel.IsCode(err, kernel.CodeValidation):
		var ke *kernel.Error
		errors.As(err, &ke)
		return f.usageError("%s", ke.Message)
	case err != nil:
		logger.Error("setup bootstrap-owner failed", "err", err)
		return ExitFailure
	}
	logger.Info("owner created", "id", u.ID.String(), "handle", u.Handle)
	fmt.Fprintln(c.stdout, u.ID)
	return ExitOK
}

// readPassword reads the password from path, or from standard input for "-". Its errors never
// contain the password.
func (c *cli) readPassword(path string) (string, error) {
	var r io.Reader
	if path == "-" {
		r = c.stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("--password-file: cannot read %s", path)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxPasswordInput+1))
	if err != nil {
		return "", errors.New("--password-file: cannot read the password")
	}
	if len(b) > maxPasswordInput {
		return "", errors.New("--password-file: the password is too long")
	}
	p := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if p == "" {
		return "", errors.New("--password-file: the password is empty")
	}
	return p, nil
}
