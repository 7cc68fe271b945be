package ui

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/ui/components"
	"bothy.dev/bothy/ui/layouts"
	"bothy.dev/bothy/ui/markdown"
	"bothy.dev/bothy/ui/pages"
)

// ReactionSource reads the reactions of messages for the chat view (storage's MessageStore).
// It does not authorize: the view asks only about messages that messaging let it read.
type ReactionSource interface {
	// ReactionsOf lists the reactions on the messages ids, in no particular order.
	ReactionsOf(ctx context.Context, ids []kernel.ID) ([]messaging.Reaction, error)
}

// LogHead is the event log's head without I/O (storage's DB).
type LogHead interface {
	Head() int64
}

// The chat view's sizes: one page of messages (older ones behind a link), the runs looked at
// for the page's cards, the threads of the current channel in the left column.
const (
	chatPageMessages = 50
	chatPageRuns     = 100
	chatNavThreads   = 8
)

// fragmentHeader marks a request of the console's script: it wants the HTML of the one message
// or run card it changed (or the refusal as text), not a redirect.
const fragmentHeader = "Bothy-Fragment"

// chatView serves the chat view's pages; it keeps the people and agents its pages name.
type chatView struct {
	*Console
	dirs dirCache
}

// chatRoutes registers the chat view's pages.
func (con *Console) chatRoutes() {
	c := &chatView{Console: con}
	c.handle("GET /console/chat", signedIn, c.chatHome)
	c.handle("GET /console/channels/{id}", signedIn, c.channelPage)
	c.handle("GET /console/channels/{id}/pins", signedIn, c.pinsFragment)
	c.handle("GET /console/threads/{id}", signedIn, c.threadPage)
	c.handle("POST /console/threads/{id}/messages", signedIn, c.postMessage)
	c.handle("POST /console/channels/{id}/threads", signedIn, c.startThread)
	c.handle("POST /console/messages/{id}/reactions", signedIn, c.toggleReaction)
	c.handle("POST /console/messages/{id}/interactions", signedIn, c.interact)
	c.handle("GET /console/messages/{id}/pin", signedIn, c.pinPage)
	c.handle("POST /console/messages/{id}/pin", signedIn, c.togglePin)
	c.handle("POST /console/runs/{id}/cancel", signedIn, c.cancelRun)
	c.handle("GET /console/messages/{id}/fragment", signedIn, c.messageFragment)
	c.handle("GET /console/runs/{id}/fragment", signedIn, c.runFragment)
	c.handle("GET /console/messages/{id}", signedIn, c.permalink)
	c.handle("GET /console/messages/{id}/edit", signedIn, c.editPage)
	c.handle("POST /console/messages/{id}/edit", signedIn, c.editMessage)
	c.handle("GET /console/messages/{id}/delete", signedIn, c.deletePage)
	c.handle("POST /console/messages/{id}/delete", signedIn, c.deleteMessage)
	c.handle("GET /console/messages/{id}/reply", signedIn, c.replyPage)
	c.handle("POST /console/messages/{id}/thread", signedIn, c.replyUnder)
	c.handle("POST /console/dms", signedIn, c.newDM)
	c.handle("POST /console/dms/{id}/leave", signedIn, c.leaveDM)
	c.inboxRoutes()
	c.approvalRoutes()
	c.searchRoutes()
}

var errNoChat = kernel.Errorf(kernel.CodeNotFound, "the chat view is not wired")

// pathID is the {id} of the path, for every page of the console; a malformed one does not
// exist, as in the API.
func pathID(rq *request) (kernel.ID, error) {
	id, err := kernel.ParseID(rq.r.PathValue("id"))
	if err != nil {
		return "", kernel.Errorf(kernel.CodeNotFound, "no such id")
	}
	return id, nil
}

func (c *chatView) chatReady() bool { return c.d.Chat != nil && c.d.Messages != nil }

// chatID is the id of a chat page's path, once the chat is wired (errNoChat before).
func (c *chatView) chatID(rq *request) (kernel.ID, error) {
	if !c.chatReady() {
		return "", errNoChat
	}
	return pathID(rq)
}

// runID is chatID for a run's page, which needs the runs too.
func (c *chatView) runID(rq *request) (kernel.ID, error) {
	if c.d.Runs == nil {
		return "", errNoChat
	}
	return c.chatID(rq)
}

// backToThread answers a form by going to the page of the thread threadID at anchor (#m-… or
// #r-…), with the flash.
func (c *chatView) backToThread(rq *request, threadID kernel.ID, anchor string, f layouts.Flash) error {
	th, err := c.d.Chat.ThreadRef(rq.ctx(), threadID)
	if err != nil {
		return err
	}
	c.redirect(rq, threadHref(th)+anchor, f)
	return nil
}

