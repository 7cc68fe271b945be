package storage_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// chatAllow is an Authorizer and Scoper that allows everything except what deny names.
type chatAllow struct {
	deny map[kernel.ID]bool
}

var (
	_ kernel.Authorizer = (*chatAllow)(nil)
	_ kernel.Scoper     = (*chatAllow)(nil)
)

func (a *chatAllow) Authorize(ctx context.Context, actor kernel.Actor, action kernel.Action, r kernel.Resource) error {
	kernel.RecordCheck(ctx, action)
	if a.deny[r.ID] || a.deny[r.ChannelID] {
		return kernel.ErrNotFound
	}
	return nil
}

func (a *chatAllow) Visible(ctx context.Context, actor kernel.Actor, action kernel.Action) (kernel.Visibility, error) {
	if !actor.Authenticated() {
		return nil, kernel.Errorf(kernel.CodeUnauthenticated, "no principal")
	}
	kernel.RecordCheck(ctx, action)
	return chatVisibility{a.deny}, nil
}

type chatVisibility struct{ deny map[kernel.ID]bool }

func (v chatVisibility) Space(id kernel.ID) bool   { return !v.deny[id] }
func (v chatVisibility) Channel(id kernel.ID) bool { return !v.deny[id] }
func (v chatVisibility) All() bool                 { return false }

// chatTestPrincipal inserts an active person with handle (its key in lower case).
func chatTestPrincipal(tb testing.TB, db *storage.DB, handle string) kernel.Actor {
	tb.Helper()
	id := kernel.NewID()
	now := "2026-01-01T00:00:00.000000Z"
	storage.ExecInTest(tb, db, `INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at)
		VALUES (?, 'person', ?, ?, ?, ?, ?)`, string(id), handle, strings.ToLower(handle), handle, now, now)
	return kernel.Actor{ID: id, Kind: kernel.KindPerson, Handle: handle}
}

// chatEnv is a migrated store with the chat service on it.
type chatEnv struct {
	where string // the database, for a second store on it (OpenAt)
	db    *storage.DB
	store *storage.ChatStore
	az    *chatAllow
	svc   *chat.Service
	clock *kernel.ManualClock
	alice kernel.Actor
}

func newChatEnv(tb testing.TB, eng storetest.Engine) *chatEnv {
	tb.Helper()
	where := eng.NewDatabase(tb)
	db := eng.OpenAt(tb, where, storage.Options{})
	e := &chatEnv{where: where, db: db, store: storage.NewChatStore(db), az: &chatAllow{deny: map[kernel.ID]bool{}},
		clock: kernel.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC))}
	e.svc = chat.New(chat.Deps{Store: e.store, Principals: e.store, UoW: db, Events: db, Authz: e.az, Scoper: e.az, Clock: e.clock})
	e.alice = chatTestPrincipal(tb, db, "alice")
	return e
}

func (e *chatEnv) space(tb testing.TB, name string) chat.Space {
	tb.Helper()
	sp, err := e.svc.CreateSpace(context.Background(), e.alice, name)
	if err != nil {
		tb.Fatal(err)
	}
	return sp
}

