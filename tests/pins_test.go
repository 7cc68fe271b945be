package tests

import (
	"net/http"
	"slices"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// TestPins pins and unpins through the REST API on the real binary: the pin and its repeat, the
// channel's list, the rights, bad input, and the events a reader of the channel gets over the
// gateway and in catch-up, which one who cannot read the channel never gets; deleting a pinned
// message unpins it.
func TestPins(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		sp := in.owner.mustCreateSpace(t, "Talk")
		ch := in.owner.mustCreateChannel(t, sp.ID, "general")
		bob, bobc := in.mustCreateUser(t, "bob")
		carol, carolc := in.mustCreateUser(t, "carol")
		_, davec := in.mustCreateUser(t, "dave")
		in.owner.mustGrant(t, ch.ID, bob.ID, "post")
		in.owner.mustGrant(t, ch.ID, carol.ID, "view")
		start := in.owner.mustHead(t)
		reader := mustStartBot(t, "carol", in.srv.public, carolc.token, botclient.WithCursor(start))
		outsider := mustStartBot(t, "dave", in.srv.public, davec.token, botclient.WithCursor(start))

		m := in.owner.mustPost(t, ch.MainThreadID, "keep this at hand")
		var pin map[string]any
		t.Run("a poster pins a message and the pin answers who and when", func(t *testing.T) {
			r := bobc.do(t, http.MethodPut, api("messages", m.ID, "pin"), nil).want(t, http.StatusOK)
			pin = r.obj()
			if pin["message_id"] != m.ID || pin["channel_id"] != ch.ID || pin["thread_id"] != ch.MainThreadID ||
				pin["pinned_by"] != bob.ID || pin["pinned_at"] == nil {
				t.Fatalf("pin %v", pin)
			}
		})
		t.Run("the same pin again answers the pin as it is", func(t *testing.T) {
			again := in.owner.do(t, http.MethodPut, api("messages", m.ID, "pin"), nil).want(t, http.StatusOK).obj()
			if again["pinned_by"] != bob.ID || again["pinned_at"] != pin["pinned_at"] {
				t.Fatalf("repeat %v, first %v", again, pin)
			}
		})
		t.Run("a reader lists the channel's pins with the message", func(t *testing.T) {
			var l struct {
				Items []struct {
					MessageID string  `json:"message_id"`
					Message   message `json:"message"`
				} `json:"items"`
			}
			carolc.do(t, http.MethodGet, api("channels", ch.ID, "pins"), nil).want(t, http.StatusOK).decode(t, &l)
			if len(l.Items) != 1 || l.Items[0].MessageID != m.ID || l.Items[0].Message.Content != "keep this at hand" {
				t.Fatalf("pins %+v", l.Items)
			}
		})
		t.Run("bad input changes nothing", func(t *testing.T) {
			for _, c := range []struct {
				name   string
				who    *client
				method string
				path   string
				status int
				code   string
			}{
				{"an unknown message is not found", bobc, http.MethodPut, api("messages", "01900000-0000-7000-8000-000000000000", "pin"), 404, "not_found"},
				{"a message one cannot read is not found", davec, http.MethodPut, api("messages", m.ID, "pin"), 404, "not_found"},
				{"the pins of a channel one cannot read are not found", davec, http.MethodGet, api("channels", ch.ID, "pins"), 404, "not_found"},
				{"a reader may not pin another's message", carolc, http.MethodPut, api("messages", m.ID, "pin"), 403, "forbidden"},
				{"a reader may not unpin another's message", carolc, http.MethodDelete, api("messages", m.ID, "pin"), 403, "forbidden"},
			} {
				t.Run(c.name, func(t *testing.T) {
					r := c.who.do(t, c.method, c.path, nil).want(t, c.status)
					if r.code() != c.code {
						t.Fatalf("code %q, want %q", r.code(), c.code)
					}
				})
			}
		})
		var unpinnedAt int64
		t.Run("an unpin answers 204, twice", func(t *testing.T) {
			bobc.do(t, http.MethodDelete, api("messages", m.ID, "pin"), nil).want(t, http.StatusNoContent)
			unpinnedAt = in.owner.mustHead(t)
			bobc.do(t, http.MethodDelete, api("messages", m.ID, "pin"), nil).want(t, http.StatusNoContent)
			if in.owner.mustHead(t) != unpinnedAt {
				t.Fatal("the second unpin appended an event")
			}
		})
		t.Run("deleting a pinned message unpins it, and it cannot be pinned again", func(t *testing.T) {
			in.owner.do(t, http.MethodPut, api("messages", m.ID, "pin"), nil).want(t, http.StatusOK)
			in.owner.do(t, http.MethodDelete, api("messages", m.ID), nil).want(t, http.StatusNoContent)
			var l page[map[string]any]
			carolc.do(t, http.MethodGet, api("channels", ch.ID, "pins"), nil).want(t, http.StatusOK).decode(t, &l)
			if len(l.Items) != 0 {
				t.Fatalf("pins after the delete: %v", l.Items)
			}
			if r := bobc.do(t, http.MethodPut, api("messages", m.ID, "pin"), nil).want(t, http.StatusGone); r.code() != "message_deleted" {
				t.Fatalf("code %q", r.code())
			}
		})

		want := []string{"message.created", "message.pinned", "message.unpinned", "message.pinned", "message.unpinned", "message.deleted"}
		head := in.owner.mustHead(t)
		t.Run("a reader of the channel gets the pin events in catch-up", func(t *testing.T) {
			evs, _ := carolc.mustAllEvents(t, start)
			var got []string
			for _, e := range evs {
				got = append(got, e.Type)
				if e.Type == "message.pinned" && (e.ChannelID != ch.ID || e.ThreadID != ch.MainThreadID || e.Data["message_id"] != m.ID) {
					t.Errorf("pinned event %+v", e)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("catch-up %v, want %v", got, want)
			}
		})
		t.Run("and over the gateway", func(t *testing.T) {
			reader.waitSeq(t, head, 10*time.Second)
			var got []string
			for _, e := range reader.handed() {
				got = append(got, e.Type)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("gateway %v, want %v", got, want)
			}
		})
		t.Run("one who cannot read the channel gets none of them", func(t *testing.T) {
			time.Sleep(200 * time.Millisecond)
			for _, e := range outsider.handed() {
				if e.ChannelID == ch.ID {
					t.Errorf("dave got %s of the channel", e.Type)
				}
			}
			evs, _ := davec.mustAllEvents(t, start)
			for _, e := range evs {
				if e.ChannelID == ch.ID {
					t.Errorf("dave's catch-up holds %s of the channel", e.Type)
				}
			}
		})
	})
}
