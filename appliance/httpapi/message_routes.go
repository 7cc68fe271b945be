package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
)

// MessageUseCases is what the message routes call; *messaging.Service implements it.
type MessageUseCases interface {
	CreateThread(ctx context.Context, actor kernel.Actor, channelID kernel.ID, in messaging.NewThread) (chat.Thread, messaging.Message, bool, error)
	CreateMessage(ctx context.Context, actor kernel.Actor, threadID kernel.ID, in messaging.NewMessage) (messaging.Message, bool, error)
	Reply(ctx context.Context, actor kernel.Actor, messageID kernel.ID, in messaging.NewReply) (chat.Thread, messaging.Message, bool, error)
	ListMessages(ctx context.Context, actor kernel.Actor, threadID kernel.ID, p chat.Page) ([]messaging.Message, bool, error)
	GetMessage(ctx context.Context, actor kernel.Actor, id kernel.ID) (messaging.Message, error)
	ChangeMessage(ctx context.Context, actor kernel.Actor, id kernel.ID, in messaging.MessageChange, versions []int) (messaging.Message, error)
	DeleteMessage(ctx context.Context, actor kernel.Actor, id kernel.ID) error
	ListRevisions(ctx context.Context, actor kernel.Actor, id kernel.ID) ([]messaging.Revision, error)
	AddReaction(ctx context.Context, actor kernel.Actor, id kernel.ID, emoji string) error
	RemoveReaction(ctx context.Context, actor kernel.Actor, id kernel.ID, emoji string) error
	PinMessage(ctx context.Context, actor kernel.Actor, id kernel.ID) (messaging.Pin, bool, error)
	UnpinMessage(ctx context.Context, actor kernel.Actor, id kernel.ID) (bool, error)
	ListPins(ctx context.Context, actor kernel.Actor, channelID kernel.ID) ([]messaging.PinnedMessage, error)
}

var _ MessageUseCases = (*messaging.Service)(nil)

// InvocationChecker checks an agent's invocation token; *runs.Service implements it.
type InvocationChecker interface {
	CheckToken(ctx context.Context, actor kernel.Actor, token string, wantRun kernel.ID) (runs.InvocationClaims, error)
}

var _ InvocationChecker = (*runs.Service)(nil)

// answerRun reads the Invocation-Token of a message post into thread: none is no run; a token
// must be valid, the actor's, and for this thread (another thread's token: 403 forbidden). The
// token of an interaction (a click on the agent's button) names no run: the post is the agent's
// answer in that thread, linked to nothing.
func answerRun(r *Request, tokens InvocationChecker, thread kernel.ID) (kernel.ID, error) {
	tok := r.Header.Get(InvocationTokenHeader)
	if tok == "" {
		return kernel.NilID, nil
	}
	if tokens == nil {
		return kernel.NilID, kernel.Errorf(runs.CodeInvocationTokenInvalid, "this server takes no invocation token here")
	}
	c, err := tokens.CheckToken(r.Context(), r.Actor, tok, kernel.NilID)
	if err != nil {
		return kernel.NilID, err
	}
	if c.ThreadID != thread {
		return kernel.NilID, kernel.Errorf(kernel.CodeForbidden, "the invocation token is for another thread")
	}
	return c.RunID, nil
}

// checkClientMsgID checks the optional client_msg_id of a create: absent or null is none;
// present it must not be empty (the contract's minLength 1).
func checkClientMsgID(p *string) error {
	if p != nil && *p == "" {
		return kernel.Invalid("client_msg_id", "client_msg_id must not be empty; leave it out instead")
	}
	return nil
}

