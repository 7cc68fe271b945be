package tests

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// TestHealthAndDiscovery checks the health endpoints, which live only on the internal listener,
// the served OpenAPI document, and the correlation id of every answer.
func TestHealthAndDiscovery(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		get := func(t *testing.T, url string) (int, []byte) {
			t.Helper()
			resp, err := httpClient.Get(url)
			if err != nil {
				t.Fatalf("GET %s: %v", url, err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, b
		}
		for _, path := range []string{"/healthz", "/readyz"} {
			t.Run("the internal listener answers "+path, func(t *testing.T) {
				if st, b := get(t, in.srv.internal+path); st != http.StatusOK {
					t.Errorf("GET %s: %d %s", path, st, b)
				}
			})
			t.Run("the public listener does not serve "+path, func(t *testing.T) {
				in.owner.do(t, http.MethodGet, path, nil, breaksDocument()).want(t, http.StatusNotFound)
				as(in.srv, "").do(t, http.MethodGet, path, nil, breaksDocument()).want(t, http.StatusNotFound)
			})
		}
		t.Run("the internal listener does not serve the API", func(t *testing.T) {
			if st, _ := get(t, in.srv.internal+"/api/v1/openapi.json"); st == http.StatusOK {
				t.Errorf("the internal listener serves the API")
			}
		})
		t.Run("anyone reads the OpenAPI document, the same as the file", func(t *testing.T) {
			r := as(in.srv, "").do(t, http.MethodGet, api("openapi.json"), nil).want(t, http.StatusOK)
			var served, file any
			r.decode(t, &served)
			if err := json.Unmarshal(docBytes, &file); err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(served)
			b, _ := json.Marshal(file)
			if !bytes.Equal(a, b) {
				t.Errorf("the served document differs from appliance/httpapi/openapi.json")
			}
		})
		t.Run("every answer has its own correlation id, also in the problem body", func(t *testing.T) {
			seen := map[string]bool{}
			for _, r := range []*response{
				in.owner.do(t, http.MethodGet, api("me"), nil),
				in.owner.do(t, http.MethodGet, api("me"), nil),
				as(in.srv, "").do(t, http.MethodGet, api("me"), nil, breaksDocument()),
				in.owner.do(t, http.MethodGet, api("nothing", "here"), nil, breaksDocument()),
				in.owner.do(t, http.MethodPut, api("spaces"), nil, breaksDocument()),
			} {
				id := r.header.Get("Correlation-Id")
				if id == "" || seen[id] {
					t.Errorf("%s: correlation id %q is empty or repeated", r, id)
				}
				seen[id] = true
				if r.status >= 400 && r.obj()["correlation_id"] != id {
					t.Errorf("%s: body correlation_id %v, header %q", r, r.obj()["correlation_id"], id)
				}
			}
		})
	})
}
