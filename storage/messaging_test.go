package storage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// msgEnv adds messaging to a chatEnv, with a channel and two more people.
type msgEnv struct {
	*chatEnv
	msgs     *storage.MessageStore
	svc      *messaging.Service
	bus      *kernel.TxBus
	posted   int
	bob, cy  kernel.Actor
	channel  chat.Channel
	mainID   kernel.ID
	otherTh  chat.Thread
	startSeq int64
}

func newMsgEnv(tb testing.TB, eng storetest.Engine) *msgEnv {
	tb.Helper()
	e := &msgEnv{chatEnv: newChatEnv(tb, eng)}
	e.msgs = storage.NewMessageStore(e.db)
	e.bus = kernel.NewTxBus()
	kernel.Subscribe(e.bus, "count", func(ctx context.Context, ev messaging.MessagePosted) error { e.posted++; return nil })
	e.bus.Seal()
	e.svc = messaging.New(messaging.Deps{Store: e.msgs, Threads: e.chatEnv.svc, Directory: e.msgs, Redactor: e.db,
		UoW: e.db, Events: e.db, Authz: e.az, Bus: e.bus, Clock: e.clock})
	e.bob, e.cy = chatTestPrincipal(tb, e.db, "Bob"), chatTestPrincipal(tb, e.db, "cy")
	sp := e.space(tb, "A")
	e.channel = e.chatEnv.channel(tb, sp.ID, "general")
	e.mainID = e.channel.MainThreadID
	e.otherTh = e.thread(tb, e.channel, "side")
	e.startSeq = e.db.Head()
	return e
}