// orEmpty is the text p points at, or "" for none.
func orEmpty(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// createdStatus is 201 for a new message and 200 for the idempotent repeat of a client_msg_id,
// which answers the message created the first time: the status tells the client
// that nothing new happened, the body is the same either way. A grant answers the same way.
func createdStatus(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}

// messageETag is the strong entity tag of a message: its version, which every change of what
// the answer shows raises (an edit, the deletion).
func messageETag(m messaging.Message) string { return `"` + strconv.Itoa(m.Version) + `"` }

// ifMatchVersions reads the If-Match header of a message edit as the versions whose ETags it
// lists (RFC 9110: * or a list of entity tags, compared strongly). nil is no condition (no
// header, or *: the message exists, or the edit answers 404); a tag that is weak or names no
// version matches nothing. Errors: malformed_request.
func ifMatchVersions(values []string) ([]int, error) {
	if len(values) == 0 {
		return nil, nil
	}
	h := strings.TrimSpace(strings.Join(values, ","))
	if h == "*" {
		return nil, nil
	}
	bad := kernel.Errorf(kernel.CodeMalformedRequest, "If-Match must be * or a list of entity tags such as \"3\"")
	versions := []int{}
	for h != "" {
		h = strings.TrimLeft(h, " \t,")
		if h == "" {
			break
		}
		weak := strings.HasPrefix(h, "W/")
		if weak {
			h = h[2:]
		}
		if !strings.HasPrefix(h, `"`) {
			return nil, bad
		}
		end := strings.IndexByte(h[1:], '"')
		if end < 0 {
			return nil, bad
		}
		tag := h[1 : 1+end]
		h = strings.TrimLeft(h[2+end:], " \t")
		if h != "" && h[0] != ',' {
			return nil, bad
		}
		if v, err := strconv.Atoi(tag); err == nil && !weak && v > 0 && strconv.Itoa(v) == tag {
			versions = append(versions, v)
		}
	}
	if len(versions) == 0 && len(values) > 0 && strings.Trim(strings.Join(values, ""), " \t,") == "" {
		return nil, bad
	}
	return versions, nil
}

// threadWithMessage is the answer of a thread with the message that made or answered it.
type threadWithMessage struct {
	Thread  chat.Thread       `json:"thread"`
	Message messaging.Message `json:"message"`
}

// MessageRoutes serves threads with their first message, messages, revisions, reactions and pins. An
// agent posts its answer to a run with the run's Invocation-Token, checked by tokens (nil: no
// token is taken), which links the message to the run.
func MessageRoutes(m MessageUseCases, tokens InvocationChecker) []Route {
	rt := messageRoutes{m: m, tokens: tokens}
	return []Route{
		{Method: http.MethodPost, Pattern: "/api/v1/channels/{id}/threads", Action: chat.ActThreadCreate, Handler: withIDBody(rt.createThread)},
		// A reply under a message of a channel: 201 when it started the message's thread, 200
		// when it went into the thread the message had (or repeated a client_msg_id), with the
		// thread and the reply, as a new thread answers.
		{Method: http.MethodPost, Pattern: "/api/v1/messages/{id}/thread", Action: chat.ActThreadCreate, Handler: withIDBody(rt.reply)},
		{Method: http.MethodPost, Pattern: "/api/v1/threads/{id}/messages", Action: messaging.ActMessageCreate, Handler: withIDBody(rt.createMessage)},
		{Method: http.MethodGet, Pattern: "/api/v1/threads/{id}/messages", Action: messaging.ActMessageRead, Handler: withID(rt.listMessages)},
		{Method: http.MethodGet, Pattern: "/api/v1/messages/{id}", Action: messaging.ActMessageRead, Handler: withID(rt.getMessage)},
		{Method: http.MethodPatch, Pattern: "/api/v1/messages/{id}", Action: messaging.ActMessageUpdate, Handler: withIDBody(rt.editMessage)},
		{Method: http.MethodDelete, Pattern: "/api/v1/messages/{id}", Action: messaging.ActMessageDelete, Handler: withID(rt.deleteMessage)},
		{Method: http.MethodGet, Pattern: "/api/v1/messages/{id}/revisions", Action: messaging.ActRevisionsRead, Handler: withID(rt.listRevisions)},
		{Method: http.MethodPut, Pattern: "/api/v1/messages/{id}/reactions/{emoji}", Action: messaging.ActReactionAdd, Handler: withID(rt.addReaction)},
		{Method: http.MethodDelete, Pattern: "/api/v1/messages/{id}/reactions/{emoji}", Action: messaging.ActReactionRemove, Handler: withID(rt.removeReaction)},
		// A pin is idempotent both ways: PUT answers 200 with the pin, new or as it was; DELETE
		// answers 204 whether or not the message was pinned.
		{Method: http.MethodPut, Pattern: "/api/v1/messages/{id}/pin", Action: messaging.ActMessagePin, Handler: withID(rt.pin)},
		{Method: http.MethodDelete, Pattern: "/api/v1/messages/{id}/pin", Action: messaging.ActMessageUnpin, Handler: withID(rt.unpin)},
		{Method: http.MethodGet, Pattern: "/api/v1/channels/{id}/pins", Action: messaging.ActMessageRead, Handler: withID(rt.listPins)},
	}
}

// messageRoutes holds the handlers of MessageRoutes.
type messageRoutes struct {
	m      MessageUseCases
	tokens InvocationChecker
}

// threadBody is a new thread with its first message.
type threadBody struct {
	Title       string                `json:"title"`
	Content     string                `json:"content"`
	ClientMsgID *string               `json:"client_msg_id"`
	Components  []messaging.ActionRow `json:"components"`
	// AttachmentIDs are uploads of the author that the first message carries.
	AttachmentIDs []kernel.ID `json:"attachment_ids"`
}

func (b threadBody) check() error { return checkClientMsgID(b.ClientMsgID) }

// messageBody is a new message in a thread, or a reply under a message.
type messageBody struct {
	Content     string  `json:"content"`
	ClientMsgID *string `json:"client_msg_id"`
}

func (b messageBody) check() error { return checkClientMsgID(b.ClientMsgID) }

// postBody is a new message in a thread, or a reply under a message: a message body, with the
// buttons and selects an agent or an app may put under it.
type postBody struct {
	messageBody
	Components []messaging.ActionRow `json:"components"`
	// AttachmentIDs are uploads of the author that the message carries.
	AttachmentIDs []kernel.ID `json:"attachment_ids"`
}

// editBody is the new content of a message, its new components, or both. Components absent
// leave them as they are; null or [] removes them.
type editBody struct {
	Content    *string         `json:"content"`
	Components json.RawMessage `json:"components"`
}

// change is the edit the body asks for. Errors: validation_failed (components of the wrong shape).
func (b editBody) change() (messaging.MessageChange, error) {
	c := messaging.MessageChange{Content: b.Content}
	if b.Components == nil {
		return c, nil
	}
	c.SetComponents = true
	if err := json.Unmarshal(b.Components, &c.Components); err != nil {
		return c, kernel.Invalid("components", "components must be a list of rows, each {\"components\": [...]}")
	}
	return c, nil
}

// threadAnswer answers a thread with the message that made or answered it: 201 when it is new,
// 200 when nothing new happened.
func threadAnswer(th chat.Thread, msg messaging.Message, isNew bool, err error) (int, any, error) {
	if err != nil {
		return 0, nil, err
	}
	return createdStatus(isNew), threadWithMessage{th, msg}, nil
}

// taggedMessage answers msg with 200 and its ETag.
func taggedMessage(r *Request, msg messaging.Message) (int, any, error) {
	r.ResponseHeader().Set("ETag", messageETag(msg))
	return http.StatusOK, msg, nil
}

func (rt messageRoutes) createThread(r *Request, channelID kernel.ID, in threadBody) (int, any, error) {
	return threadAnswer(rt.m.CreateThread(r.Context(), r.Actor, channelID,
		messaging.NewThread{Title: in.Title, Content: in.Content, ClientMsgID: orEmpty(in.ClientMsgID), Components: in.Components,
			AttachmentIDs: in.AttachmentIDs}))
}

func (rt messageRoutes) reply(r *Request, messageID kernel.ID, in postBody) (int, any, error) {
	return threadAnswer(rt.m.Reply(r.Context(), r.Actor, messageID,
		messaging.NewReply{Content: in.Content, ClientMsgID: orEmpty(in.ClientMsgID), Components: in.Components, AttachmentIDs: in.AttachmentIDs}))
}

func (rt messageRoutes) createMessage(r *Request, threadID kernel.ID, in postBody) (int, any, error) {
	run, err := answerRun(r, rt.tokens, threadID)
	if err != nil {
		return 0, nil, err
	}
	msg, isNew, err := rt.m.CreateMessage(r.Context(), r.Actor, threadID,
		messaging.NewMessage{Content: in.Content, ClientMsgID: orEmpty(in.ClientMsgID), RunID: run, Components: in.Components,
			AttachmentIDs: in.AttachmentIDs})
	if err != nil {
		return 0, nil, err
	}
	return createdStatus(isNew), msg, nil
}

func (rt messageRoutes) listMessages(r *Request, threadID kernel.ID) (int, any, error) {
	p, err := keysetPage(r)
	if err != nil {
		return 0, nil, err
	}
	return page(rt.m.ListMessages(r.Context(), r.Actor, threadID, p))
}

func (rt messageRoutes) getMessage(r *Request, id kernel.ID) (int, any, error) {
	msg, err := rt.m.GetMessage(r.Context(), r.Actor, id)
	if err != nil {
		return 0, nil, err
	}
	return taggedMessage(r, msg)
}

func (rt messageRoutes) editMessage(r *Request, id kernel.ID, in editBody) (int, any, error) {
	versions, err := ifMatchVersions(r.Header.Values("If-Match"))
	if err != nil {
		return 0, nil, err
	}
	change, err := in.change()
	if err != nil {
		return 0, nil, err
	}
	msg, err := rt.m.ChangeMessage(r.Context(), r.Actor, id, change, versions)
	if err != nil {
		return 0, nil, err
	}
	return taggedMessage(r, msg)
}

func (rt messageRoutes) deleteMessage(r *Request, id kernel.ID) (int, any, error) {
	return noContent(rt.m.DeleteMessage(r.Context(), r.Actor, id))
}

func (rt messageRoutes) listRevisions(r *Request, id kernel.ID) (int, any, error) {
	return list(rt.m.ListRevisions(r.Context(), r.Actor, id))
}

func (rt messageRoutes) addReaction(r *Request, id kernel.ID) (int, any, error) {
	return noContent(rt.m.AddReaction(r.Context(), r.Actor, id, r.PathValue("emoji")))
}

func (rt messageRoutes) removeReaction(r *Request, id kernel.ID) (int, any, error) {
	return noContent(rt.m.RemoveReaction(r.Context(), r.Actor, id, r.PathValue("emoji")))
}

func (rt messageRoutes) pin(r *Request, id kernel.ID) (int, any, error) {
	p, _, err := rt.m.PinMessage(r.Context(), r.Actor, id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, p, nil
}

func (rt messageRoutes) unpin(r *Request, id kernel.ID) (int, any, error) {
	_, err := rt.m.UnpinMessage(r.Context(), r.Actor, id)
	return noContent(err)
}

func (rt messageRoutes) listPins(r *Request, channelID kernel.ID) (int, any, error) {
	return list(rt.m.ListPins(r.Context(), r.Actor, channelID))
}
