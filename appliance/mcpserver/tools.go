package mcpserver

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/inbox"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/search"
)

// tools holds the handlers of the endpoint's tools.
type tools struct {
	d       Deps
	timeout time.Duration
}

// maxChannels bounds the channels list_channels answers, over all spaces.
const maxChannels = 1000

func (t *tools) register(s *mcp.Server) {
	add(t, s, &mcp.Tool{Name: "list_channels", Description: "List the spaces and channels you may read, " +
		"each channel with its id, name, topic and main_thread_id (the thread of its main conversation; " +
		"pass it to read_thread or post_message). At most 1000 channels."}, t.listChannels)
	add(t, s, &mcp.Tool{Name: "read_thread", Description: "Read the messages of a thread, oldest first: the " +
		"newest `limit` ones (default 50, at most 200), or those before the message id `before`. Each message " +
		"has its author's handle and kind (person or agent). has_more says that older messages exist; pass " +
		"the first message's id as before to read them."}, t.readThread)
	add(t, s, &mcp.Tool{Name: "post_message", Description: "Post a message (Markdown; @handle mentions someone) " +
		"as yourself: into the thread thread_id, or as a new thread in the channel channel_id with the title " +
		"title. Give thread_id or channel_id, not both."}, t.postMessage)
	add(t, s, &mcp.Tool{Name: "list_unread", Description: "What is unread for you: each channel (its main " +
		"thread) and followed thread with unread messages, with its unread and mention counts and its newest " +
		"message's id, and the sums. Your own messages are never unread."}, t.listUnread)
	add(t, s, &mcp.Tool{Name: "search_messages", Description: "Search the messages you may read, newest first " +
		"(or sort: relevance). query holds words (all must match; the last also matches as a prefix), \"exact " +
		"phrases\", -excluded words and the filters from:@handle, in:#channel, has:file, before:YYYY-MM-DD and " +
		"after:YYYY-MM-DD. Each result has the message, its channel_id and thread_id and a highlight (HTML, the " +
		"matches in <mark>). limit is 1 to 100 (default 20); pass next_cursor as cursor for more."}, t.searchMessages)
	add(t, s, &mcp.Tool{Name: "get_run", Description: "Read an agent's run: its state, the agent, the message " +
		"that invoked it, its status line, steps and output, and why it failed, if it did."}, t.getRun)
}

// add registers a tool whose handler gets the caller and a context bounded by the call timeout,
// and answers a value or an error; the error becomes a tool error with its problem code.
func add[In any](t *tools, s *mcp.Server, tool *mcp.Tool, h func(ctx context.Context, actor kernel.Actor, in In) (any, error)) {
	mcp.AddTool(s, tool, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		actor, err := actorOf(req)
		if err != nil {
			return t.toolError(tool.Name, err), nil, nil
		}
		ctx, cancel := context.WithTimeout(kernel.WithActor(ctx, actor), t.timeout)
		defer cancel()
		v, err := h(ctx, actor, in)
		if err == nil {
			var res *mcp.CallToolResult
			if res, err = result(v); err == nil {
				return res, nil, nil
			}
		}
		return t.toolError(tool.Name, err), nil, nil
	})
}

type listChannelsIn struct{}

type spaceOut struct {
	ID       kernel.ID    `json:"id"`
	Name     string       `json:"name"`
	Channels []channelOut `json:"channels"`
}

type channelOut struct {
	ID           kernel.ID `json:"id"`
	Name         string    `json:"name"`
	Topic        string    `json:"topic,omitempty"`
	MainThreadID kernel.ID `json:"main_thread_id"`
}

type listChannelsOut struct {
	Spaces []spaceOut `json:"spaces"`
	// Truncated says that more channels exist than the answer holds.
	Truncated bool `json:"truncated,omitempty"`
}

