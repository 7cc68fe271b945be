package ui

import (
	"context"
	"net/http"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/notify"
	"bothy.dev/bothy/ui/layouts"
	"bothy.dev/bothy/ui/pages"
)

// The notification controls of the chat view's thread header: a person's level for a channel
// or a DM (on its main thread), Follow and Mute on a thread of its own, and the rename of a
// thread's title. Each is a plain form that posts, goes through the same use case as the REST
// API (PUT /api/v1/channels/{id}/notifications, PUT /api/v1/threads/{id}/subscription, PATCH
// /api/v1/threads/{id}) and comes back to the thread with a flash.

// NotifyUseCases is what the thread header calls on notification levels; *notify.Service
// implements it.
type NotifyUseCases interface {
	Level(ctx context.Context, actor kernel.Actor, channelID kernel.ID) (notify.ChannelLevel, error)
	SetLevel(ctx context.Context, actor kernel.Actor, channelID kernel.ID, level string) (notify.ChannelLevel, error)
	Subscription(ctx context.Context, actor kernel.Actor, threadID kernel.ID) (notify.Subscription, error)
	SetSubscription(ctx context.Context, actor kernel.Actor, threadID kernel.ID, level string) (notify.Subscription, error)
}

var _ NotifyUseCases = (*notify.Service)(nil)

// ThreadTitles renames a thread; *chat.Service implements it.
type ThreadTitles interface {
	UpdateThread(ctx context.Context, actor kernel.Actor, id kernel.ID, p chat.ThreadPatch) (chat.Thread, error)
}

var _ ThreadTitles = (*chat.Service)(nil)

// notifyRoutes registers the forms of the thread header's notification controls.
func (con *Console) notifyRoutes() {
	c := &chatView{Console: con}
	c.handle("POST /console/channels/{id}/notifications", signedIn, c.setChannelLevel)
	c.handle("POST /console/threads/{id}/subscription", signedIn, c.setThreadSubscription)
	c.handle("POST /console/threads/{id}/title", signedIn, c.renameThread)
}

// withNotify puts the header's notification controls into tv: the level of ch on its main
// thread, Follow and Mute and, for who may rename it, the title on a thread of its own. Without
// the notify use cases the header shows none of them but the rename.
func (c *chatView) withNotify(rq *request, tv *pages.ThreadView, th chat.Thread, ch chat.Channel) error {
	n := pages.NotifyView{CSRF: rq.csrf}
	switch {
	case c.d.Notify != nil && th.IsMain:
		l, err := c.d.Notify.Level(rq.ctx(), rq.actor, ch.ID)
		if err != nil {
			return err
		}
		n.Level = &pages.LevelView{ChannelID: string(ch.ID), Level: string(l.Level), Default: l.Default,
			DefaultLevel: string(notify.DefaultChannelLevel(ch.Kind == chat.KindDM))}
	case c.d.Notify != nil:
		s, err := c.d.Notify.Subscription(rq.ctx(), rq.actor, th.ID)
		if err != nil {
			return err
		}
		n.Follow = &pages.FollowView{ThreadID: string(th.ID), Level: string(s.Level), Default: s.Default}
	}
	if !th.IsMain && c.d.Threads != nil && c.allowed(rq.ctx(), rq.actor, chat.ActThreadUpdate, th.Resource()) {
		n.Rename = &pages.RenameView{ThreadID: string(th.ID), Title: th.Title}
	}
	if n.Level != nil || n.Follow != nil || n.Rename != nil {
		tv.Notify = &n
	}
	return nil
}

// levelWords are the levels as a flash names them.
var levelWords = map[notify.Level]string{
	notify.LevelAll:      "every message",
	notify.LevelMentions: "mentions only",
	notify.LevelNone:     "nothing",
}

// setChannelLevel stores the person's level for a channel or a DM (notify.SetLevel) and goes
// back to it.
func (c *chatView) setChannelLevel(rq *request) error {
	id, err := c.chatID(rq)
	if err != nil {
		return err
	}
	if c.d.Notify == nil {
		return errNoChat
	}
	back := "/console/channels/" + string(id)
	l, err := c.d.Notify.SetLevel(rq.ctx(), rq.actor, id, rq.r.PostFormValue("level"))
	switch {
	case err == nil:
	case refusal(err, kernel.CodeValidation):
		c.redirect(rq, back, layouts.Flash{Kind: "error", Text: formError(err)})
		return nil
	default:
		return err
	}
	c.redirect(rq, back, layouts.Flash{Kind: "ok", Text: "Notifications for this conversation: " + levelWords[l.Level] + "."})
	return nil
}

// subscriptionWords are the thread levels as a flash says them.
var subscriptionWords = map[notify.Level]string{
	notify.LevelAll:      "You follow this thread: every reply notifies you.",
	notify.LevelMentions: "You no longer follow this thread: only mentions notify you.",
	notify.LevelNone:     "Thread muted: nothing from it notifies you.",
}

// setThreadSubscription follows, unfollows or mutes a thread (notify.SetSubscription) and goes
// back to it. A channel's main thread follows the channel's level: the form is not on its page,
// and a hand-made post is sent back to the channel with the reason.
func (c *chatView) setThreadSubscription(rq *request) error {
	id, err := c.chatID(rq)
	if err != nil {
		return err
	}
	if c.d.Notify == nil {
		return errNoChat
	}
	s, err := c.d.Notify.SetSubscription(rq.ctx(), rq.actor, id, rq.r.PostFormValue("level"))
	switch {
	case err == nil:
		return c.backToThread(rq, id, "", layouts.Flash{Kind: "ok", Text: subscriptionWords[s.Level]})
	case refusal(err, kernel.CodeValidation):
		return c.backToThread(rq, id, "", layouts.Flash{Kind: "error", Text: formError(err)})
	case refusal(err, chat.CodeMainThread):
		return c.backToThread(rq, id, "", layouts.Flash{Kind: "error", Text: "A channel follows its notification level: choose it above."})
	}
	return err
}

// renameThread changes a thread's title (chat.UpdateThread, as PATCH /api/v1/threads/{id}): for
// its creator or a manager of the channel; an empty title clears it. A person who may read the
// thread but not rename it is told so with 403.
func (c *chatView) renameThread(rq *request) error {
	id, err := c.chatID(rq)
	if err != nil {
		return err
	}
	if c.d.Threads == nil {
		return errNoChat
	}
	title := rq.r.PostFormValue("title")
	_, err = c.d.Threads.UpdateThread(rq.ctx(), rq.actor, id, chat.ThreadPatch{Title: &title})
	switch {
	case err == nil:
		return c.backToThread(rq, id, "", layouts.Flash{Kind: "ok", Text: "Thread renamed."})
	case refusal(err, kernel.CodeValidation):
		return c.backToThread(rq, id, "", layouts.Flash{Kind: "error", Text: formError(err)})
	case refusal(err, chat.CodeMainThread):
		return c.backToThread(rq, id, "", layouts.Flash{Kind: "error", Text: "A channel's main thread has no title of its own."})
	case refusal(err, kernel.CodeForbidden):
		// Forbidden from a thread the person may read is their missing right to rename it;
		// one who may not read it sees the 404 of any thread they may not see.
		th, terr := c.d.Chat.Thread(rq.ctx(), id)
		if terr != nil {
			return terr
		}
		if !c.allowed(rq.ctx(), rq.actor, chat.ActThreadRead, th.Resource()) {
			return err
		}
		c.refuse(rq, http.StatusForbidden, "Only who started the thread, or a manager of the channel, may rename it.")
		return nil
	}
	return err
}