func (e *msgEnv) post(tb testing.TB, actor kernel.Actor, threadID kernel.ID, content, cmid string) messaging.Message {
	tb.Helper()
	m, _, err := e.svc.CreateMessage(context.Background(), actor, threadID, messaging.NewMessage{Content: content, ClientMsgID: cmid})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func (e *msgEnv) newEvents(tb testing.TB) []kernel.LoggedEvent {
	tb.Helper()
	evs, err := e.db.EventsAfter(context.Background(), e.startSeq, 10000)
	if err != nil {
		tb.Fatal(err)
	}
	return evs
}

func TestMessageStoreCreate(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		t.Run("stores a message with its mentions and logs it as the REST answer", func(t *testing.T) {
			e := newMsgEnv(t, eng)
			m := e.post(t, e.alice, e.mainID, "hi @bob and @CY and @nobody", "c-1")
			got, err := e.msgs.Message(ctx, m.ID)
			if err != nil || !reflect.DeepEqual(got, m) {
				t.Fatalf("got %+v, %v\nwant %+v", got, err, m)
			}
			want := []kernel.ID{e.bob.ID, e.cy.ID}
			slices.Sort(want)
			if !reflect.DeepEqual(m.Mentions, want) {
				t.Fatalf("mentions %v, want %v", m.Mentions, want)
			}
			evs := e.newEvents(t)
			if len(evs) != 1 || evs[0].Type != messaging.EvMessageCreated.Name || evs[0].SubjectID != m.ID ||
				evs[0].Scope != (kernel.Scope{SpaceID: m.SpaceID, ChannelID: m.ChannelID, ThreadID: m.ThreadID}) {
				t.Fatalf("events %+v", evs)
			}
			rest, _ := json.Marshal(m)
			if string(evs[0].Payload) != string(rest) {
				t.Fatalf("data %s\nREST %s", evs[0].Payload, rest)
			}
			th, _ := e.store.Thread(ctx, e.mainID)
			if th.MessageCount != 1 || th.LastMessageAt == nil || !th.LastMessageAt.Equal(m.CreatedAt) {
				t.Fatalf("thread %+v", th)
			}
		})
		t.Run("answers a repeated client_msg_id with the same message and no second event", func(t *testing.T) {
			e := newMsgEnv(t, eng)
			first := e.post(t, e.alice, e.mainID, "hello", "c-1")
			for i := 0; i < 3; i++ {
				again, created, err := e.svc.CreateMessage(ctx, e.alice, e.mainID, messaging.NewMessage{Content: "hello", ClientMsgID: "c-1"})
				if err != nil || created || !reflect.DeepEqual(again, first) {
					t.Fatalf("repeat %d: %+v created=%v err=%v", i, again, created, err)
				}
			}
			if evs := e.newEvents(t); len(evs) != 1 {
				t.Fatalf("%d events after repeats", len(evs))
			}
			if th, _ := e.store.Thread(ctx, e.mainID); th.MessageCount != 1 || e.posted != 1 {
				t.Fatalf("count %d, posted %d", th.MessageCount, e.posted)
			}
			if _, _, err := e.svc.CreateMessage(ctx, e.alice, e.otherTh.ID, messaging.NewMessage{Content: "x", ClientMsgID: "c-1"}); !kernel.IsCode(err, kernel.CodeConflict) {
				t.Fatalf("other thread: err = %v", err)
			}
			if m := e.post(t, e.bob, e.mainID, "mine", "c-1"); m.ID == first.ID {
				t.Fatal("another author's client_msg_id answered alice's message")
			}
			if m := e.post(t, e.alice, e.mainID, "no id", ""); m.ClientMsgID != "" {
				t.Fatalf("client_msg_id %q", m.ClientMsgID)
			}
			e.post(t, e.alice, e.mainID, "no id again", "") // NULL client_msg_ids never collide
		})
		t.Run("answers null for a missing client_msg_id in JSON", func(t *testing.T) {
			e := newMsgEnv(t, eng)
			m := e.post(t, e.alice, e.mainID, "x", "")
			b, _ := json.Marshal(m)
			if !strings.Contains(string(b), `"client_msg_id":null`) || !strings.Contains(string(b), `"mentions":[]`) ||
				!strings.Contains(string(b), `"edited_at":null`) {
				t.Fatalf("json %s", b)
			}
		})
		t.Run("creates a thread with its first message in one commit", func(t *testing.T) {
			e := newMsgEnv(t, eng)
			th, m, created, err := e.svc.CreateThread(ctx, e.alice, e.channel.ID, messaging.NewThread{Title: "Plan", Content: "go", ClientMsgID: "t-1"})
			if err != nil || !created {
				t.Fatal(err)
			}
			stored, _ := e.store.Thread(ctx, th.ID)
			if stored.MessageCount != 1 || stored.Title != "Plan" || th.MessageCount != 1 || !th.LastMessageAt.Equal(*stored.LastMessageAt) {
				t.Fatalf("thread %+v stored %+v", th, stored)
			}
			evs := e.newEvents(t)
			if len(evs) != 2 || evs[0].Type != chat.EvThreadCreated.Name || evs[1].Type != messaging.EvMessageCreated.Name || evs[1].Scope.ThreadID != th.ID {
				t.Fatalf("events %+v", evs)
			}
			th2, m2, created, err := e.svc.CreateThread(ctx, e.alice, e.channel.ID, messaging.NewThread{Title: "Plan", Content: "go", ClientMsgID: "t-1"})
			if err != nil || created || th2.ID != th.ID || m2.ID != m.ID || len(e.newEvents(t)) != 2 {
				t.Fatalf("repeat: %v %v created=%v err=%v", th2.ID, m2.ID, created, err)
			}
		})
	})
}

func TestMessageStorePages(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		e := newMsgEnv(t, eng)
		var ids []kernel.ID
		for i := 0; i < 7; i++ {
			content := fmt.Sprintf("m%d", i)
			if i%2 == 0 {
				content += " @bob"
			}
			ids = append(ids, e.post(t, e.alice, e.mainID, content, "").ID)
		}
		e.post(t, e.alice, e.otherTh.ID, "elsewhere", "")

		pages := []struct {
			name     string
			page     chat.Page
			want     []kernel.ID
			wantMore bool
		}{
			{"answers the newest page oldest first without a cursor", chat.Page{Limit: 3}, ids[4:], true},
			{"pages backwards with before", chat.Page{Before: ids[4], Limit: 3}, ids[1:4], true},
			{"ends backwards at the oldest", chat.Page{Before: ids[1], Limit: 3}, ids[:1], false},
			{"pages forwards with after", chat.Page{After: ids[1], Limit: 3}, ids[2:5], true},
			{"ends forwards at the newest", chat.Page{After: ids[4], Limit: 3}, ids[5:], false},
			{"answers the whole thread with the default limit", chat.Page{}, ids, false},
		}
		for _, tt := range pages {
			t.Run(tt.name, func(t *testing.T) {
				got, more, err := e.svc.ListMessages(ctx, e.alice, e.mainID, tt.page)
				if err != nil {
					t.Fatal(err)
				}
				var gotIDs []kernel.ID
				for _, m := range got {
					gotIDs = append(gotIDs, m.ID)
					even := strings.Contains(m.Content, "@bob")
					if even != (len(m.Mentions) == 1) || m.Mentions == nil || m.ChannelKind != chat.KindChannel {
						t.Fatalf("message %+v has mentions %v", m, m.Mentions)
					}
				}
				if !slices.Equal(gotIDs, tt.want) || more != tt.wantMore {
					t.Fatalf("got %v more=%v, want %v more=%v", gotIDs, more, tt.want, tt.wantMore)
				}
			})
		}
	})
}

