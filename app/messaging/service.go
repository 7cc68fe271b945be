package messaging

import (
	"context"
	"slices"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/instance"
	"bothy.dev/bothy/app/kernel"
)

// Deps are what the messaging use cases need; all are required except Bus and Clock.
type Deps struct {
	Store     Store
	Threads   chat.Threads
	Directory Directory
	Redactor  Redactor
	UoW       kernel.UnitOfWork
	Events    kernel.EventLog
	Authz     kernel.Authorizer
	// Bus carries MessageDeciding, MessagePosted and MessageDeleted to their in-transaction subscribers.
	Bus   *kernel.TxBus
	Clock kernel.Clock
	// Audience and Policy make @here and @channel mention a channel's members; without
	// Audience they are plain text. Policy nil is the setting "post".
	Audience Audience
	Policy   BroadcastPolicy
	// Files places the files a message carries; nil refuses attachments.
	Files Attachments
}

// Attachments are the files a message carries (files.Service implements it): checked before the
// message is stored, placed after it, deleted with it, all in the message's Unit of Work.
type Attachments interface {
	// Attachable checks that each file of ids is the actor's and answers them as a message
	// shows them, in order. Errors: validation_failed, attachment_invalid.
	Attachable(ctx context.Context, actor kernel.Actor, ids []kernel.ID) ([]files.Attachment, error)
	// Attach places the files of ids in the message p names. Errors: attachment_invalid (a file
	// is attached elsewhere).
	Attach(ctx context.Context, ids []kernel.ID, p files.Placement) error
	// DeleteOfMessage deletes the files of a deleted message (their bytes go after the commit).
	DeleteOfMessage(ctx context.Context, messageID kernel.ID) error
}

// Service holds the use cases of messaging.
type Service struct {
	store    Store
	threads  chat.Threads
	dir      Directory
	redactor Redactor
	uow      kernel.UnitOfWork
	events   kernel.EventLog
	authz    kernel.Authorizer
	bus      *kernel.TxBus
	clock    kernel.Clock
	audience Audience
	policy   BroadcastPolicy
	files    Attachments
}

// New returns the messaging service.
func New(d Deps) *Service {
	if d.Store == nil || d.Threads == nil || d.Directory == nil || d.Redactor == nil || d.UoW == nil ||
		d.Events == nil || d.Authz == nil {
		panic("messaging: missing dependency")
	}
	if d.Clock == nil {
		d.Clock = kernel.SystemClock{}
	}
	return &Service{store: d.Store, threads: d.Threads, dir: d.Directory, redactor: d.Redactor, uow: d.UoW,
		events: d.Events, authz: d.Authz, bus: d.Bus, clock: d.Clock, audience: d.Audience, policy: d.Policy, files: d.Files}
}

// now is the clock's time at the precision the store keeps.
func (s *Service) now() time.Time { return s.clock.Now().UTC().Truncate(time.Microsecond) }

// NewMessage is the input of CreateMessage.
type NewMessage struct {
	Content string
	// ClientMsgID makes the create idempotent per author (a retried post answers the first message); empty means none.
	ClientMsgID string
	// RunID links the message to the run it answers (messages.run_id), in the message's own Unit
	// of Work. The caller sets it only after checking the agent's invocation token for this
	// thread (runs.Service.CheckToken); NilID means none.
	RunID kernel.ID
	// Components are the message's buttons and selects; only an agent or an app may post them
	// (components_not_allowed otherwise).
	Components []ActionRow
	// AttachmentIDs are files of the author, not attached elsewhere, that the message carries
	// (at most files.MaxAttachments), in this order.
	AttachmentIDs []kernel.ID
}

