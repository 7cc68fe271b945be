package ui

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/appliance/clientaddr"
	"bothy.dev/bothy/ui/components"
	"bothy.dev/bothy/ui/layouts"
	"bothy.dev/bothy/ui/pages"
)

// The actions on one message: its permalink, edit, delete and reply. Each has a page of its
// own that works without the script (a form with the CSRF token, post/redirect/get); with the
// Bothy-Fragment header the same address answers only the form, or the message as it now is,
// for the script to put in place. Every change goes through messaging's use cases, which
// authorize it as the REST API does; the pages ask authz first only to answer a person who may
// read the message but not do this with 403 rather than a form that would fail.

// permalink opens the thread of a message at it: GET /console/messages/{id} is what "Copy
// link" copies.
func (c *chatView) permalink(rq *request) error {
	m, th, err := c.messageAndThread(rq)
	if err != nil {
		return err
	}
	c.redirect(rq, messageHref(th, m.ID), rq.flash)
	return nil
}

// messageHref is the address of the page of th around message id, scrolled to it.
func messageHref(th chat.Thread, id kernel.ID) string {
	return threadHref(th) + "?at=" + string(id) + "#m-" + string(id)
}

// messageAndThread loads the message of the path (message.read) and its thread.
func (c *chatView) messageAndThread(rq *request) (messaging.Message, chat.Thread, error) {
	id, err := c.chatID(rq)
	if err != nil {
		return messaging.Message{}, chat.Thread{}, err
	}
	m, err := c.d.Messages.GetMessage(rq.ctx(), rq.actor, id)
	if err != nil {
		return messaging.Message{}, chat.Thread{}, err
	}
	th, err := c.d.Chat.ThreadRef(rq.ctx(), m.ThreadID)
	return m, th, err
}

// refuse answers a person who may see the message but may not do what they asked with the
// status the REST API answers (403, or 410 for a deleted message) and the reason.
func (c *chatView) refuse(rq *request, status int, text string) {
	if wantsFragment(rq) {
		refuseFragment(rq, status, text)
		return
	}
	title := "Not allowed"
	if status == http.StatusGone {
		title = "Deleted"
	}
	c.errorPage(rq, status, title, text)
}

// refuseErr answers a use case's refusal of an action on a message.
func (c *chatView) refuseErr(rq *request, err error) {
	if kernel.IsCode(err, messaging.CodeMessageDeleted) {
		c.refuse(rq, http.StatusGone, "The message was deleted.")
		return
	}
	c.refuse(rq, http.StatusForbidden, "You may not do that with this message.")
}

// actionPage renders the page of one action on m, the form in it.
func (c *chatView) actionPage(rq *request, status int, title string, m messaging.Message, th chat.Thread, v pages.MessageActionView) error {
	var err error
	if v.Message, err = c.standaloneView(rq, m); err != nil {
		return err
	}
	full, err := c.d.Chat.Thread(rq.ctx(), th.ID)
	if err != nil {
		return err
	}
	ch, err := c.d.Chat.GetChannel(rq.ctx(), rq.actor, th.ChannelID)
	if err != nil {
		return err
	}
	v.Chrome = c.chrome(rq, title, "chat")
	v.ThreadTitle, v.ThreadHref = c.threadName(rq, full, ch), messageHref(th, m.ID)
	return c.render(rq, status, pages.MessageAction(v))
}

func (c *chatView) editView(m messaging.Message, th chat.Thread, content, errText, csrf string) components.EditView {
	return components.EditView{ID: string(m.ID), Content: content, Href: messageHref(th, m.ID), Error: errText, CSRF: csrf}
}