func TestMessageStoreEditDelete(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		t.Run("keeps revisions, replaces mentions and logs message.updated", func(t *testing.T) {
			e := newMsgEnv(t, eng)
			m := e.post(t, e.alice, e.mainID, "one @bob", "")
			e.clock.Advance(1e9)
			m2, err := e.svc.EditMessage(ctx, e.alice, m.ID, "two @cy")
			if err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(1e9)
			m3, err := e.svc.EditMessage(ctx, e.alice, m.ID, "three")
			if err != nil {
				t.Fatal(err)
			}
			got, _ := e.msgs.Message(ctx, m.ID)
			if !reflect.DeepEqual(got, m3) || got.Version != 3 || len(got.Mentions) != 0 || got.EditedAt == nil {
				t.Fatalf("got %+v\nwant %+v", got, m3)
			}
			revs, err := e.svc.ListRevisions(ctx, e.alice, m.ID)
			if err != nil || len(revs) != 2 || revs[0].Content != "one @bob" || revs[0].Version != 1 || !revs[0].CreatedAt.Equal(m.CreatedAt) ||
				revs[1].Content != "two @cy" || revs[1].Version != 2 || !revs[1].CreatedAt.Equal(*m2.EditedAt) {
				t.Fatalf("revisions %+v, %v", revs, err)
			}
			evs := e.newEvents(t)
			if len(evs) != 3 || evs[1].Type != messaging.EvMessageUpdated.Name || evs[2].Type != messaging.EvMessageUpdated.Name {
				t.Fatalf("events %+v", evs)
			}
		})
		t.Run("leaves a tombstone and redacts the content from the log", func(t *testing.T) {
			e := newMsgEnv(t, eng)
			m := e.post(t, e.alice, e.mainID, "secret @bob", "")
			keep := e.post(t, e.alice, e.mainID, "keep me", "")
			if _, err := e.svc.EditMessage(ctx, e.alice, m.ID, "secret two"); err != nil {
				t.Fatal(err)
			}
			if err := e.svc.AddReaction(ctx, e.bob, m.ID, "👍"); err != nil {
				t.Fatal(err)
			}
			if err := e.svc.DeleteMessage(ctx, e.alice, m.ID); err != nil {
				t.Fatal(err)
			}
			got, err := e.svc.GetMessage(ctx, e.alice, m.ID)
			if err != nil || !got.Deleted || got.Content != "" || len(got.Mentions) != 0 || got.Version != 3 {
				t.Fatalf("tombstone %+v, %v", got, err)
			}
			if revs, _ := e.msgs.Revisions(ctx, m.ID); len(revs) != 0 {
				t.Fatalf("revisions kept: %+v", revs)
			}
			evs := e.newEvents(t)
			for _, ev := range evs {
				if strings.Contains(string(ev.Payload), "secret") {
					t.Fatalf("the log still holds the content: %s %s", ev.Type, ev.Payload)
				}
			}
			if last := evs[len(evs)-1]; last.Type != messaging.EvMessageDeleted.Name || last.SubjectID != m.ID {
				t.Fatalf("last event %+v", last)
			}
			if !strings.Contains(string(evs[1].Payload), "keep me") {
				t.Fatalf("another message was redacted: %s", evs[1].Payload)
			}
			if th, _ := e.store.Thread(ctx, e.mainID); th.MessageCount != 1 {
				t.Fatalf("thread count %d", th.MessageCount)
			}
			if err := e.svc.DeleteMessage(ctx, e.alice, m.ID); !kernel.IsCode(err, messaging.CodeMessageDeleted) {
				t.Fatalf("second delete: %v", err)
			}
			if _, err := e.svc.EditMessage(ctx, e.alice, m.ID, "back"); !kernel.IsCode(err, messaging.CodeMessageDeleted) {
				t.Fatalf("edit after delete: %v", err)
			}
			_ = keep
		})
	})
}

