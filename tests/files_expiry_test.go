package tests

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFileExpiry runs a server whose files.unattached_ttl and files.upload_ttl are two seconds:
// a file no message carries is gone after that (404 for its uploader, its bytes removed) while
// one a message carries stays, and a resumable upload never completed is gone with its parts'
// bytes. It runs on each blob driver and each engine.
func TestFileExpiry(t *testing.T) {
	t.Parallel()
	onEachBlobStore(t, func(t *testing.T, eng engine, st blobStore) {
		in := mustStartWithOwner(t, eng, st.with("--set", "files.unattached_ttl=2s", "--set", "files.upload_ttl=2s")...)
		sp := in.owner.mustCreateSpace(t, "Expiry")
		ch := in.owner.mustCreateChannel(t, sp.ID, "general")
		bob, bobc := in.mustCreateUser(t, "bob")
		in.owner.mustGrant(t, ch.ID, bob.ID, "post")

		attached := bobc.mustUpload(t, "attached.txt", "text/plain", []byte("a message carries me"))
		bobc.mustPostFiles(t, ch.MainThreadID, "here it is", attached.ID)
		lonely := bobc.mustUpload(t, "lonely.txt", "text/plain", []byte("nobody carries me"))
		var up struct {
			ID       string `json:"id"`
			PartSize int    `json:"part_size"`
		}
		bobc.do(t, http.MethodPost, api("uploads"), map[string]any{"name": "never.bin", "size": 9_000_000, "content_type": "application/octet-stream"}).
			want(t, http.StatusCreated).decode(t, &up)
		bobc.do(t, http.MethodPut, api("uploads", up.ID, "parts", "1"), nil, rawBody(make([]byte, up.PartSize)),
			header("Content-Type", "application/octet-stream")).want(t, http.StatusOK)
		if !holds(st.contents(t, in.srv), "uploads/"+up.ID+"/1") || !holds(st.blobs(t, in.srv), lonely.SHA256) {
			t.Fatalf("before the TTL the store holds %v, want the lonely file and the part", st.contents(t, in.srv))
		}

		deadline := time.Now().Add(30 * time.Second)
		for {
			fileGone := bobc.do(t, http.MethodGet, api("files", lonely.ID), nil).status == http.StatusNotFound
			uploadGone := bobc.do(t, http.MethodGet, api("uploads", up.ID), nil).status == http.StatusNotFound
			contents := st.contents(t, in.srv)
			bytesGone := !holds(contents, lonely.SHA256) && !holds(contents, up.ID)
			if fileGone && uploadGone && bytesGone {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("30 s after a TTL of 2 s: lonely file gone %v, upload gone %v, store %v", fileGone, uploadGone, contents)
			}
			time.Sleep(100 * time.Millisecond)
		}
		bobc.do(t, http.MethodGet, api("files", lonely.ID, "content"), nil).want(t, http.StatusNotFound)

		r := bobc.do(t, http.MethodGet, api("files", attached.ID, "content"), nil).want(t, http.StatusOK)
		if string(r.raw) != "a message carries me" || !holds(st.blobs(t, in.srv), attached.SHA256) {
			t.Fatalf("the attached file after the TTL: %q, store %v", r.raw, st.contents(t, in.srv))
		}
	})
}

// holds reports whether one of names contains part.
func holds(names []string, part string) bool {
	for _, n := range names {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}
