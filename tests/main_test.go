package tests

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binPath is the bothy binary built once by TestMain.
var binPath string

// repoRoot is the module root, one folder up from this package.
const repoRoot = ".."

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "bothy-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "tests: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binPath = filepath.Join(dir, "bothy")
	build := exec.Command("go", "build", "-o", binPath, "bothy.dev/bothy")
	build.Dir = repoRoot
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "tests: go build bothy.dev/bothy failed:", err)
		return 1
	}
	if err := loadDocument(filepath.Join(repoRoot, "appliance", "httpapi", "openapi.json")); err != nil {
		fmt.Fprintln(os.Stderr, "tests: load the OpenAPI document:", err)
		return 1
	}
	code := m.Run()
	// A full run must have seen every operation of the document succeed at least once.
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && flag.Lookup("test.skip").Value.String() == "" {
		if missing := unexercised(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "tests: no test saw these operations of the OpenAPI document succeed:\n  %s\n", strings.Join(missing, "\n  "))
			fmt.Println("FAIL: operations of the OpenAPI document not exercised")
			return 1
		}
	}
	return code
}
