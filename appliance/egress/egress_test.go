package egress

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestClient(t *testing.T) {
	ctx := context.Background()
	var got struct {
		header http.Header
		body   string
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/final", http.StatusTemporaryRedirect)
			return
		}
		b, _ := io.ReadAll(r.Body)
		got.header, got.body = r.Header, string(b)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()

	t.Run("a loopback address is refused at dial time, whatever the URL says", func(t *testing.T) {
		c := New(Options{})
		_, err := c.Post(ctx, srv.URL+"/x", nil, []byte("hi"))
		if !errors.Is(err, ErrRefusedAddress) {
			t.Fatalf("err %v", err)
		}
		// localhost resolves to a loopback address: the dialer refuses the address it dials.
		_, err = c.Post(ctx, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)+"/x", nil, nil)
		if !errors.Is(err, ErrRefusedAddress) {
			t.Fatalf("localhost: err %v", err)
		}
	})
	t.Run("with private targets allowed, the request and its header fields arrive", func(t *testing.T) {
		c := New(Options{AllowPrivate: true})
		status, err := c.Post(ctx, srv.URL+"/x", map[string]string{"TTL": "60", "Content-Encoding": "aes128gcm"}, []byte("hi"))
		if err != nil || status != http.StatusCreated {
			t.Fatalf("%d %v", status, err)
		}
		if got.body != "hi" || got.header.Get("TTL") != "60" || got.header.Get("Content-Encoding") != "aes128gcm" {
			t.Fatalf("%v %q", got.header, got.body)
		}
		if status, err := c.Post(ctx, srv.URL+"/redirect", nil, []byte("again")); err != nil || status != http.StatusCreated || got.body != "again" {
			t.Fatalf("redirect: %d %v %q", status, err, got.body)
		}
	})
	t.Run("a redirect to a URL that is not https on a public host is not followed", func(t *testing.T) {
		c := New(Options{})
		req, _ := http.NewRequest(http.MethodPost, "http://10.0.0.1/x", nil)
		if err := c.checkRedirect(req, nil); err == nil {
			t.Fatal("followed")
		}
		req, _ = http.NewRequest(http.MethodPost, "https://push.example.com/x", nil)
		if err := c.checkRedirect(req, nil); err != nil {
			t.Fatal(err)
		}
		if err := c.checkRedirect(req, []*http.Request{req, req, req}); err == nil {
			t.Fatal("a fourth redirect followed")
		}
	})
}
