package chat_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage/storetest"
)

var alice = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "alice"}

func TestCreateSpace(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		input    string
		deny     error
		wantCode kernel.Code
		wantName string
	}{
		{name: "creates a space with a trimmed name", input: "  Home  ", wantName: "Home"},
		{name: "accepts 80 characters of multi-byte text", input: strings.Repeat("ü", 80), wantName: strings.Repeat("ü", 80)},
		{name: "refuses an empty name", input: "   ", wantCode: kernel.CodeValidation},
		{name: "refuses 81 characters", input: strings.Repeat("a", 81), wantCode: kernel.CodeValidation},
		{name: "refuses a control character", input: "a\x07b", wantCode: kernel.CodeValidation},
		{name: "refuses a bidi override", input: "a\u202eb", wantCode: kernel.CodeValidation},
		{name: "refuses a bidi isolate", input: "a\u2067b", wantCode: kernel.CodeValidation},
		{name: "refuses a zero-width space", input: "gen\u200beral", wantCode: kernel.CodeValidation},
		{name: "refuses a zero-width joiner", input: "a\u200db", wantCode: kernel.CodeValidation},
		{name: "keeps a decomposed name composed (NFC)", input: "Cafe\u0301", wantName: "Caf\u00e9"},
		{name: "refuses invalid UTF-8", input: "a\xffb", wantCode: kernel.CodeValidation},
		{name: "passes a denial through and writes nothing", input: "Home", deny: kernel.Errorf(kernel.CodeForbidden, "no"), wantCode: kernel.CodeForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustChat(t)
			f.authz.Fn = func(kernel.Actor, kernel.Action, kernel.Resource) error { return tt.deny }
			sp, err := f.svc.CreateSpace(ctx, alice, tt.input)
			if tt.wantCode != (kernel.Code{}) {
				if kernel.CodeOf(err) != tt.wantCode {
					t.Fatalf("err = %v, want %s", err, tt.wantCode)
				}
				if len(f.events(t)) != 0 || len(f.spaces(t)) != 0 {
					t.Fatal("a refused create changed something")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sp.Name != tt.wantName || sp.CreatedBy != alice.ID || sp.CreatedAt.Nanosecond()%1000 != 0 {
				t.Fatalf("space = %+v", sp)
			}
			if f.authz.Calls[0].Action != chat.ActSpaceCreate || f.authz.Calls[0].Resource.Kind != kernel.ResInstance {
				t.Fatalf("authorized %+v", f.authz.Calls[0])
			}
			evs := f.events(t)
			if len(evs) != 1 || evs[0].Type != chat.EvSpaceCreated.Name || evs[0].Scope != (kernel.Scope{SpaceID: sp.ID}) ||
				evs[0].SubjectID != sp.ID || evs[0].ActorID != alice.ID || !storetest.PayloadIs(t, evs[0], sp) {
				t.Fatalf("events = %+v", evs)
			}
		})
	}
}