// mayEdit answers false, after refusing, when the person may not edit m.
func (c *chatView) mayEdit(rq *request, m messaging.Message) bool {
	switch {
	case m.Deleted:
		c.refuse(rq, http.StatusGone, "The message was deleted: there is nothing to edit.")
	case m.AuthorID != rq.actor.ID || !c.allowed(rq.ctx(), rq.actor, messaging.ActMessageUpdate, m.Resource()):
		c.refuse(rq, http.StatusForbidden, "Only its author may edit a message, while they may post in the channel.")
	default:
		return true
	}
	return false
}

// editPage is the form that changes a message's text.
func (c *chatView) editPage(rq *request) error {
	m, th, err := c.messageAndThread(rq)
	if err != nil {
		return err
	}
	if !c.mayEdit(rq, m) {
		return nil
	}
	e := c.editView(m, th, m.Content, "", rq.csrf)
	if wantsFragment(rq) {
		return c.render(rq, http.StatusOK, components.EditForm(e))
	}
	return c.actionPage(rq, http.StatusOK, "Edit the message", m, th, pages.MessageActionView{Action: "edit", Edit: e})
}

// editMessage saves the new text (messaging.EditMessage, as PATCH /api/v1/messages/{id}) and
// goes back to the thread at the message; refused text comes back in the form with the reason.
func (c *chatView) editMessage(rq *request) error {
	m, th, err := c.messageAndThread(rq)
	if err != nil {
		return err
	}
	content := rq.r.PostFormValue("content")
	edited, err := c.d.Messages.EditMessage(rq.ctx(), rq.actor, m.ID, content)
	switch {
	case err == nil:
	case refusal(err, kernel.CodeValidation):
		if wantsFragment(rq) {
			refuseFragment(rq, http.StatusUnprocessableEntity, formError(err))
			return nil
		}
		return c.actionPage(rq, http.StatusUnprocessableEntity, "Edit the message", m, th,
			pages.MessageActionView{Action: "edit", Edit: c.editView(m, th, content, formError(err), rq.csrf)})
	case refusal(err, kernel.CodeForbidden, messaging.CodeMessageDeleted):
		if c.mayEdit(rq, m) { // allowed a moment ago: the message or the rights changed since
			c.refuseErr(rq, err)
		}
		return nil
	default:
		return err
	}
	if wantsFragment(rq) {
		return c.renderMessage(rq, edited, http.StatusOK)
	}
	c.redirect(rq, messageHref(th, m.ID), layouts.Flash{Kind: "ok", Text: "Message edited."})
	return nil
}

// mayDelete answers false, after refusing, when the person may not delete m.
func (c *chatView) mayDelete(rq *request, m messaging.Message) bool {
	switch {
	case m.Deleted:
		c.refuse(rq, http.StatusGone, "The message was deleted already.")
	case !c.allowed(rq.ctx(), rq.actor, messaging.ActMessageDelete, m.Resource()):
		c.refuse(rq, http.StatusForbidden, "Only its author, or a manager of the channel, may delete a message.")
	default:
		return true
	}
	return false
}

// deletePage asks before a message is deleted.
func (c *chatView) deletePage(rq *request) error {
	m, th, err := c.messageAndThread(rq)
	if err != nil {
		return err
	}
	if !c.mayDelete(rq, m) {
		return nil
	}
	d := components.DeleteView{ID: string(m.ID), Href: messageHref(th, m.ID), Others: m.AuthorID != rq.actor.ID, CSRF: rq.csrf}
	if wantsFragment(rq) {
		return c.render(rq, http.StatusOK, components.DeleteForm(d))
	}
	return c.actionPage(rq, http.StatusOK, "Delete the message", m, th, pages.MessageActionView{Action: "delete", Delete: d})
}

