package storage_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/notify"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// TestNotifyStore holds the repository of notification levels, thread subscriptions and the
// notifier's cursor on both engines.
func TestNotifyStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		e := newRunEnv(t, eng)
		st := storage.NewNotifyStore(e.db)
		t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		in := func(f func(ctx context.Context) error) {
			t.Helper()
			if err := e.db.Do(bg, f); err != nil {
				t.Fatal(err)
			}
		}
		parent := e.post(t, e.pia, "a plan for @paul and @echo")
		th, reply, _, err := e.msgs.Reply(bg, e.paul, parent.ID, messaging.NewReply{Content: "yes"})
		if err != nil {
			t.Fatal(err)
		}

		t.Run("a level reads back as set, and a second set replaces it", func(t *testing.T) {
			if _, ok, err := st.Level(bg, e.pia.ID, e.channel.ID); ok || err != nil {
				t.Fatalf("before any choice: ok %v, %v", ok, err)
			}
			for _, l := range []notify.Level{notify.LevelAll, notify.LevelNone} {
				if err := st.SetLevel(bg, e.pia.ID, e.channel.ID, l, t0); err != nil {
					t.Fatal(err)
				}
				if got, ok, err := st.Level(bg, e.pia.ID, e.channel.ID); got != l || !ok || err != nil {
					t.Fatalf("got %q %v %v, want %q", got, ok, err, l)
				}
			}
		})

		t.Run("the channel's choices are found by level, and the levels of given people", func(t *testing.T) {
			if err := st.SetLevel(bg, e.paul.ID, e.channel.ID, notify.LevelAll, t0); err != nil {
				t.Fatal(err)
			}
			if got, err := st.ChannelChoosing(bg, e.channel.ID, notify.LevelAll); err != nil || !slices.Equal(got, []kernel.ID{e.paul.ID}) {
				t.Fatalf("all: %v %v", got, err)
			}
			got, err := st.ChannelLevels(bg, e.channel.ID, []kernel.ID{e.pia.ID, e.paul.ID, e.olga.ID})
			if err != nil || len(got) != 2 || got[e.pia.ID] != notify.LevelNone || got[e.paul.ID] != notify.LevelAll {
				t.Fatalf("levels %v %v", got, err)
			}
		})

		t.Run("a writer and the parent's author follow a thread, and a choice made before stays", func(t *testing.T) {
			if err := st.SetSubscription(bg, e.olga.ID, th.ID, notify.LevelNone, t0); err != nil {
				t.Fatal(err)
			}
			in(func(ctx context.Context) error {
				if err := st.Follow(ctx, th.ID, e.paul.ID, parent.ID, t0); err != nil {
					return err
				}
				return st.Follow(ctx, th.ID, e.olga.ID, kernel.NilID, t0)
			})
			got, err := st.ThreadLevels(bg, th.ID)
			want := map[kernel.ID]notify.Level{e.paul.ID: notify.LevelAll, e.pia.ID: notify.LevelAll, e.olga.ID: notify.LevelNone}
			if err != nil || len(got) != len(want) {
				t.Fatalf("levels %v %v, want %v", got, err, want)
			}
			for id, l := range want {
				if got[id] != l {
					t.Errorf("%s: %q, want %q", id, got[id], l)
				}
			}
			if l, ok, err := st.Subscription(bg, e.pia.ID, th.ID); l != notify.LevelAll || !ok || err != nil {
				t.Fatalf("pia: %q %v %v", l, ok, err)
			}
			if _, ok, err := st.Subscription(bg, e.pia.ID, e.channel.MainThreadID); ok || err != nil {
				t.Fatalf("another thread: %v %v", ok, err)
			}
		})

		t.Run("an agent's message gets no follower for its author", func(t *testing.T) {
			storage.ExecInTest(t, e.db, `UPDATE messages SET author_id = ? WHERE id = ?`, string(e.echo.ID), string(reply.ID))
			in(func(ctx context.Context) error { return st.Follow(ctx, th.ID, kernel.NilID, reply.ID, t0) })
			if _, ok, _ := st.Subscription(bg, e.echo.ID, th.ID); ok {
				t.Fatal("the agent follows the thread")
			}
		})

		t.Run("a message's mentions and the active people among ids are read", func(t *testing.T) {
			got, err := st.Mentioned(bg, parent.ID)
			slices.Sort(got)
			want := []kernel.ID{e.paul.ID, e.echo.ID}
			slices.Sort(want)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("mentioned %v %v, want %v", got, err, want)
			}
			storage.ExecInTest(t, e.db, `UPDATE principals SET status = 'disabled' WHERE id = ?`, string(e.pia.ID))
			people, err := st.People(bg, []kernel.ID{e.paul.ID, e.echo.ID, e.pia.ID, e.olga.ID, kernel.NewID()})
			if err != nil || len(people) != 2 || people[e.paul.ID].IsOwner || !people[e.olga.ID].IsOwner {
				t.Fatalf("people %+v %v", people, err)
			}
		})

		t.Run("the cursor starts where the first start put it and moves only from where it is", func(t *testing.T) {
			if seq, err := st.Cursor(bg, "notifier", 7); seq != 7 || err != nil {
				t.Fatalf("first: %d %v", seq, err)
			}
			if seq, err := st.Cursor(bg, "notifier", 99); seq != 7 || err != nil {
				t.Fatalf("second start: %d %v", seq, err)
			}
			in(func(ctx context.Context) error {
				if moved, err := st.MoveCursor(ctx, "notifier", 7, 12, t0); !moved || err != nil {
					t.Fatalf("from 7: %v %v", moved, err)
				}
				if moved, err := st.MoveCursor(ctx, "notifier", 7, 15, t0); moved || err != nil {
					t.Fatalf("from 7 again: %v %v", moved, err)
				}
				return nil
			})
			if seq, err := st.Cursor(bg, "notifier", 0); seq != 12 || err != nil {
				t.Fatalf("after the moves: %d %v", seq, err)
			}
		})
	})
}
