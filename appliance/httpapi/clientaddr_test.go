package httpapi

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/appliance/clientaddr"
)

// TestRouterClient holds that the router decides the client once, from the trusted proxies of
// its options, and that a route's ClientIP (the login limiter's key), a raw handler (the
// gateway, the console) and the access log all see that one client.
func TestRouterClient(t *testing.T) {
	proxies, err := clientaddr.ParseProxies("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	rt := NewRouter(fakeAuth{}, nil, Options{TrustedProxies: proxies,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	var routeIP, rawIP, rawHost string
	rt.Handle(Route{Method: "GET", Pattern: "/api/v1/who", Action: chat.ActSpaceRead, Public: true, Handler: func(r *Request) (int, any, error) {
		kernel.RecordCheck(r.Context(), chat.ActSpaceRead)
		routeIP = r.ClientIP
		return 200, map[string]any{}, nil
	}})
	rt.HandleRaw("/raw", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := clientaddr.From(r)
		rawIP, rawHost = c.IP, c.Host
	}))

	for _, tc := range []struct {
		name, peer, xff, xfh, wantIP, wantHost string
	}{
		{name: "from a trusted proxy, the client it names", peer: "10.1.2.3:4000", xff: "203.0.113.5, 10.0.0.9", xfh: "chat.example.com",
			wantIP: "203.0.113.5", wantHost: "chat.example.com"},
		{name: "from another peer, the peer, whatever it claims", peer: "192.0.2.7:5555", xff: "203.0.113.5", xfh: "chat.example.com",
			wantIP: "192.0.2.7", wantHost: "bothy.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs.Reset()
			for _, path := range []string{"/api/v1/who", "/raw"} {
				req := httptest.NewRequest("GET", "http://bothy.test"+path, nil)
				req.RemoteAddr = tc.peer
				req.Header.Set("X-Forwarded-For", tc.xff)
				req.Header.Set("X-Forwarded-Host", tc.xfh)
				rec := httptest.NewRecorder()
				rt.ServeHTTP(rec, req)
				if rec.Code != 200 {
					t.Fatalf("%s: %d %s", path, rec.Code, rec.Body.String())
				}
			}
			if routeIP != tc.wantIP {
				t.Errorf("a route's ClientIP = %q, want %q", routeIP, tc.wantIP)
			}
			if rawIP != tc.wantIP || rawHost != tc.wantHost {
				t.Errorf("a raw handler's client = %q at %q, want %q at %q", rawIP, rawHost, tc.wantIP, tc.wantHost)
			}
			if n := strings.Count(logs.String(), "client="+tc.wantIP); n != 2 {
				t.Errorf("the access log names the client %s %d times, want 2:\n%s", tc.wantIP, n, logs.String())
			}
		})
	}
}