func TestMessageStoreReactions(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		e := newMsgEnv(t, eng)
		m := e.post(t, e.alice, e.mainID, "react to me", "")
		steps := []struct {
			name    string
			do      func(ctx context.Context) (bool, error)
			changed bool
		}{
			{"adds a reaction", func(ctx context.Context) (bool, error) {
				return e.msgs.AddReaction(ctx, messaging.Reaction{MessageID: m.ID, PrincipalID: e.bob.ID, Emoji: "👍", CreatedAt: e.clock.Now()})
			}, true},
			{"adds the same reaction again without a change", func(ctx context.Context) (bool, error) {
				return e.msgs.AddReaction(ctx, messaging.Reaction{MessageID: m.ID, PrincipalID: e.bob.ID, Emoji: "👍", CreatedAt: e.clock.Now()})
			}, false},
			{"adds another emoji of the same person", func(ctx context.Context) (bool, error) {
				return e.msgs.AddReaction(ctx, messaging.Reaction{MessageID: m.ID, PrincipalID: e.bob.ID, Emoji: "tada", CreatedAt: e.clock.Now()})
			}, true},
			{"removes a reaction", func(ctx context.Context) (bool, error) { return e.msgs.RemoveReaction(ctx, m.ID, e.bob.ID, "👍") }, true},
			{"removes it again without a change", func(ctx context.Context) (bool, error) { return e.msgs.RemoveReaction(ctx, m.ID, e.bob.ID, "👍") }, false},
		}
		for _, tt := range steps {
			t.Run(tt.name, func(t *testing.T) {
				var changed bool
				err := e.db.Do(ctx, func(ctx context.Context) error {
					var err error
					changed, err = tt.do(ctx)
					return err
				})
				if err != nil || changed != tt.changed {
					t.Fatalf("changed %v, %v; want %v", changed, err, tt.changed)
				}
			})
		}
		t.Run("logs one event per change through the use case", func(t *testing.T) {
			before := len(e.newEvents(t))
			for i := 0; i < 2; i++ {
				if err := e.svc.AddReaction(ctx, e.cy, m.ID, "👀"); err != nil {
					t.Fatal(err)
				}
				if err := e.svc.RemoveReaction(ctx, e.cy, m.ID, "👀"); err != nil {
					t.Fatal(err)
				}
			}
			evs := e.newEvents(t)[before:]
			if len(evs) != 4 || evs[0].Type != messaging.EvReactionAdded.Name || evs[1].Type != messaging.EvReactionRemoved.Name {
				t.Fatalf("events %+v", evs)
			}
			var r messaging.Reaction
			if err := json.Unmarshal(evs[0].Payload, &r); err != nil || r.Emoji != "👀" || r.PrincipalID != e.cy.ID || r.MessageID != m.ID || r.ThreadID != e.mainID {
				t.Fatalf("data %s", evs[0].Payload)
			}
		})
	})
}

func TestMessageStoreResolveHandles(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		e := newMsgEnv(t, eng)
		off := chatTestPrincipal(t, e.db, "gone")
		storage.ExecInTest(t, e.db, `UPDATE principals SET status = 'disabled' WHERE id = ?`, string(off.ID))
		got, err := e.msgs.ResolveHandles(ctx, []string{"bob", "cy", "gone", "nobody"})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]kernel.ID{"bob": e.bob.ID, "cy": e.cy.ID}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, want %v (disabled and unknown handles are no mentions)", got, want)
		}
	})
}

