package components

import "bothy.dev/bothy/ui/markdown"

// MessageView is one message of the chat view, as the page and the script's fragment show it.
type MessageView struct {
	ID           string
	AuthorHandle string
	AuthorName   string
	AuthorAgent  bool
	// Time is when it was posted, for people ("Mar 2 15:04"); Stamp the same in RFC 3339.
	Time, Stamp string
	// Body is the content rendered by package markdown, the one renderer whose output is
	// written unescaped.
	Body    markdown.HTML
	Deleted bool
	Edited  bool
	// Note says what the message did not trigger ("You may not invoke agents here."); "" when
	// nothing is to say.
	Note      string
	Reactions []ReactionView
	// Palette is the emojis offered to react with; empty when the person may not react.
	Palette []string
	CSRF    string
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
	State     string
	// Reason says why it failed or was cancelled; "" otherwise.
	Reason     string
	StatusLine string
	Steps      []StepView
	Output     string
	Version    int
	// Cancelling: someone asked the run to stop and its agent has not confirmed yet.
	Cancelling bool
	// CanCancel shows the cancel form: the person may cancel and the run has not ended.
	CanCancel bool
	CSRF      string
}

// StepView is one step of a run.
type StepView struct {
	ID, Kind, Title, Status, Detail string
}