// CreateMessage posts a message into a thread (message.create on the thread). It is the hot
// path: one Unit of Work with a handful of indexed statements. A repeat with a client_msg_id
// the author used before answers the stored message, created false, and changes nothing.
// Errors: not_found, forbidden, validation_failed, conflict (the client_msg_id was used in
// another thread), components_not_allowed.
func (s *Service) CreateMessage(ctx context.Context, actor kernel.Actor, threadID kernel.ID, in NewMessage) (m Message, created bool, err error) {
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		m, created = Message{}, false
		th, err := s.threads.ThreadRef(ctx, threadID)
		if err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, ActMessageCreate, th.Resource()); err != nil {
			return err
		}
		if err := checkBody(in.Content, len(in.AttachmentIDs)); err != nil {
			return err
		}
		if err := checkClientMsgID(in.ClientMsgID); err != nil {
			return err
		}
		components, err := checkedComponents(actor, in.Components)
		if err != nil {
			return err
		}
		attachments, err := s.attachable(ctx, actor, in.AttachmentIDs)
		if err != nil {
			return err
		}
		mentions, err := s.resolveMentions(ctx, actor, th.Resource(), in.Content)
		if err != nil {
			return err
		}
		m = s.newMessage(actor, th, in.Content, in.ClientMsgID, mentions)
		m.Components, m.Attachments = components, attachments
		if in.RunID != kernel.NilID {
			run := in.RunID
			m.RunID = &run
		}
		inserted, err := s.insert(ctx, actor, &m, false, in.AttachmentIDs)
		if err != nil {
			return err
		}
		if !inserted {
			prev, err := s.store.MessageByClientID(ctx, actor.ID, in.ClientMsgID)
			if err != nil {
				return err
			}
			if prev.ThreadID != th.ID {
				return kernel.Errorf(kernel.CodeConflict, "client_msg_id was already used for a message in another thread")
			}
			m = prev
			return nil
		}
		created = true
		return nil
	})
	return m, created, err
}

// newMessage is the first version of a message of actor in th, posted now.
func (s *Service) newMessage(actor kernel.Actor, th chat.Thread, content, clientMsgID string, mentions mentionSet) Message {
	return Message{ID: kernel.NewID(), ThreadID: th.ID, ChannelID: th.ChannelID, SpaceID: th.SpaceID,
		AuthorID: actor.ID, Content: content, ClientMsgID: ClientMsgID(clientMsgID), Mentions: mentions.explicit,
		Broadcast: mentions.broadcast, BroadcastTo: mentions.to, Version: 1, CreatedAt: s.now(), ChannelKind: th.ChannelKind}
}

// insert decides what the new message m triggers (MessageDeciding), stores it with that
// trigger state, counts it in its thread and publishes it (posted); inserted is false, and
// nothing is written, when its author has used its client_msg_id before.
func (s *Service) insert(ctx context.Context, actor kernel.Actor, m *Message, newThread bool, attachmentIDs []kernel.ID) (inserted bool, err error) {
	var trigger Trigger
	if err := kernel.Publish(ctx, s.bus, MessageDeciding{Message: *m, NewThread: newThread, Author: actor, Trigger: &trigger}); err != nil {
		return false, err
	}
	if trigger.State != "" {
		state := trigger.State
		m.TriggerState = &state
	}
	m.Triggers = trigger.Agents
	if inserted, err = s.store.InsertMessage(ctx, *m); err != nil || !inserted {
		return false, err
	}
	if len(attachmentIDs) > 0 {
		if err := s.files.Attach(ctx, attachmentIDs, files.Placement{MessageID: m.ID, ThreadID: m.ThreadID, ChannelID: m.ChannelID,
			SpaceID: m.SpaceID, ChannelKind: m.ChannelKind, At: m.CreatedAt}); err != nil {
			return false, err
		}
	}
	if err := s.threads.AppendToThread(ctx, m.ThreadID, m.ID, m.CreatedAt); err != nil {
		return false, err
	}
	return true, s.posted(ctx, actor, *m, newThread, trigger.Invoke)
}

// NewThread is the input of CreateThread.
type NewThread struct {
	Title       string
	Content     string
	ClientMsgID string
	// Components are the first message's buttons and selects (an agent's or an app's only).
	Components []ActionRow
	// AttachmentIDs are files of the author, not attached elsewhere, that the message carries
	// (at most files.MaxAttachments), in this order.
	AttachmentIDs []kernel.ID
}

