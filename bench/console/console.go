// Package consolebench measures the web console of a running bothy from outside, as a browser
// sees it: how long its pages take to render on the server (sequential GETs of each page by a
// signed-in owner, timed at the client from the request to the last byte of the page, on an
// instance holding many messages), and how many bytes the first load of a page transfers (the
// HTML and every stylesheet and script it links, as served to a browser that accepts gzip).
//
// It talks to the server only over HTTP, with a cookie jar, signing in through the console's own
// form, from its own process (bothybench; the server is a `bothy serve` started by bench/serve).
// It must not import the appliance. A page answered otherwise than 200, and a linked file
// answered otherwise than 200, are errors, never figures.
package consolebench

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	httpbench "bothy.dev/bothy/bench/http"
	"bothy.dev/bothy/bench/internal/measure"
)

// Visitor is one browser of the console: a cookie jar (the session, the CSRF cookie), keep-alive
// connections, no redirect followed (a page must answer by itself).
type Visitor struct {
	base string
	hc   *http.Client
}

// NewVisitor is a signed-out visitor of the console at base.
func NewVisitor(base string) *Visitor {
	jar, _ := cookiejar.New(nil)
	return &Visitor{base: base, hc: &http.Client{
		Jar:           jar,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute,
			// The transfer sizes are of the bytes on the wire: nothing is decoded behind our back.
			DisableCompression: true},
	}}
}

var csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// SignIn signs the visitor in through the console's sign-in form (GET the form for its CSRF
// token, POST it) and checks that the console's start page then answers 200.
func (v *Visitor) SignIn(ctx context.Context, handle, password string) error {
	page, err := v.get(ctx, "/console/signin", false)
	if err != nil {
		return err
	}
	if page.status != http.StatusOK {
		return fmt.Errorf("GET /console/signin: %d %s", page.status, httpbench.Snippet(page.body))
	}
	m := csrfField.FindSubmatch(page.body)
	if m == nil {
		return fmt.Errorf("GET /console/signin: no csrf_token field: %s", httpbench.Snippet(page.body))
	}
	form := url.Values{"csrf_token": {string(m[1])}, "handle": {handle}, "password": {password}, "next": {"/console/"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.base+"/console/signin", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := v.hc.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return fmt.Errorf("POST /console/signin: %d, want 303: %s", resp.StatusCode, httpbench.Snippet(body))
	}
	page, err = v.get(ctx, "/console/", false)
	if err != nil {
		return err
	}
	if page.status != http.StatusOK {
		return fmt.Errorf("GET /console/ after signing in: %d %s", page.status, httpbench.Snippet(page.body))
	}
	return nil
}

// answer is one response, its body decoded, and what it cost on the wire.
type answer struct {
	status int
	header http.Header
	body   []byte // decoded
	// wire is the bytes of the response as transferred: status line, headers and the body as
	// sent (compressed when the server compressed it).
	wire int64
	// encoded is the body as sent.
	encoded int64
}

// get fetches path; gzip sends Accept-Encoding: gzip, deflate, br as a browser does (the server
// picks what it serves), and the body is decoded here.
func (v *Visitor) get(ctx context.Context, path string, gz bool) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.base+path, nil)
	if err != nil {
		return answer{}, err
	}
	if gz {
		req.Header.Set("Accept-Encoding", "gzip, deflate, br, zstd")
	}
	resp, err := v.hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, fmt.Errorf("GET %s: %w", path, err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: raw, encoded: int64(len(raw))}
	var head bytes.Buffer
	fmt.Fprintf(&head, "HTTP/1.1 %s\r\n", resp.Status)
	resp.Header.Write(&head)
	head.WriteString("\r\n")
	a.wire = int64(head.Len()) + a.encoded
	switch enc := resp.Header.Get("Content-Encoding"); enc {
	case "":
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return answer{}, fmt.Errorf("GET %s: gzip: %w", path, err)
		}
		if a.body, err = io.ReadAll(zr); err != nil {
			return answer{}, fmt.Errorf("GET %s: gzip: %w", path, err)
		}
	default:
		return answer{}, fmt.Errorf("GET %s: Content-Encoding %q, which this benchmark does not decode", path, enc)
	}
	return a, nil
}

// Page is a console page to measure: a short name for the result line and its path.
type Page struct {
	Name string
	Path string
}

// Render is the server-side render time of one page, timed at the client.
type Render struct {
	Page      Page
	Latencies measure.Latencies
	// Bytes is the size of the page's HTML (the last sample's).
	Bytes int
}

