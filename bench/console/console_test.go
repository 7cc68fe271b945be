package consolebench

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// fakeConsole stands in for bothy's console (httptest, no bothy built): a sign-in form with a
// CSRF token checked against its cookie, a session cookie, pages that need it, and a stylesheet
// and a script served gzipped to a client that accepts it. bench/run measures the real one.
func fakeConsole(t *testing.T, page string) *httptest.Server {
	t.Helper()
	css := strings.Repeat("body { color: black; }\n", 200)
	js := strings.Repeat("console.log('bothy');\n", 100)
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.Bytes()
	}
	signedIn := func(r *http.Request) bool {
		c, err := r.Cookie("session")
		return err == nil && c.Value == "s1"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /console/signin", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "csrf", Value: "tok", Path: "/console/"})
		w.Write([]byte(`<form><input type="hidden" name="csrf_token" value="tok"/></form>`))
	})
	mux.HandleFunc("POST /console/signin", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("csrf")
		if err != nil || c.Value != r.PostFormValue("csrf_token") {
			http.Error(w, "csrf", http.StatusForbidden)
			return
		}
		if r.PostFormValue("handle") != "owner" || r.PostFormValue("password") != "pw" {
			http.Error(w, "wrong", http.StatusUnauthorized)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "s1", Path: "/"})
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
	})
	serve := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if !signedIn(r) {
				http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
				return
			}
			w.Write([]byte(body))
		}
	}
	mux.HandleFunc("GET /console/{$}", serve(page))
	mux.HandleFunc("GET /console/people", serve("<p>people</p>"))
	asset := func(body, ctype string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				w.Header().Set("Content-Encoding", "gzip")
				w.Write(gz(body))
				return
			}
			w.Write([]byte(body))
		}
	}
	mux.HandleFunc("GET /assets/console.1.css", asset(css, "text/css"))
	mux.HandleFunc("GET /assets/console.2.js", asset(js, "text/javascript"))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

const chatPage = `<!DOCTYPE html><html><head><link rel="stylesheet" href="/assets/console.1.css"/>` +
	`<link rel="icon" href="/assets/icon.png"/><script src="/assets/console.2.js" defer></script></head>` +
	`<body><img src="/assets/big.png"/><p>hello</p></body></html>`

func TestSignIn(t *testing.T) {
	srv := fakeConsole(t, chatPage)
	ctx := context.Background()
	if err := NewVisitor(srv.URL).SignIn(ctx, "owner", "wrong"); err == nil {
		t.Fatal("a wrong password signed in")
	}
	if err := NewVisitor(srv.URL).SignIn(ctx, "owner", "pw"); err != nil {
		t.Fatal(err)
	}
}

func TestMeasureRender(t *testing.T) {
	srv := fakeConsole(t, chatPage)
	ctx := context.Background()
	v := NewVisitor(srv.URL)
	if _, err := v.MeasureRender(ctx, []Page{{"overview", "/console/"}}, 1, 5); err == nil {
		t.Fatal("a signed-out visitor measured a page: a redirect must be an error")
	}
	if err := v.SignIn(ctx, "owner", "pw"); err != nil {
		t.Fatal(err)
	}
	rs, err := v.MeasureRender(ctx, []Page{{"overview", "/console/"}, {"people", "/console/people"}}, 2, 30)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Latencies.N != 30 || rs[1].Latencies.N != 30 || rs[0].Bytes != len(chatPage) {
		t.Fatalf("renders %+v", rs)
	}
	for _, r := range rs {
		if r.Latencies.P50 <= 0 || r.Latencies.P99 < r.Latencies.P50 || r.Latencies.Max < r.Latencies.P99 {
			t.Fatalf("latencies of %s: %+v", r.Page.Name, r.Latencies)
		}
	}
	if w := Worst(rs); w.Latencies.P99 < rs[0].Latencies.P99 || w.Latencies.P99 < rs[1].Latencies.P99 {
		t.Fatalf("worst %+v of %+v", w, rs)
	}
	if _, err := v.MeasureRender(ctx, []Page{{"missing", "/console/nothing"}}, 0, 1); err == nil {
		t.Fatal("a 404 page was measured")
	}
}

func TestMeasureFirstLoad(t *testing.T) {
	srv := fakeConsole(t, chatPage)
	ctx := context.Background()
	v := NewVisitor(srv.URL)
	if err := v.SignIn(ctx, "owner", "pw"); err != nil {
		t.Fatal(err)
	}
	l, err := v.MeasureFirstLoad(ctx, "/console/")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.Files, []string{"/assets/console.1.css", "/assets/console.2.js"}) {
		t.Fatalf("files %q: the icon and the image are not part of it", l.Files)
	}
	decoded := int64(len(chatPage) + 200*len("body { color: black; }\n") + 100*len("console.log('bothy');\n"))
	if l.Decoded != decoded {
		t.Fatalf("decoded %d, want %d", l.Decoded, decoded)
	}
	// Transferred: the page with its headers, and the two files gzipped (far smaller than
	// decoded) with theirs.
	if l.HTML <= int64(len(chatPage)) || l.CSS <= 0 || l.JS <= 0 || l.CSS > 1000 || l.Total() != l.HTML+l.CSS+l.JS || l.Total() >= decoded {
		t.Fatalf("load %+v (decoded %d)", l, decoded)
	}

	other := fakeConsole(t, `<script src="https://cdn.example/x.js"></script>`)
	v = NewVisitor(other.URL)
	if err := v.SignIn(ctx, "owner", "pw"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.MeasureFirstLoad(ctx, "/console/"); err == nil {
		t.Fatal("a script of another origin was not refused")
	}
}

func TestLinked(t *testing.T) {
	css, js := Linked([]byte(`<link href="/a.css" rel="stylesheet"><link rel=stylesheet href=/b.css>` +
		`<link rel="preload" href="/c.woff2"><script src="/x.js" defer></script><script>inline()</script>`))
	if !slices.Equal(css, []string{"/a.css", "/b.css"}) || !slices.Equal(js, []string{"/x.js"}) {
		t.Fatalf("css %q js %q", css, js)
	}
}