// CreateThread creates a thread in a channel with its first message, in one Unit of Work
// (thread.create on the channel: a thread is made by its first message, so messaging checks
// it). It appends thread.created and
// message.created. A repeat with the client_msg_id of the first message answers the stored
// thread and message, created false. Errors: not_found, forbidden, validation_failed, conflict.
func (s *Service) CreateThread(ctx context.Context, actor kernel.Actor, channelID kernel.ID, in NewThread) (th chat.Thread, m Message, created bool, err error) {
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		th, m, created = chat.Thread{}, Message{}, false
		ch, err := s.threads.Channel(ctx, channelID)
		if err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, chat.ActThreadCreate, ch.Resource()); err != nil {
			return err
		}
		if _, err := chat.CleanOptional("title", in.Title, chat.MaxTitleLen); err != nil {
			return err
		}
		components, err := checkedComponents(actor, in.Components)
		if err != nil {
			return err
		}
		var again bool
		var mentions mentionSet
		if th, m, again, mentions, err = s.firstMessage(ctx, actor, ch.Resource(), in.Content, in.ClientMsgID, len(in.AttachmentIDs), func(pt chat.Thread) bool {
			return pt.ChannelID == ch.ID && !pt.IsMain && pt.ParentMessageID == nil
		}); err != nil || again {
			return err
		}
		attachments, err := s.attachable(ctx, actor, in.AttachmentIDs)
		if err != nil {
			return err
		}
		if th, err = s.threads.CreateThread(ctx, actor.ID, ch, in.Title); err != nil {
			return err
		}
		m = s.newMessage(actor, th, in.Content, in.ClientMsgID, mentions)
		m.Components, m.Attachments = components, attachments
		if err := s.insertFirst(ctx, actor, &th, &m, true, in.AttachmentIDs); err != nil {
			return err
		}
		created = true
		return nil
	})
	return th, m, created, err
}

// firstMessage checks the content and client_msg_id of a message that may start a thread, and
// looks for its repeat: the steps a new thread and a reply under a message share. again reports
// a repeat, answered with its stored thread and message (fits says whether that thread is the
// one this request would make); otherwise mentions are those of the content in the channel ch.
func (s *Service) firstMessage(ctx context.Context, actor kernel.Actor, ch kernel.Resource, content, clientMsgID string, attachments int, fits func(chat.Thread) bool) (th chat.Thread, m Message, again bool, mentions mentionSet, err error) {
	if err := checkBody(content, attachments); err != nil {
		return chat.Thread{}, Message{}, false, mentionSet{}, err
	}
	if err := checkClientMsgID(clientMsgID); err != nil {
		return chat.Thread{}, Message{}, false, mentionSet{}, err
	}
	if th, m, again, err = s.repeated(ctx, actor, clientMsgID, fits); err != nil || again {
		return th, m, again, mentionSet{}, err
	}
	mentions, err = s.resolveMentions(ctx, actor, ch, content)
	return chat.Thread{}, Message{}, false, mentions, err
}

// insertFirst inserts m into th (insert), which the caller has just found or made, after
// looking for the author's client_msg_id itself, and counts it in th as the answer shows it.
func (s *Service) insertFirst(ctx context.Context, actor kernel.Actor, th *chat.Thread, m *Message, newThread bool, attachmentIDs []kernel.ID) error {
	inserted, err := s.insert(ctx, actor, m, newThread, attachmentIDs)
	if err != nil {
		return err
	}
	if !inserted { // only a concurrent twin on an engine with several writers gets here
		return kernel.Errorf(kernel.CodeConflict, "client_msg_id is being used by a concurrent request")
	}
	at := m.CreatedAt
	th.MessageCount, th.LastMessageAt = th.MessageCount+1, &at
	return nil
}

// repeated looks for the message of actor with clientMsgID ("" is none), which a create that
// starts a thread answers again, with its thread, when fits holds for that thread; again
// reports that it found one. Errors: conflict (the id names a message that does not fit).
func (s *Service) repeated(ctx context.Context, actor kernel.Actor, clientMsgID string, fits func(chat.Thread) bool) (th chat.Thread, m Message, again bool, err error) {
	if clientMsgID == "" {
		return th, m, false, nil
	}
	prev, err := s.store.MessageByClientID(ctx, actor.ID, clientMsgID)
	switch {
	case kernel.IsCode(err, kernel.CodeNotFound):
		return th, m, false, nil
	case err != nil:
		return th, m, false, err
	}
	if th, err = s.threads.Thread(ctx, prev.ThreadID); err != nil {
		return th, m, false, err
	}
	if !fits(th) {
		return chat.Thread{}, Message{}, false, kernel.Errorf(kernel.CodeConflict, "client_msg_id was already used for another message")
	}
	return th, prev, true, nil
}

// CodeNotInMainThread refuses a thread under a message that is itself in a thread: only the
// messages of a channel's main thread have threads under them (threads do not nest).
// Its class is conflict: the message's place conflicts with the request, which a client fixes by
// answering in that thread.
var CodeNotInMainThread = kernel.NewCode("not_in_main_thread", kernel.ClassConflict)

