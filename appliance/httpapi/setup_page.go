package httpapi

import (
	"net/http"

	"bothy.dev/bothy/app/kernel"
)

// HTML is a handler body written as text/html instead of JSON.
type HTML []byte

// setupPage is what the printed setup link opens: a form that posts to POST /api/v1/setup with
// the code from the link. It fetches nothing from elsewhere (no CDN): the appliance works offline.
const setupPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>bothy · create the first owner</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;color:#222}
label{display:block;margin-top:1rem;font-weight:600}input{width:100%;padding:.5rem;font:inherit;box-sizing:border-box}
button{margin-top:1.5rem;padding:.6rem 1.2rem;font:inherit;cursor:pointer}
#out{margin-top:1.5rem;white-space:pre-wrap}.err{color:#a00}.ok{color:#060}
</style></head>
<body>
<h1>Create the first owner</h1>
<p>This link works once. The owner administers this bothy instance.</p>
<form id="f" data-testid="setup-form">
<label for="handle">Handle</label><input id="handle" name="handle" required maxlength="32" autocomplete="username" pattern="[A-Za-z0-9_.\-]+">
<label for="display_name">Display name</label><input id="display_name" name="display_name" required maxlength="64">
<label for="password">Password</label><input id="password" name="password" type="password" required minlength="8" autocomplete="new-password">
<button type="submit">Create owner</button>
</form>
<div id="out" data-testid="setup-result"></div>
<script>
const code = new URLSearchParams(location.search).get("code") || "";
const out = document.getElementById("out");
document.getElementById("f").addEventListener("submit", async (e) => {
  e.preventDefault();
  const body = {code, handle: handle.value, display_name: display_name.value, password: password.value};
  const res = await fetch("/api/v1/setup", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  const data = await res.json().catch(() => ({}));
  if (res.ok) { out.className = "ok"; out.textContent = "Done: " + data.handle + " is the owner. Log in with POST /api/v1/auth/login."; e.target.remove(); }
  else { out.className = "err"; out.textContent = (data.detail || res.statusText) + " (" + (data.code || res.status) + ")"; }
});
</script>
</body></html>
`

// SetupPageRoutes serves GET /setup, the page the printed setup link opens. The code stays in
// the page's URL and is checked only by POST /api/v1/setup.
func SetupPageRoutes(az kernel.Authorizer) []Route {
	return []Route{{
		Method:  http.MethodGet,
		Pattern: "/setup",
		Action:  kernel.ActDiscoveryRead,
		Public:  true,
		Handler: func(r *Request) (int, any, error) {
			if err := az.Authorize(r.Context(), r.Actor, kernel.ActDiscoveryRead, kernel.Resource{Kind: kernel.ResInstance}); err != nil {
				return 0, nil, err
			}
			return http.StatusOK, HTML(setupPage), nil
		},
	}}
}
