package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/inbox"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/ui/pages"
)

// What is new for the person in the chat view: the unread and mention counts beside each
// channel, DM and followed thread of the left column, the "new messages" line in a thread, the
// read position that showing a thread's newest page moves, and the Mentions page. The counts
// come from the inbox (GET /api/v1/me/unread's use case); the script keeps them live from the
// gateway by asking /console/unread again when something changes elsewhere.

// InboxUseCases is what the chat view calls on read positions, unread counts and mentions;
// *inbox.Service implements it.
type InboxUseCases interface {
	Position(ctx context.Context, actor kernel.Actor, threadID kernel.ID) (inbox.Position, error)
	MarkRead(ctx context.Context, actor kernel.Actor, threadID, messageID kernel.ID) (inbox.Position, error)
	Unread(ctx context.Context, actor kernel.Actor) (inbox.Unread, error)
	Mentions(ctx context.Context, actor kernel.Actor, p inbox.Page) ([]inbox.Mention, kernel.ID, error)
}

var _ InboxUseCases = (*inbox.Service)(nil)

// inboxRoutes registers the inbox's pages and the script's reads and writes.
func (c *chatView) inboxRoutes() {
	c.handle("GET /console/mentions", signedIn, c.mentionsPage)
	c.handle("GET /console/unread", signedIn, c.unreadCounts)
	c.handle("POST /console/threads/{id}/read", signedIn, c.markRead)
}

// readOnShow places the "new messages" line of a thread's newest page and moves the person's
// read position to its newest message: showing it is reading it. The line goes before the
// first message after the position that someone else wrote; it is left out when that message
// is not on the page (the line would name a message the page does not show) or when there is
// none.
func (c *chatView) readOnShow(rq *request, tv *pages.ThreadView, th chat.Thread, msgs []messaging.Message) error {
	if c.d.Inbox == nil || !tv.Latest || len(msgs) == 0 {
		return nil
	}
	pos, err := c.d.Inbox.Position(rq.ctx(), rq.actor, th.ID)
	if err != nil {
		return err
	}
	newest := msgs[len(msgs)-1].ID
	if newest <= pos.LastReadMessageID {
		return nil
	}
	// A thread never read has no line: everything on the page is new, and a line above all of
	// it says nothing.
	if !pos.LastReadMessageID.IsZero() && msgs[0].ID <= pos.LastReadMessageID {
		for _, m := range msgs {
			if m.ID > pos.LastReadMessageID && m.AuthorID != rq.actor.ID {
				tv.NewFrom = string(m.ID)
				break
			}
		}
	}
	_, err = c.d.Inbox.MarkRead(rq.ctx(), rq.actor, th.ID, newest)
	return err
}

// withUnread puts the counts beside the channels, DMs and threads of the left column, and the
// person's unread mentions beside the link of the Mentions page.
func (c *chatView) withUnread(rq *request, v *pages.ChatView) error {
	if c.d.Inbox == nil {
		return nil
	}
	u, err := c.d.Inbox.Unread(rq.ctx(), rq.actor)
	if err != nil {
		return err
	}
	v.Inbox = true
	v.Mentions = u.MentionCount
	byChannel, byThread := unreadMaps(u)
	set := func(n *pages.ChannelNav) {
		if x, ok := byChannel[kernel.ID(n.ID)]; ok {
			n.Unread, n.Mentions = x.UnreadCount, x.MentionCount
		}
		for i := range n.Threads {
			if x, ok := byThread[kernel.ID(n.Threads[i].ID)]; ok {
				n.Threads[i].Unread, n.Threads[i].Mentions = x.UnreadCount, x.MentionCount
			}
		}
	}
	for i := range v.Nav {
		for j := range v.Nav[i].Channels {
			set(&v.Nav[i].Channels[j])
		}
	}
	if v.DMs != nil {
		for i := range v.DMs.DMs {
			set(&v.DMs.DMs[i])
		}
	}
	return nil
}

// unreadMaps files the entries by channel (main threads, with the mentions of the channel's
// other threads added, so a channel shows where one was mentioned in it) and by thread.
func unreadMaps(u inbox.Unread) (byChannel, byThread map[kernel.ID]inbox.Entry) {
	byChannel, byThread = map[kernel.ID]inbox.Entry{}, map[kernel.ID]inbox.Entry{}
	for _, e := range u.Items {
		if e.ThreadID != nil {
			byThread[*e.ThreadID] = e
			x := byChannel[e.ChannelID]
			x.ChannelID, x.MentionCount = e.ChannelID, x.MentionCount+e.MentionCount
			byChannel[e.ChannelID] = x
			continue
		}
		x := byChannel[e.ChannelID]
		e.MentionCount += x.MentionCount
		byChannel[e.ChannelID] = e
	}
	return byChannel, byThread
}

// unreadAnswer is what the script reads from /console/unread: per channel and per thread, the
// unread and the mention counts, and the person's unread mentions.
type unreadAnswer struct {
	Channels map[kernel.ID][2]int64 `json:"channels"`
	Threads  map[kernel.ID][2]int64 `json:"threads"`
	Mentions int64                  `json:"mentions"`
	// Approvals is how many approvals wait on the person (up to a page), when they are wired.
	Approvals *int `json:"approvals,omitempty"`
}

