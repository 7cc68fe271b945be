package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestREST is a scenario table: each call against a fake that checks the request and answers.
func TestREST(t *testing.T) {
	type seen struct {
		method, path, query, auth, ctype string
		body                             map[string]any
	}
	for _, sc := range []struct {
		name    string
		status  int
		answer  string
		header  http.Header
		call    func(ctx context.Context, c *Client) (any, error)
		want    seen
		check   func(t *testing.T, got any)
		wantErr func(t *testing.T, err error)
	}{
		{
			name:   "Me reads the token's principal",
			status: 200,
			answer: `{"id":"u1","handle":"bot","display_name":"Bot","kind":"agent","status":"active","is_owner":false,"created_at":"2026-01-02T03:04:05Z"}`,
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Me(ctx) },
			want:   seen{method: "GET", path: "/api/v1/me", auth: "Bearer tok"},
			check: func(t *testing.T, got any) {
				u := got.(User)
				if u.ID != "u1" || u.Kind != "agent" || !u.CreatedAt.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
					t.Errorf("Me = %+v", u)
				}
			},
		},
		{
			name:   "PostMessage sends the content and the client_msg_id",
			status: 201,
			answer: `{"id":"m1","thread_id":"t/1","content":"hi","client_msg_id":"c1","mentions":[],"version":1,"created_at":"2026-01-02T03:04:05Z","edited_at":null,"deleted":false}`,
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.PostMessage(ctx, "t/1", "hi", "c1")
			},
			want: seen{method: "POST", path: "/api/v1/threads/t%2F1/messages", auth: "Bearer tok", ctype: "application/json",
				body: map[string]any{"content": "hi", "client_msg_id": "c1"}},
			check: func(t *testing.T, got any) {
				if m := got.(Message); m.ID != "m1" || m.ClientMsgID != "c1" || m.EditedAt != nil {
					t.Errorf("PostMessage = %+v", m)
				}
			},
		},
		{
			name:   "PostMessage without a client_msg_id sends none",
			status: 201,
			answer: `{"id":"m2","client_msg_id":null}`,
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.PostMessage(ctx, "t1", "hi", "")
			},
			want: seen{method: "POST", path: "/api/v1/threads/t1/messages", auth: "Bearer tok", ctype: "application/json",
				body: map[string]any{"content": "hi"}},
		},
		{
			name:   "Events reads a page after the cursor",
			status: 200,
			answer: `{"events":[{"seq":5,"type":"message.created","data":{"id":"m1"},"created_at":"2026-01-02T03:04:05Z","space_id":"s","channel_id":"c","thread_id":null}],"head_seq":9,"next_after":5}`,
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Events(ctx, 4, 10) },
			want:   seen{method: "GET", path: "/api/v1/events", query: "after=4&limit=10", auth: "Bearer tok"},
			check: func(t *testing.T, got any) {
				p := got.(EventPage)
				if len(p.Events) != 1 || p.Events[0].Seq != 5 || p.Events[0].ChannelID != "c" || p.Events[0].ThreadID != "" ||
					string(p.Events[0].Data) != `{"id":"m1"}` || p.HeadSeq != 9 || p.NextAfter != 5 {
					t.Errorf("Events = %+v", p)
				}
			},
		},
		{
			name:   "a problem document becomes an *APIError",
			status: 429,
			header: http.Header{"Retry-After": {"3"}, "Content-Type": {"application/problem+json"}},
			answer: `{"type":"https://bothy.dev/problems/rate_limited","title":"Too Many Requests","status":429,"code":"rate_limited","detail":"slow down","correlation_id":"cid-1"}`,
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Me(ctx) },
			want:   seen{method: "GET", path: "/api/v1/me", auth: "Bearer tok"},
			wantErr: func(t *testing.T, err error) {
				var ae *APIError
				if !errors.As(err, &ae) || ae.Status != 429 || ae.Code != "rate_limited" || ae.CorrelationID != "cid-1" || ae.RetryAfter != 3*time.Second {
					t.Errorf("error %#v", err)
				}
			},
		},
		{
			name:   "an answer that is not a problem document still becomes an *APIError",
			status: 502,
			answer: "bad gateway",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Events(ctx, 0, 0) },
			want:   seen{method: "GET", path: "/api/v1/events", query: "after=0", auth: "Bearer tok"},
			wantErr: func(t *testing.T, err error) {
				var ae *APIError
				if !errors.As(err, &ae) || ae.Status != 502 || ae.Code != "http_502" || ae.Detail != "bad gateway" {
					t.Errorf("error %#v", err)
				}
			},
		},
	} {
		t.Run(sc.name, func(t *testing.T) {
			var got seen
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = seen{method: r.Method, path: r.URL.EscapedPath(), query: r.URL.RawQuery,
					auth: r.Header.Get("Authorization"), ctype: r.Header.Get("Content-Type")}
				if b, _ := io.ReadAll(r.Body); len(b) > 0 {
					_ = json.Unmarshal(b, &got.body)
				}
				for k, v := range sc.header {
					w.Header()[k] = v
				}
				w.WriteHeader(sc.status)
				_, _ = io.WriteString(w, sc.answer)
			}))
			defer srv.Close()
			c := New(srv.URL+"/", "tok", WithHTTPClient(srv.Client()))
			res, err := sc.call(context.Background(), c)
			if sc.wantErr != nil {
				sc.wantErr(t, err)
			} else if err != nil {
				t.Fatalf("error %v", err)
			}
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", sc.want) {
				t.Errorf("the server saw %+v, want %+v", got, sc.want)
			}
			if sc.check != nil && err == nil {
				sc.check(t, res)
			}
		})
	}
}
