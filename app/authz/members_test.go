package authz_test

import (
	"slices"
	"testing"

	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
)

// TestChannelMembers holds who @here and @channel reach: the active people who may read the
// channel, from the warm cache as it follows the log.
func TestChannelMembers(t *testing.T) {
	f := newFollower(t)
	sp := f.space()
	ch, dm := f.channel(sp, "channel"), f.channel(sp, chat.KindDM)
	owner := f.user("oscar", true)
	viewer, poster, spaceReader, outsider := f.user("vera", false), f.user("pia", false), f.user("sam", false), f.user("otto", false)
	bot, _ := f.agent("echo")
	f.grant(viewer, ch, authz.LevelView)
	f.grant(poster, ch, authz.LevelPost)
	f.grant(bot, ch, authz.LevelManage)
	f.grant(spaceReader, sp, authz.LevelView)
	f.grant(poster, dm, authz.LevelInvoke)
	f.grant(viewer, dm, authz.LevelInvoke)

	members := func(t *testing.T, channel kernel.ID) []kernel.ID {
		t.Helper()
		got, err := f.svc.ChannelMembers(bg, channel)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	sorted := func(ids ...kernel.ID) []kernel.ID { slices.Sort(ids); return ids }

	t.Run("a channel's members are its grant holders, its space's and the owners, people only", func(t *testing.T) {
		got := members(t, ch)
		if want := sorted(owner.ID, viewer.ID, poster.ID, spaceReader.ID); !slices.Equal(got, want) {
			t.Fatalf("members %v, want %v (not %s, not the agent %s)", got, want, outsider.ID, bot.ID)
		}
	})
	t.Run("a DM's members are its participants only", func(t *testing.T) {
		if got, want := members(t, dm), sorted(poster.ID, viewer.ID); !slices.Equal(got, want) {
			t.Fatalf("members %v, want %v", got, want)
		}
	})
	t.Run("a revoked or disabled person is no member any more", func(t *testing.T) {
		f.grant(viewer, ch, authz.LevelNone)
		f.disable(spaceReader)
		if got, want := members(t, ch), sorted(owner.ID, poster.ID); !slices.Equal(got, want) {
			t.Fatalf("members %v, want %v", got, want)
		}
	})
	t.Run("an unknown channel has none", func(t *testing.T) {
		if got := members(t, kernel.NewID()); len(got) != 0 {
			t.Fatalf("members %v", got)
		}
	})
}