// BenchmarkCreateMessage measures the hot path below HTTP: many writers posting into one thread
// with a client_msg_id each, sharing group commits.
func BenchmarkCreateMessage(b *testing.B) {
	storetest.Bench(b, func(b *testing.B, eng storetest.Engine) {
		e := newMsgEnv(b, eng)
		ctx := context.Background()
		var n atomic.Int64
		b.SetParallelism(32)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := n.Add(1)
				_, _, err := e.svc.CreateMessage(ctx, e.alice, e.mainID, messaging.NewMessage{Content: "hello @bob", ClientMsgID: fmt.Sprintf("b-%d", i)})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
}

func TestMessageStoreReplies(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		t.Run("a parent carries its thread, reply count and last reply, read from the thread's counters", func(t *testing.T) {
			e := newMsgEnv(t, eng)
			parent := e.post(t, e.alice, e.mainID, "a question", "")
			plain := e.post(t, e.alice, e.mainID, "no replies", "")
			th, first, started, err := e.svc.Reply(ctx, e.bob, parent.ID, messaging.NewReply{Content: "one", ClientMsgID: "r-1"})
			if err != nil || !started {
				t.Fatalf("started=%v err=%v", started, err)
			}
			e.clock.Advance(1e9)
			_, second, started, err := e.svc.Reply(ctx, e.cy, parent.ID, messaging.NewReply{Content: "two"})
			if err != nil || started || second.ThreadID != th.ID {
				t.Fatalf("second reply: %+v started=%v err=%v", second, started, err)
			}
			check := func(t *testing.T, m messaging.Message, count int64, last messaging.Message) {
				t.Helper()
				if m.ReplyThreadID == nil || *m.ReplyThreadID != th.ID || m.ReplyCount == nil || *m.ReplyCount != count ||
					m.LastReplyAt == nil || !m.LastReplyAt.Equal(last.CreatedAt) || m.ThreadID != e.mainID {
					t.Fatalf("parent %+v, want thread %s, %d replies, last at %v", m, th.ID, count, last.CreatedAt)
				}
			}
			got, err := e.svc.GetMessage(ctx, e.alice, parent.ID)
			if err != nil {
				t.Fatal(err)
			}
			check(t, got, 2, second)
			page, _, err := e.svc.ListMessages(ctx, e.alice, e.mainID, chat.Page{})
			if err != nil || len(page) != 2 {
				t.Fatalf("page %+v, %v", page, err)
			}
			check(t, page[0], 2, second)
			if page[1].ReplyThreadID != nil || page[1].ReplyCount != nil || page[1].LastReplyAt != nil {
				t.Fatalf("a message without a thread: %+v", page[1])
			}
			b, _ := json.Marshal(page[1])
			if strings.Contains(string(b), "reply_") {
				t.Fatalf("a message without a thread shows reply members: %s", b)
			}
			b, _ = json.Marshal(page[0])
			if !strings.Contains(string(b), `"reply_thread_id":"`+string(th.ID)+`"`) || !strings.Contains(string(b), `"reply_count":2`) {
				t.Fatalf("json %s", b)
			}
			stored, _ := e.store.Thread(ctx, th.ID)
			if stored.ParentMessageID == nil || *stored.ParentMessageID != parent.ID {
				t.Fatalf("thread %+v", stored)
			}
			evs := e.newEvents(t)
			var created []kernel.LoggedEvent
			for _, ev := range evs {
				if ev.Type == chat.EvThreadCreated.Name {
					created = append(created, ev)
				}
			}
			if len(created) != 1 || !strings.Contains(string(created[0].Payload), `"parent_message_id":"`+string(parent.ID)+`"`) {
				t.Fatalf("thread.created %+v", created)
			}

			t.Run("a deleted reply counts no more and leaves the last reply's time", func(t *testing.T) {
				if err := e.svc.DeleteMessage(ctx, e.cy, second.ID); err != nil {
					t.Fatal(err)
				}
				got, _ := e.svc.GetMessage(ctx, e.alice, parent.ID)
				check(t, got, 1, second)
			})
			t.Run("a deleted parent keeps its thread, which takes replies", func(t *testing.T) {
				if err := e.svc.DeleteMessage(ctx, e.alice, parent.ID); err != nil {
					t.Fatal(err)
				}
				got, _ := e.svc.GetMessage(ctx, e.alice, parent.ID)
				if !got.Deleted || got.ReplyThreadID == nil || *got.ReplyThreadID != th.ID {
					t.Fatalf("tombstone %+v", got)
				}
				e.clock.Advance(1e9)
				_, third, _, err := e.svc.Reply(ctx, e.bob, parent.ID, messaging.NewReply{Content: "three"})
				if err != nil || third.ThreadID != th.ID {
					t.Fatalf("reply under a deleted parent: %+v %v", third, err)
				}
				got, _ = e.svc.GetMessage(ctx, e.alice, parent.ID)
				check(t, got, 2, third)
				if _, _, _, err := e.svc.Reply(ctx, e.bob, plain.ID, messaging.NewReply{Content: "x"}); err != nil {
					t.Fatal(err)
				}
			})
			t.Run("answers a repeated client_msg_id with the first reply", func(t *testing.T) {
				th2, again, started, err := e.svc.Reply(ctx, e.bob, parent.ID, messaging.NewReply{Content: "one", ClientMsgID: "r-1"})
				if err != nil || started || th2.ID != th.ID || again.ID != first.ID {
					t.Fatalf("repeat: %+v started=%v err=%v", again, started, err)
				}
			})
		})
		t.Run("starts one thread per message when requests race, from two stores on one database", func(t *testing.T) {
			e := newMsgEnv(t, eng)
			parent := e.post(t, e.alice, e.mainID, "a question", "")
			other := eng.OpenAt(t, e.where, storage.Options{})
			otherChat := storage.NewChatStore(other)
			otherMsgs := storage.NewMessageStore(other)
			twin := messaging.New(messaging.Deps{Store: otherMsgs, Directory: otherMsgs, Redactor: other, UoW: other, Events: other,
				Authz: e.az, Clock: e.clock, Threads: chat.New(chat.Deps{Store: otherChat, Principals: otherChat, UoW: other,
					Events: other, Authz: e.az, Scoper: e.az, Clock: e.clock})})
			const n = 8
			var wg sync.WaitGroup
			var started atomic.Int32
			threads := make([]kernel.ID, 2*n)
			for i := range 2 * n {
				svc := e.svc
				if i%2 == 1 {
					svc = twin
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					th, _, s, err := svc.Reply(ctx, e.bob, parent.ID, messaging.NewReply{Content: fmt.Sprintf("reply %d", i)})
					if err != nil {
						t.Errorf("reply %d: %v", i, err)
						return
					}
					if s {
						started.Add(1)
					}
					threads[i] = th.ID
				}()
			}
			wg.Wait()
			if started.Load() != 1 {
				t.Fatalf("%d replies started a thread, want 1", started.Load())
			}
			for i, id := range threads {
				if id != threads[0] {
					t.Fatalf("reply %d went to thread %s, reply 0 to %s", i, id, threads[0])
				}
			}
			got, err := e.svc.GetMessage(ctx, e.alice, parent.ID)
			if err != nil || got.ReplyCount == nil || *got.ReplyCount != 2*n {
				t.Fatalf("parent %+v, %v", got, err)
			}
			var rows int
			if err := storage.ScanIn(ctx, e.db, `SELECT COUNT(*) FROM threads WHERE parent_message_id = ?`, &rows,
				string(parent.ID)); err != nil || rows != 1 {
				t.Fatalf("%d threads under the message, %v", rows, err)
			}
		})
	})
}

