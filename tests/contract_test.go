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
	r, err := legacy.NewRouter(doc)
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