// chatHome leads to the first channel the person may see, or says there is none.
func (c *chatView) chatHome(rq *request) error {
	if !c.chatReady() {
		return errNoChat
	}
	nav, err := c.chatNav(rq, "", "")
	if err != nil {
		return err
	}
	for _, s := range nav {
		if len(s.Channels) > 0 {
			c.redirect(rq, s.Channels[0].Href, rq.flash)
			return nil
		}
	}
	dmNav, err := c.dmNav(rq, "")
	if err != nil {
		return err
	}
	v := pages.ChatView{Chrome: c.chrome(rq, "Chat", "chat"), Nav: nav, DMs: dmNav}
	if err := c.withApprovals(rq, &v); err != nil {
		return err
	}
	if err := c.withUnread(rq, &v); err != nil {
		return err
	}
	return c.render(rq, http.StatusOK, pages.Chat(v))
}

func (c *chatView) channelPage(rq *request) error {
	id, err := c.chatID(rq)
	if err != nil {
		return err
	}
	ch, err := c.d.Chat.GetChannel(rq.ctx(), rq.actor, id)
	if err != nil {
		return err
	}
	return c.showThread(rq, ch.MainThreadID, &ch, http.StatusOK, "", "")
}

func (c *chatView) threadPage(rq *request) error {
	id, err := c.chatID(rq)
	if err != nil {
		return err
	}
	return c.showThread(rq, id, nil, http.StatusOK, "", "")
}

// showThread renders a thread: ch when the caller loaded its channel already. draft and errText
// are a refused message and why.
func (c *chatView) showThread(rq *request, threadID kernel.ID, ch *chat.Channel, status int, draft, errText string) error {
	var before, at kernel.ID
	for name, to := range map[string]*kernel.ID{"before": &before, "at": &at} {
		if v := rq.r.URL.Query().Get(name); v != "" {
			id, err := kernel.ParseID(v)
			if err != nil {
				return kernel.Errorf(kernel.CodeNotFound, "no such page")
			}
			*to = id
		}
	}
	// The log's head before the messages are read: the script identifies from it, so an event
	// committed between this read and its connection is replayed rather than missed (one
	// replayed twice only refreshes what the page shows).
	var cursor int64 = -1
	if c.d.LogHead != nil {
		cursor = c.d.LogHead.Head()
	}
	// ListMessages decides message.read on the thread: a thread the person may not see
	// answers 404 before anything else is read.
	var msgs []messaging.Message
	more, latest := false, before.IsZero()
	var err error
	if !at.IsZero() {
		msgs, more, latest, err = c.messagesAround(rq, threadID, at)
	} else {
		msgs, more, err = c.d.Messages.ListMessages(rq.ctx(), rq.actor, threadID, chat.Page{Before: before, Limit: chatPageMessages})
	}
	if err != nil {
		return err
	}
	th, err := c.d.Chat.Thread(rq.ctx(), threadID)
	if err != nil {
		return err
	}
	if ch == nil {
		got, err := c.d.Chat.GetChannel(rq.ctx(), rq.actor, th.ChannelID)
		if err != nil {
			return err
		}
		ch = &got
	}
	tv, err := c.threadView(rq, th, *ch, msgs, more, latest)
	if err != nil {
		return err
	}
	if wantsFragment(rq) && !before.IsZero() {
		// The script loads the page before the one it shows as the reader scrolls up.
		return c.render(rq, http.StatusOK, pages.ThreadItems(tv))
	}
	if th.ParentMessageID != nil {
		if err := c.withParent(rq, &tv, th); err != nil {
			return err
		}
	}
	tv.Draft, tv.Error = draft, errText
	if err := c.withNotify(rq, &tv, th, *ch); err != nil {
		return err
	}
	if err := c.readOnShow(rq, &tv, th, msgs); err != nil {
		return err
	}
	main, pane := &tv, (*pages.ThreadView)(nil)
	if th.ParentMessageID != nil {
		// A thread under a message opens beside its channel, which stays in the main column.
		col, err := c.channelColumn(rq, *ch, *th.ParentMessageID)
		if err != nil {
			return err
		}
		main, pane = &col, &tv
		pane.CloseHref = "/console/channels/" + string(ch.ID)
	}
	if cursor >= 0 {
		main.Cursor = strconv.FormatInt(cursor, 10)
		if pane != nil {
			pane.Cursor = main.Cursor
		}
	}
	nav, err := c.chatNav(rq, ch.ID, th.ID)
	if err != nil {
		return err
	}
	dmNav, err := c.dmNav(rq, ch.ID)
	if err != nil {
		return err
	}
	v := pages.ChatView{Chrome: c.chrome(rq, tv.Title, "chat"), Nav: nav, DMs: dmNav, Thread: main, Pane: pane}
	if err := c.withApprovals(rq, &v); err != nil {
		return err
	}
	if err := c.withUnread(rq, &v); err != nil {
		return err
	}
	return c.render(rq, status, pages.Chat(v))
}

