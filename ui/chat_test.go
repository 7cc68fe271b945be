package ui

import (
	"context"
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

	t.Run("reactions are counted by emoji in the order they first came, with the person's own marked", func(t *testing.T) {
		v := messageView(m, dir, rs, bob, true, "tok")
		want := []components.ReactionView{{Emoji: "👍", Count: 2, Mine: true}, {Emoji: "🎉", Count: 1, Mine: true}}
		if len(v.Reactions) != 2 || v.Reactions[0] != want[0] || v.Reactions[1] != want[1] {
			t.Fatalf("reactions %+v", v.Reactions)
		}
		if v.AuthorHandle != "alice" || v.Time != "Mar 2 15:04" || v.Stamp != "2026-03-02T15:04:05Z" || len(v.Palette) == 0 {
			t.Fatalf("%+v", v)
		}
		if string(v.Body) != "<p><strong>hi</strong> &lt;b&gt;</p>\n" {
			t.Fatalf("body %q", v.Body)
		}
	})

	t.Run("a person who may not react gets no palette; a deleted message no body", func(t *testing.T) {
		if v := messageView(m, dir, nil, alice, false, "tok"); len(v.Palette) != 0 {
			t.Fatalf("%+v", v)
		}
		d := m
		d.Deleted, d.Content = true, ""
		if v := messageView(d, dir, nil, alice, true, "tok"); !v.Deleted || v.Body != "" || len(v.Palette) != 0 {
			t.Fatalf("%+v", v)
		}
	})

	t.Run("an unknown author shows as someone", func(t *testing.T) {
		o := m
		o.AuthorID = kernel.NewID()
		if v := messageView(o, dir, nil, alice, true, ""); v.AuthorHandle != "unknown" {
			t.Fatalf("%+v", v)
		}
	})

	t.Run("a refused trigger says why", func(t *testing.T) {
		s := "no_invoke_right"
		o := m
		o.TriggerState = &s
		if v := messageView(o, dir, nil, alice, true, ""); !strings.Contains(v.Note, "may not invoke") {
			t.Fatalf("note %q", v.Note)
		}
		s = "triggered"
		if v := messageView(o, dir, nil, alice, true, ""); v.Note != "" {
			t.Fatalf("note %q", v.Note)
		}
	})

	t.Run("the component escapes everything but the rendered body", func(t *testing.T) {
		o := m
		dir := &principalDir{byID: map[kernel.ID]principalInfo{alice: {ID: alice, Handle: "a\"><script>", Name: "<i>x</i>"}}}
		var b strings.Builder
		if err := components.Message(messageView(o, dir, rs, bob, true, "tok")).Render(context.Background(), &b); err != nil {
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
