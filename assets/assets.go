// Package assets holds the console's static files (styles, scripts, icons), embedded in the
// binary: nothing is fetched from elsewhere at run time. Each file is served under a name with
// a hash of its content (console.css → console.3f2a9c1b.css) and cached for a year; a new build
// with changed content gets a new name, so a browser never keeps a stale copy. Path gives the
// hashed name the pages link to.
package assets

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var files embed.FS

// Prefix is where the assets are served.
const Prefix = "/assets/"

type asset struct {
	name   string // as embedded, e.g. console.css
	hashed string // console.3f2a9c1b.css
	body   []byte
	gz     []byte // body gzipped, for the text files where that pays; nil otherwise
	ctype  string
}

var (
	byHashed = map[string]*asset{}
	byName   = map[string]*asset{}
)

func init() {
	err := fs.WalkDir(files, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "static/")
		sum := sha256.Sum256(body)
		ext := path.Ext(name)
		a := &asset{name: name, hashed: strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:4]) + ext, body: body,
			ctype: mime.TypeByExtension(ext)}
		if a.ctype == "" {
			a.ctype = "application/octet-stream"
		}
		if strings.HasPrefix(a.ctype, "text/") || strings.Contains(a.ctype, "javascript") || strings.HasSuffix(name, ".svg") {
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
			zw.Write(body)
			zw.Close()
			if buf.Len() < len(body) {
				a.gz = buf.Bytes()
			}
		}
		byHashed[a.hashed], byName[name] = a, a
		return nil
	})
	if err != nil {
		panic("assets: " + err.Error())
	}
}

// Path is the URL of the asset name (as in static/, e.g. "console.css"), with its content hash.
// It panics on a name that is not embedded: a page that links to a missing file is a bug that
// the first render of the page shows.
func Path(name string) string {
	a, ok := byName[name]
	if !ok {
		panic("assets: no file " + name)
	}
	return Prefix + a.hashed
}

// Size is the size in bytes of the asset name, for the tests of what a page costs to load.
func Size(name string) int { return len(byName[name].body) }

// Handler serves the assets under Prefix by their hashed names only, with a year of caching:
// an unhashed or unknown name is 404, so no page can come to depend on a name that a new build
// changes behind its back.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := byHashed[strings.TrimPrefix(r.URL.Path, Prefix)]
		if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			http.NotFound(w, r)
			return
		}
		a.serve(w, r, "public, max-age=31536000, immutable")
	})
}

// Favicon answers /favicon.ico, which browsers ask for by that fixed name wherever a page
// names no icon (a JSON answer, an image): the console's icon, favicon.svg, under a name that
// does not change with its content, hence cached for a day and not for a year.
func Favicon() http.Handler { return Fixed("favicon.svg", "public, max-age=86400") }

// Fixed serves the asset name under a name that does not change with its content, with the
// caching cache: for what a browser asks for by a fixed name (the favicon, the console's
// service worker, whose address is its identity, and the app icons its manifest names).
func Fixed(name, cache string) http.Handler {
	a, ok := byName[name]
	if !ok {
		panic("assets: no file " + name)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.NotFound(w, r)
			return
		}
		a.serve(w, r, cache)
	})
}

// serve answers a with the caching cache, gzipped to a browser that takes it when that pays.
func (a *asset) serve(w http.ResponseWriter, r *http.Request, cache string) {
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("Cache-Control", cache)
	h.Set("Vary", "Accept-Encoding")
	body, tag := a.body, a.hashed
	if a.gz != nil && AcceptsGzip(r) {
		body, tag = a.gz, a.hashed+".gz"
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("ETag", `"`+tag+`"`)
	http.ServeContent(w, r, a.hashed, time.Unix(0, 0), bytes.NewReader(body))
}

// AcceptsGzip reports whether the request's Accept-Encoding takes gzip (every browser's does).
func AcceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.TrimSpace(q) != "q=0" {
			return true
		}
	}
	return false
}