// channelColumn is the main column beside the side pane of a thread under the message parent:
// the channel's main thread at its newest page, or around parent when that is older, so the
// person sees the message they opened the replies of. It reads as the channel's own page does.
func (c *chatView) channelColumn(rq *request, ch chat.Channel, parent kernel.ID) (pages.ThreadView, error) {
	th, err := c.d.Chat.Thread(rq.ctx(), ch.MainThreadID)
	if err != nil {
		return pages.ThreadView{}, err
	}
	msgs, more, err := c.d.Messages.ListMessages(rq.ctx(), rq.actor, th.ID, chat.Page{Limit: chatPageMessages})
	if err != nil {
		return pages.ThreadView{}, err
	}
	latest := true
	if !slices.ContainsFunc(msgs, func(m messaging.Message) bool { return m.ID == parent }) && len(msgs) > 0 && parent < msgs[0].ID {
		if msgs, more, latest, err = c.messagesAround(rq, th.ID, parent); err != nil {
			return pages.ThreadView{}, err
		}
	}
	tv, err := c.threadView(rq, th, ch, msgs, more, latest)
	if err != nil {
		return tv, err
	}
	if err := c.withNotify(rq, &tv, th, ch); err != nil {
		return tv, err
	}
	return tv, c.readOnShow(rq, &tv, th, msgs)
}

// messagesAround is the page of a thread around the message at (a permalink's target): some
// messages before it, it, and some after; latest when nothing lies after those. A message of
// another thread is not on this thread's page.
func (c *chatView) messagesAround(rq *request, threadID, at kernel.ID) (msgs []messaging.Message, more, latest bool, err error) {
	m, err := c.d.Messages.GetMessage(rq.ctx(), rq.actor, at)
	if err != nil {
		return nil, false, false, err
	}
	if m.ThreadID != threadID {
		return nil, false, false, kernel.Errorf(kernel.CodeNotFound, "the message is not in this thread")
	}
	before, more, err := c.d.Messages.ListMessages(rq.ctx(), rq.actor, threadID, chat.Page{Before: at, Limit: chatPageMessages / 2})
	if err != nil {
		return nil, false, false, err
	}
	after, newer, err := c.d.Messages.ListMessages(rq.ctx(), rq.actor, threadID, chat.Page{After: at, Limit: chatPageMessages / 2})
	if err != nil {
		return nil, false, false, err
	}
	msgs = append(append(before, m), after...)
	return msgs, more, !newer, nil
}

// withParent puts the message a thread started under above its replies, and names the thread
// after it when it has no title of its own.
func (c *chatView) withParent(rq *request, tv *pages.ThreadView, th chat.Thread) error {
	parent, err := c.d.Messages.GetMessage(rq.ctx(), rq.actor, *th.ParentMessageID)
	if err != nil {
		return err
	}
	home, err := c.d.Chat.ThreadRef(rq.ctx(), parent.ThreadID)
	if err != nil {
		return err
	}
	pv, err := c.standaloneView(rq, parent)
	if err != nil {
		return err
	}
	// The channel beside the pane shows the message too, with its id.
	pv.Echo = true
	tv.Parent, tv.ParentHref = &pv, messageHref(home, parent.ID)
	if th.Title == "" {
		tv.Title = parentTitle(parent)
	}
	return nil
}

// parentTitle names an untitled thread under a message after the message's first line.
func parentTitle(parent messaging.Message) string {
	if parent.Deleted {
		return "Replies to a deleted message"
	}
	return replyTitle(parent.Content)
}

// threadName is what the console calls a thread: threadTitle, or for an untitled thread under
// a message, the message's first line (which costs a read of the message).
func (c *chatView) threadName(rq *request, th chat.Thread, ch chat.Channel) string {
	if th.ParentMessageID != nil && th.Title == "" {
		if parent, err := c.d.Messages.GetMessage(rq.ctx(), rq.actor, *th.ParentMessageID); err == nil {
			return parentTitle(parent)
		}
	}
	return threadTitle(th, ch)
}

// threadHref is where a thread is shown: its channel's address for a main thread.
func threadHref(th chat.Thread) string {
	if th.IsMain {
		return "/console/channels/" + string(th.ChannelID)
	}
	return "/console/threads/" + string(th.ID)
}

func threadTitle(th chat.Thread, ch chat.Channel) string {
	switch {
	case th.IsMain && ch.Kind == chat.KindDM:
		return ch.Name
	case th.IsMain:
		return "#" + ch.Name
	case th.Title != "":
		return th.Title
	}
	return "Thread of " + th.CreatedAt.UTC().Format("Jan 2 15:04") + " UTC"
}

// chatNav is the left column: the spaces and channels the person may read, and a few of the
// newest threads of the current channel.
func (c *chatView) chatNav(rq *request, current, currentThread kernel.ID) ([]pages.SpaceNav, error) {
	spaces, err := c.d.Chat.ListSpaces(rq.ctx(), rq.actor)
	if err != nil {
		return nil, err
	}
	out := make([]pages.SpaceNav, 0, len(spaces))
	for _, sp := range spaces {
		chans, err := c.d.Chat.ListChannels(rq.ctx(), rq.actor, sp.ID)
		if kernel.IsCode(err, kernel.CodeNotFound) || kernel.IsCode(err, kernel.CodeForbidden) {
			continue // archived or revoked between the two reads
		}
		if err != nil {
			return nil, err
		}
		if len(chans) == 0 {
			continue
		}
		s := pages.SpaceNav{Name: sp.Name}
		for _, ch := range chans {
			n := pages.ChannelNav{ID: string(ch.ID), Name: ch.Name, Href: "/console/channels/" + string(ch.ID), Current: ch.ID == current}
			if n.Current {
				ths, _, err := c.d.Chat.ListThreads(rq.ctx(), rq.actor, ch.ID, chat.Page{Limit: chatNavThreads})
				if err != nil {
					return nil, err
				}
				for i := len(ths) - 1; i >= 0; i-- { // newest first
					if ths[i].IsMain {
						continue
					}
					n.Threads = append(n.Threads, pages.ThreadNav{ID: string(ths[i].ID), Title: c.threadName(rq, ths[i], ch), Href: threadHref(ths[i]),
						Current: ths[i].ID == currentThread})
				}
			}
			s.Channels = append(s.Channels, n)
		}
		out = append(out, s)
	}
	return out, nil
}

