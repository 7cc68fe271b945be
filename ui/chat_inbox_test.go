package ui

import (
	"testing"

	"bothy.dev/bothy/app/inbox"
	"bothy.dev/bothy/app/kernel"
)

// The left column shows a channel's unread messages (its main thread's) and every unread
// mention in it, its threads' included, whichever order the entries come in; a thread keeps its
// own counts.
func TestUnreadMaps(t *testing.T) {
	ch, other, th := kernel.NewID(), kernel.NewID(), kernel.NewID()
	mainEntry := inbox.Entry{ChannelID: ch, UnreadCount: 4, MentionCount: 1}
	threadEntry := inbox.Entry{ChannelID: ch, ThreadID: &th, UnreadCount: 2, MentionCount: 2}
	onlyThread := inbox.Entry{ChannelID: other, ThreadID: new(kernel.NewID()), UnreadCount: 1, MentionCount: 1}
	for _, order := range [][]inbox.Entry{{mainEntry, threadEntry, onlyThread}, {onlyThread, threadEntry, mainEntry}} {
		byChannel, byThread := unreadMaps(inbox.Unread{Items: order})
		if got := byChannel[ch]; got.UnreadCount != 4 || got.MentionCount != 3 {
			t.Errorf("channel %+v, want 4 unread and 3 mentions", got)
		}
		if got := byThread[th]; got.UnreadCount != 2 || got.MentionCount != 2 {
			t.Errorf("thread %+v, want its own 2 and 2", got)
		}
		if got := byChannel[other]; got.UnreadCount != 0 || got.MentionCount != 1 {
			t.Errorf("a channel read but for a thread %+v, want no unread and its thread's mention", got)
		}
	}
}
