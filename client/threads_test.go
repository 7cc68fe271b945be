package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestThreadReads(t *testing.T) {
	var path, query, auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, query, auth = r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/api/v1/users":
			_, _ = w.Write([]byte(`{"items":[{"id":"u1","handle":"alice","display_name":"Alice","kind":"person"}]}`))
		default:
			_, _ = w.Write([]byte(`{"items":[{"id":"m1","author_id":"u1","content":"hi"},{"id":"m2","author_id":"u2","content":"yo"}],"has_more":true}`))
		}
	}))
	defer srv.Close()
	c := New(srv.URL, "tok", WithHTTPClient(srv.Client()))

	t.Run("ThreadMessages reads the page before a message with a limit", func(t *testing.T) {
		p, err := c.ThreadMessages(context.Background(), "t/1", "m9", 20)
		if err != nil {
			t.Fatal(err)
		}
		if path != "/api/v1/threads/t%2F1/messages" || query != "before=m9&limit=20" || auth != "Bearer tok" {
			t.Errorf("the server saw %s?%s (%s)", path, query, auth)
		}
		if len(p.Items) != 2 || p.Items[1].Content != "yo" || !p.HasMore {
			t.Errorf("page %+v", p)
		}
	})
	t.Run("ThreadMessages without before or limit reads the newest page", func(t *testing.T) {
		if _, err := c.ThreadMessages(context.Background(), "t1", "", 0); err != nil {
			t.Fatal(err)
		}
		if path != "/api/v1/threads/t1/messages" || query != "" {
			t.Errorf("the server saw %s?%s", path, query)
		}
	})
	t.Run("Users lists the principals with their kind", func(t *testing.T) {
		us, err := c.Users(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if path != "/api/v1/users" || len(us) != 1 || us[0].Handle != "alice" || us[0].Kind != "person" {
			t.Errorf("the server saw %s; users %+v", path, us)
		}
	})
}