func (t *tools) listChannels(ctx context.Context, actor kernel.Actor, _ listChannelsIn) (any, error) {
	spaces, err := t.d.Chat.ListSpaces(ctx, actor)
	if err != nil {
		return nil, err
	}
	out := listChannelsOut{Spaces: []spaceOut{}}
	n := 0
	for _, sp := range spaces {
		chans, err := t.d.Chat.ListChannels(ctx, actor, sp.ID)
		if kernel.IsCode(err, kernel.CodeNotFound) {
			continue // archived or hidden since the list was read
		}
		if err != nil {
			return nil, err
		}
		so := spaceOut{ID: sp.ID, Name: sp.Name, Channels: []channelOut{}}
		for _, c := range chans {
			if n == maxChannels {
				out.Truncated = true
				break
			}
			so.Channels = append(so.Channels, channelOut{ID: c.ID, Name: c.Name, Topic: c.Topic, MainThreadID: c.MainThreadID})
			n++
		}
		if len(so.Channels) > 0 {
			out.Spaces = append(out.Spaces, so)
		}
	}
	return out, nil
}

type readThreadIn struct {
	ThreadID string `json:"thread_id" jsonschema:"the id of the thread (a channel's main_thread_id, or a thread's id)"`
	Limit    int    `json:"limit,omitempty" jsonschema:"how many messages, 1 to 200 (default 50)"`
	Before   string `json:"before,omitempty" jsonschema:"a message id: read the messages before it"`
}

type threadOut struct {
	ID        kernel.ID `json:"id"`
	ChannelID kernel.ID `json:"channel_id"`
	Title     string    `json:"title,omitempty"`
	IsMain    bool      `json:"is_main"`
}

type messageOut struct {
	ID           kernel.ID  `json:"id"`
	AuthorID     kernel.ID  `json:"author_id"`
	AuthorHandle string     `json:"author_handle"`
	AuthorKind   string     `json:"author_kind"`
	Content      string     `json:"content"`
	CreatedAt    time.Time  `json:"created_at"`
	EditedAt     *time.Time `json:"edited_at,omitempty"`
	Deleted      bool       `json:"deleted,omitempty"`
	RunID        *kernel.ID `json:"run_id,omitempty"`
	// The thread under the message, when it has replies.
	ReplyThreadID *kernel.ID `json:"reply_thread_id,omitempty"`
	ReplyCount    *int64     `json:"reply_count,omitempty"`
}

type readThreadOut struct {
	Thread   threadOut    `json:"thread"`
	Messages []messageOut `json:"messages"`
	HasMore  bool         `json:"has_more"`
}

func (t *tools) readThread(ctx context.Context, actor kernel.Actor, in readThreadIn) (any, error) {
	id, err := parseID("thread_id", in.ThreadID)
	if err != nil {
		return nil, err
	}
	p := chat.Page{Limit: in.Limit}
	if in.Before != "" {
		if p.Before, err = parseID("before", in.Before); err != nil {
			return nil, err
		}
	}
	th, err := t.d.Chat.GetThread(ctx, actor, id)
	if err != nil {
		return nil, err
	}
	msgs, more, err := t.d.Messages.ListMessages(ctx, actor, id, p)
	if err != nil {
		return nil, err
	}
	out := readThreadOut{Thread: threadOut{ID: th.ID, ChannelID: th.ChannelID, Title: th.Title, IsMain: th.IsMain},
		Messages: make([]messageOut, 0, len(msgs)), HasMore: more}
	authors := map[kernel.ID]author{}
	for _, m := range msgs {
		a, err := t.author(ctx, authors, m.AuthorID)
		if err != nil {
			return nil, err
		}
		out.Messages = append(out.Messages, messageOut{ID: m.ID, AuthorID: m.AuthorID, AuthorHandle: a.handle, AuthorKind: a.kind,
			Content: m.Content, CreatedAt: m.CreatedAt, EditedAt: m.EditedAt, Deleted: m.Deleted, RunID: m.RunID,
			ReplyThreadID: m.ReplyThreadID, ReplyCount: m.ReplyCount})
	}
	return out, nil
}

type author struct{ handle, kind string }

// author names the author id, read once per call.
func (t *tools) author(ctx context.Context, seen map[kernel.ID]author, id kernel.ID) (author, error) {
	if a, ok := seen[id]; ok {
		return a, nil
	}
	u, err := t.d.Authors.Principal(ctx, id)
	a := author{handle: u.Handle, kind: string(u.Kind)}
	if kernel.IsCode(err, kernel.CodeNotFound) {
		a, err = author{handle: "unknown", kind: "unknown"}, nil
	}
	if err != nil {
		return author{}, err
	}
	seen[id] = a
	return a, nil
}

