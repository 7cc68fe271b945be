package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/ui/components"
)

func TestPinViews(t *testing.T) {
	alice := kernel.NewID()
	dir := &principalDir{byID: map[kernel.ID]principalInfo{alice: {ID: alice, Handle: "alice", Name: "Alice"}}}
	m := messaging.Message{ID: kernel.NewID(), AuthorID: alice, Content: "keep", CreatedAt: time.Date(2026, 3, 2, 15, 4, 5, 0, time.UTC)}
	pins := []messaging.PinnedMessage{{Pin: messaging.Pin{MessageID: m.ID}, Message: m}}

	t.Run("a pinned message is marked and offers Unpin to who may pin", func(t *testing.T) {
		may := messageAbilities{threadAbilities: threadAbilities{pinned: pinnedSet(pins)}, pin: true}
		v := messageView(m, dir, nil, alice, may, "tok")
		if !v.Pinned || !v.CanPin {
			t.Fatalf("pinned %v, can pin %v", v.Pinned, v.CanPin)
		}
		var b strings.Builder
		if err := components.Message(v).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), `data-testid="message-pinned"`) || !strings.Contains(b.String(), `data-testid="message-unpin"`) ||
			strings.Contains(b.String(), `data-testid="message-pin"`) {
			t.Fatalf("rendered %s", b.String())
		}
	})

	t.Run("one who may not pin is offered neither Pin nor Unpin", func(t *testing.T) {
		v := messageView(m, dir, nil, alice, messageAbilities{}, "tok")
		var b strings.Builder
		if err := components.Message(v).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		if v.Pinned || strings.Contains(b.String(), "message-pin") || strings.Contains(b.String(), "message-unpin") {
			t.Fatalf("rendered %s", b.String())
		}
	})

	t.Run("the header shows the start of a long text on one line, and leads to the message", func(t *testing.T) {
		long := m
		long.Content = "first line\n\n" + strings.Repeat("é", 200)
		got := pinViews([]messaging.PinnedMessage{{Pin: messaging.Pin{MessageID: long.ID}, Message: long}})
		if len(got) != 1 || got[0].Href != "/console/messages/"+string(long.ID) || !strings.HasPrefix(got[0].Text, "first line é") ||
			!strings.HasSuffix(got[0].Text, "…") || len([]rune(got[0].Text)) != pinTextRunes+1 {
			t.Fatalf("pin view %+v", got)
		}
	})
}
