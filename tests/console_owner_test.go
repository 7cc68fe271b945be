package tests

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// signIn signs the browser in through the console's form.
func (b *browser) signIn(handle, password string) {
	b.tb.Helper()
	b.get("/console/signin")
	b.post("/console/signin", url.Values{"handle": {handle}, "password": {password}}).want(b.tb, http.StatusSeeOther)
}

// follow reads the page a form's redirect leads to.
func (b *browser) follow(p consolePage) consolePage {
	b.tb.Helper()
	if p.status != http.StatusSeeOther {
		b.tb.Fatalf("status %d, want a redirect: %.600s", p.status, p.body)
	}
	return b.get(p.location())
}

// attrOf finds the value of attribute attr on the element with data-testid id whose attribute
// key equals value (a row of a table), e.g. the data-id of the person row with data-handle carol.
func (p consolePage) rowAttr(tb testing.TB, testid, key, value, attr string) string {
	tb.Helper()
	re := regexp.MustCompile(`<[a-z]+ [^>]*data-testid="` + testid + `"[^>]*>`)
	for _, tag := range re.FindAllString(p.body, -1) {
		if strings.Contains(tag, key+`="`+value+`"`) {
			if m := regexp.MustCompile(attr + `="([^"]*)"`).FindStringSubmatch(tag); m != nil {
				return m[1]
			}
		}
	}
	tb.Fatalf("no %s with %s=%q and %s: %.2000s", testid, key, value, attr, p.body)
	return ""
}

// text is the text of the element with data-testid id (the first one).
func (p consolePage) text(tb testing.TB, id string) string {
	tb.Helper()
	m := regexp.MustCompile(`data-testid="` + id + `"[^>]*>([^<]*)<`).FindStringSubmatch(p.body)
	if m == nil {
		tb.Fatalf("no %s: %.2000s", id, p.body)
	}
	return html.UnescapeString(m[1])
}

func (p consolePage) count(tb testing.TB, id string) int {
	tb.Helper()
	n, err := strconv.Atoi(strings.ReplaceAll(p.text(tb, id), "\u202f", ""))
	if err != nil {
		tb.Fatalf("%s: %v", id, err)
	}
	return n
}

