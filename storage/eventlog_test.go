package storage_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"reflect"
	"testing"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// The log keeps message.created and message.updated by reference: the row holds no payload nor
// scope, and the reader gets the message as it is now, in its thread's scope.
func TestEventLogByReference(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		e := newMsgEnv(t, eng)
		var live []kernel.LoggedEvent
		e.db.OnCommit(func(evs []kernel.LoggedEvent) { live = append(live, evs...) })
		m := e.post(t, e.alice, e.otherTh.ID, "first words @bob", "c-1")

		t.Run("a created event reads as the message it logged, with its scope", func(t *testing.T) {
			evs := e.newEvents(t)
			if len(evs) != 1 || len(live) != 1 {
				t.Fatalf("%d events read, %d live", len(evs), len(live))
			}
			got, err := messaging.EvMessageCreated.Decode(kernel.LoggedEvent{Type: evs[0].Type, Payload: evs[0].Payload})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := messaging.EvMessageCreated.Decode(kernel.LoggedEvent{Type: live[0].Type, Payload: live[0].Payload})
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("read back %+v\nlive      %+v", got, want)
			}
			if evs[0].Scope != m.Scope() || evs[0].SubjectID != m.ID || evs[0].ActorID != e.alice.ID || evs[0].Scope != live[0].Scope {
				t.Fatalf("scope %+v subject %s actor %s, want %+v %s %s", evs[0].Scope, evs[0].SubjectID, evs[0].ActorID, m.Scope(), m.ID, e.alice.ID)
			}
		})

		t.Run("the row keeps neither payload nor scope, other events stay whole", func(t *testing.T) {
			if err := e.svc.AddReaction(ctx, e.bob, m.ID, "👍"); err != nil {
				t.Fatal(err)
			}
			type row struct {
				typ, payload   string
				channel, space sql.NullString
			}
			var rows []row
			storage.QueryInTest(t, e.db, `SELECT type, payload, channel_id, space_id FROM event_log WHERE seq > ? ORDER BY seq`,
				func(scan func(...any) error) {
					var r row
					if err := scan(&r.typ, &r.payload, &r.channel, &r.space); err != nil {
						t.Fatal(err)
					}
					rows = append(rows, r)
				}, e.startSeq)
			if len(rows) != 2 {
				t.Fatalf("%d rows", len(rows))
			}
			if r := rows[0]; r.payload != "" || r.channel.Valid || r.space.Valid {
				t.Errorf("message.created row %+v, want no payload nor scope", r)
			}
			if r := rows[1]; r.payload == "" || r.channel.String != string(e.channel.ID) {
				t.Errorf("%s row %+v, want it whole", r.typ, r)
			}
		})

		t.Run("after an edit every event of the message reads as its latest version", func(t *testing.T) {
			if _, err := e.svc.EditMessage(ctx, e.alice, m.ID, "second words"); err != nil {
				t.Fatal(err)
			}
			for _, ev := range e.newEvents(t) {
				if ev.Type != messaging.EvMessageCreated.Name && ev.Type != messaging.EvMessageUpdated.Name {
					continue
				}
				var p messaging.Message
				if err := json.Unmarshal(ev.Payload, &p); err != nil {
					t.Fatal(err)
				}
				if p.Content != "second words" || p.Version != 2 || ev.Scope != m.Scope() {
					t.Errorf("%s reads %q version %d scope %+v", ev.Type, p.Content, p.Version, ev.Scope)
				}
			}
		})

		t.Run("after a delete they read as its tombstone", func(t *testing.T) {
			if err := e.svc.DeleteMessage(ctx, e.alice, m.ID); err != nil {
				t.Fatal(err)
			}
			for _, ev := range e.newEvents(t) {
				if ev.SubjectID != m.ID || ev.Type == "reaction.added" {
					continue
				}
				var p messaging.Message
				if err := json.Unmarshal(ev.Payload, &p); err != nil {
					t.Fatal(err)
				}
				if !p.Deleted || p.Content != "" || ev.Scope != m.Scope() {
					t.Errorf("%s reads %+v scope %+v, want the tombstone", ev.Type, p, ev.Scope)
				}
			}
		})
	})
}