// CodeMessageDeleted refuses a change to a deleted message, or a thread under one.
var CodeMessageDeleted = kernel.NewCode("message_deleted", kernel.ClassGone)

// NewReply is the input of Reply.
type NewReply struct {
	Content string
	// ClientMsgID makes the reply idempotent per author, as for any message; empty means none.
	ClientMsgID string
	// Components are the reply's buttons and selects (an agent's or an app's only).
	Components []ActionRow
	// AttachmentIDs are files of the author, not attached elsewhere, that the message carries
	// (at most files.MaxAttachments), in this order.
	AttachmentIDs []kernel.ID
}

// Reply answers a message of a channel's main thread in the thread under it, in one Unit of
// Work: when the message has no thread yet it starts one with the reply as its first message
// (started true), else it posts the reply there. Either needs thread.create on the channel,
// the right POST /channels/{id}/threads asks for; an existing thread needs message.create on
// it too. A message the actor may not read is not found. A new thread appends thread.created,
// whose parent_message_id names the message, then message.created, and invokes the channel's
// operator as any new thread does; a reply in an existing thread invokes the agents it
// mentions, as any message does. Two requests that race to start the thread of one message
// end with one thread (the store's unique index): the later one answers in it.
//
// A deleted message keeps its thread, which takes replies, but starts none. A repeat with the
// client_msg_id of an earlier reply under the same message answers that reply and its thread,
// started false, and changes nothing. Errors: not_found, forbidden, validation_failed,
// not_in_main_thread, message_deleted, conflict (the client_msg_id was used for a message
// elsewhere).
func (s *Service) Reply(ctx context.Context, actor kernel.Actor, messageID kernel.ID, in NewReply) (th chat.Thread, m Message, started bool, err error) {
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		th, m, started = chat.Thread{}, Message{}, false
		parent, err := s.store.Message(ctx, messageID)
		if err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, ActMessageRead, parent.Resource()); err != nil {
			return err
		}
		place, err := s.threads.ThreadRef(ctx, parent.ThreadID)
		if err != nil {
			return err
		}
		if !place.IsMain {
			return kernel.Errorf(CodeNotInMainThread, "the message is in a thread: reply in that thread instead")
		}
		ch, err := s.threads.Channel(ctx, parent.ChannelID)
		if err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, chat.ActThreadCreate, ch.Resource()); err != nil {
			return err
		}
		components, err := checkedComponents(actor, in.Components)
		if err != nil {
			return err
		}
		var again bool
		var mentions mentionSet
		if th, m, again, mentions, err = s.firstMessage(ctx, actor, ch.Resource(), in.Content, in.ClientMsgID, len(in.AttachmentIDs), func(pt chat.Thread) bool {
			return pt.ParentMessageID != nil && *pt.ParentMessageID == parent.ID
		}); err != nil || again {
			return err
		}
		attachments, err := s.attachable(ctx, actor, in.AttachmentIDs)
		if err != nil {
			return err
		}
		th, err = s.threads.ThreadByParent(ctx, parent.ID)
		switch {
		case kernel.IsCode(err, kernel.CodeNotFound):
			if parent.Deleted {
				return errDeleted
			}
			if th, started, err = s.threads.CreateThreadUnder(ctx, actor.ID, ch, parent.ID); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		if !started {
			if err := s.authz.Authorize(ctx, actor, ActMessageCreate, th.Resource()); err != nil {
				return err
			}
		}
		m = s.newMessage(actor, th, in.Content, in.ClientMsgID, mentions)
		m.Components, m.Attachments = components, attachments
		return s.insertFirst(ctx, actor, &th, &m, started, in.AttachmentIDs)
	})
	return th, m, started, err
}

// attachable checks the files a new message of actor names (Attachments.Attachable); none
// without the files module is refused.
func (s *Service) attachable(ctx context.Context, actor kernel.Actor, ids []kernel.ID) ([]files.Attachment, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if s.files == nil {
		return nil, kernel.Invalid("attachment_ids", "this server takes no attachments")
	}
	return s.files.Attachable(ctx, actor, ids)
}