// unreadCounts answers the counts of the left column as JSON, for the script that keeps them
// live.
func (c *chatView) unreadCounts(rq *request) error {
	if c.d.Inbox == nil {
		return errNoChat
	}
	u, err := c.d.Inbox.Unread(rq.ctx(), rq.actor)
	if err != nil {
		return err
	}
	byChannel, byThread := unreadMaps(u)
	a := unreadAnswer{Channels: map[kernel.ID][2]int64{}, Threads: map[kernel.ID][2]int64{}, Mentions: u.MentionCount}
	for id, e := range byChannel {
		a.Channels[id] = [2]int64{e.UnreadCount, e.MentionCount}
	}
	for id, e := range byThread {
		a.Threads[id] = [2]int64{e.UnreadCount, e.MentionCount}
	}
	if c.d.Approvals != nil {
		items, _, err := c.d.Approvals.Inbox(rq.ctx(), rq.actor, runs.InboxPage{State: runs.ApprovalPending, Limit: approvalsPerPage})
		if err != nil {
			return err
		}
		n := len(items)
		a.Approvals = &n
	}
	rq.w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(rq.w).Encode(a)
}

// markRead moves the person's read position in a thread to the message of the form: the
// script posts it when a message arrives in the thread the person is looking at. Without the
// script showing the thread's newest page does it.
func (c *chatView) markRead(rq *request) error {
	id, err := c.chatID(rq)
	if err != nil {
		return err
	}
	if c.d.Inbox == nil {
		return errNoChat
	}
	msg, err := kernel.ParseID(rq.r.PostFormValue("message_id"))
	if err == nil {
		_, err = c.d.Inbox.MarkRead(rq.ctx(), rq.actor, id, msg)
	} else {
		err = &kernel.Error{Code: inbox.CodeMessageNotInThread, Field: "message_id", Message: "message_id is not a message id"}
	}
	if refusal(err, inbox.CodeMessageNotInThread) {
		// Only a hand-made form gets here: the page's own names a message it shows.
		if wantsFragment(rq) {
			refuseFragment(rq, http.StatusUnprocessableEntity, "That message is not in this thread.")
		} else {
			c.errorPage(rq, http.StatusUnprocessableEntity, "Not marked as read", "That message is not in this thread.")
		}
		return nil
	}
	if err != nil {
		return err
	}
	if wantsFragment(rq) {
		rq.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return c.backToThread(rq, id, "", rq.flash)
}

// mentionsPerPage is the length of a page of the Mentions page.
const mentionsPerPage = 30

// mentionsPage lists the messages that mention the person, newest first, unread ones marked,
// each leading to its place; "Older" pages on.
func (c *chatView) mentionsPage(rq *request) error {
	if !c.chatReady() || c.d.Inbox == nil {
		return errNoChat
	}
	var after kernel.ID
	if v := rq.r.URL.Query().Get("after"); v != "" {
		id, err := kernel.ParseID(v)
		if err != nil {
			return kernel.Errorf(kernel.CodeNotFound, "no such page")
		}
		after = id
	}
	items, next, err := c.d.Inbox.Mentions(rq.ctx(), rq.actor, inbox.Page{After: after, Limit: mentionsPerPage})
	if err != nil {
		return err
	}
	need := make([]kernel.ID, 0, len(items))
	for _, m := range items {
		need = append(need, m.Message.AuthorID)
	}
	dir, err := c.directory(rq.ctx(), rq.actor, need)
	if err != nil {
		return err
	}
	v := pages.MentionsView{Chrome: c.chrome(rq, "Mentions", "chat")}
	places := map[kernel.ID]string{}
	for _, m := range items {
		place, ok := places[m.Message.ChannelID]
		if !ok {
			place = "a channel"
			if ch, err := c.d.Chat.GetChannel(rq.ctx(), rq.actor, m.Message.ChannelID); err == nil {
				if ch, _, err = c.named(rq, ch); err == nil {
					place = channelPlace(ch)
				}
			}
			places[m.Message.ChannelID] = place
		}
		at := m.Message.CreatedAt.UTC()
		v.Items = append(v.Items, pages.MentionItem{ID: string(m.Message.ID), Href: permalinkPath(m.Message.ID), Place: place,
			Author: dir.get(m.Message.AuthorID).Name, Text: snippet(m.Message.Content, mentionTextRunes), Read: m.Read,
			Time: at.Format(shortTimeLayout), Stamp: at.Format(time.RFC3339), FullTime: at.Format(fullTimeLayout)})
	}
	if !next.IsZero() {
		v.OlderHref = "/console/mentions?after=" + string(next)
	}
	return c.render(rq, http.StatusOK, pages.Mentions(v))
}

// mentionTextRunes is how much of a message the Mentions page shows.
const mentionTextRunes = 160

// channelPlace names a channel where a list names where a message is: #name, or a DM's
// participants as its page is headed.
func channelPlace(ch chat.Channel) string {
	if ch.Kind == chat.KindDM {
		return ch.Name
	}
	return "#" + ch.Name
}