// threadView builds a page of a thread: its messages with their reactions, the run cards at
// the messages that invoked them, and what the person may do there.
func (c *chatView) threadView(rq *request, th chat.Thread, ch chat.Channel, msgs []messaging.Message, more, latest bool) (pages.ThreadView, error) {
	ctx := rq.ctx()
	ch, canLeave, err := c.named(rq, ch)
	if err != nil {
		return pages.ThreadView{}, err
	}
	tv := pages.ThreadView{ID: string(th.ID), ChannelID: string(ch.ID), Title: threadTitle(th, ch), ChannelName: ch.Name,
		Topic: ch.Topic, Href: threadHref(th), Latest: latest, CSRF: rq.csrf, ClientMsgID: newClientMsgID(), Me: string(rq.actor.ID)}
	if more && len(msgs) > 0 {
		tv.OlderHref = tv.Href + "?before=" + string(msgs[0].ID)
	}
	var list []runs.Run
	if c.d.Runs != nil {
		var err error
		if list, _, err = c.d.Runs.ListThread(ctx, rq.actor, th.ID, chat.Page{Limit: chatPageRuns}); err != nil {
			return tv, err
		}
	}
	reactions, err := c.reactionsOf(ctx, msgs)
	if err != nil {
		return tv, err
	}
	approvals, asked, err := c.runApprovals(ctx, rq, list)
	if err != nil {
		return tv, err
	}
	need := make([]kernel.ID, 0, len(msgs)+len(list)+len(asked))
	need = append(need, asked...)
	for _, m := range msgs {
		need = append(need, m.AuthorID)
	}
	for _, r := range list {
		need = append(need, r.AgentID)
	}
	dir, err := c.directory(ctx, rq.actor, need)
	if err != nil {
		return tv, err
	}
	canPost := c.allowed(ctx, rq.actor, messaging.ActMessageCreate, th.Resource())
	canReact := c.allowed(ctx, rq.actor, messaging.ActReactionAdd, th.Resource())
	cards := make([]components.RunCardView, len(list))
	for i, r := range list {
		cards[i] = c.runCard(ctx, rq, r, dir)
		cards[i].Approvals = c.approvalViews(rq, approvals[r.ID], dir)
	}
	pins, err := c.d.Messages.ListPins(ctx, rq.actor, ch.ID)
	if err != nil {
		return tv, err
	}
	may := threadAbilities{react: canReact, reply: canPost, inThread: !th.IsMain, pinned: pinnedSet(pins)}
	tv.Pins = pinViews(pins)
	tv.Items = placeRuns(msgs, list, cards, latest, func(m messaging.Message) components.MessageView {
		return messageView(m, dir, reactions[m.ID], rq.actor.ID, c.messageAbilities(ctx, rq.actor, m, may), rq.csrf)
	})
	tv.CanPost = canPost
	// A channel's page offers a new thread to whoever may open one there.
	tv.CanStartThread = th.IsMain && c.allowed(ctx, rq.actor, chat.ActThreadCreate, ch.Resource())
	tv.CanLeave = th.IsMain && canLeave
	if canPost {
		members := c.members(ctx, ch, dir)
		handles := make([]string, len(members))
		names := make(map[kernel.ID]string, len(members))
		for i, p := range members {
			handles[i], names[p.ID] = p.Handle, p.Name
		}
		tv.Members = strings.Join(handles, " ")
		// The typing line names who types from this map; it is as long as the completion's.
		if b, err := json.Marshal(names); err == nil {
			tv.Names = string(b)
		}
	}
	return tv, nil
}

// placeRuns orders a page: each message followed by the runs it invoked. A run whose message is
// not on the page goes at the end of the newest page when it came after the page's first
// message (an operator's run, or one of a message on the page before is left out).
func placeRuns(msgs []messaging.Message, list []runs.Run, cards []components.RunCardView, latest bool,
	view func(messaging.Message) components.MessageView) []pages.ThreadItem {
	onPage := make(map[kernel.ID]bool, len(msgs))
	for _, m := range msgs {
		onPage[m.ID] = true
	}
	byTrigger := map[kernel.ID][]int{}
	var rest []int
	for i, r := range list {
		switch {
		case r.TriggerMessageID != nil && onPage[*r.TriggerMessageID]:
			byTrigger[*r.TriggerMessageID] = append(byTrigger[*r.TriggerMessageID], i)
		case latest && (len(msgs) == 0 || !r.CreatedAt.Before(msgs[0].CreatedAt)):
			rest = append(rest, i)
		}
	}
	items := make([]pages.ThreadItem, 0, len(msgs)+len(list))
	for _, m := range msgs {
		mv := view(m)
		items = append(items, pages.ThreadItem{Message: &mv})
		for _, i := range byTrigger[m.ID] {
			items = append(items, pages.ThreadItem{Run: &cards[i]})
		}
	}
	for _, i := range rest {
		items = append(items, pages.ThreadItem{Run: &cards[i]})
	}
	return items
}