// TestConsoleOwnerPages is the console's owner pages without a browser: people (add, disable,
// enable, a new password), API tokens shown once, the instance's name, the overview's numbers,
// what a person who is not an owner gets, and forms without their CSRF token.
func TestConsoleOwnerPages(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		srv := in.srv
		b := newBrowser(t, srv.public)
		b.signIn("owner", ownerPassword)
		const carolPw, carolPw2 = "carol's first password", "carol's second password"
		var carolID string

		t.Run("the owner adds a person, and a refused form keeps what was typed", func(t *testing.T) {
			p := b.get("/console/people").want(t, http.StatusOK)
			if !p.has("people") || !p.has("person-form") || p.rowAttr(t, "person-row", "data-handle", "owner", "data-id") != in.me.ID {
				t.Fatalf("%.2000s", p.body)
			}
			p = b.post("/console/people", url.Values{"handle": {"carol"}, "display_name": {"Carol"}, "password": {"short"}}).
				want(t, http.StatusUnprocessableEntity)
			if !p.has("form-error") || !strings.Contains(p.body, `value="carol"`) || !strings.Contains(p.body, `value="Carol"`) {
				t.Fatalf("%.2000s", p.body)
			}
			p = b.follow(b.post("/console/people", url.Values{"handle": {"carol"}, "display_name": {"Carol"}, "password": {carolPw}}))
			if !p.has("flash") || !strings.Contains(p.text(t, "flash"), "@carol") {
				t.Fatalf("%.2000s", p.body)
			}
			carolID = p.rowAttr(t, "person-row", "data-handle", "carol", "data-id")
			if p := b.post("/console/people", url.Values{"handle": {"Carol"}, "display_name": {"C"}, "password": {carolPw}}); p.status != http.StatusUnprocessableEntity || !p.has("form-error") {
				t.Fatalf("a taken handle: %d %.600s", p.status, p.body)
			}
		})

		carol := newBrowser(t, srv.public)
		carol.signIn("carol", carolPw)

		t.Run("a person who is not an owner gets the 404 page for the owner's pages", func(t *testing.T) {
			for _, path := range []string{"/console/people", "/console/settings"} {
				if p := carol.get(path).want(t, http.StatusNotFound); !p.has("error-page") {
					t.Fatalf("%s: %.600s", path, p.body)
				}
			}
			if p := carol.get("/console/").want(t, http.StatusSeeOther); p.location() != "/console/chat" {
				t.Fatalf("the console's start sends carol to %q", p.location())
			}
			for _, path := range []string{"/console/people", "/console/people/" + in.me.ID + "/disable", "/console/people/" + carolID + "/password", "/console/settings"} {
				carol.post(path, url.Values{"handle": {"x"}, "name": {"Mine"}, "password": {"whatever123"}}).want(t, http.StatusNotFound)
			}
			var got user
			in.owner.do(t, http.MethodGet, api("me"), nil).want(t, http.StatusOK).decode(t, &got)
			if got.Status != "active" {
				t.Fatalf("the owner after carol's posts: %+v", got)
			}
			if strings.Contains(carol.get("/console/tokens").want(t, http.StatusOK).body, `href="/console/people"`) {
				t.Fatal("carol's navigation links to the owner's pages")
			}
		})

		t.Run("disabling ends the person's session and sign-in; enabling lets them in again", func(t *testing.T) {
			p := b.follow(b.post("/console/people/"+carolID+"/disable", url.Values{}))
			if p.rowAttr(t, "person-row", "data-handle", "carol", "data-id") != carolID || !strings.Contains(p.body, ">disabled<") {
				t.Fatalf("%.3000s", p.body)
			}
			if p := carol.get("/console/tokens").want(t, http.StatusSeeOther); !strings.HasPrefix(p.location(), "/console/signin") {
				t.Fatalf("a disabled person's session leads to %q", p.location())
			}
			carol.get("/console/signin")
			carol.post("/console/signin", url.Values{"handle": {"carol"}, "password": {carolPw}}).want(t, http.StatusUnauthorized)
			b.follow(b.post("/console/people/"+carolID+"/enable", url.Values{}))
			carol.signIn("carol", carolPw)
			carol.get("/console/tokens").want(t, http.StatusOK)
		})

		t.Run("a new password ends the person's sessions; only the new one signs in", func(t *testing.T) {
			p := b.follow(b.post("/console/people/"+carolID+"/password", url.Values{"password": {"short"}}))
			if !strings.Contains(p.body, `class="flash error"`) {
				t.Fatalf("a short password: %.2000s", p.body)
			}
			carol.get("/console/tokens").want(t, http.StatusOK) // nothing changed
			b.follow(b.post("/console/people/"+carolID+"/password", url.Values{"password": {carolPw2}}))
			carol.get("/console/tokens").want(t, http.StatusSeeOther)
			carol.get("/console/signin")
			carol.post("/console/signin", url.Values{"handle": {"carol"}, "password": {carolPw}}).want(t, http.StatusUnauthorized)
			carol.signIn("carol", carolPw2)
			carol.get("/console/tokens").want(t, http.StatusOK)
		})

		t.Run("the last owner cannot be disabled", func(t *testing.T) {
			p := b.follow(b.post("/console/people/"+in.me.ID+"/disable", url.Values{}))
			if !strings.Contains(p.body, `class="flash error"`) || !strings.Contains(p.text(t, "flash"), "last") {
				t.Fatalf("%.2000s", p.body)
			}
			b.get("/console/").want(t, http.StatusOK)
		})

		t.Run("an API token is shown once, works as a bearer and stops when revoked", func(t *testing.T) {
			p := carol.post("/console/tokens", url.Values{"name": {"backup script"}}).want(t, http.StatusSeeOther)
			if strings.Contains(p.location(), "bothy_") {
				t.Fatalf("the token travels in the URL %q", p.location())
			}
			p = carol.get(p.location()).want(t, http.StatusOK)
			token := p.text(t, "new-token")
			if !strings.HasPrefix(token, "bothy_") {
				t.Fatalf("token %q", token)
			}
			if again := carol.get("/console/tokens").want(t, http.StatusOK); again.has("new-token") || strings.Contains(again.body, token) {
				t.Fatal("the token was shown a second time")
			}
			var me user
			as(srv, token).do(t, http.MethodGet, api("me"), nil).want(t, http.StatusOK).decode(t, &me)
			if me.Handle != "carol" {
				t.Fatalf("the token is %+v's", me)
			}
			p = carol.get("/console/tokens")
			tokenID := regexp.MustCompile(`data-testid="token-row" data-id="([^"]+)"`).FindStringSubmatch(p.body)
			if tokenID == nil || strings.Contains(p.body, token) {
				t.Fatalf("%.2000s", p.body)
			}
			if b.post("/console/tokens/"+tokenID[1]+"/revoke", url.Values{}).status != http.StatusNotFound {
				t.Fatal("the owner revoked carol's token from the console")
			}
			carol.follow(carol.post("/console/tokens/"+tokenID[1]+"/revoke", url.Values{}))
			as(srv, token).do(t, http.MethodGet, api("me"), nil).want(t, http.StatusUnauthorized)
			if p := carol.post("/console/tokens", url.Values{"name": {"  "}}).want(t, http.StatusUnprocessableEntity); !p.has("form-error") {
				t.Fatalf("%.600s", p.body)
			}
		})

		t.Run("the owner renames the instance; every page and the API show the name", func(t *testing.T) {
			if p := b.get("/console/settings").want(t, http.StatusOK); !strings.Contains(p.body, `value="bothy"`) {
				t.Fatalf("%.2000s", p.body)
			}
			b.post("/console/settings", url.Values{"name": {""}}).want(t, http.StatusUnprocessableEntity)
			p := b.follow(b.post("/console/settings", url.Values{"name": {"  Hilltop <hub>  "}}))
			if !strings.Contains(p.body, "<title>Settings · Hilltop &lt;hub&gt;</title>") || !strings.Contains(p.body, `value="Hilltop &lt;hub&gt;"`) {
				t.Fatalf("%.2000s", p.body)
			}
			if p := carol.get("/console/tokens"); !strings.Contains(p.body, `class="brand" href="/console/">Hilltop &lt;hub&gt;</a>`) {
				t.Fatalf("carol's top bar: %.1000s", p.body)
			}
			if p := newBrowser(t, srv.public).get("/console/signin"); !strings.Contains(p.body, "Hilltop &lt;hub&gt;") {
				t.Fatalf("the sign-in page: %.1000s", p.body)
			}
			if got := b.get("/console/").text(t, "instance-name"); got != "Hilltop <hub>" {
				t.Fatalf("overview heading %q", got)
			}
			carolAPI := mustLogin(t, srv, "carol", carolPw2)
			var st struct {
				Name string `json:"name"`
			}
			carolAPI.do(t, http.MethodGet, api("instance"), nil).want(t, http.StatusOK).decode(t, &st)
			if st.Name != "Hilltop <hub>" {
				t.Fatalf("GET /instance: %+v", st)
			}
			carolAPI.do(t, http.MethodPut, api("instance"), map[string]any{"name": "Mine"}).want(t, http.StatusForbidden)
			in.owner.do(t, http.MethodPut, api("instance"), map[string]any{"name": "Hilltop"}).want(t, http.StatusOK).decode(t, &st)
			in.owner.do(t, http.MethodPut, api("instance"), map[string]any{"name": ""}, breaksDocument()).want(t, http.StatusBadRequest)
			if st.Name != "Hilltop" || b.get("/console/").text(t, "instance-name") != "Hilltop" {
				t.Fatalf("after PUT: %+v", st)
			}
		})

		t.Run("the overview counts what the instance holds and charts the last day", func(t *testing.T) {
			p := b.get("/console/").want(t, http.StatusOK)
			for _, id := range []string{"version", "uptime", "engine", "db-size", "chart", "activity-total"} {
				if !p.has(id) {
					t.Fatalf("no %s: %.3000s", id, p.body)
				}
			}
			if strings.Contains(p.body, "style=") {
				t.Fatal("an inline style, which the CSP blocks")
			}
			people, msgs := p.count(t, "count-people"), p.count(t, "count-messages")
			if people != 2 {
				t.Fatalf("%d people", people)
			}
			sp := in.owner.mustCreateSpace(t, "Ops")
			ch := in.owner.mustCreateChannel(t, sp.ID, "general")
			th := in.owner.mustCreateThread(t, ch.ID, "Hello", "first")
			in.owner.mustPost(t, th.Thread.ID, "second")
			in.owner.mustPost(t, th.Thread.ID, "third")
			p = b.get("/console/").want(t, http.StatusOK)
			if got := p.count(t, "count-messages"); got != msgs+3 {
				t.Fatalf("%d messages after 3 posts, %d before", got, msgs)
			}
			if p.count(t, "count-spaces") != 1 || p.count(t, "count-channels") != 1 {
				t.Fatalf("spaces %d, channels %d", p.count(t, "count-spaces"), p.count(t, "count-channels"))
			}
			if !strings.Contains(p.text(t, "activity-total"), strconv.Itoa(msgs+3)+" messages") || !strings.Contains(p.body, `data-value="`) {
				t.Fatalf("%.4000s", p.body)
			}
		})

		t.Run("the API's people routes are the console's equals", func(t *testing.T) {
			var u user
			in.owner.do(t, http.MethodPost, api("users", carolID, "disable"), nil).want(t, http.StatusOK)
			in.owner.do(t, http.MethodPost, api("users", carolID, "enable"), nil).want(t, http.StatusOK).decode(t, &u)
			if u.Status != "active" {
				t.Fatalf("%+v", u)
			}
			in.owner.do(t, http.MethodPost, api("users", carolID, "password"), map[string]any{"password": "carol's third password"}).
				want(t, http.StatusOK)
			mustLogin(t, srv, "carol", "carol's third password").
				do(t, http.MethodPost, api("users", in.me.ID, "password"), map[string]any{"password": "taken over!"}).want(t, http.StatusForbidden)
			in.owner.do(t, http.MethodPost, api("users", carolID, "password"), map[string]any{"password": "short"}, breaksDocument()).
				want(t, http.StatusBadRequest)
		})

		t.Run("every form posted without its CSRF token is refused and changes nothing", func(t *testing.T) {
			for _, path := range []string{"/console/people", "/console/people/" + carolID + "/disable", "/console/people/" + carolID + "/enable",
				"/console/people/" + carolID + "/password", "/console/tokens", "/console/tokens/" + carolID + "/revoke", "/console/settings"} {
				p := b.post(path, url.Values{"csrf_token": {""}, "handle": {"mallory"}, "display_name": {"M"}, "password": {"mallory's pw"},
					"name": {"Mallory's"}})
				if p.status != http.StatusForbidden || !p.has("error-page") {
					t.Errorf("%s: %d", path, p.status)
				}
			}
			p := b.get("/console/people")
			if strings.Contains(p.body, "mallory") || p.rowAttr(t, "person-row", "data-handle", "carol", "data-id") != carolID ||
				b.get("/console/").text(t, "instance-name") != "Hilltop" {
				t.Fatalf("a refused form changed something: %.2000s", p.body)
			}
		})
	})
}
