package messaging_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/storage/storetest"
)

func TestCreateMessage(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		in       messaging.NewMessage
		thread   func(f *msgFixture) kernel.ID
		deny     error
		wantCode kernel.Code
		wantErr  string // the field of a validation error
	}{
		{name: "refuses blank content", in: messaging.NewMessage{Content: " \n\t "}, wantCode: kernel.CodeValidation, wantErr: "content"},
		{name: "refuses content over 40000 bytes", in: messaging.NewMessage{Content: strings.Repeat("a", 40_001)}, wantCode: kernel.CodeValidation, wantErr: "content"},
		{name: "refuses a NUL byte", in: messaging.NewMessage{Content: "a\x00"}, wantCode: kernel.CodeValidation, wantErr: "content"},
		{name: "refuses invalid UTF-8", in: messaging.NewMessage{Content: "a\xc3"}, wantCode: kernel.CodeValidation, wantErr: "content"},
		{name: "refuses a client_msg_id over 64 characters", in: messaging.NewMessage{Content: "a", ClientMsgID: strings.Repeat("x", 65)}, wantCode: kernel.CodeValidation, wantErr: "client_msg_id"},
		{name: "refuses a client_msg_id with a space", in: messaging.NewMessage{Content: "a", ClientMsgID: "a b"}, wantCode: kernel.CodeValidation, wantErr: "client_msg_id"},
		{name: "answers not found for a missing thread", in: messaging.NewMessage{Content: "a"},
			thread: func(*msgFixture) kernel.ID { return kernel.NewID() }, wantCode: kernel.CodeNotFound},
		{name: "passes a denial through before validating", in: messaging.NewMessage{Content: ""},
			deny: kernel.ErrNotFound, wantCode: kernel.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustMessaging(t)
			f.authz.Fn = func(kernel.Actor, kernel.Action, kernel.Resource) error { return tt.deny }
			th := f.main.ID
			if tt.thread != nil {
				th = tt.thread(f)
			}
			_, _, err := f.svc.CreateMessage(ctx, alice, th, tt.in)
			if kernel.CodeOf(err) != tt.wantCode {
				t.Fatalf("err = %v, want %s", err, tt.wantCode)
			}
			if e, ok := err.(*kernel.Error); tt.wantErr != "" && (!ok || e.Field != tt.wantErr) {
				t.Fatalf("err = %#v, want field %s", err, tt.wantErr)
			}
			if f.messageCount(t) != 0 || len(f.events(t)) != 0 || len(f.posted) != 0 {
				t.Fatal("a refused message changed something")
			}
		})
	}

	t.Run("posts a message, bumps the thread, publishes MessagePosted and appends message.created", func(t *testing.T) {
		f := mustMessaging(t)
		m, created, err := f.svc.CreateMessage(ctx, alice, f.main.ID, messaging.NewMessage{Content: "  hello  ", ClientMsgID: "c-1"})
		if err != nil || !created {
			t.Fatalf("err = %v, created = %v", err, created)
		}
		if m.Content != "  hello  " || m.ThreadID != f.main.ID || m.ChannelID != f.channel.ID || m.SpaceID != f.channel.SpaceID ||
			m.AuthorID != alice.ID || m.Version != 1 || m.ClientMsgID != "c-1" || m.Mentions == nil || m.CreatedAt.Nanosecond() != 0 {
			t.Fatalf("message = %+v", m)
		}
		if c := f.authz.Last(); c.Action != messaging.ActMessageCreate || c.Resource.Kind != kernel.ResThread || c.Resource.ID != f.main.ID ||
			c.Resource.ChannelID != f.channel.ID || c.Resource.ChannelKind != chat.KindChannel {
			t.Fatalf("authorized %+v", c)
		}
		if th := f.thread(t, f.main.ID); th.MessageCount != 1 || !th.LastMessageAt.Equal(m.CreatedAt) {
			t.Fatalf("thread = %+v", th)
		}
		if len(f.posted) != 1 || f.posted[0].Message.ID != m.ID || f.posted[0].NewThread {
			t.Fatalf("posted = %+v", f.posted)
		}
		evs := f.events(t)
		if len(evs) != 1 || evs[0].Type != messaging.EvMessageCreated.Name || evs[0].SubjectID != m.ID || evs[0].ActorID != alice.ID ||
			evs[0].Scope != (kernel.Scope{SpaceID: m.SpaceID, ChannelID: m.ChannelID, ThreadID: m.ThreadID}) ||
			!storetest.PayloadIs(t, evs[0], m) {
			t.Fatalf("events = %+v", evs)
		}
	})
	t.Run("answers a repeated client_msg_id with the stored message and no new event", func(t *testing.T) {
		f := mustMessaging(t)
		first, _, err := f.svc.CreateMessage(ctx, alice, f.main.ID, messaging.NewMessage{Content: "hello", ClientMsgID: "c-1"})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			again, created, err := f.svc.CreateMessage(ctx, alice, f.main.ID, messaging.NewMessage{Content: "hello", ClientMsgID: "c-1"})
			if err != nil || created || !reflect.DeepEqual(again, first) {
				t.Fatalf("repeat %d: %+v created=%v err=%v", i, again, created, err)
			}
			if f.authz.Last().Action != messaging.ActMessageCreate {
				t.Fatal("a repeat must still be authorized")
			}
		}
		if len(f.events(t)) != 1 || len(f.posted) != 1 || f.thread(t, f.main.ID).MessageCount != 1 {
			t.Fatalf("events %d, posted %d", len(f.events(t)), len(f.posted))
		}
		// Another author may use the same client_msg_id.
		if _, created, err := f.svc.CreateMessage(ctx, bob, f.main.ID, messaging.NewMessage{Content: "hi", ClientMsgID: "c-1"}); err != nil || !created {
			t.Fatalf("bob: created=%v err=%v", created, err)
		}
	})
	t.Run("refuses a client_msg_id already used in another thread", func(t *testing.T) {
		f := mustMessaging(t)
		var other chat.Thread
		err := f.db.Do(ctx, func(ctx context.Context) error {
			var err error
			other, err = f.threads.CreateThread(ctx, alice.ID, f.channel, "")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.svc.CreateMessage(ctx, alice, f.main.ID, messaging.NewMessage{Content: "a", ClientMsgID: "c-1"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.svc.CreateMessage(ctx, alice, other.ID, messaging.NewMessage{Content: "a", ClientMsgID: "c-1"}); !kernel.IsCode(err, kernel.CodeConflict) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("resolves mentions once each, in id order, ignoring unknown handles and mail addresses", func(t *testing.T) {
		f := mustMessaging(t)
		m := mustPost(t, f, alice, "hey @Bob, ask @carol. @bob again; mail me@alice.example or @nobody")
		want := []kernel.ID{bob.ID, carol.ID}
		if bob.ID > carol.ID {
			want = []kernel.ID{carol.ID, bob.ID}
		}
		if !reflect.DeepEqual(m.Mentions, want) {
			t.Fatalf("mentions = %v, want %v", m.Mentions, want)
		}
	})
	t.Run("rolls back when a subscriber vetoes MessagePosted", func(t *testing.T) {
		f := mustMessaging(t)
		f.veto = kernel.Errorf(kernel.CodeForbidden, "no run for you")
		if _, _, err := f.svc.CreateMessage(ctx, alice, f.main.ID, messaging.NewMessage{Content: "a"}); !kernel.IsCode(err, kernel.CodeForbidden) {
			t.Fatalf("err = %v", err)
		}
		if len(f.events(t)) != 0 {
			t.Fatal("a vetoed message appended an event")
		}
	})
	t.Run("stores the trigger state a subscriber records and shows it in the answer and in message.created", func(t *testing.T) {
		f := mustMessaging(t)
		f.trigger = "no_invoke_right"
		m := mustPost(t, f, alice, "hey @carol")
		if m.TriggerState == nil || *m.TriggerState != "no_invoke_right" || m.RunID != nil {
			t.Fatalf("answer %+v", m)
		}
		if got := f.message(t, m.ID); got.TriggerState == nil || *got.TriggerState != "no_invoke_right" {
			t.Fatalf("stored %+v", got)
		}
		if p := f.posted[0]; p.Author.ID != alice.ID || p.Message.ID != m.ID {
			t.Fatalf("posted %+v", p)
		}
		evs := f.events(t)
		b := evs[0].Payload
		if !strings.Contains(string(b), `"trigger_state":"no_invoke_right"`) {
			t.Fatalf("message.created encodes as %s", b)
		}
		f.trigger = ""
		if m := mustPost(t, f, alice, "plain"); m.TriggerState != nil {
			t.Fatalf("a message without a trigger has state %q", *m.TriggerState)
		}
	})
}

func TestCreateThread(t *testing.T) {
	ctx := context.Background()
	t.Run("creates a thread with its first message in one unit", func(t *testing.T) {
		f := mustMessaging(t)
		th, m, created, err := f.svc.CreateThread(ctx, alice, f.channel.ID, messaging.NewThread{Title: "Plan", Content: "first @alice", ClientMsgID: "t-1"})
		if err != nil || !created {
			t.Fatalf("err = %v created = %v", err, created)
		}
		if th.Title != "Plan" || th.ChannelID != f.channel.ID || th.MessageCount != 1 || th.LastMessageAt == nil || m.ThreadID != th.ID ||
			!reflect.DeepEqual(m.Mentions, []kernel.ID{alice.ID}) {
			t.Fatalf("thread %+v message %+v", th, m)
		}
		if c := f.authz.Last(); c.Action != chat.ActThreadCreate || c.Resource.Kind != kernel.ResChannel || c.Resource.ID != f.channel.ID {
			t.Fatalf("authorized %+v", c)
		}
		evs := f.events(t)
		if len(evs) != 2 || evs[0].Type != chat.EvThreadCreated.Name || evs[1].Type != messaging.EvMessageCreated.Name || evs[1].Scope.ThreadID != th.ID {
			t.Fatalf("events = %+v", evs)
		}
		if len(f.posted) != 1 || !f.posted[0].NewThread {
			t.Fatalf("posted = %+v", f.posted)
		}
		th2, m2, created, err := f.svc.CreateThread(ctx, alice, f.channel.ID, messaging.NewThread{Title: "Plan", Content: "first @alice", ClientMsgID: "t-1"})
		if err != nil || created || th2.ID != th.ID || m2.ID != m.ID || len(f.events(t)) != 2 {
			t.Fatalf("repeat: %+v %+v created=%v err=%v", th2, m2, created, err)
		}
	})
	t.Run("refuses a client_msg_id of a message in the main thread", func(t *testing.T) {
		f := mustMessaging(t)
		if _, _, err := f.svc.CreateMessage(ctx, alice, f.main.ID, messaging.NewMessage{Content: "a", ClientMsgID: "x"}); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := f.svc.CreateThread(ctx, alice, f.channel.ID, messaging.NewThread{Title: "t", Content: "a", ClientMsgID: "x"})
		if !kernel.IsCode(err, kernel.CodeConflict) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("refuses a client_msg_id of a reply under a message", func(t *testing.T) {
		f := mustMessaging(t)
		parent := mustPost(t, f, bob, "a question")
		if _, _, _, err := f.svc.Reply(ctx, alice, parent.ID, messaging.NewReply{Content: "a", ClientMsgID: "x"}); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := f.svc.CreateThread(ctx, alice, f.channel.ID, messaging.NewThread{Content: "a", ClientMsgID: "x"})
		if !kernel.IsCode(err, kernel.CodeConflict) {
			t.Fatalf("err = %v", err)
		}
	})
	for _, tt := range []struct {
		name  string
		in    messaging.NewThread
		field string
	}{
		{name: "refuses a title with a control character", in: messaging.NewThread{Title: "a\x1b", Content: "a"}, field: "title"},
		{name: "refuses a title over 200 characters", in: messaging.NewThread{Title: strings.Repeat("t", 201), Content: "a"}, field: "title"},
		{name: "refuses blank content", in: messaging.NewThread{Title: "t", Content: ""}, field: "content"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := mustMessaging(t)
			_, _, _, err := f.svc.CreateThread(ctx, alice, f.channel.ID, tt.in)
			if e, ok := err.(*kernel.Error); !ok || e.Code != kernel.CodeValidation || e.Field != tt.field {
				t.Fatalf("err = %v", err)
			}
			if len(f.allThreads(t)) != 1 || len(f.events(t)) != 0 {
				t.Fatal("a refused thread changed something")
			}
		})
	}
}

func TestEditMessage(t *testing.T) {
	ctx := context.Background()
	t.Run("keeps the earlier content as a revision and appends message.updated", func(t *testing.T) {
		f := mustMessaging(t)
		m := mustPost(t, f, alice, "one")
		got, err := f.svc.EditMessage(ctx, alice, m.ID, "two @bob")
		if err != nil {
			t.Fatal(err)
		}
		if got.Content != "two @bob" || got.Version != 2 || got.EditedAt == nil || !reflect.DeepEqual(got.Mentions, []kernel.ID{bob.ID}) {
			t.Fatalf("edited = %+v", got)
		}
		revs, err := f.svc.ListRevisions(ctx, alice, m.ID)
		if err != nil || len(revs) != 1 || revs[0].Version != 1 || revs[0].Content != "one" || !revs[0].CreatedAt.Equal(m.CreatedAt) {
			t.Fatalf("revisions = %+v, %v", revs, err)
		}
		if c := f.authz.Last(); c.Action != messaging.ActRevisionsRead {
			t.Fatalf("authorized %+v", c)
		}
		evs := f.events(t)
		if last := evs[len(evs)-1]; last.Type != messaging.EvMessageUpdated.Name || !storetest.PayloadIs(t, last, got) {
			t.Fatalf("last event = %+v", last)
		}
	})
	t.Run("changes nothing for the same content", func(t *testing.T) {
		f := mustMessaging(t)
		m := mustPost(t, f, alice, "one")
		got, err := f.svc.EditMessage(ctx, alice, m.ID, "one")
		if err != nil || got.Version != 1 || len(f.events(t)) != 1 {
			t.Fatalf("got %+v err %v events %d", got, err, len(f.events(t)))
		}
	})
	t.Run("lets only the author edit", func(t *testing.T) {
		f := mustMessaging(t)
		m := mustPost(t, f, alice, "one")
		if _, err := f.svc.EditMessage(ctx, bob, m.ID, "two"); !kernel.IsCode(err, kernel.CodeForbidden) {
			t.Fatalf("err = %v", err)
		}
		if c := f.authz.Last(); c.Action != messaging.ActMessageUpdate || c.Resource.OwnerID != alice.ID || c.Resource.Kind != kernel.ResMessage {
			t.Fatalf("authorized %+v", c)
		}
	})
	t.Run("refuses blank content", func(t *testing.T) {
		f := mustMessaging(t)
		m := mustPost(t, f, alice, "one")
		if _, err := f.svc.EditMessage(ctx, alice, m.ID, ""); !kernel.IsCode(err, kernel.CodeValidation) {
			t.Fatalf("err = %v", err)
		}
	})
}

// An edit on condition of a version (If-Match) applies only to that version, so that an author
// editing what they read never overwrites an edit made since.
func TestEditMessageIf(t *testing.T) {
	ctx := context.Background()
	t.Run("applies when the message is at one of the versions", func(t *testing.T) {
		f := mustMessaging(t)
		m := mustPost(t, f, alice, "one")
		got, err := f.svc.EditMessageIf(ctx, alice, m.ID, "two", []int{7, 1})
		if err != nil || got.Version != 2 || got.Content != "two" {
			t.Fatalf("got %+v err %v", got, err)
		}
	})
	t.Run("a stale version answers precondition_failed and changes nothing", func(t *testing.T) {
		f := mustMessaging(t)
		m := mustPost(t, f, alice, "one")
		if _, err := f.svc.EditMessage(ctx, alice, m.ID, "two"); err != nil {
			t.Fatal(err)
		}
		events := len(f.events(t))
		_, err := f.svc.EditMessageIf(ctx, alice, m.ID, "three", []int{1})
		if !kernel.IsCode(err, kernel.CodePreconditionFailed) {
			t.Fatalf("err = %v, want precondition_failed", err)
		}
		got, _ := f.svc.GetMessage(ctx, alice, m.ID)
		revs, _ := f.store.Revisions(ctx, m.ID)
		if got.Content != "two" || got.Version != 2 || len(revs) != 1 || len(f.events(t)) != events {
			t.Fatalf("the refused edit changed something: %+v, %d revisions, %d events", got, len(revs), len(f.events(t)))
		}
	})
	t.Run("an empty list matches no version", func(t *testing.T) {
		f := mustMessaging(t)
		m := mustPost(t, f, alice, "one")
		if _, err := f.svc.EditMessageIf(ctx, alice, m.ID, "two", []int{}); !kernel.IsCode(err, kernel.CodePreconditionFailed) {
			t.Fatalf("err = %v, want precondition_failed", err)
		}
	})
	t.Run("no condition edits whatever version is current", func(t *testing.T) {
		f := mustMessaging(t)
		m := mustPost(t, f, alice, "one")
		if got, err := f.svc.EditMessageIf(ctx, alice, m.ID, "two", nil); err != nil || got.Version != 2 {
			t.Fatalf("got %+v err %v", got, err)
		}
	})
	t.Run("the author and a live message come first: 403 and 410 before 412", func(t *testing.T) {
		f := mustMessaging(t)
		m := mustPost(t, f, alice, "one")
		if _, err := f.svc.EditMessageIf(ctx, bob, m.ID, "two", []int{9}); !kernel.IsCode(err, kernel.CodeForbidden) {
			t.Fatalf("someone else: err = %v, want forbidden", err)
		}
		if err := f.svc.DeleteMessage(ctx, alice, m.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.EditMessageIf(ctx, alice, m.ID, "two", []int{1}); !kernel.IsCode(err, messaging.CodeMessageDeleted) {
			t.Fatalf("deleted: err = %v, want message_deleted", err)
		}
	})
}

func TestDeleteMessage(t *testing.T) {
	ctx := context.Background()
	t.Run("leaves a tombstone, redacts the log and appends message.deleted", func(t *testing.T) {
		f := mustMessaging(t)
		m := mustPost(t, f, alice, "secret @bob")
		if _, err := f.svc.EditMessage(ctx, alice, m.ID, "secret two"); err != nil {
			t.Fatal(err)
		}
		if err := f.svc.DeleteMessage(ctx, alice, m.ID); err != nil {
			t.Fatal(err)
		}
		got, err := f.svc.GetMessage(ctx, alice, m.ID)
		if err != nil || !got.Deleted || got.Content != "" || len(got.Mentions) != 0 || got.Version != 3 {
			t.Fatalf("tombstone = %+v, %v", got, err)
		}
		if len(f.redactor.calls) != 1 || f.redactor.calls[0].Subject != m.ID ||
			!reflect.DeepEqual(f.redactor.calls[0].Types, []string{messaging.EvMessageCreated.Name, messaging.EvMessageUpdated.Name}) ||
			!reflect.DeepEqual(f.redactor.calls[0].Payload, got) {
			t.Fatalf("redactions = %+v", f.redactor.calls)
		}
		for _, e := range storetest.Log(t, f.db) {
			if e.SubjectID == m.ID && (e.Type == messaging.EvMessageCreated.Name || e.Type == messaging.EvMessageUpdated.Name) &&
				!storetest.PayloadIs(t, e, got) {
				t.Fatalf("the log keeps %s as %s", e.Type, e.Payload)
			}
		}
		if revs, _ := f.store.Revisions(ctx, m.ID); len(revs) != 0 {
			t.Fatalf("revisions kept: %+v", revs)
		}
		evs := f.events(t)
		if last := evs[len(evs)-1]; last.Type != messaging.EvMessageDeleted.Name || !storetest.PayloadIs(t, last, got) {
			t.Fatalf("last event = %+v", last)
		}
		if f.thread(t, f.main.ID).MessageCount != 0 || len(f.deleted) != 1 {
			t.Fatalf("thread %+v, deleted %+v", f.thread(t, f.main.ID), f.deleted)
		}
		if c := f.authz.Calls[len(f.authz.Calls)-2]; c.Action != messaging.ActMessageDelete {
			t.Fatalf("authorized %+v", c)
		}
		n := len(evs)
		if err := f.svc.DeleteMessage(ctx, alice, m.ID); !kernel.IsCode(err, messaging.CodeMessageDeleted) || len(f.events(t)) != n {
			t.Fatalf("second delete: %v, events %d → %d", err, n, len(f.events(t)))
		}
	})
	for _, tt := range []struct {
		name string
		do   func(f *msgFixture, id kernel.ID) error
	}{
		{"refuses to edit a deleted message", func(f *msgFixture, id kernel.ID) error {
			_, err := f.svc.EditMessage(context.Background(), alice, id, "again")
			return err
		}},
		{"refuses a reaction on a deleted message", func(f *msgFixture, id kernel.ID) error {
			return f.svc.AddReaction(context.Background(), alice, id, "👍")
		}},
		{"refuses to remove a reaction from a deleted message", func(f *msgFixture, id kernel.ID) error {
			return f.svc.RemoveReaction(context.Background(), alice, id, "👍")
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := mustMessaging(t)
			m := mustPost(t, f, alice, "a")
			if err := f.svc.DeleteMessage(ctx, alice, m.ID); err != nil {
				t.Fatal(err)
			}
			if err := tt.do(f, m.ID); !kernel.IsCode(err, messaging.CodeMessageDeleted) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestReactions(t *testing.T) {
	ctx := context.Background()
	t.Run("adds and removes idempotently with one event each", func(t *testing.T) {
		f := mustMessaging(t)
		m := mustPost(t, f, alice, "a")
		for i := 0; i < 2; i++ {
			if err := f.svc.AddReaction(ctx, bob, m.ID, "👍"); err != nil {
				t.Fatal(err)
			}
		}
		if c := f.authz.Last(); c.Action != messaging.ActReactionAdd || c.Resource.ID != m.ID {
			t.Fatalf("authorized %+v", c)
		}
		for i := 0; i < 2; i++ {
			if err := f.svc.RemoveReaction(ctx, bob, m.ID, "👍"); err != nil {
				t.Fatal(err)
			}
		}
		evs := f.events(t)[1:]
		if len(evs) != 2 || evs[0].Type != messaging.EvReactionAdded.Name || evs[1].Type != messaging.EvReactionRemoved.Name {
			t.Fatalf("events = %+v", evs)
		}
		r := storetest.Payload[messaging.Reaction](t, evs[0])
		if r.MessageID != m.ID || r.PrincipalID != bob.ID || r.Emoji != "👍" || r.ThreadID != m.ThreadID || evs[0].Scope != m.Scope() {
			t.Fatalf("reaction = %+v", r)
		}
	})
	for _, emoji := range []string{"", "a b", "a\tb", strings.Repeat("x", 65), "\xff"} {
		t.Run("refuses the emoji "+strings.ToValidUTF8(emoji, "?"), func(t *testing.T) {
			f := mustMessaging(t)
			m := mustPost(t, f, alice, "a")
			if err := f.svc.AddReaction(ctx, bob, m.ID, emoji); !kernel.IsCode(err, kernel.CodeValidation) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	t.Run("answers not found for a missing message", func(t *testing.T) {
		f := mustMessaging(t)
		if err := f.svc.AddReaction(ctx, bob, kernel.NewID(), "x"); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestListMessages(t *testing.T) {
	ctx := context.Background()
	t.Run("checks message.read on the thread and the page", func(t *testing.T) {
		f := mustMessaging(t)
		mustPost(t, f, alice, "a")
		got, more, err := f.svc.ListMessages(ctx, alice, f.main.ID, chat.Page{})
		if err != nil || len(got) != 1 || more {
			t.Fatalf("got %+v more %v err %v", got, more, err)
		}
		if c := f.authz.Last(); c.Action != messaging.ActMessageRead || c.Resource.Kind != kernel.ResThread {
			t.Fatalf("authorized %+v", c)
		}
		if _, _, err := f.svc.ListMessages(ctx, alice, f.main.ID, chat.Page{Limit: -1}); !kernel.IsCode(err, kernel.CodeValidation) {
			t.Fatalf("err = %v", err)
		}
		f.authz.Fn = func(kernel.Actor, kernel.Action, kernel.Resource) error { return kernel.ErrNotFound }
		if _, _, err := f.svc.ListMessages(ctx, alice, f.main.ID, chat.Page{}); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestReply(t *testing.T) {
	ctx := context.Background()
	threadCount := func(t *testing.T, f *msgFixture) int { return len(f.allThreads(t)) }
	t.Run("starts the thread under a message with the reply as its first message", func(t *testing.T) {
		f := mustMessaging(t)
		parent := mustPost(t, f, bob, "a question")
		before := len(f.events(t))
		th, m, started, err := f.svc.Reply(ctx, alice, parent.ID, messaging.NewReply{Content: "an answer @bob", ClientMsgID: "r-1"})
		if err != nil || !started {
			t.Fatalf("err = %v started = %v", err, started)
		}
		if th.ParentMessageID == nil || *th.ParentMessageID != parent.ID || th.IsMain || th.ChannelID != f.channel.ID ||
			th.MessageCount != 1 || th.LastMessageAt == nil || !th.LastMessageAt.Equal(m.CreatedAt) {
			t.Fatalf("thread %+v", th)
		}
		if m.ThreadID != th.ID || m.AuthorID != alice.ID || m.Content != "an answer @bob" || !reflect.DeepEqual(m.Mentions, []kernel.ID{bob.ID}) {
			t.Fatalf("message %+v", m)
		}
		var asked []kernel.Action
		for _, c := range f.authz.Calls {
			asked = append(asked, c.Action)
			if c.Action == messaging.ActMessageRead && (c.Resource.Kind != kernel.ResMessage || c.Resource.ID != parent.ID) {
				t.Fatalf("message.read on %+v", c.Resource)
			}
			if c.Action == chat.ActThreadCreate && (c.Resource.Kind != kernel.ResChannel || c.Resource.ID != f.channel.ID) {
				t.Fatalf("thread.create on %+v", c.Resource)
			}
		}
		if !slices.Contains(asked, messaging.ActMessageRead) || !slices.Contains(asked, chat.ActThreadCreate) {
			t.Fatalf("asked %v", asked)
		}
		evs := f.events(t)[before:]
		if len(evs) != 2 || evs[0].Type != chat.EvThreadCreated.Name || evs[1].Type != messaging.EvMessageCreated.Name || evs[1].Scope.ThreadID != th.ID {
			t.Fatalf("events %+v", evs)
		}
		if p := storetest.Payload[chat.Thread](t, evs[0]); p.ParentMessageID == nil || *p.ParentMessageID != parent.ID {
			t.Fatalf("thread.created names no parent: %+v", p)
		}
		if last := f.posted[len(f.posted)-1]; last.Message.ID != m.ID || !last.NewThread {
			t.Fatalf("posted %+v: a thread under a message is a new thread for the trigger", last)
		}
	})
	t.Run("answers in the existing thread of the message, which a second reply does not start again", func(t *testing.T) {
		f := mustMessaging(t)
		parent := mustPost(t, f, bob, "a question")
		first, _, _, err := f.svc.Reply(ctx, alice, parent.ID, messaging.NewReply{Content: "one"})
		if err != nil {
			t.Fatal(err)
		}
		before, threads := len(f.events(t)), threadCount(t, f)
		th, m, started, err := f.svc.Reply(ctx, bob, parent.ID, messaging.NewReply{Content: "two @carol"})
		if err != nil || started || th.ID != first.ID || m.ThreadID != first.ID || th.MessageCount != 2 {
			t.Fatalf("thread %+v message %+v started=%v err=%v", th, m, started, err)
		}
		if c := f.authz.Last(); c.Action != messaging.ActMessageCreate || c.Resource.Kind != kernel.ResThread || c.Resource.ID != th.ID {
			t.Fatalf("last check %+v: posting in the thread needs message.create on it", c)
		}
		evs := f.events(t)[before:]
		if len(evs) != 1 || evs[0].Type != messaging.EvMessageCreated.Name || threadCount(t, f) != threads {
			t.Fatalf("events %+v, %d threads", evs, threadCount(t, f))
		}
		if last := f.posted[len(f.posted)-1]; last.Message.ID != m.ID || last.NewThread || !slices.Contains(last.Message.Mentions, carol.ID) {
			t.Fatalf("posted %+v: a reply in an existing thread invokes by its mentions only", last)
		}
	})
	t.Run("answers a repeated client_msg_id with the stored reply and changes nothing", func(t *testing.T) {
		f := mustMessaging(t)
		parent := mustPost(t, f, bob, "a question")
		th, m, _, err := f.svc.Reply(ctx, alice, parent.ID, messaging.NewReply{Content: "one", ClientMsgID: "r-1"})
		if err != nil {
			t.Fatal(err)
		}
		before, posted := len(f.events(t)), len(f.posted)
		th2, m2, started, err := f.svc.Reply(ctx, alice, parent.ID, messaging.NewReply{Content: "one", ClientMsgID: "r-1"})
		if err != nil || started || th2.ID != th.ID || !reflect.DeepEqual(m2, m) || len(f.events(t)) != before || len(f.posted) != posted {
			t.Fatalf("repeat: %+v %+v started=%v err=%v", th2, m2, started, err)
		}
		other := mustPost(t, f, bob, "another question")
		if _, _, _, err := f.svc.Reply(ctx, alice, other.ID, messaging.NewReply{Content: "one", ClientMsgID: "r-1"}); !kernel.IsCode(err, kernel.CodeConflict) {
			t.Fatalf("the id of a reply under another message: err = %v", err)
		}
		if _, _, err := f.svc.CreateMessage(ctx, alice, f.main.ID, messaging.NewMessage{Content: "x", ClientMsgID: "m-1"}); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := f.svc.Reply(ctx, alice, parent.ID, messaging.NewReply{Content: "x", ClientMsgID: "m-1"}); !kernel.IsCode(err, kernel.CodeConflict) {
			t.Fatalf("the id of a message in the main thread: err = %v", err)
		}
	})
	t.Run("answers in the thread a concurrent request started first", func(t *testing.T) {
		f := mustMessaging(t)
		parent := mustPost(t, f, bob, "a question")
		var raced kernel.ID
		f.threads.race = func(ctx context.Context, p kernel.ID) {
			f.threads.race = nil
			th := chat.Thread{ID: kernel.NewID(), ChannelID: f.channel.ID, SpaceID: f.channel.SpaceID, ParentMessageID: &p,
				CreatedBy: bob.ID, CreatedAt: f.main.CreatedAt, UpdatedAt: f.main.CreatedAt}
			if err := f.chats.CreateThread(ctx, th); err != nil { // the other request's row, without its event
				t.Error(err)
			}
			raced = th.ID
		}
		before, threads := len(f.events(t)), threadCount(t, f)
		th, m, started, err := f.svc.Reply(ctx, alice, parent.ID, messaging.NewReply{Content: "mine"})
		if err != nil || started || th.ID != raced || m.ThreadID != raced || threadCount(t, f) != threads+1 {
			t.Fatalf("thread %+v started=%v err=%v, %d threads", th, started, err, threadCount(t, f))
		}
		if evs := f.events(t)[before:]; len(evs) != 1 || evs[0].Type != messaging.EvMessageCreated.Name {
			t.Fatalf("events %+v: the thread.created is the other request's", evs)
		}
	})
	t.Run("a deleted message keeps its thread for replies but starts none", func(t *testing.T) {
		f := mustMessaging(t)
		with, without := mustPost(t, f, bob, "with a thread"), mustPost(t, f, bob, "without")
		th, _, _, err := f.svc.Reply(ctx, alice, with.ID, messaging.NewReply{Content: "one"})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []kernel.ID{with.ID, without.ID} {
			if err := f.svc.DeleteMessage(ctx, bob, id); err != nil {
				t.Fatal(err)
			}
		}
		if got, _, started, err := f.svc.Reply(ctx, alice, with.ID, messaging.NewReply{Content: "two"}); err != nil || started || got.ID != th.ID {
			t.Fatalf("reply under a deleted message with a thread: %+v started=%v err=%v", got, started, err)
		}
		before, threads := len(f.events(t)), threadCount(t, f)
		if _, _, _, err := f.svc.Reply(ctx, alice, without.ID, messaging.NewReply{Content: "two"}); !kernel.IsCode(err, messaging.CodeMessageDeleted) {
			t.Fatalf("reply under a deleted message without a thread: err = %v", err)
		}
		if len(f.events(t)) != before || threadCount(t, f) != threads {
			t.Fatal("a refused reply changed something")
		}
	})
	for _, tt := range []struct {
		name   string
		parent func(t *testing.T, f *msgFixture) kernel.ID
		deny   func(a kernel.Action, r kernel.Resource) error
		in     messaging.NewReply
		want   kernel.Code
	}{
		{name: "refuses a message in a thread: threads do not nest", want: messaging.CodeNotInMainThread,
			parent: func(t *testing.T, f *msgFixture) kernel.ID {
				_, m, _, err := f.svc.CreateThread(context.Background(), bob, f.channel.ID, messaging.NewThread{Content: "in a thread"})
				if err != nil {
					t.Fatal(err)
				}
				return m.ID
			}},
		{name: "answers not found for a message the caller may not read", want: kernel.CodeNotFound,
			deny: func(a kernel.Action, r kernel.Resource) error {
				if a == messaging.ActMessageRead {
					return kernel.ErrNotFound
				}
				return nil
			}},
		{name: "answers not found for a missing message", want: kernel.CodeNotFound,
			parent: func(*testing.T, *msgFixture) kernel.ID { return kernel.NewID() }},
		{name: "refuses who may not start a thread in the channel", want: kernel.CodeForbidden,
			deny: func(a kernel.Action, r kernel.Resource) error {
				if a == chat.ActThreadCreate {
					return kernel.Errorf(kernel.CodeForbidden, "no")
				}
				return nil
			}},
		{name: "refuses blank content", in: messaging.NewReply{Content: " "}, want: kernel.CodeValidation},
		{name: "refuses a client_msg_id with a space", in: messaging.NewReply{Content: "a", ClientMsgID: "a b"}, want: kernel.CodeValidation},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := mustMessaging(t)
			parent := mustPost(t, f, bob, "a question").ID
			if tt.parent != nil {
				parent = tt.parent(t, f)
			}
			if tt.deny != nil {
				f.authz.Fn = func(_ kernel.Actor, a kernel.Action, r kernel.Resource) error { return tt.deny(a, r) }
			}
			if tt.in.Content == "" && tt.in.ClientMsgID == "" && tt.want != kernel.CodeValidation {
				tt.in.Content = "an answer"
			}
			before, threads, msgs := len(f.events(t)), threadCount(t, f), f.messageCount(t)
			_, _, _, err := f.svc.Reply(ctx, alice, parent, tt.in)
			if !kernel.IsCode(err, tt.want) {
				t.Fatalf("err = %v, want %s", err, tt.want)
			}
			if len(f.events(t)) != before || threadCount(t, f) != threads || f.messageCount(t) != msgs {
				t.Fatal("a refused reply changed something")
			}
		})
	}
}
