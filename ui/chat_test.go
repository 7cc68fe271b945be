package ui

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/ui/components"
)

func TestMessageView(t *testing.T) {
	alice, bob := kernel.NewID(), kernel.NewID()
	dir := &principalDir{byID: map[kernel.ID]principalInfo{alice: {ID: alice, Handle: "alice", Name: "Alice"}}}
	t0 := time.Date(2026, 3, 2, 15, 4, 5, 0, time.UTC)
	m := messaging.Message{ID: kernel.NewID(), AuthorID: alice, Content: "**hi** <b>", CreatedAt: t0}
	rs := []messaging.Reaction{
		{MessageID: m.ID, PrincipalID: bob, Emoji: "🎉", CreatedAt: t0.Add(2 * time.Second)},
		{MessageID: m.ID, PrincipalID: alice, Emoji: "👍", CreatedAt: t0.Add(time.Second)},
		{MessageID: m.ID, PrincipalID: bob, Emoji: "👍", CreatedAt: t0.Add(3 * time.Second)},
	}

	reacts := messageAbilities{threadAbilities: threadAbilities{react: true}}

	t.Run("reactions are counted by emoji in the order they first came, with the person's own marked", func(t *testing.T) {
		v := messageView(m, dir, rs, bob, reacts, "tok")
		want := []components.ReactionView{{Emoji: "👍", Count: 2, Mine: true}, {Emoji: "🎉", Count: 1, Mine: true}}
		if len(v.Reactions) != 2 || v.Reactions[0] != want[0] || v.Reactions[1] != want[1] {
			t.Fatalf("reactions %+v", v.Reactions)
		}
		if v.AuthorHandle != "alice" || v.Time != "Mar 2 15:04 UTC" || v.FullTime != "Monday, March 2, 2026, 15:04:05 UTC" || v.Stamp != "2026-03-02T15:04:05Z" || len(v.Palette) == 0 {
			t.Fatalf("%+v", v)
		}
		if string(v.Body) != "<p><strong>hi</strong> &lt;b&gt;</p>\n" {
			t.Fatalf("body %q", v.Body)
		}
	})

	t.Run("a person who may not react gets no palette; a deleted message no body", func(t *testing.T) {
		if v := messageView(m, dir, nil, alice, messageAbilities{}, "tok"); len(v.Palette) != 0 {
			t.Fatalf("%+v", v)
		}
		d := m
		d.Deleted, d.Content = true, ""
		if v := messageView(d, dir, nil, alice, reacts, "tok"); !v.Deleted || v.Body != "" || len(v.Palette) != 0 {
			t.Fatalf("%+v", v)
		}
	})

	t.Run("an unknown author shows as someone", func(t *testing.T) {
		o := m
		o.AuthorID = kernel.NewID()
		if v := messageView(o, dir, nil, alice, reacts, ""); v.AuthorHandle != "unknown" {
			t.Fatalf("%+v", v)
		}
	})

	t.Run("a refused trigger says why", func(t *testing.T) {
		s := "no_invoke_right"
		o := m
		o.TriggerState = &s
		if v := messageView(o, dir, nil, alice, reacts, ""); !strings.Contains(v.Note, "may not invoke") {
			t.Fatalf("note %q", v.Note)
		}
		s = "triggered"
		if v := messageView(o, dir, nil, alice, reacts, ""); v.Note != "" {
			t.Fatalf("note %q", v.Note)
		}
	})

	t.Run("each refused agent says why under the message, also beside another agent's run", func(t *testing.T) {
		o := m
		s := "triggered"
		run := kernel.NewID()
		o.TriggerState = &s
		o.Triggers = []messaging.AgentTrigger{{AgentID: bob, State: "triggered", RunID: &run},
			{AgentID: alice, State: "agent_disabled"}, {AgentID: bob, State: "agent_cannot_read"}}
		v := messageView(o, dir, nil, alice, reacts, "")
		want := []string{"@" + dir.get(alice).Handle + " is disabled.", "@" + dir.get(bob).Handle + " cannot read this channel."}
		if v.Note != "" || !slices.Equal(v.Refusals, want) {
			t.Fatalf("note %q, refusals %q, want %q", v.Note, v.Refusals, want)
		}
		var b strings.Builder
		if err := components.Message(v).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), `data-testid="message-refusal">@`+dir.get(alice).Handle+` is disabled.<`) {
			t.Fatalf("page %s", b.String())
		}
	})

	t.Run("the component escapes everything but the rendered body", func(t *testing.T) {
		o := m
		dir := &principalDir{byID: map[kernel.ID]principalInfo{alice: {ID: alice, Handle: "a\"><script>", Name: "<i>x</i>"}}}
		var b strings.Builder
		if err := components.Message(messageView(o, dir, rs, bob, reacts, "tok")).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "<script>") || strings.Contains(b.String(), "<i>") || !strings.Contains(b.String(), "<strong>hi</strong>") {
			t.Fatalf("%s", b.String())
		}
	})
}