type postMessageIn struct {
	ThreadID  string `json:"thread_id,omitempty" jsonschema:"the thread to post into (or give channel_id)"`
	ChannelID string `json:"channel_id,omitempty" jsonschema:"the channel to start a new thread in (or give thread_id)"`
	Title     string `json:"title,omitempty" jsonschema:"the title of the new thread, with channel_id"`
	Content   string `json:"content" jsonschema:"the message, in Markdown"`
}

type postMessageOut struct {
	ID        kernel.ID `json:"id"`
	ThreadID  kernel.ID `json:"thread_id"`
	ChannelID kernel.ID `json:"channel_id"`
	CreatedAt time.Time `json:"created_at"`
}

func (t *tools) postMessage(ctx context.Context, actor kernel.Actor, in postMessageIn) (any, error) {
	var msg messaging.Message
	switch {
	case in.ThreadID != "" && in.ChannelID != "":
		return nil, kernel.Invalid("channel_id", "give thread_id or channel_id, not both")
	case in.ThreadID != "":
		if in.Title != "" {
			return nil, kernel.Invalid("title", "a title names a new thread: give it with channel_id")
		}
		id, err := parseID("thread_id", in.ThreadID)
		if err != nil {
			return nil, err
		}
		if msg, _, err = t.d.Messages.CreateMessage(ctx, actor, id, messaging.NewMessage{Content: in.Content}); err != nil {
			return nil, err
		}
	case in.ChannelID != "":
		id, err := parseID("channel_id", in.ChannelID)
		if err != nil {
			return nil, err
		}
		if _, msg, _, err = t.d.Messages.CreateThread(ctx, actor, id, messaging.NewThread{Title: in.Title, Content: in.Content}); err != nil {
			return nil, err
		}
	default:
		return nil, kernel.Invalid("thread_id", "give thread_id, or channel_id for a new thread")
	}
	return postMessageOut{ID: msg.ID, ThreadID: msg.ThreadID, ChannelID: msg.ChannelID, CreatedAt: msg.CreatedAt}, nil
}

type listUnreadIn struct{}

func (t *tools) listUnread(ctx context.Context, actor kernel.Actor, _ listUnreadIn) (any, error) {
	u, err := t.d.Inbox.Unread(ctx, actor)
	if err != nil {
		return nil, err
	}
	if u.Items == nil {
		u.Items = []inbox.Entry{}
	}
	return u, nil
}

type getRunIn struct {
	RunID string `json:"run_id" jsonschema:"the id of the run"`
}

func (t *tools) getRun(ctx context.Context, actor kernel.Actor, in getRunIn) (any, error) {
	id, err := parseID("run_id", in.RunID)
	if err != nil {
		return nil, err
	}
	return t.d.Runs.Get(ctx, actor, id)
}

type searchMessagesIn struct {
	Query     string `json:"query" jsonschema:"words, \"phrases\", -exclusions and filters (from:@handle in:#channel has:file before:YYYY-MM-DD after:YYYY-MM-DD)"`
	ChannelID string `json:"channel_id,omitempty" jsonschema:"search only this channel"`
	Sort      string `json:"sort,omitempty" jsonschema:"newest (default) or relevance"`
	Limit     int    `json:"limit,omitempty" jsonschema:"how many results, 1 to 100 (default 20)"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"the next_cursor of the page before"`
}

func (t *tools) searchMessages(ctx context.Context, actor kernel.Actor, in searchMessagesIn) (any, error) {
	r := search.Request{Q: in.Query, Sort: search.Sort(in.Sort), Limit: in.Limit, Cursor: in.Cursor}
	if in.ChannelID != "" {
		id, err := parseID("channel_id", in.ChannelID)
		if err != nil {
			return nil, err
		}
		r.ChannelID = id
	}
	return t.d.Search.Search(ctx, actor, r)
}