// allowed asks Authorize whether actor may do action; without an authorizer the use case
// decides when the form is sent.
func (c *chatView) allowed(ctx context.Context, actor kernel.Actor, action kernel.Action, r kernel.Resource) bool {
	if c.d.Authz == nil {
		return false // without a decision point, offer nothing; the use cases decide anyway
	}
	return c.d.Authz.Authorize(ctx, actor, action, r) == nil
}

// reactionsOf reads the reactions of msgs, by message.
func (c *chatView) reactionsOf(ctx context.Context, msgs []messaging.Message) (map[kernel.ID][]messaging.Reaction, error) {
	out := map[kernel.ID][]messaging.Reaction{}
	if c.d.Reactions == nil || len(msgs) == 0 {
		return out, nil
	}
	ids := make([]kernel.ID, 0, len(msgs))
	for _, m := range msgs {
		if !m.Deleted {
			ids = append(ids, m.ID)
		}
	}
	rs, err := c.d.Reactions.ReactionsOf(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		out[r.MessageID] = append(out[r.MessageID], r)
	}
	return out, nil
}

// reactionPalette is what a person may react with in one click.
var reactionPalette = []string{"👍", "❤️", "😄", "🎉", "👀"}

// threadAbilities are what the person may do with any message of a thread: react, reply
// (which posts, in the thread or in a new one), and whether it is a thread or a channel's main
// thread. They are decided once for a page.
type threadAbilities struct {
	react, reply, inThread bool
	// pinned holds the ids of the channel's pinned messages.
	pinned map[kernel.ID]bool
}

// messageAbilities are what the person may do with one message: a thread's abilities, and edit
// and delete as authz decides them for this message (the author with post; for delete also a
// manager of the channel), the same decision as PATCH and DELETE /api/v1/messages/{id}.
type messageAbilities struct {
	threadAbilities
	edit, delete bool
	// pin offers Pin or Unpin (message.pin, as PUT /api/v1/messages/{id}/pin).
	pin bool
}

func (c *chatView) messageAbilities(ctx context.Context, actor kernel.Actor, m messaging.Message, t threadAbilities) messageAbilities {
	a := messageAbilities{threadAbilities: t}
	if m.Deleted {
		return a
	}
	a.edit = m.AuthorID == actor.ID && c.allowed(ctx, actor, messaging.ActMessageUpdate, m.Resource())
	a.delete = c.allowed(ctx, actor, messaging.ActMessageDelete, m.Resource())
	a.pin = c.allowed(ctx, actor, messaging.ActMessagePin, m.Resource())
	return a
}

// permalinkPath is the console's address of a message, which opens its thread at it.
func permalinkPath(id kernel.ID) string { return "/console/messages/" + string(id) }

// The times of the chat view: a short one shown without the script (which rewrites both in the
// reader's time zone), labelled UTC, and the whole one on hover.
const (
	shortTimeLayout = "Jan 2 15:04 UTC"
	fullTimeLayout  = "Monday, January 2, 2006, 15:04:05 UTC"
)

// messageView is a message as the page shows it: its author by name, the body rendered from
// Markdown, its reactions counted by emoji in the order they first came.
func messageView(m messaging.Message, dir *principalDir, rs []messaging.Reaction, me kernel.ID, may messageAbilities, csrf string) components.MessageView {
	a := dir.get(m.AuthorID)
	at := m.CreatedAt.UTC()
	v := components.MessageView{ID: string(m.ID), AuthorHandle: a.Handle, AuthorName: a.Name, AuthorAgent: a.Agent,
		Time: at.Format(shortTimeLayout), Stamp: at.Format(time.RFC3339), FullTime: at.Format(fullTimeLayout),
		Deleted: m.Deleted, Edited: m.EditedAt != nil && !m.Deleted, Href: permalinkPath(m.ID), Version: m.Version, CSRF: csrf}
	if !m.Deleted {
		v.Body = markdown.Render(m.Content)
		v.Note = triggerNote(m.TriggerState)
		v.Refusals = refusalLines(m.Triggers, dir)
		if may.react {
			v.Palette = reactionPalette
		}
		v.CanReply, v.InThread = may.reply, may.inThread
		v.CanEdit, v.CanDelete = may.edit, may.delete
		v.CanPin, v.Pinned = may.pin, may.pinned[m.ID]
		v.Components, v.CanInteract = componentRows(m.Components), may.react
		v.Attachments = attachmentViews(m.Attachments)
	}
	if m.ReplyThreadID != nil {
		r := &components.RepliesView{ThreadID: string(*m.ReplyThreadID), Href: "/console/threads/" + string(*m.ReplyThreadID)}
		if m.ReplyCount != nil {
			r.Count = *m.ReplyCount
		}
		if m.LastReplyAt != nil {
			last := m.LastReplyAt.UTC()
			r.Time, r.Stamp, r.FullTime = last.Format(shortTimeLayout), last.Format(time.RFC3339), last.Format(fullTimeLayout)
		}
		v.Replies = r
	}
	rs = slices.Clone(rs)
	slices.SortStableFunc(rs, func(a, b messaging.Reaction) int { return a.CreatedAt.Compare(b.CreatedAt) })
	for _, r := range rs {
		i := slices.IndexFunc(v.Reactions, func(x components.ReactionView) bool { return x.Emoji == r.Emoji })
		if i < 0 {
			v.Reactions = append(v.Reactions, components.ReactionView{Emoji: r.Emoji})
			i = len(v.Reactions) - 1
		}
		v.Reactions[i].Count++
		v.Reactions[i].Mine = v.Reactions[i].Mine || r.PrincipalID == me
	}
	return v
}

