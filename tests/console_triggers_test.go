package tests

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestConsoleMessageTriggers holds that the console shows, under a message that made a run, why
// each other agent it named was not invoked.
func TestConsoleMessageTriggers(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		runner, _ := w.in.mustCreateAgent(t, "runner")
		off, _ := w.in.mustCreateAgent(t, "sleeper")
		w.in.mustCreateAgent(t, "blind")
		w.in.owner.mustGrant(t, w.shared.ID, runner.ID, "view")
		w.in.owner.mustGrant(t, w.shared.ID, off.ID, "view")
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		w.in.owner.do(t, http.MethodPost, api("agents", off.ID, "disable"), nil).want(t, http.StatusOK)
		alice := mustSignIn(t, w.in.srv, "alice", "alice-password-1")

		t.Run("each refused agent's reason is under the message beside the run", func(t *testing.T) {
			id, p := alice.mustSay(t, w.shared.MainThreadID, "@runner @sleeper @blind please look")
			// The console reads the people and agents again every two seconds; until then an
			// agent just made may show as unknown.
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Millisecond) {
				msg := p.element(t, "message", "data-id", id)
				if strings.Contains(msg, "@sleeper is disabled.") && strings.Contains(msg, "@blind cannot read this channel.") {
					if runCardRe.FindStringSubmatch(msg) == nil {
						t.Fatalf("no run card under the message: %.3000s", msg)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("the refusals are not under the message: %.3000s", msg)
				}
				p = alice.get("/console/threads/"+w.shared.MainThreadID).want(t, http.StatusOK)
			}
		})
	})
}
