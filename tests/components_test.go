package tests

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// deployRows are the components the asking agent posts: Approve and Deny, and a select of one
// or two regions.
func deployRows() []botclient.ActionRow {
	return []botclient.ActionRow{
		botclient.Row(botclient.Button("approve", "Approve", botclient.Primary, "yes"), botclient.Button("deny", "Deny", botclient.Danger, "no")),
		botclient.Row(botclient.Select("region", "Where?", 1, 2,
			botclient.SelectOption{Label: "Europe", Value: "eu"}, botclient.SelectOption{Label: "America", Value: "us"})),
	}
}

// askingAgent runs an agent (over the gateway) that answers a mention with a question carrying
// deployRows, and each interaction with a reply in the thread ("approve: yes" …) made with the
// interaction's token, after which it disables the component answered. Each interaction is sent
// on the channel it answers, with what a run call and a post into another thread answered with
// the same token.
type tokenUse struct {
	in             *botclient.Interaction
	runStart, post int // the statuses of a run start and of a post elsewhere with the token
}

func askingAgent(t *testing.T, w *world, a agent, ac *client, elsewhere string) <-chan tokenUse {
	return askingAgentOn(t, w, a, ac, elsewhere, false)
}

// askingAgentOn is askingAgent over the gateway, or over the REST long poll when poll is set.
func askingAgentOn(t *testing.T, w *world, a agent, ac *client, elsewhere string, poll bool) <-chan tokenUse {
	t.Helper()
	got := make(chan tokenUse, 8)
	bot := botclient.NewAgent(w.in.srv.public, a.Token)
	var runID atomic.Value // the run of the invocation, a string
	bot.OnInteraction(func(ctx context.Context, in *botclient.Interaction) error {
		use := tokenUse{in: in}
		if r, err := ac.try(t, http.MethodPost, api("runs", runID.Load().(string), "start"), nil, header("Invocation-Token", in.Token)); err == nil {
			use.runStart = r.status
		}
		if r, err := ac.try(t, http.MethodPost, api("threads", elsewhere, "messages"), map[string]any{"content": "not here"},
			header("Invocation-Token", in.Token)); err == nil {
			use.post = r.status
		}
		if _, err := in.Reply(ctx, in.ComponentID+": "+strings.Join(in.Values, ",")); err != nil {
			return err
		}
		m, err := in.Client().GetMessage(ctx, in.MessageID)
		if err != nil {
			return err
		}
		if _, err := in.Client().SetComponents(ctx, in.MessageID, botclient.Disable(m.Components, in.ComponentID)); err != nil {
			return err
		}
		got <- use
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	handle := func(ctx context.Context, inv *botclient.Invocation) error {
		runID.Store(inv.RunID)
		if _, err := inv.Start(ctx); err != nil {
			return err
		}
		if _, err := inv.ReplyWith(ctx, botclient.NewMessage{Content: "Deploy now?", Components: deployRows()}); err != nil {
			return err
		}
		return inv.Finish(ctx, botclient.Succeeded, nil)
	}
	go func() {
		if poll {
			done <- bot.RunLongPoll(ctx, handle)
			return
		}
		done <- bot.Run(ctx, handle)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Agent.Run = %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Agent.Run did not stop within 10s of its context's end")
		}
	})
	return got
}

