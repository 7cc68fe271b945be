package httpapi

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every error code a module declares (kernel.NewCode in app/) is named in the document's list
// of stable codes (Problem.code), so a client learns of each from the contract rather than from
// a failure.
func TestErrorCodesDocumented(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Description string `json:"description"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	desc := doc.Components.Schemas["Problem"].Properties["code"].Description
	for _, c := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(desc, "Stable error code: "), "."), ",") {
		listed[strings.TrimSpace(c)] = true
	}
	declared := regexp.MustCompile(`kernel\.NewCode\("([a-z0-9_]+)"|NewCode\("([a-z0-9_]+)"`)
	found := 0
	err := filepath.WalkDir("../../app", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range declared.FindAllStringSubmatch(string(b), -1) {
			code := m[1] + m[2]
			found++
			if !listed[code] {
				t.Errorf("%s declares the code %s, which the document's Problem.code does not list", p, code)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 20 {
		t.Fatalf("found %d declared codes: the scan misses the modules", found)
	}
}
