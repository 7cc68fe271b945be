package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Buttons and selects under a message: an agent (or an app) posts them with its message, a
// person clicks or picks, and the agent gets interaction.created with a token for the thread, to
// answer there. See the README's "Buttons and selects".

// Button styles.
const (
	Primary   = "primary"
	Secondary = "secondary"
	Danger    = "danger"
)

// ActionRow is one row of a message's components, shown side by side: at most 5 per row, at
// most 5 rows per message.
type ActionRow struct {
	Components []Component `json:"components"`
}

// Component is a button (Label, Style, Value) or a select (Placeholder, Options, Min, Max);
// Button and Select make them. ID names it in its message and in its interactions.
type Component struct {
	Type        string         `json:"type"`
	ID          string         `json:"id"`
	Label       string         `json:"label,omitempty"`
	Style       string         `json:"style,omitempty"`
	Value       string         `json:"value,omitempty"`
	Placeholder string         `json:"placeholder,omitempty"`
	Options     []SelectOption `json:"options,omitempty"`
	Min         *int           `json:"min,omitempty"`
	Max         *int           `json:"max,omitempty"`
	Disabled    bool           `json:"disabled"`
}

// SelectOption is one choice of a select.
type SelectOption struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// Row is an action row of components.
func Row(cs ...Component) ActionRow { return ActionRow{Components: cs} }

// Button is a button; style is Primary, Secondary (or "") or Danger; value is what a click
// sends (may be empty).
func Button(id, label, style, value string) Component {
	return Component{Type: "button", ID: id, Label: label, Style: style, Value: value}
}

// Select is a select of options of which a person picks between min and max.
func Select(id, placeholder string, min, max int, options ...SelectOption) Component {
	return Component{Type: "select", ID: id, Placeholder: placeholder, Min: &min, Max: &max, Options: options}
}

