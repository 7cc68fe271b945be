package tests

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	kb "github.com/chromedp/chromedp/kb"
)

// typeMore types text at the end of what sel holds, as a person goes on typing.
func (b *tab) typeMore(sel, text string) {
	b.t.Helper()
	b.do("type more into "+sel, chromedp.SendKeys(chromedp.CSS(sel), text, chromedp.NodeVisible))
}

// TestBrowserSlashCommands: typing "/" in the composer lists the channel's commands under it,
// filtered as one types; Enter puts the command in the composer and sending it invokes the agent
// with the command. The owner's page of the agent shows its budget against the usage and sets
// and removes it with its form.
func TestBrowserSlashCommands(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		f := mustChatFlow(t, eng)
		w, b := f.w, f.alice
		channel := "/console/channels/" + w.shared.ID
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		deployer, dc, _ := w.mustPostingAgent(t, "deployer")
		dc.do(t, http.MethodPut, api("agents", "me", "commands"), []map[string]any{
			{"name": "deploy", "description": "Deploy a branch", "args_hint": "<env>"}, {"name": "status", "description": "Say how it goes"}}).
			want(t, http.StatusOK)

		step(t, b, "typing / lists the channel's commands, filtered as one types", func(t *testing.T, b *tab) {
			b.visit(channel)
			b.waitFor(testID("thread", `[data-live="1"]`))
			b.typeInto(testID("composer-input"), "/")
			b.until("the command list shows both commands", `document.querySelectorAll('[data-testid="command-option"]').length === 2`)
			if got := b.text(testID("command-list")); !strings.Contains(got, "/deploy <env> — Deploy a branch · @deployer") {
				t.Fatalf("the list reads %q", got)
			}
			b.typeMore(testID("composer-input"), "de")
			b.until("the list keeps /deploy alone", `document.querySelectorAll('[data-testid="command-option"]').length === 1`)
			b.screenshot("slash-commands")
		})

		step(t, b, "Enter completes the command and sending it invokes the agent with the command", func(t *testing.T, b *tab) {
			b.press(testID("composer-input"), kb.Enter)
			b.until("the composer holds the command", `document.querySelector('[data-testid="composer-input"]').value === "/deploy "`)
			if !eval[bool](b, `document.querySelector('[data-testid="command-list"]').hidden`) {
				t.Fatal("the list stays open after the pick")
			}
			b.typeMore(testID("composer-input"), "staging")
			b.press(testID("composer-input"), kb.Enter)
			mid := messageWith(b, "/deploy staging")
			var cmd map[string]any
			for cmd == nil {
				var p struct {
					Events []event `json:"events"`
				}
				dc.do(t, http.MethodGet, api("agents", "me", "events")+"?wait=2s", nil).want(t, http.StatusOK).decode(t, &p)
				for _, e := range p.Events {
					if e.Type == "agent.invocation" && e.Data["message_id"] == mid {
						cmd, _ = e.Data["command"].(map[string]any)
						if cmd == nil {
							t.Fatalf("the invocation has no command: %v", e.Data)
						}
					}
				}
			}
			if cmd["name"] != "deploy" || cmd["args"] != "staging" {
				t.Fatalf("command %v", cmd)
			}
		})

		step(t, b, "with two agents on one name a bare command invokes nobody and the thread says why", func(t *testing.T, b *tab) {
			_, sc, _ := w.mustPostingAgent(t, "shipper")
			sc.do(t, http.MethodPut, api("agents", "me", "commands"), []map[string]any{{"name": "deploy"}}).want(t, http.StatusOK)
			b.visit(channel)
			b.waitFor(testID("thread", `[data-live="1"]`))
			b.typeInto(testID("composer-input"), "/deploy")
			b.until("the list offers both agents' commands by name and handle",
				`[...document.querySelectorAll('[data-testid="command-option"] b')].map(e => e.textContent).join(",") === "/deploy@deployer,/deploy@shipper"`)
			b.press(testID("composer-input"), kb.Escape)
			b.typeMore(testID("composer-input"), " prod")
			b.press(testID("composer-input"), kb.Enter)
			mid := messageWith(b, "/deploy prod")
			b.until("the message says why nobody answered", `(document.querySelector(`+jsString(msgSel(mid)+" "+testID("message-note"))+`) || {}).textContent === "No agent was invoked: several agents answer this command; name one with /command@agent."`)
		})

		owner := f.c.newVisitor(t, "owner")
		owner.signIn("owner", ownerPassword)
		step(t, owner, "the agent's page sets a budget and shows the usage against it", func(t *testing.T, b *tab) {
			b.visit("/console/agents/" + deployer.ID)
			if got := b.text(testID("budget-usage")); !strings.HasPrefix(got, "No budget.") {
				t.Fatalf("before: %q", got)
			}
			b.choose(testID("budget-period"), "day")
			b.typeInto(testID("budget-max-tokens"), "5000")
			b.clickTo(testID("budget-save"))
			b.waitFor(testID("budget-meter"))
			if got := b.text(testID("budget-usage")); !strings.Contains(got, "0 tokens of 5000") || !strings.Contains(got, "(0 %)") {
				t.Fatalf("after: %q", got)
			}
			view := w.in.owner.do(t, http.MethodGet, api("agents", deployer.ID, "budget"), nil).want(t, http.StatusOK).obj()
			if bud, _ := view["budget"].(map[string]any); bud == nil || bud["period"] != "day" || bud["max_tokens"] != 5000.0 {
				t.Fatalf("the stored budget %v", view["budget"])
			}
			b.clickTo(testID("budget-remove"))
			b.waitFor(testID("budget-form"))
			if got := b.text(testID("budget-usage")); !strings.HasPrefix(got, "No budget.") {
				t.Fatalf("after the removal: %q", got)
			}
		})
	})
}
