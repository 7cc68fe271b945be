package pages

import (
	"github.com/a-h/templ"

	"bothy.dev/bothy/ui/components"
	"bothy.dev/bothy/ui/layouts"
)

// ChatView is the chat view: the spaces and channels the person may see, and one thread.
type ChatView struct {
	Chrome layouts.Chrome
	Nav    []SpaceNav
	// DMs is the person's direct messages and the form that starts one; nil leaves them out.
	DMs *DMNav
	// Thread is the thread shown; nil when the person may see no channel yet.
	Thread *ThreadView
	// Pane is a thread under a message, shown in a pane beside Thread (its channel's main
	// thread); nil shows Thread alone.
	Pane *ThreadView
	// Inbox shows the unread counts and the link of the Mentions page, with Mentions, the
	// person's unread mentions.
	Inbox    bool
	Mentions int64
	// ApprovalsShown shows the link of the Approvals page, with Approvals, how many wait on
	// the person.
	ApprovalsShown bool
	Approvals      int
}

// SpaceNav is a space of the left column with its channels.
type SpaceNav struct {
	Name     string
	Channels []ChannelNav
}

// ChannelNav is a channel of the left column; the current one lists a few of its threads.
// Unread and Mentions are its unread messages and the person's unread mentions in it.
type ChannelNav struct {
	ID, Name, Href   string
	Current          bool
	Threads          []ThreadNav
	Unread, Mentions int64
}

// ThreadNav is a thread of the current channel in the left column, with its unread counts.
type ThreadNav struct {
	ID, Title, Href  string
	Current          bool
	Unread, Mentions int64
}

// ThreadView is one thread: a page of its messages (the newest, or older ones), with the run
// cards at their messages, and the composer.
type ThreadView struct {
	ID, ChannelID string
	Title         string
	ChannelName   string
	Topic         string
	// Href is the thread's own address (/console/channels/{id} for a main thread).
	Href string
	// CloseHref is set on the thread of the side pane: the channel's address, where its Close
	// link leads (the channel alone).
	CloseHref string
	// OlderHref leads to the page before this one; "" when this is the first.
	OlderHref string
	// Latest is true on the newest page, where the script appends what comes live.
	Latest bool
	// NewFrom is the first message the person had not read, where the "new messages" line
	// goes; "" for none.
	NewFrom string
	// Cursor is the seq of the log's head when the page was read ("" when unknown): the script
	// identifies from it, so that nothing committed meanwhile is missed.
	Cursor string
	Items  []ThreadItem
	// Parent is the message a thread started under, shown above its replies, and ParentHref
	// its place in the channel; nil for any other thread.
	Parent     *components.MessageView
	ParentHref string
	// CanPost shows the composer.
	CanPost bool
	// Pins are the channel's pinned messages, newest first, which the header's "Pinned" shows.
	Pins []PinView
	// CanStartThread shows the form of a new thread (on a channel's main thread).
	CanStartThread bool
	// CanLeave shows Leave on a group direct message (three or more participants; a 1:1 DM
	// cannot be left).
	CanLeave bool
	// Notify is the header's notification controls (the level, Follow and Mute, Rename); nil
	// shows none.
	Notify *NotifyView
	// Members are the handles of who may read the channel, for the composer's @ completion.
	Members string
	// Me is the reader's principal id: the typing line leaves them out.
	Me string
	// Names maps the members' ids to their names (a JSON object), for the typing line.
	Names string
	// Draft and Error are a refused message and why it was refused.
	Draft, Error string
	// ClientMsgID makes the composer's post idempotent: sending the same form twice posts once.
	ClientMsgID string
	CSRF        string
}

// MessageActionView is the page of one action on a message (Action "edit", "delete", "reply"
// or "pin", which pins or unpins as Message.Pinned says), for a browser without the script.
type MessageActionView struct {
	Chrome      layouts.Chrome
	Action      string
	ThreadTitle string
	ThreadHref  string
	Message     components.MessageView
	Edit        components.EditView
	Delete      components.DeleteView
	Reply       ReplyView
}

// ReplyView is the form of a reply: in a thread an answer there whose Content starts with a
// quote of the message; in a channel's main thread the first reply under the message (First),
// which starts the thread under it.
type ReplyView struct {
	InThread    bool
	ThreadID    string
	Content     string
	ClientMsgID string
	First       components.ReplyFormView
}

// ThreadItem is a message or a run card, in the order of the thread.
type ThreadItem struct {
	Message *components.MessageView
	Run     *components.RunCardView
}

// DMNav is the "Direct messages" part of the left column: the person's DMs, newest activity
// first, and the "New message" form, which picks people or agents among Options.
type DMNav struct {
	DMs     []ChannelNav
	Options []DMOption
	CSRF    string
}

// DMOption is a person or an agent the "New message" form offers.
type DMOption struct {
	ID, Name string
}

// PinView is one pinned message as the channel header lists it: the start of its text (or that
// it was deleted) and its permalink.
type PinView struct {
	MessageID, Text, Href string
}

// MentionsView is the Mentions page: the messages that mention the person, newest first.
type MentionsView struct {
	Chrome layouts.Chrome
	Items  []MentionItem
	// OlderHref leads to the next page; "" when this is the last.
	OlderHref string
}

// MentionItem is one message that mentions the person: where it is, who wrote it, its start,
// and whether the person has read it.
type MentionItem struct {
	ID, Href, Place, Author, Text string
	// Time, Stamp and FullTime are when it was written, as a message shows it.
	Time, Stamp, FullTime string
	Read                  bool
}

// columnChrome is the frame the main column is rendered with: the flash of the last action
// shows once, in the side pane when one is open (where the action was, most likely).
func (v ChatView) columnChrome() layouts.Chrome {
	c := v.Chrome
	if v.Pane != nil {
		c.Flash = layouts.Flash{}
	}
	return c
}

// threadAttrs are the attributes of a thread's element, which the script mounts on: the
// thread's id, channel and address, the reader, the log's head at the page's read and whether
// it shows the newest page.
func threadAttrs(t ThreadView) templ.Attributes {
	a := templ.Attributes{"data-testid": "thread", "data-thread-id": t.ID, "data-channel-id": t.ChannelID, "data-href": t.Href, "data-me": t.Me}
	if t.Cursor != "" {
		a["data-cursor"] = t.Cursor
	}
	if t.Latest {
		a["data-latest"] = true
	}
	return a
}

// currentPage marks the link of the page shown (aria-current="page"); nothing for the others.
func currentPage(on bool) templ.Attributes {
	if on {
		return templ.Attributes{"aria-current": "page"}
	}
	return nil
}

// ApprovalsView is the Approvals page: what runs ask the person, newest first.
type ApprovalsView struct {
	Chrome layouts.Chrome
	Items  []ApprovalItem
	// More: more wait than the page shows.
	More bool
}

// ApprovalItem is one approval that waits on the person: where its run is and the card.
type ApprovalItem struct {
	Href, Place, Agent string
	Card               components.ApprovalView
}