func TestPlaceRuns(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 15, 0, 0, 0, time.UTC)
	msg := func(min int) messaging.Message {
		return messaging.Message{ID: kernel.NewID(), CreatedAt: t0.Add(time.Duration(min) * time.Minute)}
	}
	run := func(min int, trigger *messaging.Message) runs.Run {
		r := runs.Run{Summary: runs.Summary{ID: kernel.NewID(), CreatedAt: t0.Add(time.Duration(min) * time.Minute)}}
		if trigger != nil {
			id := trigger.ID
			r.TriggerMessageID = &id
		}
		return r
	}
	older := msg(0)
	m1, m2 := msg(10), msg(20)
	list := []runs.Run{run(1, &older), run(11, &m1), run(12, &m1), run(15, nil), run(21, &m2), run(5, nil)}
	cards := make([]components.RunCardView, len(list))
	for i, r := range list {
		cards[i] = components.RunCardView{ID: string(r.ID)}
	}
	view := func(m messaging.Message) components.MessageView { return components.MessageView{ID: string(m.ID)} }
	order := func(latest bool) []string {
		var out []string
		for _, it := range placeRuns([]messaging.Message{m1, m2}, list, cards, latest, view) {
			if it.Message != nil {
				out = append(out, "m"+it.Message.ID)
			} else {
				out = append(out, "r"+it.Run.ID)
			}
		}
		return out
	}
	t.Run("runs follow their message; the rest of the newest page's runs go at the end", func(t *testing.T) {
		want := []string{"m" + string(m1.ID), "r" + string(list[1].ID), "r" + string(list[2].ID), "m" + string(m2.ID),
			"r" + string(list[4].ID), "r" + string(list[3].ID)}
		if got := order(true); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("got  %v\nwant %v", got, want)
		}
	})
	t.Run("an older page shows only the runs of its messages", func(t *testing.T) {
		if got := order(false); len(got) != 5 {
			t.Fatalf("got %v", got)
		}
	})
}

func TestMessageActions(t *testing.T) {
	alice := kernel.NewID()
	dir := &principalDir{byID: map[kernel.ID]principalInfo{alice: {ID: alice, Handle: "alice", Name: "Alice"}}}
	m := messaging.Message{ID: kernel.NewID(), AuthorID: alice, Content: "hi", CreatedAt: time.Date(2026, 3, 2, 15, 4, 5, 0, time.UTC)}
	render := func(t *testing.T, may messageAbilities) string {
		t.Helper()
		var b strings.Builder
		if err := components.Message(messageView(m, dir, nil, alice, may, "tok")).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}

	t.Run("the time is the UTC fallback in a time element with its RFC 3339 stamp and the whole time on hover", func(t *testing.T) {
		want := `<time datetime="2026-03-02T15:04:05Z" title="Monday, March 2, 2026, 15:04:05 UTC">Mar 2 15:04 UTC</time>`
		if h := render(t, messageAbilities{}); !strings.Contains(h, want) {
			t.Fatalf("no %s in %s", want, h)
		}
	})

	t.Run("a reader gets only the link; each action shows only when allowed", func(t *testing.T) {
		h := render(t, messageAbilities{})
		if !strings.Contains(h, `href="/console/messages/`+string(m.ID)+`" data-action="copy"`) {
			t.Fatalf("no permalink: %s", h)
		}
		for _, id := range []string{"message-reply", "message-edit", "message-delete"} {
			if strings.Contains(h, `data-testid="`+id+`"`) {
				t.Errorf("a reader is offered %s", id)
			}
		}
		h = render(t, messageAbilities{threadAbilities: threadAbilities{reply: true, inThread: true}, edit: true, delete: true})
		for _, want := range []string{`href="/console/messages/` + string(m.ID) + `/edit" data-action="edit"`,
			`href="/console/messages/` + string(m.ID) + `/delete" data-action="delete"`,
			`href="/console/messages/` + string(m.ID) + `/reply" data-action="quote"`, "data-can-edit"} {
			if !strings.Contains(h, want) {
				t.Errorf("no %s in %s", want, h)
			}
		}
		h = render(t, messageAbilities{threadAbilities: threadAbilities{reply: true}})
		if !strings.Contains(h, "Reply in thread") || strings.Contains(h, `data-action="quote"`) {
			t.Errorf("a main thread's reply is not a new thread: %s", h)
		}
	})

	t.Run("a deleted message offers nothing", func(t *testing.T) {
		d := m
		d.Deleted = true
		var b strings.Builder
		v := messageView(d, dir, nil, alice, messageAbilities{threadAbilities: threadAbilities{reply: true}, edit: true, delete: true}, "tok")
		if err := components.Message(v).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "message-actions") || v.CanEdit || v.CanDelete {
			t.Fatalf("%s", b.String())
		}
	})
}