func TestSpaces(t *testing.T) {
	ctx := context.Background()
	t.Run("lists only the visible spaces", func(t *testing.T) {
		f := mustChat(t)
		a, b := mustSpace(t, f, alice, "A"), mustSpace(t, f, alice, "B")
		f.scoper.Spaces[b.ID] = true
		got, err := f.svc.ListSpaces(ctx, alice)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].ID != b.ID {
			t.Fatalf("got %+v, want only %s (not %s)", got, b.ID, a.ID)
		}
	})
	t.Run("refuses the anonymous actor a list", func(t *testing.T) {
		f := mustChat(t)
		if _, err := f.svc.ListSpaces(ctx, kernel.Anonymous); !kernel.IsCode(err, kernel.CodeUnauthenticated) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("answers not found for a space the actor may not see", func(t *testing.T) {
		f := mustChat(t)
		sp := mustSpace(t, f, alice, "A")
		f.authz.Fn = func(_ kernel.Actor, a kernel.Action, r kernel.Resource) error {
			if a == chat.ActSpaceRead && r.ID == sp.ID {
				return kernel.ErrNotFound
			}
			return nil
		}
		if _, err := f.svc.GetSpace(ctx, alice, sp.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("err = %v", err)
		}
		if _, err := f.svc.GetSpace(ctx, alice, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("missing space: err = %v", err)
		}
	})
	t.Run("renames a space and appends space.updated", func(t *testing.T) {
		f := mustChat(t)
		sp := mustSpace(t, f, alice, "A")
		f.clock.Advance(time.Minute)
		name := "Renamed"
		got, err := f.svc.UpdateSpace(ctx, alice, sp.ID, chat.SpacePatch{Name: &name})
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "Renamed" || !got.UpdatedAt.After(sp.UpdatedAt) || f.space(t, sp.ID).Name != "Renamed" {
			t.Fatalf("got %+v", got)
		}
		evs := f.events(t)
		if last := evs[len(evs)-1]; last.Type != chat.EvSpaceUpdated.Name || !storetest.PayloadIs(t, last, got) {
			t.Fatalf("last event = %+v", last)
		}
	})
	t.Run("appends nothing for a patch that changes nothing", func(t *testing.T) {
		f := mustChat(t)
		sp := mustSpace(t, f, alice, "A")
		name := " A "
		if _, err := f.svc.UpdateSpace(ctx, alice, sp.ID, chat.SpacePatch{Name: &name}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.UpdateSpace(ctx, alice, sp.ID, chat.SpacePatch{}); err != nil {
			t.Fatal(err)
		}
		if n := len(f.events(t)); n != 1 {
			t.Fatalf("%d events, want only space.created", n)
		}
		if last := f.authz.Calls[len(f.authz.Calls)-1]; last.Action != chat.ActSpaceUpdate {
			t.Fatalf("a no-op patch must still be authorized, last = %+v", last)
		}
	})
}

func TestChannels(t *testing.T) {
	ctx := context.Background()
	t.Run("creates a channel with its main thread in one unit", func(t *testing.T) {
		f := mustChat(t)
		sp := mustSpace(t, f, alice, "A")
		c, err := f.svc.CreateChannel(ctx, alice, sp.ID, chat.NewChannel{Name: "general", Topic: " chat "})
		if err != nil {
			t.Fatal(err)
		}
		if c.Kind != chat.KindChannel || c.SpaceID != sp.ID || c.Topic != "chat" || c.MainThreadID.IsZero() {
			t.Fatalf("channel = %+v", c)
		}
		main, err := f.store.Thread(ctx, c.MainThreadID)
		if err != nil || !main.IsMain || main.ChannelID != c.ID || main.SpaceID != sp.ID {
			t.Fatalf("main thread = %+v, %v", main, err)
		}
		last := f.authz.Calls[len(f.authz.Calls)-1]
		if last.Action != chat.ActChannelCreate || last.Resource.Kind != kernel.ResSpace || last.Resource.ID != sp.ID {
			t.Fatalf("authorized %+v", last)
		}
		evs := f.events(t)[1:]
		if len(evs) != 2 || evs[0].Type != chat.EvChannelCreated.Name || evs[1].Type != chat.EvThreadCreated.Name {
			t.Fatalf("events = %+v", evs)
		}
		if evs[0].Scope != (kernel.Scope{SpaceID: sp.ID, ChannelID: c.ID}) ||
			evs[1].Scope != (kernel.Scope{SpaceID: sp.ID, ChannelID: c.ID, ThreadID: c.MainThreadID}) {
			t.Fatalf("scopes = %+v, %+v", evs[0].Scope, evs[1].Scope)
		}
	})
	t.Run("refuses a channel in a space that does not exist", func(t *testing.T) {
		f := mustChat(t)
		if _, err := f.svc.CreateChannel(ctx, alice, kernel.NewID(), chat.NewChannel{Name: "x"}); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("refuses invisible characters in a channel's name, on create and on rename", func(t *testing.T) {
		f := mustChat(t)
		sp := mustSpace(t, f, alice, "A")
		for _, n := range []string{"gen\u200beral", "a\u2060b", "\ufeffgeneral", "a\u202eb", "a\u2066b\u2069"} {
			if _, err := f.svc.CreateChannel(ctx, alice, sp.ID, chat.NewChannel{Name: n}); !kernel.IsCode(err, kernel.CodeValidation) {
				t.Errorf("create %+q: %v", n, err)
			}
		}
		c, err := f.svc.CreateChannel(ctx, alice, sp.ID, chat.NewChannel{Name: "general"})
		if err != nil {
			t.Fatal(err)
		}
		bad := "gen\u200ceral"
		if _, err := f.svc.UpdateChannel(ctx, alice, c.ID, chat.ChannelPatch{Name: &bad}); !kernel.IsCode(err, kernel.CodeValidation) {
			t.Errorf("rename to %+q: %v", bad, err)
		}
	})
	t.Run("refuses a topic over 1000 characters", func(t *testing.T) {
		f := mustChat(t)
		sp := mustSpace(t, f, alice, "A")
		_, err := f.svc.CreateChannel(ctx, alice, sp.ID, chat.NewChannel{Name: "x", Topic: strings.Repeat("t", 1001)})
		if e, ok := err.(*kernel.Error); !ok || e.Code != kernel.CodeValidation || e.Field != "topic" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("lists the visible channels of a readable space", func(t *testing.T) {
		f := mustChat(t)
		sp := mustSpace(t, f, alice, "A")
		a, b := mustChannel(t, f, alice, sp.ID, "a"), mustChannel(t, f, alice, sp.ID, "b")
		f.scoper.Channels[a.ID] = true
		got, err := f.svc.ListChannels(ctx, alice, sp.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].ID != a.ID {
			t.Fatalf("got %+v (b is %s)", got, b.ID)
		}
	})
	t.Run("updates name and topic and clears the topic", func(t *testing.T) {
		f := mustChat(t)
		sp := mustSpace(t, f, alice, "A")
		c := mustChannel(t, f, alice, sp.ID, "a")
		name, topic := "b", "the topic"
		got, err := f.svc.UpdateChannel(ctx, alice, c.ID, chat.ChannelPatch{Name: &name, Topic: &topic})
		if err != nil || got.Name != "b" || got.Topic != "the topic" {
			t.Fatalf("got %+v, %v", got, err)
		}
		empty := ""
		got, err = f.svc.UpdateChannel(ctx, alice, c.ID, chat.ChannelPatch{Topic: &empty})
		if err != nil || got.Topic != "" || got.Name != "b" {
			t.Fatalf("got %+v, %v", got, err)
		}
		evs := f.events(t)
		if n := len(evs); evs[n-1].Type != chat.EvChannelUpdated.Name || evs[n-2].Type != chat.EvChannelUpdated.Name {
			t.Fatalf("events = %+v", evs)
		}
	})
}

func TestThreads(t *testing.T) {
	ctx := context.Background()
	f := mustChat(t)
	sp := mustSpace(t, f, alice, "A")
	c := mustChannel(t, f, alice, sp.ID, "a")
	var ids []kernel.ID
	ids = append(ids, c.MainThreadID)
	var th chat.Thread // the newest
	for i := 0; i < 4; i++ {
		err := f.db.Do(ctx, func(ctx context.Context) error {
			var err error
			th, err = f.svc.CreateThread(ctx, alice.ID, c, "topic")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, th.ID)
	}

	pages := []struct {
		name     string
		page     chat.Page
		want     []kernel.ID
		wantMore bool
		wantCode kernel.Code
	}{
		{name: "answers the newest page by default", page: chat.Page{Limit: 2}, want: ids[3:], wantMore: true},
		{name: "pages backwards with before", page: chat.Page{Before: ids[3], Limit: 2}, want: ids[1:3], wantMore: true},
		{name: "reaches the oldest thread", page: chat.Page{Before: ids[1], Limit: 2}, want: ids[:1]},
		{name: "pages forwards with after", page: chat.Page{After: ids[0], Limit: 3}, want: ids[1:4], wantMore: true},
		{name: "reaches the newest thread", page: chat.Page{After: ids[2], Limit: 3}, want: ids[3:]},
		{name: "refuses before and after together", page: chat.Page{Before: ids[1], After: ids[0]}, wantCode: kernel.CodeValidation},
		{name: "refuses a limit over 200", page: chat.Page{Limit: 201}, wantCode: kernel.CodeValidation},
	}
	for _, tt := range pages {
		t.Run(tt.name, func(t *testing.T) {
			got, more, err := f.svc.ListThreads(ctx, alice, c.ID, tt.page)
			if tt.wantCode != (kernel.Code{}) {
				if kernel.CodeOf(err) != tt.wantCode {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gotIDs []kernel.ID
			for _, th := range got {
				gotIDs = append(gotIDs, th.ID)
			}
			if strings.Join(idStrings(gotIDs), ",") != strings.Join(idStrings(tt.want), ",") || more != tt.wantMore {
				t.Fatalf("got %v more=%v, want %v more=%v", gotIDs, more, tt.want, tt.wantMore)
			}
		})
	}

	t.Run("checks thread.read on the channel", func(t *testing.T) {
		f.authz.Fn = func(_ kernel.Actor, a kernel.Action, r kernel.Resource) error {
			if a == chat.ActThreadRead && r.ID == c.ID && r.Kind == kernel.ResChannel {
				return kernel.ErrNotFound
			}
			return nil
		}
		defer func() { f.authz.Fn = nil }()
		if _, _, err := f.svc.ListThreads(ctx, alice, c.ID, chat.Page{}); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("creates a thread for messaging and appends thread.created", func(t *testing.T) {
		evs := f.events(t)
		last := evs[len(evs)-1]
		p := storetest.Payload[chat.Thread](t, last)
		if last.Type != chat.EvThreadCreated.Name || p.ID != ids[4] || p.Title != "topic" || p.IsMain {
			t.Fatalf("last event = %+v", last)
		}
		if th.ID != ids[4] || th.ChannelKind != chat.KindChannel {
			t.Fatalf("created %+v", th)
		}
	})
	t.Run("creates one thread under a message and answers it again without a second event", func(t *testing.T) {
		parent := kernel.NewID()
		var first chat.Thread
		err := f.db.Do(ctx, func(ctx context.Context) error {
			th, created, err := f.svc.CreateThreadUnder(ctx, alice.ID, c, parent)
			if err == nil && !created {
				t.Error("the first thread under a message was not created")
			}
			first = th
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		evs := f.events(t)
		last := evs[len(evs)-1]
		if p := storetest.Payload[chat.Thread](t, last); last.Type != chat.EvThreadCreated.Name || p.ID != first.ID || p.ParentMessageID == nil ||
			*p.ParentMessageID != parent || p.IsMain || p.Title != "" {
			t.Fatalf("last event = %+v", last)
		}
		bob := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "bob"}
		storetest.Principal(t, f.db, bob)
		err = f.db.Do(ctx, func(ctx context.Context) error {
			th, created, err := f.svc.CreateThreadUnder(ctx, bob.ID, c, parent)
			if err == nil && (created || th.ID != first.ID) {
				t.Errorf("second call: %+v created=%v", th, created)
			}
			return err
		})
		if n := len(f.events(t)); err != nil || n != len(evs) {
			t.Fatalf("second call: err = %v, %d events after %d", err, n, len(evs))
		}
		if got, err := f.svc.ThreadByParent(ctx, parent); err != nil || got.ID != first.ID || got.ChannelKind != chat.KindChannel {
			t.Fatalf("by parent: %+v, %v", got, err)
		}
		if _, err := f.svc.ThreadByParent(ctx, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("a message without a thread: err = %v", err)
		}
		ref, err := f.svc.ThreadRef(ctx, first.ID)
		if err != nil || ref.ParentMessageID == nil || *ref.ParentMessageID != parent {
			t.Fatalf("ref %+v, %v", ref, err)
		}
	})
	t.Run("accepts an empty thread title and refuses one over 200 characters", func(t *testing.T) {
		err := f.db.Do(ctx, func(ctx context.Context) error {
			th, err := f.svc.CreateThread(ctx, alice.ID, c, " ")
			if err == nil && th.Title != "" {
				t.Errorf("title = %q", th.Title)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		err = f.db.Do(ctx, func(ctx context.Context) error {
			_, err := f.svc.CreateThread(ctx, alice.ID, c, strings.Repeat("t", 201))
			return err
		})
		if !kernel.IsCode(err, kernel.CodeValidation) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("counts messages in and out of a thread", func(t *testing.T) {
		at := f.clock.Now().Truncate(time.Microsecond) // the precision the store keeps, as messaging hands it
		err := f.db.Do(ctx, func(ctx context.Context) error {
			return errors.Join(f.svc.AppendToThread(ctx, ids[1], kernel.NewID(), at), f.svc.AppendToThread(ctx, ids[1], kernel.NewID(), at),
				f.svc.RemoveFromThread(ctx, ids[1]))
		})
		if err != nil {
			t.Fatal(err)
		}
		th, _ := f.svc.Thread(ctx, ids[1])
		if th.MessageCount != 1 || th.LastMessageAt == nil || !th.LastMessageAt.Equal(at) {
			t.Fatalf("thread = %+v", th)
		}
		// Inside a unit the store applies the counts at commit, where a thread that is gone is
		// no row to update; outside one it answers not_found, which the service passes on.
		f.store.bumpThread = func(context.Context, kernel.ID, int, time.Time) error { return kernel.ErrNotFound }
		defer func() { f.store.bumpThread = nil }()
		if err := f.svc.AppendToThread(ctx, kernel.NewID(), kernel.NewID(), at); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("missing thread: err = %v", err)
		}
	})
}

func idStrings(ids []kernel.ID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

func TestThreadRef(t *testing.T) {
	f := mustChat(t)
	ctx := context.Background()
	sp := mustSpace(t, f, alice, "A").ID
	ch := mustChannel(t, f, alice, sp, "a")
	var th chat.Thread
	err := f.db.Do(ctx, func(ctx context.Context) error {
		var err error
		th, err = f.svc.CreateThread(ctx, alice.ID, ch, "t")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = f.db.Do(ctx, func(ctx context.Context) error {
		for range 7 {
			if err := f.svc.AppendToThread(ctx, th.ID, kernel.NewID(), f.clock.Now()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("answers the thread's place and keeps it", func(t *testing.T) {
		ref, err := f.svc.ThreadRef(ctx, th.ID)
		if err != nil || ref.ChannelID != ch.ID || ref.SpaceID != sp || ref.ChannelKind != "channel" || ref.CreatedBy != th.CreatedBy {
			t.Fatalf("ref %+v, %v", ref, err)
		}
		if ref.MessageCount != 0 || ref.Title != "" {
			t.Fatalf("a place carries no changing fields: %+v", ref)
		}
		// The second answer must come from memory.
		f.store.thread = func(context.Context, kernel.ID) (chat.Thread, error) {
			t.Error("the second read went to the store")
			return chat.Thread{}, kernel.ErrNotFound
		}
		defer func() { f.store.thread = nil }()
		again, err := f.svc.ThreadRef(ctx, th.ID)
		if err != nil || again != ref {
			t.Fatalf("second read %+v, %v", again, err)
		}
	})
	t.Run("answers not found for an unknown thread and keeps nothing", func(t *testing.T) {
		id := kernel.NewID()
		if _, err := f.svc.ThreadRef(ctx, id); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
}