// Disable returns rows with the components of ids disabled (all of them when ids is empty),
// for SetComponents after an answer; rows itself is left as it is.
func Disable(rows []ActionRow, ids ...string) []ActionRow {
	out := make([]ActionRow, len(rows))
	for i, r := range rows {
		out[i].Components = append([]Component(nil), r.Components...)
		for j := range out[i].Components {
			if len(ids) == 0 || contains(ids, out[i].Components[j].ID) {
				out[i].Components[j].Disabled = true
			}
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// NewMessage is a message to post: its content, optionally a client_msg_id (a retry answers the
// first message), components and attachments.
type NewMessage struct {
	Content     string
	ClientMsgID string
	Components  []ActionRow
	// AttachmentIDs are files the poster uploaded (UploadFile) that no message carries yet, at
	// most 10, in the order to show them. With one, Content may be empty.
	AttachmentIDs []string
}

func (m NewMessage) body() map[string]any {
	body := map[string]any{"content": m.Content}
	if m.ClientMsgID != "" {
		body["client_msg_id"] = m.ClientMsgID
	}
	if len(m.Components) > 0 {
		body["components"] = m.Components
	}
	if len(m.AttachmentIDs) > 0 {
		body["attachment_ids"] = m.AttachmentIDs
	}
	return body
}

// Post posts m into a thread. A person's token cannot post components (403
// components_not_allowed). A file of AttachmentIDs that is not the poster's, or that another
// message carries, is refused (422 attachment_invalid) and nothing is posted.
func (c *Client) Post(ctx context.Context, threadID string, m NewMessage) (Message, error) {
	var out Message
	err := c.do(ctx, http.MethodPost, "/api/v1/threads/"+url.PathEscape(threadID)+"/messages", m.body(), &out)
	return out, err
}

// SetComponents replaces the components of the client's own message (nil or empty removes
// them), without an edit of its content.
func (c *Client) SetComponents(ctx context.Context, messageID string, rows []ActionRow) (Message, error) {
	if rows == nil {
		rows = []ActionRow{}
	}
	var out Message
	err := c.do(ctx, http.MethodPatch, "/api/v1/messages/"+url.PathEscape(messageID), map[string]any{"components": rows}, &out)
	return out, err
}

// GetMessage reads one message (a tombstone when it was deleted), its components included.
func (c *Client) GetMessage(ctx context.Context, id string) (Message, error) {
	var m Message
	err := c.do(ctx, http.MethodGet, "/api/v1/messages/"+url.PathEscape(id), nil, &m)
	return m, err
}

// Interact clicks a button (no values, or its value) or picks from a select (one value per
// pick) of a message, as a person does; it answers the interaction's id.
func (c *Client) Interact(ctx context.Context, messageID, componentID string, values ...string) (string, error) {
	if values == nil {
		values = []string{}
	}
	var out struct {
		ID string `json:"interaction_id"`
	}
	err := c.do(ctx, http.MethodPost, "/api/v1/messages/"+url.PathEscape(messageID)+"/interactions",
		map[string]any{"component_id": componentID, "values": values}, &out)
	return out.ID, err
}

// Interaction is one interaction.created: a person answered a component of the agent's
// message. Its Reply posts into the message's thread with the invocation token the delivery
// carried (a token for the thread with no run: the answer links no run).
type Interaction struct {
	a *Agent
	// Seq is the event's place in the log.
	Seq         int64     `json:"-"`
	ID          string    `json:"interaction_id"`
	MessageID   string    `json:"message_id"`
	ThreadID    string    `json:"thread_id"`
	ChannelID   string    `json:"channel_id"`
	SpaceID     string    `json:"space_id"`
	ComponentID string    `json:"component_id"`
	Values      []string  `json:"values"`
	UserID      string    `json:"user_id"`
	CreatedAt   time.Time `json:"created_at"`
	Token       string    `json:"invocation_token"`
	ExpiresAt   time.Time `json:"expires_at"`

	mu      sync.Mutex
	replies int
}

// Client is the agent's client, for other calls (SetComponents on the message, …).
func (in *Interaction) Client() *Client { return in.a.c }

// Reply posts content into the interaction's thread with the delivery's token. Its
// client_msg_id is derived from the interaction's id and the reply's number, so a redelivery
// after a crash answers the message posted the first time.
func (in *Interaction) Reply(ctx context.Context, content string) (Message, error) {
	return in.ReplyWith(ctx, NewMessage{Content: content})
}

// ReplyWith is Reply with components (and a ClientMsgID of the caller's, if set).
func (in *Interaction) ReplyWith(ctx context.Context, m NewMessage) (Message, error) {
	in.mu.Lock()
	in.replies++
	n := in.replies
	in.mu.Unlock()
	if m.ClientMsgID == "" {
		m.ClientMsgID = "interaction-" + in.ID
		if n > 1 {
			m.ClientMsgID += fmt.Sprintf("-%d", n)
		}
	}
	var out Message
	err := in.a.c.doHeader(ctx, http.MethodPost, "/api/v1/threads/"+url.PathEscape(in.ThreadID)+"/messages", m.body(), &out,
		http.Header{"Invocation-Token": {in.Token}})
	return out, err
}

// ReplyWith posts m into the run's thread as the run's answer, as Reply does, with its
// components: buttons and selects that people answer with interaction.created (OnInteraction),
// and its attachments: files the agent uploaded with its own client (Client().UploadFile).
func (inv *Invocation) ReplyWith(ctx context.Context, m NewMessage) (Message, error) {
	if m.ClientMsgID == "" {
		inv.mu.Lock()
		inv.replies++
		m.ClientMsgID = "run-" + inv.RunID
		if inv.replies > 1 {
			m.ClientMsgID += fmt.Sprintf("-%d", inv.replies)
		}
		inv.mu.Unlock()
	}
	var out Message
	err := inv.call(ctx, http.MethodPost, "/api/v1/threads/"+url.PathEscape(inv.ThreadID)+"/messages", m.body(), &out)
	return out, err
}

// OnInteraction sets the handler of interaction.created, before Run or RunLongPoll. The
// interactions go the invocations' way: each to its handler in a goroutine of its own (within
// MaxConcurrent), acknowledged only once its handler returned nil, so a crash delivers the
// unfinished ones again; a handler that returns an error ends Run with it. Without a handler
// the interactions are acknowledged as they pass.
func (a *Agent) OnInteraction(handle func(ctx context.Context, in *Interaction) error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.onInteraction = handle
}

// handles reports whether events of type typ go to a handler (agent.invocation, and
// interaction.created once OnInteraction set one).
func (a *Agent) handles(typ string) bool {
	if typ == "agent.invocation" {
		return true
	}
	if typ != "interaction.created" {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.onInteraction != nil
}

// interact hands an interaction.created to the handler of OnInteraction.
func (a *Agent) interact(ctx context.Context, ev Event) error {
	a.mu.Lock()
	handle := a.onInteraction
	a.mu.Unlock()
	if handle == nil {
		return nil
	}
	in := &Interaction{a: a, Seq: ev.Seq}
	if err := json.Unmarshal(ev.Data, in); err != nil || in.ID == "" {
		return fmt.Errorf("client: interaction.created %d does not decode: %w", ev.Seq, err)
	}
	return handle(ctx, in)
}