func TestReply(t *testing.T) {
	m := messaging.Message{ID: kernel.NewID(), Content: "# Release 1.0\nwhat goes in?\nand when?\nand who?"}
	t.Run("a quote takes the first lines, marks the cut and links to the message", func(t *testing.T) {
		q := replyQuote(m, "alice", "https://chat.example/console/messages/x")
		want := "> # Release 1.0\n> what goes in?\n> and when?\n> …\n> — @alice, https://chat.example/console/messages/x\n\n"
		if q != want {
			t.Fatalf("quote %q\nwant  %q", q, want)
		}
	})
	t.Run("a long message is quoted to a bound", func(t *testing.T) {
		long := m
		long.Content = strings.Repeat("ü", 1000)
		if q := replyQuote(long, "a", "l"); strings.Count(q, "ü") != replyQuoteRunes || !strings.Contains(q, "> …\n") {
			t.Fatalf("%d runes quoted: %q", strings.Count(q, "ü"), q)
		}
	})
	t.Run("a thread started by a reply is titled after the first line", func(t *testing.T) {
		if got := replyTitle(m.Content); got != "Re: Release 1.0" {
			t.Fatalf("%q", got)
		}
		if got := replyTitle(strings.Repeat("word ", 40)); !strings.HasSuffix(got, "…") || len([]rune(got)) > replyTitleRunes+4 {
			t.Fatalf("%q", got)
		}
	})
}

func TestRunCardWords(t *testing.T) {
	run := func(s runs.Status, reason runs.Reason) runs.Run {
		return runs.Run{Summary: runs.Summary{Status: s, Reason: reason}}
	}
	t.Run("every reason the server gives reads as a sentence, never as its code", func(t *testing.T) {
		for _, reason := range []runs.Reason{runs.ReasonAgentUnavailable, runs.ReasonStale, runs.ReasonInterrupted,
			runs.ReasonCancelTimeout, runs.ReasonPermissionRevoked, runs.ReasonAgentDisabled, runs.ReasonAgentError} {
			status := runs.StatusFailed
			if reason == runs.ReasonCancelTimeout {
				status = runs.StatusCancelled
			}
			got := runExplain(run(status, reason), "echo")
			if got == "" || strings.Contains(got, string(reason)) || strings.Contains(got, "%") || !strings.Contains(got, "@echo") {
				t.Errorf("%s: %q", reason, got)
			}
		}
	})
	t.Run("an agent's own code is its failure; a run that did not fail explains nothing", func(t *testing.T) {
		if got := runExplain(run(runs.StatusFailed, "quota"), "echo"); !strings.Contains(got, "@echo reported a failure (quota)") {
			t.Errorf("%q", got)
		}
		if got := runExplain(run(runs.StatusCancelled, ""), "echo"); !strings.Contains(got, "Cancelled") {
			t.Errorf("%q", got)
		}
		for _, s := range []runs.Status{runs.StatusQueued, runs.StatusRunning, runs.StatusSucceeded} {
			if got := runExplain(run(s, ""), "echo"); got != "" {
				t.Errorf("%s: %q", s, got)
			}
		}
	})
	t.Run("no step of an ended run shows as running", func(t *testing.T) {
		for _, s := range []runs.Status{runs.StatusFailed, runs.StatusCancelled, runs.StatusSucceeded} {
			if got := stepStatus(s, runs.StepRunning); got != "stopped" {
				t.Errorf("%s: a running step shows %q", s, got)
			}
			if got := stepStatus(s, runs.StepDone); got != "done" {
				t.Errorf("%s: a done step shows %q", s, got)
			}
		}
		if got := stepStatus(runs.StatusRunning, runs.StepRunning); got != "running" {
			t.Errorf("a running run's running step shows %q", got)
		}
	})
}