func (e *chatEnv) channel(tb testing.TB, spaceID kernel.ID, name string) chat.Channel {
	tb.Helper()
	c, err := e.svc.CreateChannel(context.Background(), e.alice, spaceID, chat.NewChannel{Name: name})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func (e *chatEnv) thread(tb testing.TB, c chat.Channel, title string) chat.Thread {
	tb.Helper()
	var th chat.Thread
	err := e.db.Do(context.Background(), func(ctx context.Context) error {
		var err error
		th, err = e.svc.CreateThread(ctx, e.alice.ID, c, title)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return th
}

func logged(tb testing.TB, db *storage.DB) []kernel.LoggedEvent {
	tb.Helper()
	evs, err := db.EventsAfter(context.Background(), 0, 10000)
	if err != nil {
		tb.Fatal(err)
	}
	return evs
}

func TestChatStoreSpaces(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		e := newChatEnv(t, eng)
		a, b := e.space(t, "A"), e.space(t, "B")

		t.Run("reads a space back as it was written", func(t *testing.T) {
			got, err := e.store.Space(ctx, a.ID)
			if err != nil || got != a {
				t.Fatalf("got %+v, %v; want %+v", got, err, a)
			}
		})
		t.Run("lists spaces in id order", func(t *testing.T) {
			got, err := e.store.Spaces(ctx)
			if err != nil || len(got) != 2 || got[0] != a || got[1] != b {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
		t.Run("answers not found for a missing space", func(t *testing.T) {
			if _, err := e.store.Space(ctx, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("err = %v", err)
			}
			if err := e.db.Do(ctx, func(ctx context.Context) error {
				return e.store.UpdateSpace(ctx, chat.Space{ID: kernel.NewID(), Name: "x", UpdatedAt: time.Now()})
			}); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("update: err = %v", err)
			}
		})
		t.Run("renames a space and logs space.updated with the space as data", func(t *testing.T) {
			e.clock.Advance(time.Second)
			name := "A2"
			up, err := e.svc.UpdateSpace(ctx, e.alice, a.ID, chat.SpacePatch{Name: &name})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := e.store.Space(ctx, a.ID)
			if got != up || got.Name != "A2" || !got.UpdatedAt.After(got.CreatedAt) {
				t.Fatalf("got %+v, want %+v", got, up)
			}
			evs := logged(t, e.db)
			last := evs[len(evs)-1]
			var data chat.Space
			if err := json.Unmarshal(last.Payload, &data); err != nil || last.Type != chat.EvSpaceUpdated.Name || data != up ||
				last.Scope.SpaceID != a.ID || last.SubjectID != a.ID || last.ActorID != e.alice.ID {
				t.Fatalf("last event %+v (%s), %v", last, last.Payload, err)
			}
		})
	})
}

func TestChatStoreChannels(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		e := newChatEnv(t, eng)
		sp := e.space(t, "A")
		before := len(logged(t, e.db))
		c := e.channel(t, sp.ID, "general")
		d := e.channel(t, sp.ID, "random")

		t.Run("creates the channel and its main thread in one unit with two events", func(t *testing.T) {
			got, err := e.store.Channel(ctx, c.ID)
			if err != nil || got != c {
				t.Fatalf("got %+v, %v; want %+v", got, err, c)
			}
			main, err := e.store.Thread(ctx, c.MainThreadID)
			if err != nil || !main.IsMain || main.ChannelID != c.ID || main.SpaceID != sp.ID || main.ChannelKind != chat.KindChannel ||
				main.MessageCount != 0 || main.LastMessageAt != nil {
				t.Fatalf("main thread %+v, %v", main, err)
			}
			evs := logged(t, e.db)[before:]
			if len(evs) != 4 || evs[0].Type != chat.EvChannelCreated.Name || evs[1].Type != chat.EvThreadCreated.Name ||
				evs[1].Seq != evs[0].Seq+1 || evs[1].Scope.ThreadID != c.MainThreadID || evs[0].Scope.ChannelID != c.ID {
				t.Fatalf("events %+v", evs)
			}
			var data map[string]any
			if err := json.Unmarshal(evs[0].Payload, &data); err != nil || data["main_thread_id"] != string(c.MainThreadID) || data["kind"] != "channel" {
				t.Fatalf("channel.created data %s", evs[0].Payload)
			}
		})
		t.Run("lists the channels of a space in id order", func(t *testing.T) {
			got, err := e.store.Channels(ctx, sp.ID)
			if err != nil || len(got) != 2 || got[0] != c || got[1] != d {
				t.Fatalf("got %+v, %v", got, err)
			}
			got, err = e.store.Channels(ctx, kernel.NewID())
			if err != nil || len(got) != 0 {
				t.Fatalf("other space: %+v, %v", got, err)
			}
		})
		t.Run("updates name and topic", func(t *testing.T) {
			name, topic := "general2", "what we talk about"
			up, err := e.svc.UpdateChannel(ctx, e.alice, c.ID, chat.ChannelPatch{Name: &name, Topic: &topic})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := e.store.Channel(ctx, c.ID)
			if got != up || got.Topic != topic || got.Name != name {
				t.Fatalf("got %+v, want %+v", got, up)
			}
		})
		t.Run("refuses a channel in a missing space and writes nothing", func(t *testing.T) {
			n := len(logged(t, e.db))
			if _, err := e.svc.CreateChannel(ctx, e.alice, kernel.NewID(), chat.NewChannel{Name: "x"}); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("err = %v", err)
			}
			if len(logged(t, e.db)) != n {
				t.Fatal("a refused channel logged an event")
			}
		})
		t.Run("hides a channel the scoper hides", func(t *testing.T) {
			e.az.deny[d.ID] = true
			defer delete(e.az.deny, d.ID)
			got, err := e.svc.ListChannels(ctx, e.alice, sp.ID)
			if err != nil || len(got) != 1 || got[0].ID != c.ID {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	})
}

func TestChatStoreThreads(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		e := newChatEnv(t, eng)
		sp := e.space(t, "A")
		c := e.channel(t, sp.ID, "general")
		other := e.channel(t, sp.ID, "other")
		e.thread(t, other, "elsewhere")
		ids := []kernel.ID{c.MainThreadID}
		for i := 0; i < 5; i++ {
			ids = append(ids, e.thread(t, c, "t").ID)
		}

		pages := []struct {
			name     string
			page     chat.Page
			want     []kernel.ID
			wantMore bool
		}{
			{"answers the newest page without a cursor", chat.Page{Limit: 2}, ids[4:], true},
			{"answers everything when the page is large", chat.Page{Limit: 50}, ids, false},
			{"pages backwards with before", chat.Page{Before: ids[4], Limit: 2}, ids[2:4], true},
			{"ends backwards at the oldest", chat.Page{Before: ids[2], Limit: 2}, ids[:2], false},
			{"pages forwards with after", chat.Page{After: ids[0], Limit: 2}, ids[1:3], true},
			{"ends forwards at the newest", chat.Page{After: ids[3], Limit: 2}, ids[4:], false},
			{"answers an empty page after the newest", chat.Page{After: ids[5], Limit: 2}, nil, false},
		}
		for _, tt := range pages {
			t.Run(tt.name, func(t *testing.T) {
				got, more, err := e.svc.ListThreads(ctx, e.alice, c.ID, tt.page)
				if err != nil {
					t.Fatal(err)
				}
				var gotIDs []kernel.ID
				for _, th := range got {
					gotIDs = append(gotIDs, th.ID)
				}
				if !slices.Equal(gotIDs, tt.want) || more != tt.wantMore {
					t.Fatalf("got %v more=%v, want %v more=%v", gotIDs, more, tt.want, tt.wantMore)
				}
			})
		}
		t.Run("counts messages and never below zero", func(t *testing.T) {
			at := e.clock.Now().Truncate(time.Microsecond)
			bump := func(fn func(ctx context.Context) error) {
				t.Helper()
				if err := e.db.Do(ctx, fn); err != nil {
					t.Fatal(err)
				}
			}
			bump(func(ctx context.Context) error { return e.svc.RemoveFromThread(ctx, ids[1]) }) // 0 stays 0
			bump(func(ctx context.Context) error {
				if err := e.svc.AppendToThread(ctx, ids[1], kernel.NewID(), at.Add(-time.Second)); err != nil {
					return err
				}
				if err := e.svc.AppendToThread(ctx, ids[1], kernel.NewID(), at); err != nil {
					return err
				}
				return e.svc.RemoveFromThread(ctx, ids[1])
			})
			th, err := e.store.Thread(ctx, ids[1])
			if err != nil || th.MessageCount != 1 || th.LastMessageAt == nil || !th.LastMessageAt.Equal(at) {
				t.Fatalf("thread %+v, %v", th, err)
			}
			bump(func(ctx context.Context) error { return e.svc.RemoveFromThread(ctx, ids[1]) })
			th, err = e.store.Thread(ctx, ids[1])
			if err != nil || th.MessageCount != 0 || th.LastMessageAt == nil || !th.LastMessageAt.Equal(at) {
				t.Fatalf("after removing: thread %+v, %v", th, err)
			}
		})
		t.Run("adds the messages of a whole batch to their threads once each", func(t *testing.T) {
			before, err := e.store.Thread(ctx, ids[0])
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for i := 0; i < 64; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					fail := i%8 == 7 // a unit that fails takes its count with it
					err := e.db.Do(ctx, func(ctx context.Context) error {
						if err := e.svc.AppendToThread(ctx, ids[0], kernel.NewID(), e.clock.Now()); err != nil {
							return err
						}
						if fail {
							return kernel.Errorf(kernel.CodeConflict, "vetoed")
						}
						return nil
					})
					if fail != (err != nil) {
						t.Errorf("unit %d: %v", i, err)
					}
				}(i)
			}
			wg.Wait()
			th, err := e.store.Thread(ctx, ids[0])
			if err != nil || th.MessageCount != before.MessageCount+56 {
				t.Fatalf("count %d, want %d (%v)", th.MessageCount, before.MessageCount+56, err)
			}
		})
		t.Run("keeps one thread under a message: a second insert does nothing", func(t *testing.T) {
			parent := kernel.NewID()
			var first chat.Thread
			for i := range 2 {
				err := e.db.Do(ctx, func(ctx context.Context) error {
					th, created, err := e.svc.CreateThreadUnder(ctx, e.alice.ID, c, parent)
					if err == nil && created != (i == 0) {
						t.Errorf("call %d: created = %v", i, created)
					}
					if i == 0 {
						first = th
					} else if th.ID != first.ID {
						t.Errorf("call %d answered thread %s, not %s", i, th.ID, first.ID)
					}
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			got, err := e.store.ThreadByParent(ctx, parent)
			if err != nil || got.ID != first.ID || got.ParentMessageID == nil || *got.ParentMessageID != parent || got.IsMain {
				t.Fatalf("by parent %+v, %v", got, err)
			}
			if _, err := e.store.ThreadByParent(ctx, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("no thread: err = %v", err)
			}
			dup := chat.Thread{ID: kernel.NewID(), ChannelID: c.ID, SpaceID: c.SpaceID, CreatedBy: e.alice.ID, CreatedAt: e.clock.Now(),
				UpdatedAt: e.clock.Now(), ParentMessageID: &parent}
			err = e.db.Do(ctx, func(ctx context.Context) error { return e.store.CreateThread(ctx, dup) })
			if !kernel.IsCode(err, kernel.CodeConflict) {
				t.Fatalf("a plain insert of a second thread under the message: err = %v, want conflict", err)
			}
		})
		t.Run("answers not found for a missing thread", func(t *testing.T) {
			if _, err := e.store.Thread(ctx, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("err = %v", err)
			}
		})
	})
}

// chatTestAgent inserts an agent (its principal and its agents row) with the status given.
func chatTestAgent(tb testing.TB, db *storage.DB, handle, status string, by kernel.ID) kernel.ID {
	tb.Helper()
	id := kernel.NewID()
	now := "2026-01-01T00:00:00.000000Z"
	storage.ExecInTest(tb, db, `INSERT INTO principals (id, kind, handle, handle_key, display_name, status, created_at, updated_at)
		VALUES (?, 'agent', ?, ?, ?, ?, ?, ?)`, string(id), handle, strings.ToLower(handle), handle, status, now, now)
	storage.ExecInTest(tb, db, `INSERT INTO agents (principal_id, description, created_by, created_at) VALUES (?, '', ?, ?)`,
		string(id), string(by), now)
	return id
}

func TestChatStoreOperator(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		e := newChatEnv(t, eng)
		sp := e.space(t, "A")
		c := e.channel(t, sp.ID, "general")
		bot := chatTestAgent(t, e.db, "bot", "active", e.alice.ID)
		sleepy := chatTestAgent(t, e.db, "sleepy", "disabled", e.alice.ID)

		t.Run("reads the kind and status of principals", func(t *testing.T) {
			for _, want := range []chat.PrincipalRef{{ID: bot, Kind: kernel.KindAgent, Active: true},
				{ID: sleepy, Kind: kernel.KindAgent, Active: false}, {ID: e.alice.ID, Kind: kernel.KindPerson, Active: true}} {
				if got, err := e.store.PrincipalRef(ctx, want.ID); err != nil || got != want {
					t.Errorf("got %+v, %v; want %+v", got, err, want)
				}
			}
			if _, err := e.store.PrincipalRef(ctx, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Errorf("unknown id: %v", err)
			}
		})
		t.Run("a channel has no operator at first", func(t *testing.T) {
			if got, err := e.store.Channel(ctx, c.ID); err != nil || got.OperatorID != nil {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
		t.Run("names an active agent and logs channel.updated with operator_id", func(t *testing.T) {
			before := len(logged(t, e.db))
			e.clock.Advance(time.Second)
			up, err := e.svc.SetOperator(ctx, e.alice, c.ID, bot)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.store.Channel(ctx, c.ID)
			if err != nil || got.OperatorID == nil || *got.OperatorID != bot || !got.UpdatedAt.Equal(up.UpdatedAt) {
				t.Fatalf("read back %+v, %v; want %+v", got, err, up)
			}
			list, _ := e.store.Channels(ctx, sp.ID)
			if len(list) != 1 || list[0].OperatorID == nil || *list[0].OperatorID != bot {
				t.Fatalf("list %+v", list)
			}
			evs := logged(t, e.db)[before:]
			var data map[string]any
			if len(evs) != 1 || evs[0].Type != chat.EvChannelUpdated.Name || json.Unmarshal(evs[0].Payload, &data) != nil ||
				data["operator_id"] != string(bot) {
				t.Fatalf("events %+v", evs)
			}
		})
		t.Run("refuses a disabled agent and a person, changing nothing", func(t *testing.T) {
			before := len(logged(t, e.db))
			for _, id := range []kernel.ID{sleepy, e.alice.ID, kernel.NewID()} {
				if _, err := e.svc.SetOperator(ctx, e.alice, c.ID, id); !kernel.IsCode(err, kernel.CodeValidation) {
					t.Errorf("%s: %v", id, err)
				}
			}
			if got, _ := e.store.Channel(ctx, c.ID); got.OperatorID == nil || *got.OperatorID != bot || len(logged(t, e.db)) != before {
				t.Fatalf("the refusals changed %+v", got)
			}
		})
		t.Run("the schema holds that only an agent can operate a channel", func(t *testing.T) {
			person := e.alice.ID
			err := e.db.Do(ctx, func(ctx context.Context) error {
				return e.store.SetOperator(ctx, chat.Channel{ID: c.ID, OperatorID: &person, UpdatedAt: e.clock.Now()})
			})
			if err == nil {
				t.Fatal("a person was stored as an operator")
			}
		})
		t.Run("clears the operator", func(t *testing.T) {
			before := len(logged(t, e.db))
			if _, err := e.svc.ClearOperator(ctx, e.alice, c.ID); err != nil {
				t.Fatal(err)
			}
			if got, _ := e.store.Channel(ctx, c.ID); got.OperatorID != nil {
				t.Fatalf("read back %+v", got)
			}
			evs := logged(t, e.db)[before:]
			var data map[string]any
			if len(evs) != 1 || json.Unmarshal(evs[0].Payload, &data) != nil || data["operator_id"] != nil {
				t.Fatalf("events %+v", evs)
			}
			if _, has := data["operator_id"]; !has {
				t.Fatalf("channel.updated leaves out operator_id: %s", evs[0].Payload)
			}
		})
		t.Run("an unknown channel is not found", func(t *testing.T) {
			err := e.db.Do(ctx, func(ctx context.Context) error {
				return e.store.SetOperator(ctx, chat.Channel{ID: kernel.NewID(), UpdatedAt: e.clock.Now()})
			})
			if !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("err = %v", err)
			}
		})
	})
}