// posted appends message.created for the new message m, as stored, and then publishes
// MessagePosted with the agents m invokes, in that order, so that the log holds a message before
// what it causes (the runs of the agents it invokes).
func (s *Service) posted(ctx context.Context, actor kernel.Actor, m Message, newThread bool, invoke []kernel.ID) error {
	s.events.Append(ctx, EvMessageCreated.Event(kernel.Event{Scope: m.Scope(), SubjectID: m.ID, ActorID: actor.ID}, m))
	return kernel.Publish(ctx, s.bus, MessagePosted{Message: m, NewThread: newThread, Author: actor, Invoke: invoke})
}

// mentionSet is who a message's content mentions: explicit by @handle, and to, the members
// @here or @channel (broadcast) reaches besides those.
type mentionSet struct {
	explicit  []kernel.ID
	broadcast string
	to        []kernel.ID
}

// resolveMentions finds the @handles of content and resolves them in one read; unknown handles
// are plain text. @here and @channel mention every member of the channel of where (people who
// may read it, not the author) when actor may use them there (mayBroadcast); otherwise they are
// plain text too. explicit is never nil, so the JSON form is always a list.
func (s *Service) resolveMentions(ctx context.Context, actor kernel.Actor, where kernel.Resource, content string) (mentionSet, error) {
	keys, broadcast := splitBroadcast(scanMentions(content))
	out := mentionSet{explicit: []kernel.ID{}}
	if len(keys) > 0 {
		found, err := s.dir.ResolveHandles(ctx, keys)
		if err != nil {
			return mentionSet{}, err
		}
		seen := make(map[kernel.ID]bool, len(found))
		for _, k := range keys {
			if id, ok := found[k]; ok && !seen[id] {
				seen[id] = true
				out.explicit = append(out.explicit, id)
			}
		}
		slices.Sort(out.explicit) // the order the store reads them back in
	}
	if broadcast == "" {
		return out, nil
	}
	may, err := s.mayBroadcast(ctx, actor, where)
	if err != nil || !may {
		return out, err
	}
	members, err := s.audience.ChannelMembers(ctx, where.ChannelID)
	if err != nil {
		return mentionSet{}, err
	}
	for _, id := range members {
		if id != actor.ID && !slices.Contains(out.explicit, id) {
			out.to = append(out.to, id)
		}
	}
	if len(out.to) > 0 {
		out.broadcast = broadcast
	}
	return out, nil
}

// mayBroadcast reports whether actor may mention the whole channel of where: with post on it, or
// with manage when the instance's setting says only managers may.
func (s *Service) mayBroadcast(ctx context.Context, actor kernel.Actor, where kernel.Resource) (bool, error) {
	if s.audience == nil {
		return false, nil
	}
	action := ActMentionBroadcast
	if s.policy != nil {
		p, err := s.policy.BroadcastMentions(ctx)
		if err != nil {
			return false, err
		}
		if p == instance.BroadcastManage {
			action = ActMentionBroadcastManaged
		}
	}
	switch err := s.authz.Authorize(ctx, actor, action, where); {
	case err == nil:
		return true, nil
	case kernel.IsCode(err, kernel.CodeForbidden) || kernel.IsCode(err, kernel.CodeNotFound):
		return false, nil
	default:
		return false, err
	}
}

// ListMessages returns one page of a thread's messages, oldest first (message.read on the
// thread), and whether more lie beyond it. Errors: not_found, validation_failed, unauthenticated.
func (s *Service) ListMessages(ctx context.Context, actor kernel.Actor, threadID kernel.ID, p chat.Page) ([]Message, bool, error) {
	th, err := s.threads.Thread(ctx, threadID)
	if err != nil {
		return nil, false, err
	}
	if err := s.authz.Authorize(ctx, actor, ActMessageRead, th.Resource()); err != nil {
		return nil, false, err
	}
	if p, err = p.Normalize(); err != nil {
		return nil, false, err
	}
	return s.store.Messages(ctx, th.ID, p)
}

// GetMessage returns one message, a tombstone if deleted (message.read).
// Errors: not_found, unauthenticated.
func (s *Service) GetMessage(ctx context.Context, actor kernel.Actor, id kernel.ID) (Message, error) {
	m, err := s.store.Message(ctx, id)
	if err != nil {
		return Message{}, err
	}
	if err := s.authz.Authorize(ctx, actor, ActMessageRead, m.Resource()); err != nil {
		return Message{}, err
	}
	return m, nil
}

// EditMessage replaces the content of a message (message.update; only its author may). The
// earlier content is kept as a revision, the version grows by one and message.updated is
// appended; the same content again changes nothing. Errors: not_found, forbidden,
// message_deleted, validation_failed.
func (s *Service) EditMessage(ctx context.Context, actor kernel.Actor, id kernel.ID, content string) (Message, error) {
	return s.EditMessageIf(ctx, actor, id, content, nil)
}

