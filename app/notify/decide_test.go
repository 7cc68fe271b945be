package notify_test

import (
	"testing"

	"bothy.dev/bothy/app/notify"
)

func TestDecide(t *testing.T) {
	const (
		all, mentions, none = notify.LevelAll, notify.LevelMentions, notify.LevelNone
	)
	tests := []struct {
		name string
		f    notify.Facts
		want string
	}{
		{"a mention in a channel at its default level notifies", notify.Facts{Mentioned: true, Main: true, Channel: mentions, Thread: mentions}, notify.ReasonMention},
		{"a plain message in a channel at its default level does not", notify.Facts{Main: true, Channel: mentions, Thread: mentions}, ""},
		{"a plain message in a channel at level all notifies", notify.Facts{Main: true, Channel: all, Thread: mentions}, notify.ReasonAll},
		{"a mention in a channel at level all is told as a mention", notify.Facts{Mentioned: true, Main: true, Channel: all, Thread: mentions}, notify.ReasonMention},
		{"a channel at level none silences even a mention", notify.Facts{Mentioned: true, Main: true, Channel: none, Thread: mentions}, ""},
		{"a DM message at the DM's default level notifies", notify.Facts{DM: true, Main: true, Channel: all, Thread: mentions}, notify.ReasonDM},
		{"a DM at level mentions notifies only a mention", notify.Facts{DM: true, Main: true, Channel: mentions, Thread: mentions}, ""},
		{"a DM at level none silences it", notify.Facts{DM: true, Main: true, Channel: none, Thread: mentions}, ""},
		{"a reply in a thread one follows notifies", notify.Facts{Channel: mentions, Thread: all}, notify.ReasonThread},
		{"a reply in a thread one does not follow does not", notify.Facts{Channel: mentions, Thread: mentions}, ""},
		{"a reply in a thread of a channel at level all needs the thread followed", notify.Facts{Channel: all, Thread: mentions}, ""},
		{"a mention in a thread one does not follow notifies", notify.Facts{Mentioned: true, Channel: mentions, Thread: mentions}, notify.ReasonMention},
		{"a thread at level none silences even a mention", notify.Facts{Mentioned: true, Channel: all, Thread: none}, ""},
		{"a followed thread of a channel at level none is silent", notify.Facts{Channel: none, Thread: all}, ""},
		{"a thread's level does not touch the main thread", notify.Facts{Main: true, Channel: all, Thread: none}, notify.ReasonAll},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := notify.Decide(tt.f); got != tt.want {
				t.Fatalf("Decide(%+v) = %q, want %q", tt.f, got, tt.want)
			}
		})
	}
}

func TestParseLevel(t *testing.T) {
	for _, s := range []string{"all", "mentions", "none"} {
		if l, err := notify.ParseLevel(s); err != nil || string(l) != s {
			t.Errorf("%q: %q %v", s, l, err)
		}
	}
	for _, s := range []string{"", "All", "some", " all"} {
		if _, err := notify.ParseLevel(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}