// MeasureRender GETs every page warmup times, then samples times each, round-robin over the
// pages (so that a noisy moment spreads over all of them), one request at a time on a
// keep-alive connection, and times each from the request to the last byte of the page. Every
// answer must be 200.
func (v *Visitor) MeasureRender(ctx context.Context, pages []Page, warmup, samples int) ([]Render, error) {
	if len(pages) == 0 {
		return nil, errors.New("no pages to measure")
	}
	lat := make([][]time.Duration, len(pages))
	out := make([]Render, len(pages))
	for round := 0; round < warmup+samples; round++ {
		for i, p := range pages {
			began := time.Now()
			a, err := v.get(ctx, p.Path, false)
			took := time.Since(began)
			if err != nil {
				return nil, err
			}
			if a.status != http.StatusOK {
				return nil, fmt.Errorf("GET %s (%s): %d, want 200: %s", p.Path, p.Name, a.status, httpbench.Snippet(a.body))
			}
			if round >= warmup {
				lat[i] = append(lat[i], took)
			}
			out[i].Bytes = len(a.body)
		}
	}
	for i, p := range pages {
		out[i].Page, out[i].Latencies = p, measure.Summarise(lat[i])
	}
	return out, nil
}

// Worst is the render with the highest p99.
func Worst(rs []Render) Render {
	var w Render
	for _, r := range rs {
		if r.Latencies.P99 >= w.Latencies.P99 {
			w = r
		}
	}
	return w
}

// Load is what the first load of a page transfers: its HTML and every stylesheet and script it
// links (images and fonts are not counted), each fetched once as a browser with an empty cache
// does, accepting gzip.
type Load struct {
	// HTML, CSS and JS are bytes transferred for each kind: status line, headers and body as
	// sent.
	HTML, CSS, JS int64
	// Decoded is the size of all of it decoded (bodies only).
	Decoded int64
	// Files are the linked files' paths, in the order of the page.
	Files []string
}

// Total is everything the first load transfers.
func (l Load) Total() int64 { return l.HTML + l.CSS + l.JS }

var (
	stylesheetLink = regexp.MustCompile(`<link\b[^>]*\brel="?stylesheet"?[^>]*>`)
	scriptTag      = regexp.MustCompile(`<script\b[^>]*\bsrc="?([^" >]+)"?[^>]*>`)
	hrefAttr       = regexp.MustCompile(`\bhref="?([^" >]+)"?`)
)

// Linked lists the stylesheets and scripts an HTML page links, in its order: the subresources
// a browser fetches before it can show and run the page.
func Linked(html []byte) (css, js []string) {
	for _, tag := range stylesheetLink.FindAll(html, -1) {
		if m := hrefAttr.FindSubmatch(tag); m != nil {
			css = append(css, string(m[1]))
		}
	}
	for _, m := range scriptTag.FindAllSubmatch(html, -1) {
		js = append(js, string(m[1]))
	}
	return css, js
}

// MeasureFirstLoad fetches path and every stylesheet and script it links, accepting gzip, and
// adds up what was transferred. A linked file on another origin is an error: the console loads
// nothing from elsewhere.
func (v *Visitor) MeasureFirstLoad(ctx context.Context, path string) (Load, error) {
	var l Load
	page, err := v.get(ctx, path, true)
	if err != nil {
		return l, err
	}
	if page.status != http.StatusOK {
		return l, fmt.Errorf("GET %s: %d, want 200: %s", path, page.status, httpbench.Snippet(page.body))
	}
	l.HTML, l.Decoded = page.wire, int64(len(page.body))
	css, js := Linked(page.body)
	fetch := func(ref string) (answer, error) {
		u, err := url.Parse(ref)
		if err != nil {
			return answer{}, fmt.Errorf("%s links %q: %w", path, ref, err)
		}
		if u.IsAbs() || u.Host != "" {
			return answer{}, fmt.Errorf("%s links %q on another origin", path, ref)
		}
		a, err := v.get(ctx, u.RequestURI(), true)
		if err != nil {
			return a, err
		}
		if a.status != http.StatusOK {
			return a, fmt.Errorf("GET %s (linked from %s): %d", ref, path, a.status)
		}
		l.Files = append(l.Files, ref)
		l.Decoded += int64(len(a.body))
		return a, nil
	}
	for _, ref := range css {
		a, err := fetch(ref)
		if err != nil {
			return l, err
		}
		l.CSS += a.wire
	}
	for _, ref := range js {
		a, err := fetch(ref)
		if err != nil {
			return l, err
		}
		l.JS += a.wire
	}
	return l, nil
}

// Instance is a console prepared for measuring: an owner (handle "owner", password
// httpbench.Password), people, a space with channels full of messages, and agents.
type Instance struct {
	Base string
	// Target is what httpbench.Prepare made: the people's sessions and the channels' main threads.
	Target httpbench.Target
	// Space is the space of the channels.
	Space string
	// Channels are the channels, in the order of Target.Threads.
	Channels []Channel
	// Agents are the ids of the agents.
	Agents []string
}

