package ui

import (
	"encoding/json"
	"net/http"

	"bothy.dev/bothy/assets"
)

// The console installs as an app (a phone's home screen, a desktop's app list): a web app
// manifest names it and its icons, and a service worker at /console/sw.js, whose scope is the
// console, shows the Web Push notifications the server sends. Browsers ask for these by fixed
// names, so they are served under them instead of the assets' hashed ones.
func (c *Console) appRoutes() {
	c.mux.Handle("GET /console/sw.js", assets.Fixed("sw.js", "no-cache"))
	c.mux.Handle("GET /console/icon-192.png", assets.Fixed("icon-192.png", "public, max-age=86400"))
	c.mux.Handle("GET /console/icon-512.png", assets.Fixed("icon-512.png", "public, max-age=86400"))
	c.mux.HandleFunc("GET /console/manifest.webmanifest", c.manifest)
}

// appManifest is the web app manifest (W3C Web Application Manifest) of the console.
type appManifest struct {
	Name            string        `json:"name"`
	ShortName       string        `json:"short_name"`
	StartURL        string        `json:"start_url"`
	Scope           string        `json:"scope"`
	Display         string        `json:"display"`
	BackgroundColor string        `json:"background_color"`
	ThemeColor      string        `json:"theme_color"`
	Icons           []appIconSpec `json:"icons"`
}

type appIconSpec struct {
	Src   string `json:"src"`
	Sizes string `json:"sizes"`
	Type  string `json:"type"`
}

// manifest answers the web app manifest, named after the instance. It needs no session: the
// browser fetches it without credentials.
func (c *Console) manifest(w http.ResponseWriter, r *http.Request) {
	name := "bothy"
	if c.d.Instance != nil {
		if n, err := c.d.Instance.Name(r.Context()); err == nil && n != "" {
			name = n
		}
	}
	m := appManifest{Name: name, ShortName: name, StartURL: "/console/chat", Scope: Prefix, Display: "standalone",
		BackgroundColor: "#ffffff", ThemeColor: "#2f6f4f", Icons: []appIconSpec{
			{Src: "/console/icon-192.png", Sizes: "192x192", Type: "image/png"},
			{Src: "/console/icon-512.png", Sizes: "512x512", Type: "image/png"},
			{Src: assets.Path("favicon.svg"), Sizes: "any", Type: "image/svg+xml"},
		}}
	w.Header().Set("Content-Type", "application/manifest+json")
	w.Header().Set("Cache-Control", "no-cache")
	_ = json.NewEncoder(w).Encode(m)
}
