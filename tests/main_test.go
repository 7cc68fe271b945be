package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	return m.Run()
}