// deleteMessage deletes the message (messaging.DeleteMessage, as DELETE /api/v1/messages/{id})
// and goes back to the thread, where it shows as deleted.
func (c *chatView) deleteMessage(rq *request) error {
	m, th, err := c.messageAndThread(rq)
	if err != nil {
		return err
	}
	switch err := c.d.Messages.DeleteMessage(rq.ctx(), rq.actor, m.ID); kernel.CodeOf(err) {
	case kernel.Code{}:
	case kernel.CodeForbidden, messaging.CodeMessageDeleted:
		if c.mayDelete(rq, m) {
			c.refuseErr(rq, err)
		}
		return nil
	default:
		return err
	}
	if wantsFragment(rq) {
		if m, err = c.d.Messages.GetMessage(rq.ctx(), rq.actor, m.ID); err != nil {
			return err
		}
		return c.renderMessage(rq, m, http.StatusOK)
	}
	c.redirect(rq, messageHref(th, m.ID), layouts.Flash{Kind: "ok", Text: "Message deleted."})
	return nil
}

// replyPage is the reply to a message. In a thread it is an answer there that quotes the
// message (the script asks for the quote alone, as text, to put it in the thread's composer).
// In a channel's main thread it opens the thread under the message when there is one, else
// the form of the first reply, which starts that thread (the script shows the form under the
// message; a thread started meanwhile takes the reply all the same).
func (c *chatView) replyPage(rq *request) error {
	m, th, err := c.messageAndThread(rq)
	if err != nil {
		return err
	}
	if th.IsMain {
		return c.firstReplyPage(rq, m, th)
	}
	if m.Deleted || !c.allowed(rq.ctx(), rq.actor, messaging.ActMessageCreate, th.Resource()) {
		c.refuse(rq, http.StatusForbidden, "You may not post in this channel, so you cannot reply here.")
		return nil
	}
	dir, err := c.directory(rq.ctx(), rq.actor, []kernel.ID{m.AuthorID})
	if err != nil {
		return err
	}
	quote := replyQuote(m, dir.get(m.AuthorID).Handle, c.origin(rq)+permalinkPath(m.ID))
	if wantsFragment(rq) {
		rq.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = rq.w.Write([]byte(quote))
		return nil
	}
	r := pages.ReplyView{InThread: true, ThreadID: string(th.ID), Content: quote, ClientMsgID: newClientMsgID()}
	return c.actionPage(rq, http.StatusOK, "Reply", m, th, pages.MessageActionView{Action: "reply", Reply: r})
}

// mayReplyUnder answers false, after refusing, when the person may not reply under m, a message
// of a channel's main thread: they need the right to start a thread in the channel, as
// messaging.Reply asks, and a deleted message starts none.
func (c *chatView) mayReplyUnder(rq *request, m messaging.Message) bool {
	ch := kernel.Resource{Kind: kernel.ResChannel, ID: m.ChannelID, SpaceID: m.SpaceID, ChannelID: m.ChannelID, ChannelKind: m.ChannelKind}
	switch {
	case !c.allowed(rq.ctx(), rq.actor, chat.ActThreadCreate, ch):
		c.refuse(rq, http.StatusForbidden, "You may not post in this channel, so you cannot reply here.")
	case m.Deleted && m.ReplyThreadID == nil:
		c.refuse(rq, http.StatusGone, "The message was deleted: it starts no thread.")
	default:
		return true
	}
	return false
}

func (c *chatView) firstReplyPage(rq *request, m messaging.Message, th chat.Thread) error {
	if !c.mayReplyUnder(rq, m) {
		return nil
	}
	if m.ReplyThreadID != nil && !wantsFragment(rq) {
		replies, err := c.d.Chat.ThreadRef(rq.ctx(), *m.ReplyThreadID)
		if err != nil {
			return err
		}
		c.redirect(rq, threadHref(replies), rq.flash)
		return nil
	}
	f := c.replyForm(rq, m, th, "", "")
	if wantsFragment(rq) {
		return c.render(rq, http.StatusOK, components.ReplyForm(f))
	}
	return c.actionPage(rq, http.StatusOK, "Reply in a thread", m, th, pages.MessageActionView{Action: "reply", Reply: pages.ReplyView{First: f}})
}