// questionOf waits for the agent's message with components in thread th after start.
func questionOf(t *testing.T, reader *client, th string, start int64) event {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		evs, _ := reader.mustAllEvents(t, start)
		for _, e := range evs {
			if e.Type == "message.created" && e.ThreadID == th && e.Data["components"] != nil {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no message with components in thread %s within 15s; events %v", th, types(evs))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestButtonsAndSelects: an agent asks with buttons and a select, a person clicks, the agent
// gets interaction.created with a token for the thread, answers there and disables the button;
// a second click is refused, and so are components on a person's message, an interaction by
// someone who cannot read the channel, and picks the select does not take.
func TestButtonsAndSelects(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		a, ac, start := w.mustPostingAgent(t, "asker")
		th := w.in.owner.mustCreateThread(t, w.shared.ID, "Deploy", "release 1.2").Thread.ID
		other := w.in.owner.mustCreateThread(t, w.shared.ID, "Other", "another thread").Thread.ID
		uses := askingAgent(t, w, a, ac, other)

		postedMessage(t, w.alice, th, "@asker shall we deploy?")
		q := questionOf(t, w.alice, th, start)
		mid := q.Data["id"].(string)
		rows := q.Data["components"].([]any)
		if len(rows) != 2 || q.Data["author_id"] != a.ID {
			t.Fatalf("the question %v", q.Data)
		}

		t.Run("a person's message may not carry components", func(t *testing.T) {
			r := w.alice.do(t, http.MethodPost, api("threads", th, "messages"), map[string]any{"content": "mine",
				"components": []any{map[string]any{"components": []any{map[string]any{"type": "button", "id": "x", "label": "X"}}}}})
			if r.want(t, http.StatusForbidden); r.code() != "components_not_allowed" {
				t.Fatalf("code %q", r.code())
			}
		})

		t.Run("someone who cannot read the channel gets 404", func(t *testing.T) {
			w.bob.do(t, http.MethodPost, api("messages", mid, "interactions"), map[string]any{"component_id": "approve"}).
				want(t, http.StatusNotFound)
		})

		t.Run("picks the select does not take are refused", func(t *testing.T) {
			r := w.alice.do(t, http.MethodPost, api("messages", mid, "interactions"), map[string]any{"component_id": "region", "values": []string{"mars"}})
			if r.want(t, http.StatusBadRequest); r.code() != "validation_failed" {
				t.Fatalf("code %q", r.code())
			}
		})

		t.Run("a click reaches the agent with a token for the thread; it answers there and disables the button", func(t *testing.T) {
			obj := w.alice.do(t, http.MethodPost, api("messages", mid, "interactions"), map[string]any{"component_id": "approve"}).
				want(t, http.StatusAccepted).obj()
			var use tokenUse
			select {
			case use = <-uses:
			case <-time.After(15 * time.Second):
				t.Fatal("the agent got no interaction.created within 15s")
			}
			in := use.in
			if in.ID != obj["interaction_id"] || in.MessageID != mid || in.ThreadID != th || in.UserID != w.aliceU.ID ||
				strings.Join(in.Values, ",") != "yes" || in.Token == "" {
				t.Fatalf("interaction %+v, answer %v", in, obj)
			}
			if use.runStart != http.StatusUnauthorized || use.post != http.StatusForbidden {
				t.Fatalf("with the interaction's token a run start answered %d (want 401), a post into another thread %d (want 403)", use.runStart, use.post)
			}
			deadline := time.Now().Add(15 * time.Second)
			for {
				var reply, disabled bool
				evs, _ := w.alice.mustAllEvents(t, start)
				for _, e := range evs {
					if e.Type == "message.created" && e.ThreadID == th && e.Data["content"] == "approve: yes" && e.Data["run_id"] == nil {
						reply = true
					}
					if e.Type == "message.updated" && e.Data["id"] == mid {
						row := e.Data["components"].([]any)[0].(map[string]any)["components"].([]any)
						disabled = row[0].(map[string]any)["disabled"] == true && row[1].(map[string]any)["disabled"] == false
					}
				}
				if reply && disabled {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("reply %v, button disabled %v within 15s; events %v", reply, disabled, types(evs))
				}
				time.Sleep(50 * time.Millisecond)
			}
		})

		t.Run("a second click on the disabled button answers 409", func(t *testing.T) {
			r := w.alice.do(t, http.MethodPost, api("messages", mid, "interactions"), map[string]any{"component_id": "approve"})
			if r.want(t, http.StatusConflict); r.code() != "component_disabled" {
				t.Fatalf("code %q", r.code())
			}
		})

		t.Run("a pick of two regions reaches the agent with both values", func(t *testing.T) {
			w.alice.do(t, http.MethodPost, api("messages", mid, "interactions"), map[string]any{"component_id": "region", "values": []string{"us", "eu"}}).
				want(t, http.StatusAccepted)
			select {
			case use := <-uses:
				if use.in.ComponentID != "region" || strings.Join(use.in.Values, ",") != "us,eu" {
					t.Fatalf("interaction %+v", use.in)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("the agent got no interaction.created within 15s")
			}
		})

		t.Run("a click repeated with its Idempotency-Key answers the first interaction again", func(t *testing.T) {
			click := func() *response {
				return w.alice.do(t, http.MethodPost, api("messages", mid, "interactions"), map[string]any{"component_id": "deny"},
					header("Idempotency-Key", "deny-once")).want(t, http.StatusAccepted)
			}
			first, again := click(), click()
			if first.obj()["interaction_id"] != again.obj()["interaction_id"] || again.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("first %v, again %v (replayed %q)", first.obj(), again.obj(), again.header.Get("Idempotent-Replayed"))
			}
			select {
			case use := <-uses:
				if use.in.ID != first.obj()["interaction_id"] {
					t.Fatalf("interaction %+v", use.in)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("the agent got no interaction.created within 15s")
			}
		})

		t.Run("an agent on the REST long poll gets the click with a token for the thread too", func(t *testing.T) {
			pa, pac, pstart := w.mustPostingAgent(t, "poll-asker")
			pth := w.in.owner.mustCreateThread(t, w.shared.ID, "Poll deploy", "release 1.3").Thread.ID
			puses := askingAgentOn(t, w, pa, pac, other, true)
			postedMessage(t, w.alice, pth, "@poll-asker shall we deploy?")
			pmid := questionOf(t, w.alice, pth, pstart).Data["id"].(string)
			w.alice.do(t, http.MethodPost, api("messages", pmid, "interactions"), map[string]any{"component_id": "approve"}).
				want(t, http.StatusAccepted)
			select {
			case use := <-puses:
				if use.in.MessageID != pmid || use.in.Token == "" || use.runStart != http.StatusUnauthorized || use.post != http.StatusForbidden {
					t.Fatalf("interaction %+v: a run start with its token answered %d, a post elsewhere %d", use.in, use.runStart, use.post)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("the polling agent got no interaction.created within 15s")
			}
			answerOfContent(t, w.alice, pth, pstart, "approve: yes")
		})

		t.Run("the author removes the components with null; a click then answers 409 component_unavailable", func(t *testing.T) {
			m := ac.do(t, http.MethodPatch, api("messages", mid), map[string]any{"components": nil}).want(t, http.StatusOK).obj()
			if _, has := m["components"]; has || m["content"] != "Deploy now?" || m["edited_at"] != nil {
				t.Fatalf("the message after the removal %v", m)
			}
			r := w.alice.do(t, http.MethodPost, api("messages", mid, "interactions"), map[string]any{"component_id": "region", "values": []string{"eu"}})
			if r.want(t, http.StatusConflict); r.code() != "component_unavailable" {
				t.Fatalf("code %q", r.code())
			}
		})
	})
}

// answerOfContent waits for a message with content in thread th after start that answers no run.
func answerOfContent(t *testing.T, reader *client, th string, start int64, content string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		evs, _ := reader.mustAllEvents(t, start)
		for _, e := range evs {
			if e.Type == "message.created" && e.ThreadID == th && e.Data["content"] == content && e.Data["run_id"] == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no message %q in thread %s within 15s; events %v", content, th, types(evs))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// An agent's buttons may open a thread or answer under a message too, not only join a thread.
func TestComponentsOnNewThreadsAndReplies(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "post")
		_, ac, _ := w.mustPostingAgent(t, "opener")
		button := []any{map[string]any{"components": []any{map[string]any{"type": "button", "id": "ack", "label": "Got it"}}}}
		componentIDs := func(t *testing.T, m map[string]any) []string {
			t.Helper()
			var ids []string
			rows, _ := m["components"].([]any)
			for _, row := range rows {
				for _, c := range row.(map[string]any)["components"].([]any) {
					ids = append(ids, c.(map[string]any)["id"].(string))
				}
			}
			return ids
		}

		t.Run("an agent opens a thread whose first message carries buttons, and a person clicks one", func(t *testing.T) {
			var out struct {
				Message map[string]any `json:"message"`
			}
			ac.do(t, http.MethodPost, api("channels", w.shared.ID, "threads"), map[string]any{"title": "Nightly build",
				"content": "The nightly build failed.", "components": button}).want(t, http.StatusCreated).decode(t, &out)
			if ids := componentIDs(t, out.Message); len(ids) != 1 || ids[0] != "ack" {
				t.Fatalf("the first message %v", out.Message)
			}
			w.alice.do(t, http.MethodPost, api("messages", out.Message["id"].(string), "interactions"),
				map[string]any{"component_id": "ack"}).want(t, http.StatusAccepted)
		})

		t.Run("an agent's reply under a message carries buttons", func(t *testing.T) {
			parent := w.alice.mustPost(t, w.shared.MainThreadID, "is the build green?")
			var out struct {
				Message map[string]any `json:"message"`
			}
			ac.do(t, http.MethodPost, api("messages", parent.ID, "thread"), map[string]any{"content": "No: see the log.",
				"components": button}).want(t, http.StatusCreated).decode(t, &out)
			if ids := componentIDs(t, out.Message); len(ids) != 1 || ids[0] != "ack" {
				t.Fatalf("the reply %v", out.Message)
			}
		})

		t.Run("a person's new thread or reply may not carry them, and nothing is made", func(t *testing.T) {
			var before page[map[string]any]
			w.alice.do(t, http.MethodGet, api("channels", w.shared.ID, "threads"), nil).want(t, http.StatusOK).decode(t, &before)
			r := w.alice.do(t, http.MethodPost, api("channels", w.shared.ID, "threads"), map[string]any{"title": "Mine",
				"content": "mine", "components": button})
			if r.want(t, http.StatusForbidden); r.code() != "components_not_allowed" {
				t.Fatalf("code %q", r.code())
			}
			parent := w.alice.mustPost(t, w.shared.MainThreadID, "another question")
			r = w.alice.do(t, http.MethodPost, api("messages", parent.ID, "thread"), map[string]any{"content": "mine", "components": button})
			if r.want(t, http.StatusForbidden); r.code() != "components_not_allowed" {
				t.Fatalf("reply: code %q", r.code())
			}
			var after page[map[string]any]
			w.alice.do(t, http.MethodGet, api("channels", w.shared.ID, "threads"), nil).want(t, http.StatusOK).decode(t, &after)
			if len(after.Items) != len(before.Items) {
				t.Fatalf("threads %d, then %d: a refused post made one", len(before.Items), len(after.Items))
			}
		})
	})
}
