package authz_test

import (
	"context"
	"testing"

	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// runOf is a run in channel ch invoked by who.
func runOf(ch kernel.ID, who kernel.Actor) kernel.Resource {
	r := onChannel(ch)
	r.Kind, r.ID, r.OwnerID = kernel.ResRun, kernel.NewID(), who.ID
	return r
}

// The rules of runs: invoke needs the invoke level; a run is read like its thread; it is
// cancelled by the one who invoked it, while that one still sees the channel, or by a manager.
func TestRunRules(t *testing.T) {
	ds := []decision{
		{"a principal with invoke may invoke an agent", agent, runs.ActAgentInvoke, onChannel(C), ok},
		{"a manager may invoke an agent", manager, runs.ActAgentInvoke, onChannel(C), ok},
		{"a space manager may invoke in the space's channels", spaceMgr, runs.ActAgentInvoke, onChannel(C2), ok},
		{"an owner may invoke anywhere but a DM it is not in", owner, runs.ActAgentInvoke, onChannel(E), ok},
		{"an owner does not see a DM it is not in to invoke there", owner, runs.ActAgentInvoke, onChannel(D), notFound},
		{"a poster may not invoke", poster, runs.ActAgentInvoke, onChannel(C), forbidden},
		{"a viewer may not invoke", viewer, runs.ActAgentInvoke, onChannel(C), forbidden},
		{"a stranger does not see the channel to invoke", stranger, runs.ActAgentInvoke, onChannel(C), notFound},
		{"the anonymous actor may not invoke", anonymous, runs.ActAgentInvoke, onChannel(C), unauthorized},

		{"a viewer reads a run of the channel", viewer, runs.ActRunRead, runOf(C, poster), ok},
		{"a space viewer reads a run of the space's channels", spaceViewer, runs.ActRunRead, runOf(C2, poster), ok},
		{"the agent that reads the channel reads its runs", agent, runs.ActRunRead, runOf(C, poster), ok},
		{"an owner reads any run outside the DMs it is not in", owner, runs.ActRunRead, runOf(E, owner), ok},
		{"a stranger does not see a run", stranger, runs.ActRunRead, runOf(C, poster), notFound},
		{"an owner does not see a run in a DM it is not in", owner, runs.ActRunRead, runOf(D, dmMember), notFound},

		{"the one who invoked may cancel", viewer, runs.ActRunCancel, runOf(C, viewer), ok},
		{"another reader may not cancel", viewer, runs.ActRunCancel, runOf(C, poster), forbidden},
		{"a poster may not cancel another's run", poster, runs.ActRunCancel, runOf(C, viewer), forbidden},
		{"a manager may cancel any run of the channel", manager, runs.ActRunCancel, runOf(C, viewer), ok},
		{"a space manager may cancel the runs of the space's channels", spaceMgr, runs.ActRunCancel, runOf(C2, viewer), ok},
		{"an owner may cancel any run outside the DMs it is not in", owner, runs.ActRunCancel, runOf(E, viewer), ok},
		{"an owner may not cancel a run in a DM it is not in", owner, runs.ActRunCancel, runOf(D, dmMember), notFound},
		{"one who invoked and lost the channel does not see the run", stranger, runs.ActRunCancel, runOf(C, stranger), notFound},
		{"the anonymous actor may not cancel", anonymous, runs.ActRunCancel, runOf(C, viewer), unauthorized},
	}
	svc := newService(fixture())
	for _, d := range ds {
		t.Run(d.name, func(t *testing.T) {
			ctx, log := kernel.WithCheckLog(context.Background())
			if got := kernel.CodeOf(svc.Authorize(ctx, d.actor, d.action, d.res)); got != d.want {
				t.Fatalf("%s: got %q, want %q", d.action, got, d.want)
			}
			if !log.Checked(d.action) {
				t.Fatal("the decision was not recorded in the check log")
			}
		})
	}
	t.Run("every action of runs has a rule", func(t *testing.T) {
		for _, a := range []kernel.Action{runs.ActAgentInvoke, runs.ActRunRead, runs.ActRunCancel} {
			if !authz.Known(a) {
				t.Errorf("%s has no rule", a)
			}
		}
	})
}