func (c *chatView) replyForm(rq *request, m messaging.Message, th chat.Thread, content, errText string) components.ReplyFormView {
	cmid := rq.r.PostFormValue("client_msg_id")
	if cmid == "" {
		cmid = newClientMsgID()
	}
	return components.ReplyFormView{ID: string(m.ID), Content: content, Href: messageHref(th, m.ID), Error: errText,
		ClientMsgID: cmid, CSRF: rq.csrf}
}

// replyUnder posts the reply under a message of a channel's main thread (messaging.Reply, as
// POST /api/v1/messages/{id}/thread): it starts the thread under the message or answers in the
// one it has, and goes there, at the reply. Refused text comes back in the form with the
// reason.
func (c *chatView) replyUnder(rq *request) error {
	m, th, err := c.messageAndThread(rq)
	if err != nil {
		return err
	}
	content := rq.r.PostFormValue("content")
	var replies chat.Thread
	var reply messaging.Message
	attached, err := attachmentIDs(rq)
	if err == nil {
		replies, reply, _, err = c.d.Messages.Reply(rq.ctx(), rq.actor, m.ID, messaging.NewReply{Content: content,
			ClientMsgID: rq.r.PostFormValue("client_msg_id"), AttachmentIDs: attached})
	}
	switch {
	case err == nil:
	case refusal(err, kernel.CodeValidation, kernel.CodeConflict, kernel.CodeRateLimited, files.CodeAttachmentInvalid):
		return c.actionPage(rq, http.StatusUnprocessableEntity, "Reply in a thread", m, th,
			pages.MessageActionView{Action: "reply", Reply: pages.ReplyView{First: c.replyForm(rq, m, th, content, formError(err))}})
	case refusal(err, messaging.CodeNotInMainThread):
		c.refuse(rq, http.StatusConflict, "The message is in a thread: answer it there.")
		return nil
	case refusal(err, kernel.CodeForbidden, messaging.CodeMessageDeleted):
		if c.mayReplyUnder(rq, m) {
			c.refuseErr(rq, err)
		}
		return nil
	default:
		return err
	}
	c.redirect(rq, threadHref(replies)+"#m-"+string(reply.ID), layouts.Flash{})
	return nil
}

// origin is the scheme and host the person reached the console at, for links they post: the
// configured public URL, else this request's own.
func (c *chatView) origin(rq *request) string {
	if c.d.PublicURL != "" {
		return strings.TrimSuffix(c.d.PublicURL, "/")
	}
	cl := clientaddr.From(rq.r) // behind a trusted proxy, what the browser asked the proxy for
	return cl.Scheme + "://" + cl.Host
}

// Bounds of a reply's quote and title.
const (
	replyQuoteLines = 3
	replyQuoteRunes = 280
	replyTitleRunes = 60
)

// replyQuote is the start of a reply: the first lines of m as a Markdown quote, and who said
// it with a link to it, then an empty line to write under.
func replyQuote(m messaging.Message, handle, link string) string {
	var b strings.Builder
	lines := strings.Split(strings.TrimSpace(m.Content), "\n")
	cut := len(lines) > replyQuoteLines
	if cut {
		lines = lines[:replyQuoteLines]
	}
	n := 0
	for _, l := range lines {
		l = strings.TrimRight(l, " \t\r")
		if r := utf8.RuneCountInString(l); n+r > replyQuoteRunes {
			l, cut = truncateRunes(l, replyQuoteRunes-n), true
		}
		n += utf8.RuneCountInString(l)
		b.WriteString("> " + l + "\n")
		if n >= replyQuoteRunes {
			break
		}
	}
	if cut {
		b.WriteString("> …\n")
	}
	b.WriteString("> — @" + handle + ", " + link + "\n\n")
	return b.String()
}

