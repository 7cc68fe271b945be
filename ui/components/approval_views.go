package components

import "github.com/a-h/templ"

// ApprovalView is what a run asks people, as its card shows it: the question, and for a pending
// one the time left and the approvers' buttons (CanDecide) or, for everyone else, whom it waits
// for; for a decided one a line that says how it ended.
type ApprovalView struct {
	ID, Title, Detail string
	// State is the approval's state code (data-state); Line says it for people ("Approved by
	// Alice", "Waiting for Alice").
	State, Line string
	Pending     bool
	// Expires is expires_at (RFC 3339) and Left the time left in words, for a pending one.
	Expires, Left string
	CanDecide     bool
	CSRF          string
	// Back names the page a decision without the script returns to ("approvals"); "" is the
	// run in its thread, and the script posts the form and puts the run's card in place.
	Back string
}

// decideFormAttrs are the attributes of an approval's form: live in a thread, plain elsewhere.
func decideFormAttrs(a ApprovalView) templ.Attributes {
	if a.Back != "" {
		return templ.Attributes{}
	}
	return templ.Attributes{"data-live": "run"}
}
