package tests

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// scenario is one row of a scenario table: who sends what, and what must come
// back, including the events the request appends to the log.
type scenario struct {
	name   string
	as     string // the client of the play that sends it; "" is anonymous
	method string
	path   string // may hold {name.field} references to saved answers
	body   any    // encoded as JSON; string values may hold {name.field} references
	opts   []reqOption
	status int
	// orStatus lists other statuses the contract allows as well.
	orStatus []int
	// fields are top-level fields of the answer that must have these values (after
	// expansion of references); present and absent test only whether a field is there.
	fields map[string]any
	// events are the types of the events the request appends, in order, as the watcher sees
	// them; nil means none. anyEvents skips the check.
	events []string
	// save keeps the answer for later references as {save.field.sub}.
	save string
	// check holds what the table cannot say.
	check func(t *testing.T, p *play, r *response)
}

var (
	present   = &struct{ present bool }{true}
	absent    = &struct{ absent bool }{true}
	anyEvents = []string{"*"}
)

// play runs a table in order against one server: later rows may use what earlier rows saved.
type play struct {
	srv     *server
	clients map[string]*client
	vars    map[string]any
	// watcher names the client that reads /events around each row; until it exists, events
	// are not checked.
	watcher string
}

func newPlay(srv *server) *play {
	return &play{srv: srv, clients: map[string]*client{"": as(srv, "")}, vars: map[string]any{}, watcher: "owner"}
}

// client returns the client called name.
func (p *play) client(tb testing.TB, name string) *client {
	tb.Helper()
	c, ok := p.clients[name]
	if !ok {
		tb.Fatalf("the play has no client %q", name)
	}
	return c
}

var ref = regexp.MustCompile(`\{([a-z_][a-z_0-9]*(?:\.[a-z_0-9]+)*)\}`)

// expand replaces {name.field} references with saved values.
func (p *play) expand(tb testing.TB, s string) string {
	tb.Helper()
	return ref.ReplaceAllStringFunc(s, func(m string) string {
		v := p.lookup(tb, m[1:len(m)-1])
		return fmt.Sprint(v)
	})
}

func (p *play) lookup(tb testing.TB, path string) any {
	tb.Helper()
	parts := strings.Split(path, ".")
	v, ok := p.vars[parts[0]]
	if !ok {
		tb.Fatalf("no saved answer %q", parts[0])
	}
	for _, k := range parts[1:] {
		m, ok := v.(map[string]any)
		if !ok {
			tb.Fatalf("%s: %q is not an object", path, k)
		}
		v = m[k]
	}
	return v
}

func (p *play) expandAny(tb testing.TB, v any) any {
	switch x := v.(type) {
	case string:
		return p.expand(tb, x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = p.expandAny(tb, e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = p.expandAny(tb, e)
		}
		return out
	}
	return v
}

// run plays the rows in order, each as a subtest; a failing row stops the play, since later
// rows depend on it.
func (p *play) run(t *testing.T, rows []scenario) {
	t.Helper()
	for _, sc := range rows {
		ok := t.Run(sc.name, func(t *testing.T) {
			p.runOne(t, sc)
		})
		if !ok {
			t.FailNow()
		}
	}
}

func (p *play) runOne(t *testing.T, sc scenario) {
	t.Helper()
	c := p.client(t, sc.as)
	watcher := p.clients[p.watcher]
	if slices.Equal(sc.events, anyEvents) {
		watcher = nil
	}
	var before int64
	if watcher != nil {
		before = watcher.mustHead(t)
	}
	r := c.do(t, sc.method, p.expand(t, sc.path), p.expandAny(t, sc.body), sc.opts...)
	if r.status != sc.status && !slices.Contains(sc.orStatus, r.status) {
		t.Fatalf("%s: status %d, want %d", r, r.status, sc.status)
	}
	for k, want := range sc.fields {
		got, has := r.obj()[k]
		switch want {
		case present:
			if !has {
				t.Errorf("%s: no field %q", r, k)
			}
			continue
		case absent:
			if has {
				t.Errorf("%s: field %q is there (%v)", r, k, got)
			}
			continue
		}
		want = p.expandAny(t, want)
		if !sameJSON(got, want) {
			t.Errorf("%s: %s = %s, want %s", r, k, jsonText(got), jsonText(want))
		}
	}
	if sc.save != "" {
		p.vars[sc.save] = r.body
	}
	if watcher != nil {
		evs, head := watcher.mustAllEvents(t, before)
		if got := types(evs); !slices.Equal(got, sc.events) && !(len(got) == 0 && len(sc.events) == 0) {
			t.Errorf("%s: appended events %v, want %v", r, got, sc.events)
		}
		// The notifier appends notifications a moment after the write that caused them, some
		// for people the watcher is not: a head moved by them alone is not the request's.
		if len(sc.events) == 0 && head != before && !p.onlyNotifications(t, before, head) {
			t.Errorf("%s: head_seq moved from %d to %d; the request must change nothing", r, before, head)
		}
	}
	if sc.check != nil {
		sc.check(t, p, r)
	}
}

// onlyNotifications reports whether every event in (before, head] is the notifier's, as the
// play's clients see them: each seq must be one that one of them sees.
func (p *play) onlyNotifications(tb testing.TB, before, head int64) bool {
	tb.Helper()
	seen := map[int64]bool{}
	for _, c := range p.clients {
		if c.token == "" {
			continue
		}
		evs, _ := c.mustAllEvents(tb, before)
		for _, e := range evs {
			if e.Seq > head {
				continue
			}
			if !notifierEvent(e.Type) {
				return false
			}
			seen[e.Seq] = true
		}
	}
	return int64(len(seen)) == head-before
}

func sameJSON(a, b any) bool { return jsonText(a) == jsonText(b) }

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}