// replyTitle names the thread a reply starts after the message's first line.
func replyTitle(content string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(content), "\n")
	first = strings.TrimSpace(strings.TrimLeft(first, "#> "))
	if utf8.RuneCountInString(first) > replyTitleRunes {
		first = strings.TrimSpace(truncateRunes(first, replyTitleRunes-1)) + "…"
	}
	return "Re: " + first
}

func truncateRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// pinPage asks before a message is pinned or unpinned: the page of the message's Pin or Unpin.
func (c *chatView) pinPage(rq *request) error {
	m, th, err := c.messageAndThread(rq)
	if err != nil {
		return err
	}
	switch {
	case m.Deleted:
		c.refuse(rq, http.StatusGone, "The message was deleted: it cannot be pinned.")
		return nil
	case !c.allowed(rq.ctx(), rq.actor, messaging.ActMessagePin, m.Resource()):
		c.refuse(rq, http.StatusForbidden, "Only who may post in the channel, or the message's author, may pin it.")
		return nil
	}
	return c.actionPage(rq, http.StatusOK, "Pin the message", m, th, pages.MessageActionView{Action: "pin"})
}

// togglePin pins the message or takes its pin off, as the form's button says (pin=on or off),
// through messaging as PUT and DELETE /api/v1/messages/{id}/pin do, and goes back to the thread
// at the message, whose header then lists the channel's pins as they now are.
func (c *chatView) togglePin(rq *request) error {
	m, _, err := c.messageAndThread(rq)
	if err != nil {
		return err
	}
	flash := layouts.Flash{Kind: "ok", Text: "Message pinned."}
	if rq.r.PostFormValue("pin") == "off" {
		_, err = c.d.Messages.UnpinMessage(rq.ctx(), rq.actor, m.ID)
		flash.Text = "Message unpinned."
	} else {
		_, _, err = c.d.Messages.PinMessage(rq.ctx(), rq.actor, m.ID)
	}
	switch {
	case err == nil:
	case refusal(err, messaging.CodePinLimit):
		flash = layouts.Flash{Kind: "error", Text: formError(err)}
	case refusal(err, kernel.CodeForbidden, messaging.CodeMessageDeleted):
		c.refuseErr(rq, err)
		return nil
	default:
		return err
	}
	return c.backToThread(rq, m.ThreadID, "#m-"+string(m.ID), flash)
}

// pinnedSet is the ids of the pinned messages, to mark them in a thread.
func pinnedSet(pins []messaging.PinnedMessage) map[kernel.ID]bool {
	out := make(map[kernel.ID]bool, len(pins))
	for _, p := range pins {
		out[p.MessageID] = true
	}
	return out
}

// pinTextRunes is how much of a pinned message's text the channel header shows.
const pinTextRunes = 80

// pinViews are the channel's pins as its header lists them, newest first.
// pinsFragment is a channel's pins as its header shows them (ListPins: 404 for a channel the
// person may not read).
func (c *chatView) pinsFragment(rq *request) error {
	id, err := c.chatID(rq)
	if err != nil {
		return err
	}
	pins, err := c.d.Messages.ListPins(rq.ctx(), rq.actor, id)
	if err != nil {
		return err
	}
	return c.render(rq, http.StatusOK, pages.Pinned(pinViews(pins)))
}

func pinViews(pins []messaging.PinnedMessage) []pages.PinView {
	out := make([]pages.PinView, 0, len(pins))
	for _, p := range pins {
		out = append(out, pages.PinView{MessageID: string(p.MessageID), Text: snippet(p.Message.Content, pinTextRunes), Href: permalinkPath(p.MessageID)})
	}
	return out
}

// snippet is a message's text on one line, cut to runes with an ellipsis: how a list that
// names messages (the pins, the mentions) shows each.
func snippet(content string, runes int) string {
	text := strings.Join(strings.Fields(content), " ")
	if utf8.RuneCountInString(text) > runes {
		text = string([]rune(text)[:runes]) + "…"
	}
	return text
}