// EditMessageIf is EditMessage on condition that the message is at one of the versions given
// (HTTP's If-Match with the message's ETags): an author who edits what they read does not
// overwrite an edit made since, from another tab or device. nil is no condition; an empty list
// matches no version. A message at another version is left as it is. Errors: as EditMessage,
// and precondition_failed.
func (s *Service) EditMessageIf(ctx context.Context, actor kernel.Actor, id kernel.ID, content string, versions []int) (Message, error) {
	return s.ChangeMessage(ctx, actor, id, MessageChange{Content: &content}, versions)
}

// MessageChange is what ChangeMessage changes: the content when Content is set, the components
// when SetComponents is (Components nil or empty removes them).
type MessageChange struct {
	Content       *string
	SetComponents bool
	Components    []ActionRow
}

// ChangeMessage edits a message's content, its components or both (message.update; only its
// author may), on condition of versions as EditMessageIf. A new content is an edit: the earlier
// one is kept as a revision and edited_at is set. New components alone (an agent disabling the
// button that was clicked) keep no revision and leave edited_at. Either grows the version by one
// and appends message.updated; a change to what the message already says changes nothing.
// Errors: not_found, forbidden, message_deleted, validation_failed, precondition_failed,
// components_not_allowed.
func (s *Service) ChangeMessage(ctx context.Context, actor kernel.Actor, id kernel.ID, in MessageChange, versions []int) (Message, error) {
	if in.Content == nil && !in.SetComponents {
		return Message{}, kernel.Invalid("content", "give content, components or both")
	}
	var m Message
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		var err error
		if m, err = s.store.Message(ctx, id); err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, ActMessageUpdate, m.Resource()); err != nil {
			return err
		}
		if m.Deleted {
			return errDeleted
		}
		if m.AuthorID != actor.ID {
			return kernel.Errorf(kernel.CodeForbidden, "only the author may edit a message")
		}
		if versions != nil && !slices.Contains(versions, m.Version) {
			return kernel.Errorf(kernel.CodePreconditionFailed, "the message is at version %d, not the one If-Match names", m.Version)
		}
		contentChanged := in.Content != nil && *in.Content != m.Content
		if in.Content != nil {
			if err := checkContent(*in.Content); err != nil {
				return err
			}
		}
		componentsChanged := false
		if in.SetComponents {
			if err := checkComponentsAuthor(actor, in.Components); err != nil {
				return err
			}
			rows, err := NormalizeComponents(in.Components)
			if err != nil {
				return err
			}
			componentsChanged = !sameComponents(rows, m.Components)
			m.Components = rows
		}
		if !contentChanged && !componentsChanged {
			return nil
		}
		if !contentChanged {
			m.Version++
			if err := s.store.UpdateComponents(ctx, m); err != nil {
				return err
			}
			s.events.Append(ctx, EvMessageUpdated.Event(kernel.Event{Scope: m.Scope(), SubjectID: m.ID,
				ActorID: actor.ID}, m))
			return nil
		}
		content := *in.Content
		prev := Revision{MessageID: m.ID, Version: m.Version, Content: m.Content, CreatedAt: m.CreatedAt}
		if m.EditedAt != nil {
			prev.CreatedAt = *m.EditedAt
		}
		mentions, err := s.resolveMentions(ctx, actor, m.Resource(), content)
		if err != nil {
			return err
		}
		m.Mentions, m.Broadcast, m.BroadcastTo = mentions.explicit, mentions.broadcast, mentions.to
		now := s.now()
		m.Content, m.Version, m.EditedAt = content, m.Version+1, &now
		if err := s.store.UpdateMessage(ctx, m, prev); err != nil {
			return err
		}
		s.events.Append(ctx, EvMessageUpdated.Event(kernel.Event{Scope: m.Scope(), SubjectID: m.ID,
			ActorID: actor.ID}, m))
		return nil
	})
	return m, err
}

var errDeleted = &kernel.Error{Code: CodeMessageDeleted, Message: "the message was deleted"}