func TestMessageStoreTriggers(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		t.Run("keeps each agent's trigger with the message and reads it back in order", func(t *testing.T) {
			e := newMsgEnv(t, eng)
			m := e.post(t, e.alice, e.mainID, "first", "")
			run := kernel.NewID()
			m.ID, m.Content, m.CreatedAt = kernel.NewID(), "@bob @cy", m.CreatedAt.Add(time.Second)
			state := "triggered"
			m.TriggerState = &state
			m.Triggers = []messaging.AgentTrigger{{AgentID: e.cy.ID, State: "agent_disabled"},
				{AgentID: e.bob.ID, State: "triggered", RunID: &run}, {AgentID: e.alice.ID, State: "agent_cannot_read"}}
			if err := e.db.Do(ctx, func(ctx context.Context) error {
				if inserted, err := e.msgs.InsertMessage(ctx, m); err != nil || !inserted {
					return fmt.Errorf("insert: %v %w", inserted, err)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			got, err := e.msgs.Message(ctx, m.ID)
			if err != nil || !reflect.DeepEqual(got.Triggers, m.Triggers) {
				t.Fatalf("triggers %+v, %v; want %+v", got.Triggers, err, m.Triggers)
			}
			page, _, err := e.msgs.Messages(ctx, e.mainID, chat.Page{Limit: 10})
			if err != nil || len(page) != 2 {
				t.Fatalf("page %d, %v", len(page), err)
			}
			for _, p := range page {
				if p.ID == m.ID && !reflect.DeepEqual(p.Triggers, m.Triggers) {
					t.Fatalf("the page reads triggers %+v", p.Triggers)
				}
			}
		})
		t.Run("keeps none for a message that concerned no agent, and leaves them out of its JSON", func(t *testing.T) {
			e := newMsgEnv(t, eng)
			m := e.post(t, e.alice, e.mainID, "hello @bob", "")
			got, err := e.msgs.Message(ctx, m.ID)
			if err != nil || got.Triggers != nil {
				t.Fatalf("triggers %+v, %v", got.Triggers, err)
			}
			if b, _ := json.Marshal(got); strings.Contains(string(b), `"triggers"`) {
				t.Fatalf("json %s", b)
			}
		})
	})
}
