package storage_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"bothy.dev/bothy/app/inbox"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// TestInboxStore holds the repository of read positions on both engines: a position counts what
// is unread after it, moves only forward, is exact when taken in the batch that posts the
// message, and the unread candidates and the mentions inbox read from it.
func TestInboxStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		e := newRunEnv(t, eng)
		repo := storage.NewInboxStore(e.db)
		main := e.channel.MainThreadID
		m1, m2, m3 := e.post(t, e.paul, "one"), e.post(t, e.paul, "two @pia"), e.post(t, e.paul, "three")
		at := e.clock.Now()
		advance := func(t *testing.T, who kernel.ID, m messaging.Message) {
			t.Helper()
			st := inbox.ReadState{ThreadID: m.ThreadID, ChannelID: m.ChannelID, LastReadMessageID: m.ID}
			if err := repo.Advance(bg, who, st, at); err != nil {
				t.Fatal(err)
			}
		}
		position := func(t *testing.T, who, thread kernel.ID) (inbox.Position, bool) {
			t.Helper()
			p, found, err := repo.Position(bg, who, thread)
			if err != nil {
				t.Fatal(err)
			}
			return p, found
		}

		for _, c := range []struct {
			name     string
			who      kernel.ID
			reads    []messaging.Message
			wantLast kernel.ID
			unread   int64
			found    bool
		}{
			{"a principal without a position has the whole thread unread", e.olga.ID, nil, kernel.NilID, 3, false},
			{"a position at the newest message leaves nothing unread", e.pia.ID, []messaging.Message{m3}, m3.ID, 0, true},
			{"a position at an older message counts the messages after it", e.olga.ID, []messaging.Message{m1}, m1.ID, 2, true},
			{"a position never moves back", e.paul.ID, []messaging.Message{m2, m1, m2}, m2.ID, 1, true},
		} {
			t.Run(c.name, func(t *testing.T) {
				for _, m := range c.reads {
					advance(t, c.who, m)
				}
				p, found := position(t, c.who, main)
				if found != c.found || p.LastReadMessageID != c.wantLast || p.UnreadCount != c.unread || p.ChannelID != e.channel.ID {
					t.Fatalf("position %+v found %v; want last %s unread %d found %v", p, found, c.wantLast, c.unread, c.found)
				}
			})
		}

		t.Run("a position taken in the batch that posts its message counts that batch's messages exactly", func(t *testing.T) {
			ctx := context.Background()
			th, err := e.chats.Thread(ctx, main)
			if err != nil {
				t.Fatal(err)
			}
			// post inserts a message of by as messaging's use case does, without its own unit.
			post := func(ctx context.Context, by kernel.Actor) (messaging.Message, error) {
				m := messaging.Message{ID: kernel.NewID(), ThreadID: th.ID, ChannelID: th.ChannelID, SpaceID: th.SpaceID,
					AuthorID: by.ID, Content: "in a batch", Version: 1, CreatedAt: at, Mentions: []kernel.ID{}}
				if _, err := e.msgRepo.InsertMessage(ctx, m); err != nil {
					return m, err
				}
				return m, e.chats.AppendToThread(ctx, th.ID, m.ID, at)
			}
			var mu sync.Mutex
			var wg sync.WaitGroup
			var first messaging.Message
			errs := []error{}
			queued := 0
			queue := func(fn func(ctx context.Context) error) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := e.db.Do(ctx, fn)
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}()
				queued++
				waitQueued(t, e.db, queued)
			}
			release, held := holdWriter(t, e.db)
			queue(func(ctx context.Context) error { // paul posts and reads his message
				m, err := post(ctx, e.paul)
				mu.Lock()
				first = m
				mu.Unlock()
				if err != nil {
					return err
				}
				return repo.Advance(ctx, e.paul.ID, inbox.ReadState{ThreadID: th.ID, ChannelID: th.ChannelID, LastReadMessageID: m.ID}, at)
			})
			queue(func(ctx context.Context) error { // pia posts after him and reads hers
				m, err := post(ctx, e.pia)
				if err != nil {
					return err
				}
				return repo.Advance(ctx, e.pia.ID, inbox.ReadState{ThreadID: th.ID, ChannelID: th.ChannelID, LastReadMessageID: m.ID}, at)
			})
			var last messaging.Message
			queue(func(ctx context.Context) error { // olga posts last and keeps no position, as an agent
				m, err := post(ctx, e.olga)
				mu.Lock()
				last = m
				mu.Unlock()
				return err
			})
			release()
			wg.Wait()
			if err := <-held; !errors.Is(err, errHeld) {
				t.Fatalf("the holding unit: %v", err)
			}
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if p, _ := position(t, e.pia.ID, main); p.UnreadCount != 1 {
				t.Fatalf("pia read the 5th of 6 messages and has %d unread", p.UnreadCount)
			}
			if p, _ := position(t, e.paul.ID, main); p.LastReadMessageID != first.ID || p.UnreadCount != 2 {
				t.Fatalf("paul read the 4th of 6 messages: %+v, want 2 unread", p)
			}
			var posts, read int64
			if err := storage.ScanIn(ctx, e.db, `SELECT post_count FROM threads WHERE id = ?`, &posts, string(main)); err != nil || posts != 6 {
				t.Fatalf("post_count %d, %v", posts, err)
			}
			if err := storage.ScanIn(ctx, e.db, `SELECT read_count FROM read_states WHERE principal_id = ? AND thread_id = ?`, &read,
				string(e.pia.ID), string(main)); err != nil || read != 5 {
				t.Fatalf("pia's read_count %d, %v", read, err)
			}
			advance(t, e.pia.ID, last) // as the next test expects: pia has read everything
		})

		t.Run("the unread candidates are the visible channels and followed threads with something unread", func(t *testing.T) {
			// pia may read the channel twice over from now: by her grant on it and one on its
			// space. It is listed once all the same.
			storage.ExecInTest(t, e.db, `INSERT INTO grants (id, resource_kind, resource_id, principal_id, level, level_rank, created_by, created_at)
				VALUES (?, 'space', ?, ?, 'view', 1, ?, '2026-01-01T00:00:00.000000Z')`, string(kernel.NewID()), string(e.channel.SpaceID), string(e.pia.ID), string(e.olga.ID))
			// pia read everything; paul now posts one mention of her and one more message.
			e.post(t, e.paul, "hey @pia")
			last := e.post(t, e.paul, "more")
			// A thread pia has read and is then mentioned in (listed without a subscription), and one she muted.
			_, tm, _, err := e.msgs.CreateThread(bg, e.paul, e.channel.ID, messaging.NewThread{Content: "a thread"})
			if err != nil {
				t.Fatal(err)
			}
			_, muted, _, err := e.msgs.CreateThread(bg, e.paul, e.channel.ID, messaging.NewThread{Content: "muted"})
			if err != nil {
				t.Fatal(err)
			}
			advance(t, e.pia.ID, tm)
			advance(t, e.pia.ID, muted)
			storage.ExecInTest(t, e.db, `INSERT INTO thread_subscriptions (principal_id, thread_id, level, updated_at) VALUES (?, ?, 'none', '')`,
				string(e.pia.ID), string(muted.ThreadID))
			tm2 := e.postIn(t, e.paul, tm.ThreadID, "@pia in the thread")
			e.postIn(t, e.paul, muted.ThreadID, "@pia where she muted")

			got, err := repo.UnreadCandidates(bg, e.pia.ID, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 {
				t.Fatalf("candidates %+v, want the channel and the followed thread", got)
			}
			byThread := map[bool]inbox.Entry{}
			for _, c := range got {
				byThread[c.ThreadID != nil] = c
			}
			ch, th := byThread[false], byThread[true]
			if ch.UnreadCount != 2 || ch.MentionCount != 1 || ch.LastMessageID != last.ID {
				t.Fatalf("channel entry %+v, want 2 unread, 1 mention, last %s", ch, last.ID)
			}
			if th.ThreadID == nil || *th.ThreadID != tm.ThreadID || th.UnreadCount != 1 || th.MentionCount != 1 || th.LastMessageID != tm2.ID {
				t.Fatalf("thread entry %+v", th)
			}
			owner, err := repo.UnreadCandidates(bg, e.olga.ID, true)
			if err != nil || len(owner) != 1 || owner[0].ChannelID != e.channel.ID || owner[0].ThreadID != nil {
				t.Fatalf("the owner without a grant sees the channel: %+v %v", owner, err)
			}
			none, err := repo.UnreadCandidates(bg, e.olga.ID, false)
			if err != nil || len(none) != 0 {
				t.Fatalf("the same principal without the owner flag or a grant: %+v %v", none, err)
			}
		})

		t.Run("the positions of many people moved in one unit are written in statements of many rows, every one exact", func(t *testing.T) {
			const people = 70 // more than one statement's rows
			var ids []kernel.ID
			for i := range people {
				id := kernel.NewID()
				ids = append(ids, id)
				storage.ExecInTest(t, e.db, `INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at)
					VALUES (?, 'person', ?, ?, 'Many', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')`,
					string(id), fmt.Sprintf("many%d", i), fmt.Sprintf("many%d", i))
			}
			err := e.db.Do(bg, func(ctx context.Context) error {
				for i, id := range ids {
					m := m3
					if i%2 == 0 {
						m = m1
					}
					if err := repo.Advance(ctx, id, inbox.ReadState{ThreadID: m.ThreadID, ChannelID: m.ChannelID, LastReadMessageID: m.ID}, at); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			// Olga's position stands at m1 since the first case: what a position there counts now.
			ref, _ := position(t, e.olga.ID, main)
			for i, id := range ids {
				want := ref.UnreadCount - 2 // at m3, two messages after m1
				if i%2 == 0 {
					want = ref.UnreadCount
				}
				if p, found := position(t, id, main); !found || p.UnreadCount != want {
					t.Fatalf("person %d: position %+v found %v, want %d unread", i, p, found, want)
				}
			}
		})

		t.Run("an edit that adds or drops a mention counts the thread's mentions again", func(t *testing.T) {
			mentions := func(t *testing.T) int64 {
				t.Helper()
				got, err := repo.UnreadCandidates(bg, e.pia.ID, false)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range got {
					if c.ThreadID == nil {
						return c.MentionCount
					}
				}
				return 0
			}
			before := mentions(t)
			m := e.post(t, e.paul, "no one yet")
			if got := mentions(t); got != before {
				t.Fatalf("%d unread mentions after a plain message, want %d", got, before)
			}
			if _, err := e.msgs.EditMessage(bg, e.paul, m.ID, "now @pia"); err != nil {
				t.Fatal(err)
			}
			if got := mentions(t); got != before+1 {
				t.Fatalf("%d unread mentions after the edit mentions her, want %d", got, before+1)
			}
			if _, err := e.msgs.EditMessage(bg, e.paul, m.ID, "now @pia, still @pia"); err != nil {
				t.Fatal(err)
			}
			if got := mentions(t); got != before+1 {
				t.Fatalf("%d unread mentions after an edit that keeps the mention, want %d", got, before+1)
			}
			if _, err := e.msgs.EditMessage(bg, e.paul, m.ID, "never mind"); err != nil {
				t.Fatal(err)
			}
			if got := mentions(t); got != before {
				t.Fatalf("%d unread mentions after the edit drops her, want %d", got, before)
			}
		})

		t.Run("the mentions inbox pages newest first, leaves out deleted messages and says what is read", func(t *testing.T) {
			all, more, err := repo.Mentions(bg, e.pia.ID, kernel.NilID, 100)
			if err != nil || more {
				t.Fatal(err, more)
			}
			if len(all) != 4 {
				t.Fatalf("%d mentions, want 4", len(all))
			}
			for i := 1; i < len(all); i++ {
				if all[i].Message.ID >= all[i-1].Message.ID {
					t.Fatalf("not newest first: %s after %s", all[i].Message.ID, all[i-1].Message.ID)
				}
			}
			if all[3].Message.ID != m2.ID || !all[3].Read || all[0].Read {
				t.Fatalf("the oldest mention (read) and the newest (unread): %+v / %+v", all[3], all[0])
			}
			if len(all[3].Message.Mentions) != 1 || all[3].Message.Mentions[0] != e.pia.ID {
				t.Fatalf("mentions of the message: %v", all[3].Message.Mentions)
			}
			page, more, err := repo.Mentions(bg, e.pia.ID, all[0].Message.ID, 2)
			if err != nil || !more || len(page) != 2 || page[0].Message.ID != all[1].Message.ID {
				t.Fatalf("second page: %+v %v %v", page, more, err)
			}
			if err := e.msgs.DeleteMessage(bg, e.paul, all[0].Message.ID); err != nil {
				t.Fatal(err)
			}
			after, _, err := repo.Mentions(bg, e.pia.ID, kernel.NilID, 100)
			if err != nil || len(after) != 3 || after[0].Message.ID != all[1].Message.ID {
				t.Fatalf("after a delete: %d items, %v", len(after), err)
			}
		})
	})
}

// postIn posts content by by into a thread.
func (e *runEnv) postIn(t *testing.T, by kernel.Actor, thread kernel.ID, content string) messaging.Message {
	t.Helper()
	m, _, err := e.msgs.CreateMessage(bg, by, thread, messaging.NewMessage{Content: content})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestUnreadPlan holds the read of GET /me/unread to index lookups on SQLite: no statement
// scans a table, so its cost follows the caller's channels and threads, not the database.
func TestUnreadPlan(t *testing.T) {
	db := storetest.SQLite.Open(t, storage.Options{})
	plans, err := storage.UnreadPlans(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	for _, lines := range plans {
		for _, line := range lines {
			if strings.HasPrefix(line, "SCAN ") {
				t.Errorf("the plan scans: %s\n%s", line, strings.Join(lines, "\n"))
			}
		}
	}
}
