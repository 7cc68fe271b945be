package main

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The rules of the rooms (see docs/architecture.md, What each room may import), held by the import graph.

type pkgInfo struct {
	ImportPath string
	Name       string
	Imports    []string
}

func listPackages(t *testing.T) []pkgInfo {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Name,Imports", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []pkgInfo
	for dec.More() {
		var p pkgInfo
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

const module = "bothy.dev/bothy"

func isThirdParty(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return strings.Contains(first, ".") && !strings.HasPrefix(imp, module)
}

func TestDomainImportsNoAdapters(t *testing.T) {
	forbidden := []string{"net/http", "database/sql", module + "/storage", module + "/appliance", module + "/migrate", module + "/ui"}
	for _, p := range listPackages(t) {
		if !strings.HasPrefix(p.ImportPath, module+"/app/") {
			continue
		}
		for _, imp := range p.Imports {
			for _, f := range forbidden {
				if imp == f || strings.HasPrefix(imp, f+"/") {
					t.Errorf("%s imports %s: the domain must not know adapters", p.ImportPath, imp)
				}
			}
			if isThirdParty(imp) {
				t.Errorf("%s imports third-party %s", p.ImportPath, imp)
			}
			if p.ImportPath == module+"/app/kernel" && strings.HasPrefix(imp, module) {
				t.Errorf("kernel imports %s: it depends on nothing of the project", imp)
			}
		}
	}
}

// Each third-party library lives in one place, so that replacing it touches one package. bench/ may import what it compares.
func TestThirdPartyLibrariesLiveInOnePlace(t *testing.T) {
	home := map[string][]string{
		"modernc.org/sqlite":   {module + "/storage/sqlite"},
		"go.yaml.in/yaml/v3":   {module + "/appliance/config"},
		"golang.org/x/crypto/": {module + "/appliance/passwords"},
		// The gateway's transport in the server; the Go client for bot developers is a program
		// of its own and speaks WebSocket with the same library.
		"github.com/coder/websocket": {module + "/appliance/wstransport", module + "/client"},
		// The job queue: its table, the enqueue in a Unit of Work and the runner. goqite's own
		// jobs runner (maragu.dev/goqite/jobs) is not used: it panics on an unknown name and
		// has no backoff.
		"maragu.dev/goqite": {module + "/storage/jobs"},
	}
	for _, p := range listPackages(t) {
		if strings.HasPrefix(p.ImportPath, module+"/bench") || strings.HasPrefix(p.ImportPath, module+"/tests") {
			continue
		}
		for _, imp := range p.Imports {
			for lib, where := range home {
				if (imp == lib || strings.HasPrefix(imp, strings.TrimSuffix(lib, "/")+"/")) && !slices.Contains(where, p.ImportPath) {
					t.Errorf("%s imports %s, which lives only in %s", p.ImportPath, imp, strings.Join(where, " and "))
				}
			}
		}
	}
}

// A package name says what the package is, once: none is named like a standard-library package
// (a reader would take app/sync for the standard one, and every importer would rename it), and
// no two packages of the tree share a name (an importer of both would rename one).
func TestPackageNamesAreOwnAndDistinct(t *testing.T) {
	out, err := exec.Command("go", "list", "std").Output()
	if err != nil {
		t.Fatalf("go list std: %v", err)
	}
	std := map[string]string{}
	for _, path := range strings.Fields(string(out)) {
		if strings.Contains(path, "internal") || strings.HasPrefix(path, "vendor/") {
			continue
		}
		std[path[strings.LastIndex(path, "/")+1:]] = path
	}
	seen := map[string]string{}
	for _, p := range listPackages(t) {
		if p.Name == "main" {
			continue
		}
		if path, ok := std[p.Name]; ok {
			t.Errorf("%s is named %s, like the standard library's %s", p.ImportPath, p.Name, path)
		}
		if other, ok := seen[p.Name]; ok {
			t.Errorf("%s and %s are both named %s", other, p.ImportPath, p.Name)
		}
		seen[p.Name] = p.ImportPath
	}
}
