package storage_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// TestApprovalStore holds the approvals repository on both engines: an approval reads back as
// written with its approvers in order, a decision is written once, the grant for a run is found
// by its title, and the inbox is a person's approvals newest first.
func TestApprovalStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		e := newRunEnv(t, eng)
		e.post(t, e.pia, "@echo go")
		r := e.threadRuns(t, e.channel.MainThreadID)[0]
		st := storage.NewApprovalStore(e.db)
		t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)
		mk := func(title string, approvers ...kernel.ID) runs.Approval {
			return runs.Approval{ID: kernel.NewID(), RunID: r.ID, AgentID: r.AgentID, ThreadID: r.ThreadID, ChannelID: r.ChannelID,
				SpaceID: r.SpaceID, Title: title, Detail: "why: " + title, ApproverIDs: approvers, State: runs.ApprovalPending,
				ExpiresAt: t0.Add(time.Minute), CreatedAt: t0, ChannelKind: r.ChannelKind}
		}
		in := func(f func(ctx context.Context) error) error { return e.db.Do(bg, f) }
		a, b, c := mk("a", e.paul.ID, e.pia.ID), mk("b", e.pia.ID), mk("c", e.paul.ID)
		for _, x := range []runs.Approval{a, b, c} {
			if err := in(func(ctx context.Context) error { return st.CreateApproval(ctx, x) }); err != nil {
				t.Fatal(err)
			}
		}

		t.Run("an approval reads back as written, its approvers in order", func(t *testing.T) {
			got, err := st.Approval(bg, a.ID)
			if err != nil || !reflect.DeepEqual(got, a) {
				t.Fatalf("got %+v, %v; want %+v", got, err, a)
			}
			if _, err := st.Approval(bg, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("an unknown id: %v", err)
			}
		})

		t.Run("a decision is written once, and a second one is told it was decided", func(t *testing.T) {
			d := b
			decision, scope, by, at := "approve", "run", e.pia.ID, t0.Add(time.Second)
			d.State, d.Decision, d.Scope, d.By, d.DecidedAt = runs.ApprovalApproved, &decision, &scope, &by, &at
			if err := in(func(ctx context.Context) error { return st.DecideApproval(ctx, d) }); err != nil {
				t.Fatal(err)
			}
			if got, err := st.Approval(bg, b.ID); err != nil || !reflect.DeepEqual(got, d) {
				t.Fatalf("got %+v, %v; want %+v", got, err, d)
			}
			err := in(func(ctx context.Context) error { return st.DecideApproval(ctx, d) })
			if !kernel.IsCode(err, runs.CodeApprovalDecided) {
				t.Fatalf("a second decision: %v", err)
			}
		})

		t.Run("the run's pending ones and its grant for a title are found", func(t *testing.T) {
			pending, err := st.PendingApprovals(bg, r.ID)
			if err != nil || len(pending) != 2 || pending[0].ID != a.ID || pending[1].ID != c.ID {
				t.Fatalf("pending %+v %v", pending, err)
			}
			g, ok, err := st.RunGrant(bg, r.ID, "b")
			if err != nil || !ok || g.ID != b.ID {
				t.Fatalf("grant of b %+v %v %v", g, ok, err)
			}
			if _, ok, err := st.RunGrant(bg, r.ID, "a"); err != nil || ok {
				t.Fatalf("a pending one is a grant: %v %v", ok, err)
			}
		})

		t.Run("the inbox is a person's approvals newest first, by state, in pages", func(t *testing.T) {
			ids := func(as []runs.Approval) []kernel.ID {
				var out []kernel.ID
				for _, a := range as {
					out = append(out, a.ID)
				}
				return out
			}
			got, err := st.ApproverInbox(bg, e.pia.ID, "", "", 10)
			if err != nil || !slices.Equal(ids(got), []kernel.ID{b.ID, a.ID}) {
				t.Fatalf("pia's %v %v", ids(got), err)
			}
			got, err = st.ApproverInbox(bg, e.pia.ID, runs.ApprovalPending, "", 10)
			if err != nil || !slices.Equal(ids(got), []kernel.ID{a.ID}) || len(got[0].ApproverIDs) != 2 {
				t.Fatalf("pia's pending %+v %v", got, err)
			}
			got, err = st.ApproverInbox(bg, e.paul.ID, runs.ApprovalPending, c.ID, 10)
			if err != nil || !slices.Equal(ids(got), []kernel.ID{a.ID}) {
				t.Fatalf("paul's before c %v %v", ids(got), err)
			}
			if got, err = st.ApproverInbox(bg, e.paul.ID, "", "", 1); err != nil || !slices.Equal(ids(got), []kernel.ID{c.ID}) {
				t.Fatalf("paul's first %v %v", ids(got), err)
			}
		})
	})
}
