package migrate

import (
	"context"
	"testing"

	"bothy.dev/bothy/storage/engine"
)

// 0021 adds approvals and approval_approvers to a database with a run in it: the run stays, an
// approval of it is stored with its approver, a state outside the five or an approval of a run
// that does not exist is refused, and one approver is named once per approval.
func TestApprovalsMigration(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, eng engine.Name) {
		fixture := append(append([]string{}, chatFixture...),
			`INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at)
				VALUES ('a1', 'agent', 'bot', 'bot', 'Bot', '`+fixtureAt+`', '`+fixtureAt+`')`,
			`INSERT INTO runs (id, agent_id, thread_id, channel_id, space_id, invoked_by, status, version, document,
				created_at, last_activity_at, updated_at)
				VALUES ('r1', 'a1', 't1', 'c1', 's1', 'p1', 'running', 0, '{}', '`+fixtureAt+`', '`+fixtureAt+`', '`+fixtureAt+`')`)
		w, r := across(t, eng, 21, fixture...)
		var n int
		if err := r.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d runs after 0021, %v", n, err)
		}
		approval := func(id, run, state string) error {
			_, err := w.ExecContext(ctx, `INSERT INTO approvals (id, run_id, agent_id, thread_id, channel_id, space_id, title, detail,
				state, expires_at, created_at) VALUES ('`+id+`', '`+run+`', 'a1', 't1', 'c1', 's1', 'Deploy', '', '`+state+`',
				'`+fixtureAt+`', '`+fixtureAt+`')`)
			return err
		}
		if err := approval("ap1", "r1", "pending"); err != nil {
			t.Fatalf("approval: %v", err)
		}
		if err := approval("ap2", "r1", "maybe"); err == nil {
			t.Fatal("an approval in an unknown state was stored")
		}
		if err := approval("ap3", "r2", "pending"); err == nil {
			t.Fatal("an approval of a run that does not exist was stored")
		}
		approver := func() error {
			_, err := w.ExecContext(ctx, `INSERT INTO approval_approvers (approval_id, principal_id, position) VALUES ('ap1', 'p1', 0)`)
			return err
		}
		if err := approver(); err != nil {
			t.Fatalf("approver: %v", err)
		}
		if err := approver(); err == nil {
			t.Fatal("an approver was named twice")
		}
		if err := r.QueryRowContext(ctx, `SELECT COUNT(*) FROM approval_approvers WHERE principal_id = 'p1'`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d approvers, %v", n, err)
		}
	})
}
