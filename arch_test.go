package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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
		"go.yaml.in/yaml/v3":   {module + "/appliance/config", module + "/agents/llm"},
		"golang.org/x/crypto/": {module + "/appliance/passwords"},
		// Images without cgo: WebP decoding and the scalers of thumbnails.
		"golang.org/x/image/": {module + "/appliance/imaging"},
		// The gateway's transport in the server; the Go client for bot developers is a program
		// of its own and speaks WebSocket with the same library.
		"github.com/coder/websocket": {module + "/appliance/wstransport", module + "/client"},
		// The job queue: its table, the enqueue in a Unit of Work and the runner. goqite's own
		// jobs runner (maragu.dev/goqite/jobs) is not used: it panics on an unknown name and
		// has no backoff.
		"maragu.dev/goqite": {module + "/storage/jobs"},
		// The Model Context Protocol: the server's endpoint for outside agents, and the client side of
		// the model agent, which calls the tools of MCP servers.
		"github.com/modelcontextprotocol/go-sdk": {module + "/appliance/mcpserver", module + "/agents/llm"},
		// The blob store on an S3 bucket (its tests run it against gofakes3, in process).
		"github.com/minio/minio-go/v7": {module + "/storage/blobs"},
		// Traces and metrics: the OpenTelemetry SDK, its OTLP exporters and the Prometheus client
		// behind /metrics. The packages that do the work declare small hooks of their own, which
		// this package implements, so that none of them depends on the SDK.
		"go.opentelemetry.io/otel":             {module + "/appliance/telemetry"},
		"github.com/prometheus/client_golang/": {module + "/appliance/telemetry"},
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

// The client and the agents built on it (agents/) are what a bot developer could write outside
// the project: they speak the public API (REST, the gateway) and import none of the server's
// packages, only the client and one another.
func TestClientAndAgentsUseOnlyThePublicAPI(t *testing.T) {
	found := false
	for _, p := range listPackages(t) {
		isClient := p.ImportPath == module+"/client"
		if !isClient && !strings.HasPrefix(p.ImportPath, module+"/agents/") {
			continue
		}
		found = found || !isClient
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if isClient || (imp != module+"/client" && !strings.HasPrefix(imp, module+"/agents/")) {
				t.Errorf("%s imports %s: it speaks the public API, not the server's packages", p.ImportPath, imp)
			}
		}
	}
	if !found {
		t.Fatal("no package under agents/")
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

// The write path, storage/commit, is the group-commit writer and its Unit of Work: one algorithm
// for both engines, which writes the event log and its counter and knows no table of the domain.
// A write at commit that a repository needs (a thread's message count) is the repository's,
// declared with its SQL next to the repository's other statements (commit.AtCommit).
func TestTheWritePathImportsOnlyTheKernel(t *testing.T) {
	allowed := []string{module + "/app/kernel", module + "/storage/engine"}
	found := false
	for _, p := range listPackages(t) {
		if p.ImportPath != module+"/storage/commit" {
			continue
		}
		found = true
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module+"/") && !slices.Contains(allowed, imp) {
				t.Errorf("storage/commit imports %s: the write path knows the kernel and no module or repository", imp)
			}
		}
	}
	if !found {
		t.Fatal("no package storage/commit")
	}
}

// writeAlgorithm is the writer's algorithm, the same on both engines: what differs is behind the
// write connection an engine drives (storage/commit/conn*.go), chosen once at start, so no branch
// on the engine is left in it.
var writeAlgorithm = []string{"storage/commit/commit.go", "storage/commit/unit.go", "storage/commit/atcommit.go"}

func TestTheWritePathKnowsNoEngineAndNoDomainTable(t *testing.T) {
	tables := domainTables(t)
	if len(tables) == 0 {
		t.Fatal("found no table in migrate/sqlite")
	}
	domainSQL := regexp.MustCompile(`(?i)\b(` + strings.Join(tables, "|") + `)\b`)
	files, err := filepath.Glob("storage/commit/*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if v, err := strconv.Unquote(lit.Value); err == nil {
				if m := domainSQL.FindString(v); m != "" {
					t.Errorf("%s holds SQL on the domain table %s: %q", file, m, v)
				}
			}
			return true
		})
	}
	for _, file := range writeAlgorithm {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == module+"/storage/engine" {
				t.Errorf("%s imports %s: the engine's part belongs to its write connection", file, path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if n.Sel.Name == "Name" && strings.HasSuffix(strings.ToLower(exprString(n.X)), "dialect") {
					t.Errorf("%s asks the dialect its engine's name (%s.Name): the engine's part belongs to its write connection", file, exprString(n.X))
				}
			case *ast.BasicLit:
				if v, _ := strconv.Unquote(n.Value); n.Kind == token.STRING && (v == "sqlite" || v == "postgres") {
					t.Errorf("%s names the engine %s", file, v)
				}
			}
			return true
		})
	}
}

// domainTables are the tables the migrations create, but the event log's own two.
func domainTables(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("migrate/sqlite/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	create := regexp.MustCompile(`(?i)CREATE TABLE (?:IF NOT EXISTS )?([a-z_]+)`)
	var out []string
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range create.FindAllStringSubmatch(string(b), -1) {
			if name := strings.ToLower(m[1]); name != "event_log" && name != "sequence_counters" && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	}
	return ""
}

// moduleRank is the order of the modules of app/ (see docs/architecture.md, The modules of app/
// and their order): a module imports only modules of a lower rank. authz decides every module's
// actions and follows their events; the gateway, on top, delivers them.
var moduleRank = map[string]int{
	"kernel":   0,
	"instance": 1, "identity": 1, "chat": 1, "stats": 1, "catchup": 1, "push": 1, "files": 1,
	"agents": 2, "messaging": 2, "dms": 2,
	"runs": 3, "inbox": 3, "notify": 3, "search": 3,
	"authz":   4,
	"gateway": 5,
}

func TestModulesImportOnlyModulesBelowThem(t *testing.T) {
	moduleOf := func(path string) (string, bool) {
		rest, ok := strings.CutPrefix(path, module+"/app/")
		if !ok {
			return "", false
		}
		name, _, _ := strings.Cut(rest, "/")
		return name, true
	}
	for _, p := range listPackages(t) {
		from, ok := moduleOf(p.ImportPath)
		if !ok {
			continue
		}
		rank, known := moduleRank[from]
		if !known {
			t.Errorf("app/%s has no place in moduleRank: give the new module its rank", from)
			continue
		}
		for _, imp := range p.Imports {
			to, ok := moduleOf(imp)
			if !ok || to == from {
				continue
			}
			if moduleRank[to] >= rank {
				t.Errorf("%s imports %s: a module imports only modules below it (%s is rank %d, %s rank %d)",
					p.ImportPath, imp, from, rank, to, moduleRank[to])
			}
		}
	}
}