// triggerNote says why a message that named an agent invoked none.
func triggerNote(state *string) string {
	if state == nil {
		return ""
	}
	switch *state {
	case "no_invoke_right":
		return "No agent was invoked: the author may not invoke agents in this channel."
	case "agent_disabled":
		return "No agent was invoked: the agent is disabled."
	case "agent_cannot_read":
		return "No agent was invoked: the agent may not read this channel."
	case "command_ambiguous":
		return "No agent was invoked: several agents answer this command; name one with /command@agent."
	case "budget_exhausted":
		return "No agent was invoked: the agent's budget is used up for now."
	case "handoff_depth_exceeded":
		return "No agent was invoked: too many agents handed this on in a row."
	}
	return ""
}

// refusalLines says, for each agent of ts that was not invoked, why, naming it by its handle.
func refusalLines(ts []messaging.AgentTrigger, dir *principalDir) []string {
	var out []string
	for _, t := range ts {
		if line := agentRefusal(dir.get(t.AgentID).Handle, t.State); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// agentRefusal is why the agent handle was not invoked for the refusal code state; "" for
// triggered (or a code this console does not know).
func agentRefusal(handle, state string) string {
	at := "@" + handle
	switch state {
	case "no_invoke_right":
		return at + " was not invoked: the author may not invoke agents in this channel."
	case "agent_disabled":
		return at + " is disabled."
	case "agent_cannot_read":
		return at + " cannot read this channel."
	case "command_ambiguous":
		return at + " is one of several agents that answer this command; name one with /command@agent."
	case "budget_exhausted":
		return at + "'s budget is used up for now."
	case "handoff_depth_exceeded":
		return at + " was not invoked: too many agents handed this on in a row."
	}
	return ""
}

// runCard is a run as its card shows it; the cancel form for who may cancel a run that has
// not ended.
func (c *chatView) runCard(ctx context.Context, rq *request, r runs.Run, dir *principalDir) components.RunCardView {
	agent := dir.get(r.AgentID).Handle
	v := components.RunCardView{ID: string(r.ID), AgentHandle: agent, State: string(r.Status), StateLabel: runStateLabel(r.Status),
		Reason: string(r.Reason), Explain: runExplain(r, agent), StatusLine: r.Document.Status, Output: r.Document.Output,
		Version: r.Version, Updated: r.UpdatedAt.UnixMicro(), CSRF: rq.csrf}
	if r.ErrorMessage != nil && r.Status == runs.StatusFailed {
		v.ErrorMessage = *r.ErrorMessage
	}
	if r.TriggerMessageID != nil {
		v.TriggerID = string(*r.TriggerMessageID)
	}
	if !r.Status.Terminal() {
		v.Cancelling = r.CancelRequestedAt != nil
		v.CanCancel = !v.Cancelling && c.allowed(ctx, rq.actor, runs.ActRunCancel, r.Resource())
	}
	for _, s := range r.Document.Steps {
		v.Steps = append(v.Steps, components.StepView{ID: s.ID, Kind: string(s.Kind), Title: s.Title, Status: stepStatus(r.Status, s.Status),
			Detail: s.Detail})
	}
	return v
}

// runStateLabel is a run's state in a word or two for people.
func runStateLabel(s runs.Status) string {
	switch s {
	case runs.StatusQueued:
		return "Waiting for the agent"
	case runs.StatusRunning:
		return "Working"
	case runs.StatusWaitingInput:
		return "Waiting for input"
	case runs.StatusSucceeded:
		return "Done"
	case runs.StatusFailed:
		return "Failed"
	case runs.StatusCancelled:
		return "Cancelled"
	}
	return string(s)
}

// runReasons say in a sentence why a run ended as it did, by its reason code: the one table of
// these words. The card shows them server-side, and the script reads the card again on every
// change of state, so it needs none of its own. %s is the agent's handle.
var runReasons = map[runs.Reason]string{
	runs.ReasonAgentUnavailable:  "@%s did not pick this up in time: it was not connected, or too busy. Try again when it is online.",
	runs.ReasonStale:             "@%s stopped reporting progress, so the run was ended. It may have got stuck; try again.",
	runs.ReasonInterrupted:       "The connection to @%s was lost during the run and did not come back in time.",
	runs.ReasonCancelTimeout:     "Cancelled: @%s did not confirm the cancel in time, so the run was stopped without it.",
	runs.ReasonPermissionRevoked: "The run was stopped: whoever asked for it may no longer invoke @%s here, or @%s may no longer read this channel.",
	runs.ReasonAgentDisabled:     "The run was stopped: @%s was disabled.",
	runs.ReasonAgentError:        "@%s ran into an error.",
}

// runExplain is the sentence of why r ended as it did; "" for a run that has not ended or
// succeeded. A code of the agent's own is its failure, told as such (its message, if any, shows
// next to it).
func runExplain(r runs.Run, agent string) string {
	switch {
	case r.Status == runs.StatusCancelled && r.Reason == "":
		return "Cancelled: @" + agent + " stopped when asked to."
	case r.Status != runs.StatusFailed && r.Status != runs.StatusCancelled:
		return ""
	}
	text, ok := runReasons[r.Reason]
	if !ok {
		text = "@%s reported a failure (" + strings.ReplaceAll(string(r.Reason), "%", "") + ")."
	}
	return strings.ReplaceAll(text, "%s", agent)
}

// stepStatus is what a step shows: a step still under way in a run that has ended did not
// finish, and says so rather than "running".
func stepStatus(run runs.Status, s runs.StepStatus) string {
	if run.Terminal() {
		switch s {
		case runs.StepRunning:
			return "stopped"
		case runs.StepPending:
			return "not started"
		}
	}
	return string(s)
}

// newClientMsgID is the idempotency key of one composer form.
func newClientMsgID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return "console-" + base64.RawURLEncoding.EncodeToString(b)
}

// wantsFragment reports whether the console's script sent the form.
func wantsFragment(rq *request) bool { return rq.r.Header.Get(fragmentHeader) == "1" }

// refuseFragment answers the script's form with the reason as text.
func refuseFragment(rq *request, status int, text string) {
	rq.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rq.w.WriteHeader(status)
	rq.w.Write([]byte(text))
}

// postMessage posts the composer's message and goes back to the thread, at the message. A
// refused message comes back in the composer with the reason.
// startThread opens a thread in the channel with its first message (messaging.CreateThread: the
// same use case as POST /api/v1/channels/{id}/threads) and goes to it; a mention in the first
// message invokes an agent as in any message, and a channel's operator is invoked by the thread.
func (c *chatView) startThread(rq *request) error {
	id, err := c.chatID(rq)
	if err != nil {
		return err
	}
	f := rq.r.PostForm
	var th chat.Thread
	attached, err := attachmentIDs(rq)
	if err == nil {
		th, _, _, err = c.d.Messages.CreateThread(rq.ctx(), rq.actor, id, messaging.NewThread{Title: f.Get("title"),
			Content: f.Get("content"), ClientMsgID: f.Get("client_msg_id"), AttachmentIDs: attached})
	}
	if err != nil {
		if !refusal(err, kernel.CodeValidation, kernel.CodeConflict, kernel.CodeRateLimited, files.CodeAttachmentInvalid) {
			return err
		}
		c.redirect(rq, "/console/channels/"+string(id), layouts.Flash{Kind: "error", Text: formError(err)})
		return nil
	}
	c.redirect(rq, threadHref(th), layouts.Flash{})
	return nil
}

func (c *chatView) postMessage(rq *request) error {
	id, err := c.chatID(rq)
	if err != nil {
		return err
	}
	content := rq.r.PostFormValue("content")
	var m messaging.Message
	attached, err := attachmentIDs(rq)
	if err == nil {
		m, _, err = c.d.Messages.CreateMessage(rq.ctx(), rq.actor, id, messaging.NewMessage{Content: content,
			ClientMsgID: rq.r.PostFormValue("client_msg_id"), AttachmentIDs: attached})
	}
	if err != nil {
		if !refusal(err, kernel.CodeValidation, kernel.CodeConflict, kernel.CodeRateLimited, files.CodeAttachmentInvalid) {
			return err
		}
		if wantsFragment(rq) {
			refuseFragment(rq, http.StatusUnprocessableEntity, formError(err))
			return nil
		}
		return c.showThread(rq, id, nil, http.StatusUnprocessableEntity, content, formError(err))
	}
	if wantsFragment(rq) {
		return c.renderMessage(rq, m, http.StatusCreated)
	}
	return c.backToThread(rq, m.ThreadID, "#m-"+string(m.ID), layouts.Flash{})
}

// toggleReaction puts the emoji on the message, or takes it off when the person had put it.
func (c *chatView) toggleReaction(rq *request) error {
	id, err := c.chatID(rq)
	if err != nil {
		return err
	}
	m, err := c.d.Messages.GetMessage(rq.ctx(), rq.actor, id)
	if err != nil {
		return err
	}
	emoji := rq.r.PostFormValue("emoji")
	mine := false
	if c.d.Reactions != nil {
		rs, err := c.d.Reactions.ReactionsOf(rq.ctx(), []kernel.ID{m.ID})
		if err != nil {
			return err
		}
		mine = slices.ContainsFunc(rs, func(r messaging.Reaction) bool { return r.PrincipalID == rq.actor.ID && r.Emoji == emoji })
	}
	if mine {
		err = c.d.Messages.RemoveReaction(rq.ctx(), rq.actor, m.ID, emoji)
	} else {
		err = c.d.Messages.AddReaction(rq.ctx(), rq.actor, m.ID, emoji)
	}
	var text string
	if err != nil {
		if !refusal(err, kernel.CodeValidation, messaging.CodeMessageDeleted, kernel.CodeForbidden) {
			return err
		}
		// Forbidden here is a reader who may not post: they saw the message, so say so.
		text = formError(err)
		if !kernel.IsCode(err, kernel.CodeValidation) {
			text = "You cannot react to this message."
		}
	}
	return c.answerMessageAction(rq, m, text, layouts.Flash{})
}

// cancelRun asks a run to stop, for its invoker or a manager of the channel.
func (c *chatView) cancelRun(rq *request) error {
	id, err := c.runID(rq)
	if err != nil {
		return err
	}
	r, err := c.d.Runs.Cancel(rq.ctx(), rq.actor, id)
	flash := layouts.Flash{Kind: "ok", Text: "The run was asked to stop."}
	switch {
	case err == nil:
		if r.Status.Terminal() {
			flash.Text = "The run was cancelled."
		}
	case refusal(err, runs.CodeRunEnded):
		flash = layouts.Flash{Kind: "error", Text: "The run has ended already."}
		if r, err = c.d.Runs.Get(rq.ctx(), rq.actor, id); err != nil {
			return err
		}
	default:
		return err
	}
	if wantsFragment(rq) {
		if r, err = c.d.Runs.Get(rq.ctx(), rq.actor, id); err != nil {
			return err
		}
		return c.renderRun(rq, r)
	}
	return c.backToThread(rq, r.ThreadID, "#r-"+string(r.ID), flash)
}

// messageFragment is one message as the thread shows it, for the script to put in place.
func (c *chatView) messageFragment(rq *request) error {
	id, err := c.chatID(rq)
	if err != nil {
		return err
	}
	m, err := c.d.Messages.GetMessage(rq.ctx(), rq.actor, id)
	if err != nil {
		return err
	}
	return c.renderMessage(rq, m, http.StatusOK)
}

func (c *chatView) renderMessage(rq *request, m messaging.Message, status int) error {
	mv, err := c.standaloneView(rq, m)
	if err != nil {
		return err
	}
	return c.render(rq, status, components.Message(mv))
}

// standaloneView is one message as its thread shows it, with its reactions and author read for
// it alone.
func (c *chatView) standaloneView(rq *request, m messaging.Message) (components.MessageView, error) {
	rs, err := c.reactionsOf(rq.ctx(), []messaging.Message{m})
	if err != nil {
		return components.MessageView{}, err
	}
	dir, err := c.directory(rq.ctx(), rq.actor, []kernel.ID{m.AuthorID})
	if err != nil {
		return components.MessageView{}, err
	}
	return c.messageViewOf(rq, m, dir, rs[m.ID])
}

// messageViewOf is one message as its thread shows it, outside a page of the thread.
func (c *chatView) messageViewOf(rq *request, m messaging.Message, dir *principalDir, rs []messaging.Reaction) (components.MessageView, error) {
	th, err := c.d.Chat.ThreadRef(rq.ctx(), m.ThreadID)
	if err != nil {
		return components.MessageView{}, err
	}
	canPost := c.allowed(rq.ctx(), rq.actor, messaging.ActMessageCreate, th.Resource())
	pins, err := c.d.Messages.ListPins(rq.ctx(), rq.actor, m.ChannelID)
	if err != nil {
		return components.MessageView{}, err
	}
	may := threadAbilities{react: c.allowed(rq.ctx(), rq.actor, messaging.ActReactionAdd, th.Resource()), reply: canPost, inThread: !th.IsMain,
		pinned: pinnedSet(pins)}
	return messageView(m, dir, rs, rq.actor.ID, c.messageAbilities(rq.ctx(), rq.actor, m, may), rq.csrf), nil
}

// runFragment is one run card, for the script: a new run, or one whose patches it missed.
func (c *chatView) runFragment(rq *request) error {
	id, err := c.runID(rq)
	if err != nil {
		return err
	}
	r, err := c.d.Runs.Get(rq.ctx(), rq.actor, id)
	if err != nil {
		return err
	}
	return c.renderRun(rq, r)
}

func (c *chatView) renderRun(rq *request, r runs.Run) error {
	approvals, asked, err := c.runApprovals(rq.ctx(), rq, []runs.Run{r})
	if err != nil {
		return err
	}
	dir, err := c.directory(rq.ctx(), rq.actor, append([]kernel.ID{r.AgentID}, asked...))
	if err != nil {
		return err
	}
	card := c.runCard(rq.ctx(), rq, r, dir)
	card.Approvals = c.approvalViews(rq, approvals[r.ID], dir)
	return c.render(rq, http.StatusOK, components.RunCard(card))
}