// Channel is one channel of the instance and its main thread, which holds an equal share of
// the messages.
type Channel struct {
	ID, MainThreadID string
}

// OwnerHandle is the owner's handle in an instance of Prepare.
const OwnerHandle = "owner"

// Prepare fills the instance that httpbench.Prepare made (its owner, people and channels) as a
// real one looks when its console is used: messages spread evenly over the channels' main
// threads (posted through the REST API), and agents with post on every channel, the first
// mentioned once in each main thread so that the chat view has run cards to show.
func Prepare(ctx context.Context, c *http.Client, t httpbench.Target, messages, agents int) (Instance, error) {
	base := t.Base
	in := Instance{Base: base, Target: t}
	if err := httpbench.Seed(ctx, c, t, messages); err != nil {
		return in, fmt.Errorf("seed %d messages: %w", messages, err)
	}
	var login struct {
		Token string `json:"token"`
	}
	if err := httpbench.Call(ctx, c, base, "", "/api/v1/auth/login", map[string]string{"handle": OwnerHandle, "password": httpbench.Password}, &login); err != nil {
		return in, err
	}
	owner := login.Token
	var spaces struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if err := httpbench.Get(ctx, c, base, owner, "/api/v1/spaces", &spaces); err != nil {
		return in, err
	}
	if len(spaces.Items) != 1 {
		return in, fmt.Errorf("GET /api/v1/spaces: %d spaces, want the 1 httpbench.Prepare made", len(spaces.Items))
	}
	in.Space = spaces.Items[0].ID
	var chans struct {
		Items []struct {
			ID           string `json:"id"`
			MainThreadID string `json:"main_thread_id"`
		} `json:"items"`
	}
	if err := httpbench.Get(ctx, c, base, owner, "/api/v1/spaces/"+in.Space+"/channels", &chans); err != nil {
		return in, err
	}
	byThread := map[string]string{}
	for _, ch := range chans.Items {
		byThread[ch.MainThreadID] = ch.ID
	}
	for _, th := range t.Threads {
		id, ok := byThread[th]
		if !ok {
			return in, fmt.Errorf("no channel has the main thread %s", th)
		}
		in.Channels = append(in.Channels, Channel{ID: id, MainThreadID: th})
	}
	for i := range agents {
		var a struct {
			ID     string `json:"id"`
			Handle string `json:"handle"`
		}
		handle := fmt.Sprintf("agent%d", i)
		if err := httpbench.Call(ctx, c, base, owner, "/api/v1/agents", map[string]string{"handle": handle,
			"display_name": "Agent " + strconv.Itoa(i), "description": "an agent of the console benchmark"}, &a); err != nil {
			return in, err
		}
		in.Agents = append(in.Agents, a.ID)
		for _, ch := range in.Channels {
			if err := httpbench.Call(ctx, c, base, owner, "/api/v1/channels/"+ch.ID+"/grants", map[string]string{"principal_id": a.ID, "level": "post"}, nil); err != nil {
				return in, err
			}
		}
	}
	if len(in.Agents) > 0 {
		// A mention makes a run (which stays queued: no agent runs here), shown as a run card.
		for i, ch := range in.Channels {
			body := map[string]string{"content": "@agent0 summarise this thread", "client_msg_id": fmt.Sprintf("mention-%d", i)}
			if err := httpbench.Call(ctx, c, base, owner, "/api/v1/threads/"+ch.MainThreadID+"/messages", body, nil); err != nil {
				return in, err
			}
		}
	}
	return in, nil
}

// Pages are the console pages the render benchmark measures on in: the owner's pages and the
// chat view of the first channel's main thread (the busiest: every main thread holds an equal
// share of the messages, and the first also the run cards).
func Pages(in Instance) []Page {
	ch := in.Channels[0]
	pages := []Page{
		{"overview", "/console/"},
		{"people", "/console/people"},
		{"spaces", "/console/spaces"},
		{"space", "/console/spaces/" + in.Space},
		{"access", "/console/channels/" + ch.ID + "/access"},
		{"agents", "/console/agents"},
		{"tokens", "/console/tokens"},
		{"settings", "/console/settings"},
		{"chat-view", ChatPath(in)},
		{"thread", "/console/threads/" + ch.MainThreadID},
	}
	if len(in.Agents) > 0 {
		pages = append(pages, Page{"agent", "/console/agents/" + in.Agents[0]})
	}
	return pages
}

// ChatPath is the chat view of in's first channel, its busy main thread: the page of the
// first-load figure.
func ChatPath(in Instance) string {
	return "/console/channels/" + in.Channels[0].ID
}