// DeleteMessage turns a message into a tombstone (message.delete; authz decides who besides the
// author may): content, mentions and revisions go, the version grows by one, message.deleted is
// appended and the content of the message's earlier message.created and message.updated events
// is redacted in the log. A pinned message is unpinned in the same unit (message.unpinned, before
// message.deleted). Errors: not_found, forbidden, message_deleted (deleted already).
func (s *Service) DeleteMessage(ctx context.Context, actor kernel.Actor, id kernel.ID) error {
	return s.uow.Do(ctx, func(ctx context.Context) error {
		m, err := s.store.Message(ctx, id)
		if err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, ActMessageDelete, m.Resource()); err != nil {
			return err
		}
		if m.Deleted {
			return errDeleted
		}
		return s.tombstone(ctx, actor, m)
	})
}

// tombstone deletes m, which is not deleted yet, in the Unit of Work of ctx, as DeleteMessage
// describes; actor is who deleted it (none: retention, see ExpireMessages).
func (s *Service) tombstone(ctx context.Context, actor kernel.Actor, m Message) error {
	m.Content, m.Mentions, m.Broadcast, m.Deleted, m.Version = "", []kernel.ID{}, "", true, m.Version+1
	m.Components = nil
	hadFiles := len(m.Attachments) > 0
	m.Attachments = nil
	if err := s.store.DeleteMessage(ctx, m, s.now()); err != nil {
		return err
	}
	if hadFiles && s.files != nil {
		if err := s.files.DeleteOfMessage(ctx, m.ID); err != nil {
			return err
		}
	}
	if err := s.threads.RemoveFromThread(ctx, m.ThreadID); err != nil {
		return err
	}
	if _, err := s.unpin(ctx, actor, m); err != nil {
		return err
	}
	if err := s.redactor.RedactEvents(ctx, m.ID, kernel.Redacts(EvMessageDeleted.Name), m); err != nil {
		return err
	}
	if err := kernel.Publish(ctx, s.bus, MessageDeleted{Message: m}); err != nil {
		return err
	}
	s.events.Append(ctx, EvMessageDeleted.Event(kernel.Event{Scope: m.Scope(), SubjectID: m.ID,
		ActorID: actor.ID}, m))
	return nil
}

// ListRevisions returns the earlier contents of a message, oldest first
// (message.revisions.read). A tombstone has none. Errors: not_found, forbidden.
func (s *Service) ListRevisions(ctx context.Context, actor kernel.Actor, id kernel.ID) ([]Revision, error) {
	m, err := s.store.Message(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.authz.Authorize(ctx, actor, ActRevisionsRead, m.Resource()); err != nil {
		return nil, err
	}
	return s.store.Revisions(ctx, m.ID)
}

// AddReaction puts actor's emoji on a message (reaction.add). It is idempotent: only the first
// call appends reaction.added. Errors: not_found, forbidden, message_deleted, validation_failed.
func (s *Service) AddReaction(ctx context.Context, actor kernel.Actor, id kernel.ID, emoji string) error {
	return s.react(ctx, actor, id, emoji, ActReactionAdd)
}

// RemoveReaction takes actor's emoji off a message (reaction.remove). It is idempotent: only a
// call that removed something appends reaction.removed. Errors: as AddReaction.
func (s *Service) RemoveReaction(ctx context.Context, actor kernel.Actor, id kernel.ID, emoji string) error {
	return s.react(ctx, actor, id, emoji, ActReactionRemove)
}

func (s *Service) react(ctx context.Context, actor kernel.Actor, id kernel.ID, emoji string, action kernel.Action) error {
	return s.uow.Do(ctx, func(ctx context.Context) error {
		m, err := s.store.Message(ctx, id)
		if err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, action, m.Resource()); err != nil {
			return err
		}
		if m.Deleted {
			return errDeleted
		}
		if err := checkEmoji(emoji); err != nil {
			return err
		}
		r := Reaction{MessageID: m.ID, ThreadID: m.ThreadID, PrincipalID: actor.ID, Emoji: emoji, CreatedAt: s.now()}
		var changed bool
		typ := EvReactionAdded
		if action == ActReactionAdd {
			changed, err = s.store.AddReaction(ctx, r)
		} else {
			typ = EvReactionRemoved
			changed, err = s.store.RemoveReaction(ctx, m.ID, actor.ID, emoji)
		}
		if err != nil || !changed {
			return err
		}
		s.events.Append(ctx, typ.Event(kernel.Event{Scope: m.Scope(), SubjectID: m.ID, ActorID: actor.ID}, r))
		return nil
	})
}
