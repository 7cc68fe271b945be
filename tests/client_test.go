package tests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// httpClient is shared by all clients; keep-alive connections make the crash test's load real.
var httpClient = &http.Client{
	Timeout: 15 * time.Second,
	Transport: &http.Transport{
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
	},
}

// client talks to one server as one principal (or as nobody, with an empty token).
type client struct {
	srv   *server
	token string
}

// as returns a client of srv that sends token as its bearer token.
func as(srv *server, token string) *client { return &client{srv: srv, token: token} }

// response is one answer, read whole.
type response struct {
	method, path string
	status       int
	header       http.Header
	raw          []byte
	// body is the decoded JSON answer (nil when there is none or it is not JSON).
	body any
}

// obj is the body as a JSON object.
func (r *response) obj() map[string]any {
	m, _ := r.body.(map[string]any)
	return m
}

func (r *response) String() string {
	return fmt.Sprintf("%s %s → %d %s", r.method, r.path, r.status, truncate(string(r.raw), 600))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// reqOption shapes one request.
type reqOption func(*request)

type request struct {
	header  http.Header
	raw     []byte
	hasRaw  bool
	invalid bool
	chunked bool
}

// chunked sends the body without a Content-Length.
func chunked() reqOption { return func(r *request) { r.chunked = true } }

// header adds a request header.
func header(k, v string) reqOption { return func(r *request) { r.header.Set(k, v) } }

// rawBody sends b as the body instead of encoding one; the content type stays application/json
// unless set with header.
func rawBody(b []byte) reqOption { return func(r *request) { r.raw, r.hasRaw = b, true } }

// breaksDocument says the request breaks the OpenAPI document on purpose (a wrong type, a
// missing token, an unknown path): only the answer is checked against it.
func breaksDocument() reqOption { return func(r *request) { r.invalid = true } }

// do sends one request and checks the request and the answer against the document; a
// transport error fails the test at once.
func (c *client) do(tb testing.TB, method, path string, body any, opts ...reqOption) *response {
	tb.Helper()
	r, err := c.try(tb, method, path, body, opts...)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// try is do that returns transport errors (the crash test expects them) instead of failing.
func (c *client) try(tb testing.TB, method, path string, body any, opts ...reqOption) (*response, error) {
	tb.Helper()
	rq := &request{header: http.Header{}}
	for _, o := range opts {
		o(rq)
	}
	payload := rq.raw
	if !rq.hasRaw && body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			tb.Fatalf("encode the body of %s %s: %v", method, path, err)
		}
		payload = b
	}
	req, err := http.NewRequest(method, c.srv.public+path, bytes.NewReader(payload))
	if err != nil {
		tb.Fatalf("new request %s %s: %v", method, path, err)
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if rq.chunked {
		req.ContentLength = -1
		req.Body = io.NopCloser(bytes.NewReader(payload))
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, vs := range rq.header {
		req.Header[k] = vs
	}

	in, routeErr := documented(req)
	if in != nil && !rq.invalid {
		if err := checkRequest(in, payload); err != nil {
			tb.Errorf("the request %s %s does not match the OpenAPI document: %v", method, path, err)
		}
	}
	if routeErr != nil && !rq.invalid {
		tb.Errorf("the document has no operation for %s %s (%v); mark a request that is unknown on purpose with breaksDocument()", method, path, routeErr)
	}

	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the answer: %w", err)
	}
	out := &response{method: method, path: path, status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 {
		out.body, _ = decodeAny(raw)
	}

	if resp.Header.Get("Correlation-Id") == "" {
		tb.Errorf("%s: no Correlation-Id header", out)
	}
	if resp.StatusCode == http.StatusNoContent && len(raw) != 0 {
		tb.Errorf("%s: a 204 answer with a body", out)
	}
	if resp.StatusCode >= 400 {
		if err := checkProblem(resp.StatusCode, resp.Header, raw); err != nil {
			tb.Errorf("%s: %v", out, err)
		}
	}
	if in != nil {
		noteExercised(in, resp.StatusCode)
		if err := checkResponse(in, resp.StatusCode, resp.Header, raw); err != nil {
			tb.Errorf("the answer %s does not match the OpenAPI document: %v", out, err)
		}
	}
	return out, nil
}

// decodeAny decodes a JSON document whose numbers stay numbers the schema checker accepts.
func decodeAny(b []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the body is not JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("the body holds more than one JSON value")
	}
	return v, nil
}

// decode decodes the answer into v.
func (r *response) decode(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.raw, v); err != nil {
		tb.Fatalf("%s: decode into %T: %v", r, v, err)
	}
}

// want fails the test unless the answer has status.
func (r *response) want(tb testing.TB, status int) *response {
	tb.Helper()
	if r.status != status {
		tb.Fatalf("%s: status %d, want %d", r, r.status, status)
	}
	return r
}

// code is the problem code of an error answer.
func (r *response) code() string {
	s, _ := r.obj()["code"].(string)
	return s
}

// api builds a path under /api/v1 from its parts.
func api(parts ...string) string { return "/api/v1/" + strings.Join(parts, "/") }
