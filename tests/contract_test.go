package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// The OpenAPI document every request and answer is checked against.
var (
	apiDoc    *openapi3.T
	apiRouter routers.Router
	docBytes  []byte
)

func loadDocument(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(b)
	if err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return fmt.Errorf("validate: %w", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return fmt.Errorf("the document is OpenAPI %s, not 3.1", doc.OpenAPI)
	}
	// The document's server is "/", the instance that serves it; the router matches the paths
	// of every test's instance, whatever its port.
	routed := *doc
	routed.Servers = nil
	r, err := legacy.NewRouter(&routed)
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	apiDoc, apiRouter, docBytes = doc, r, b
	return nil
}

// filterOptions checks bearer authentication by the header's presence only (the server decides
// whether the token is good), and refuses answers with a status the document does not list.
var filterOptions = &openapi3filter.Options{
	IncludeResponseStatus: true,
	MultiError:            true,
	AuthenticationFunc: func(_ context.Context, in *openapi3filter.AuthenticationInput) error {
		if in.SecurityScheme == nil || in.SecurityScheme.Type != "http" || !strings.EqualFold(in.SecurityScheme.Scheme, "bearer") {
			return fmt.Errorf("unknown security scheme %q", in.SecuritySchemeName)
		}
		h := in.RequestValidationInput.Request.Header.Get("Authorization")
		if !strings.HasPrefix(h, "Bearer ") || len(h) == len("Bearer ") {
			return errors.New("no bearer token")
		}
		return nil
	},
}

// documented finds the operation of req in the document; nil when the document has none (an
// unknown path or method).
func documented(req *http.Request) (*openapi3filter.RequestValidationInput, error) {
	route, params, err := apiRouter.FindRoute(req)
	if err != nil {
		return nil, err
	}
	return &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: filterOptions}, nil
}

// exercised records the operations whose success answer some test has seen, so that the whole
// suite can fail when an operation of the document is never tried.
var exercised = struct {
	sync.Mutex
	ops map[string]bool
}{ops: map[string]bool{}}

func noteExercised(in *openapi3filter.RequestValidationInput, status int) {
	if status >= 300 {
		return
	}
	exercised.Lock()
	exercised.ops[in.Route.Method+" "+in.Route.Path] = true
	exercised.Unlock()
}

// unexercised lists the operations of the document that no test saw succeed.
func unexercised() []string {
	exercised.Lock()
	defer exercised.Unlock()
	var out []string
	for path, item := range apiDoc.Paths.Map() {
		for method := range item.Operations() {
			if !exercised.ops[method+" "+path] {
				out = append(out, method+" "+path)
			}
		}
	}
	sort.Strings(out)
	return out
}

// checkRequest validates req, whose body is body, against its operation.
func checkRequest(in *openapi3filter.RequestValidationInput, body []byte) error {
	r := in.Request.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(body))
	cp := *in
	cp.Request = r
	return shortErr(openapi3filter.ValidateRequest(context.Background(), &cp))
}

// checkResponse validates one answer against the operation of its request.
func checkResponse(in *openapi3filter.RequestValidationInput, status int, header http.Header, body []byte) error {
	return shortErr(openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                filterOptions,
	}))
}

// shortErr drops the schema and value dumps of the validator's messages: the test prints the
// answer itself, and the reason with its JSON pointer is what a reader needs.
func shortErr(err error) error {
	if err == nil {
		return nil
	}
	var keep []string
	skipping := false
	for _, line := range strings.Split(err.Error(), "\n") {
		switch t := strings.TrimSpace(line); {
		case t == "Schema:" || t == "Value:":
			skipping = true
			continue
		case skipping && (line == "" || line[0] == ' ' || line[0] == '\t'):
			continue
		}
		skipping = false
		if strings.TrimSpace(line) != "" {
			keep = append(keep, strings.TrimSpace(line))
		}
	}
	return errors.New(strings.Join(keep, " | "))
}

// checkProblem validates an answer that no operation documents (unknown path, wrong method):
// it must still be a problem document with its correlation id.
func checkProblem(status int, header http.Header, body []byte) error {
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		return fmt.Errorf("content type %q, want application/problem+json", ct)
	}
	v, err := decodeAny(body)
	if err != nil {
		return err
	}
	ref := apiDoc.Components.Schemas["Problem"]
	if err := ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("not a Problem: %w", err)
	}
	if got := v.(map[string]any)["status"]; fmt.Sprint(got) != fmt.Sprint(status) {
		return fmt.Errorf("problem status %v, HTTP status %d", got, status)
	}
	return nil
}

// TestOpenAPIDocumentSuitsGenerators holds what client generators need of the document and the
// server's own tests do not: one name per component across its kinds (a generator makes a Go
// type of each, so a header parameter and a schema of the same name cannot both be, unless the
// parameter is of that very schema: the two types are one), and a server to send the requests
// to.
func TestOpenAPIDocumentSuitsGenerators(t *testing.T) {
	t.Run("no two components of different kinds share a name", func(t *testing.T) {
		c := apiDoc.Components
		kinds := map[string][]string{}
		add := func(kind string, names []string) {
			for _, n := range names {
				if p := c.Parameters[n]; kind == "parameter" && p != nil && p.Value.Schema != nil &&
					p.Value.Schema.Ref == "#/components/schemas/"+n {
					continue
				}
				kinds[n] = append(kinds[n], kind)
			}
		}
		add("schema", keysOf(c.Schemas))
		add("parameter", keysOf(c.Parameters))
		add("response", keysOf(c.Responses))
		add("request body", keysOf(c.RequestBodies))
		for name, ks := range kinds {
			if len(ks) > 1 {
				t.Errorf("%s names a %s", name, strings.Join(ks, " and a "))
			}
		}
	})
	t.Run("its server is the instance that serves it", func(t *testing.T) {
		if len(apiDoc.Servers) != 1 || apiDoc.Servers[0].URL != "/" {
			t.Errorf("servers %v, want the one relative URL /", apiDoc.Servers)
		}
	})
}

func keysOf[M ~map[string]V, V any](m M) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
