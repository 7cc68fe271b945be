package tests

import (
	"net/http"
	"testing"
)

// TestRestartKeepsEverything stops the server with SIGTERM, which must end it with exit 0, and
// starts it again on the same data directory: the owner, sessions, the structure and the log
// are all still there, and the log goes on from its head.
func TestRestartKeepsEverything(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		sp := in.owner.mustCreateSpace(t, "Durable")
		ch := in.owner.mustCreateChannel(t, sp.ID, "kept")
		started := in.owner.mustCreateThread(t, ch.ID, "Still here", "written before the restart")
		headBefore := in.owner.mustHead(t)

		if err := in.srv.stop(t); err != nil {
			t.Fatalf("bothy serve exited with %v on SIGTERM, want exit 0", err)
		}
		in.srv.mustRestart(t)

		t.Run("the session survives the restart", func(t *testing.T) {
			in.owner.do(t, http.MethodGet, api("me"), nil).want(t, http.StatusOK)
		})
		t.Run("setup stays complete", func(t *testing.T) {
			r := as(in.srv, "").do(t, http.MethodPost, api("setup"), map[string]any{
				"code": "anything", "handle": "owner2", "display_name": "Second", "password": ownerPassword,
			})
			if r.status != http.StatusConflict && r.status != http.StatusForbidden {
				t.Errorf("%s: want 409 setup_complete (or 403)", r)
			}
		})
		t.Run("the message is still there", func(t *testing.T) {
			var m message
			in.owner.do(t, http.MethodGet, api("messages", started.Message.ID), nil).want(t, http.StatusOK).decode(t, &m)
			if m.Content != "written before the restart" {
				t.Errorf("content %q", m.Content)
			}
		})
		t.Run("the log goes on from its head", func(t *testing.T) {
			if h := in.owner.mustHead(t); h != headBefore {
				t.Fatalf("head_seq %d after the restart, %d before", h, headBefore)
			}
			in.owner.mustPost(t, started.Thread.ID, "written after the restart")
			evs, head := in.owner.mustAllEvents(t, headBefore)
			if len(evs) != 1 || evs[0].Seq != headBefore+1 || head != headBefore+1 || evs[0].Type != "message.created" {
				t.Errorf("after the restart: events %+v, head %d; want one message.created at %d", evs, head, headBefore+1)
			}
		})
	})
}
