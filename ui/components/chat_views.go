package components

import (
	"strconv"

	"bothy.dev/bothy/ui/markdown"
)

// repliesLabel counts the replies under a message in words.
func repliesLabel(n int64) string {
	if n == 1 {
		return "1 reply"
	}
	return strconv.FormatInt(n, 10) + " replies"
}

// MessageView is one message of the chat view, as the page and the script's fragment show it.
type MessageView struct {
	ID           string
	AuthorHandle string
	AuthorName   string
	AuthorAgent  bool
	// Time is when it was posted, in UTC and labelled so ("Mar 2 15:04 UTC"), for a page read
	// without the script, which rewrites it in the reader's time zone from Stamp (RFC 3339).
	// FullTime is the whole date and time in UTC, shown on hover.
	Time, Stamp, FullTime string
	// Body is the content rendered by package markdown, the one renderer whose output is
	// written unescaped.
	Body    markdown.HTML
	Deleted bool
	Edited  bool
	// Note says what the message did not trigger ("You may not invoke agents here."); "" when
	// nothing is to say.
	Note string
	// Refusals say, one line per agent, why an agent the message concerned was not invoked
	// ("@helper is disabled."), also when another agent was: the summary Note alone would hide
	// them.
	Refusals  []string
	Reactions []ReactionView
	// Palette is the emojis offered to react with; empty when the person may not react.
	Palette []string
	// Href is the message's permalink in the console (/console/messages/{id}): it opens the
	// thread at the message.
	Href string
	// CanReply offers a reply: in a channel's main thread it opens the thread under the message
	// (Replies) or, without one yet, a form whose reply starts it; in a thread it quotes the
	// message in the composer. InThread tells which.
	CanReply, InThread bool
	// Replies is the thread under a message of a channel's main thread; nil when it has none.
	Replies *RepliesView
	// CanEdit (the author, who may still post) and CanDelete (the author, or a manager of the
	// channel) offer those actions; authz decides both, as for the REST API.
	CanEdit, CanDelete bool
	// CanPin offers Pin, or Unpin when Pinned; Pinned also marks the message.
	CanPin, Pinned bool
	// Version is the message's version: the script keeps the newer of two renderings.
	Version int
	CSRF    string
	// Echo marks a second copy of a message on the page (the parent above its replies in the
	// side pane, while the channel beside it shows the message too): it carries no element id,
	// so the page's anchors and the script's lookups find the one in its thread.
	Echo bool
	// Components are the message's buttons and selects; CanInteract lets the person use them
	// (post in the channel), else they show disabled.
	Components  []ComponentRowView
	CanInteract bool
	// Attachments are the files the message carries, in its order (files.templ).
	Attachments []AttachmentView
}

// RepliesView is the thread under a message as the message shows it: how many replies and when
// the newest came (in UTC and labelled, rewritten by the script in the reader's zone, as the
// message's own time), linking to the thread.
type RepliesView struct {
	ThreadID, Href        string
	Count                 int64
	Time, Stamp, FullTime string
}

// ReplyFormView is the form of the first reply under a message of a channel's main thread,
// which starts the thread under it: inline under the message (the script) or on its own page.
type ReplyFormView struct {
	ID, Content, Href, Error string
	ClientMsgID              string
	CSRF                     string
}

// ReactionView is one emoji on a message with how many put it there; Mine when the person did.
type ReactionView struct {
	Emoji string
	Count int
	Mine  bool
}

// RunCardView is an agent's run as its card shows it: state, status line, steps, output.
type RunCardView struct {
	ID          string
	AgentHandle string
	// TriggerID is the message that invoked the agent; the card follows it.
	TriggerID string
	// State is the run's state code (data-state); StateLabel says it for people ("Working").
	State, StateLabel string
	// Reason is the code of why it failed or was cancelled ("" otherwise); Explain says it in a
	// sentence, and ErrorMessage is the agent's own word on its failure.
	Reason, Explain, ErrorMessage string
	StatusLine                    string
	Steps                         []StepView
	Output                        string
	// Version is the run document's version, Updated the run's last change (Unix
	// microseconds): the script applies patches on Version and keeps the newer of two renderings.
	Version int
	Updated int64
	// Cancelling: someone asked the run to stop and its agent has not confirmed yet.
	Cancelling bool
	// CanCancel shows the cancel form: the person may cancel and the run has not ended.
	CanCancel bool
	CSRF      string
	// Approvals are what the run asked people, oldest first (approval cards).
	Approvals []ApprovalView
}

// StepView is one step of a run. Status is what the card shows: a step of a run that ended
// while the step was under way shows "stopped", never "running".
type StepView struct {
	ID, Kind, Title, Status, Detail string
}

// EditView is the form that changes a message's content, inline or on its own page.
type EditView struct {
	ID, Content, Href, Error string
	CSRF                     string
}

// DeleteView is the confirmation of a message's deletion, inline or on its own page.
type DeleteView struct {
	ID, Href string
	// Others is set when the person deletes someone else's message (as a manager).
	Others bool
	CSRF   string
}
