package messaging

import (
	"context"
	"slices"
	"time"

	"bothy.dev/bothy/app/chat"
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
	// Bus carries MessagePosted and MessageDeleted to their in-transaction subscribers.
	Bus   *kernel.TxBus
	Clock kernel.Clock
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
		events: d.Events, authz: d.Authz, bus: d.Bus, clock: d.Clock}
}

// now is the clock's time at the precision the store keeps.
func (s *Service) now() time.Time { return s.clock.Now().UTC().Truncate(time.Microsecond) }

// NewMessage is the input of CreateMessage.
type NewMessage struct {
	Content string
	// ClientMsgID makes the create idempotent per author (seed 8.4); empty means none.
	ClientMsgID string
	// RunID links the message to the run it answers (messages.run_id), in the message's own Unit
	// of Work. The caller sets it only after checking the agent's invocation token for this
	// thread (runs.Service.CheckToken); NilID means none.
	RunID kernel.ID
}

// CreateMessage posts a message into a thread (message.create on the thread). It is the hot
// path: one Unit of Work with a handful of indexed statements. A repeat with a client_msg_id
// the author used before answers the stored message, created false, and changes nothing.
// Errors: not_found, forbidden, validation_failed, conflict (the client_msg_id was used in
// another thread).
func (s *Service) CreateMessage(ctx context.Context, actor kernel.Actor, threadID kernel.ID, in NewMessage) (m Message, created bool, err error) {
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		m, created = Message{}, false
		th, err := s.threads.ThreadRef(ctx, threadID)
		if err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, kernel.ActMessageCreate, th.Resource()); err != nil {
			return err
		}
		if err := checkContent(in.Content); err != nil {
			return err
		}
		if err := checkClientMsgID(in.ClientMsgID); err != nil {
			return err
		}
		mentions, err := s.resolveMentions(ctx, in.Content)
		if err != nil {
			return err
		}
		now := s.now()
		m = Message{ID: kernel.NewID(), ThreadID: th.ID, ChannelID: th.ChannelID, SpaceID: th.SpaceID,
			AuthorID: actor.ID, Content: in.Content, ClientMsgID: ClientMsgID(in.ClientMsgID), Mentions: mentions,
			Version: 1, CreatedAt: now, ChannelKind: th.ChannelKind}
		if in.RunID != kernel.NilID {
			run := in.RunID
			m.RunID = &run
		}
		inserted, err := s.store.InsertMessage(ctx, m)
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
		if err := s.threads.AppendToThread(ctx, th.ID, now); err != nil {
			return err
		}
		if err := s.posted(ctx, actor, &m, false); err != nil {
			return err
		}
		created = true
		return nil
	})
	return m, created, err
}

// NewThread is the input of CreateThread.
type NewThread struct {
	Title       string
	Content     string
	ClientMsgID string
}

// CreateThread creates a thread in a channel with its first message, in one Unit of Work
// (thread.create on the channel; seed 4.6 puts it in messaging). It appends thread.created and
// message.created. A repeat with the client_msg_id of the first message answers the stored
// thread and message, created false. Errors: not_found, forbidden, validation_failed, conflict.
func (s *Service) CreateThread(ctx context.Context, actor kernel.Actor, channelID kernel.ID, in NewThread) (th chat.Thread, m Message, created bool, err error) {
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		th, m, created = chat.Thread{}, Message{}, false
		ch, err := s.threads.Channel(ctx, channelID)
		if err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, kernel.ActThreadCreate, ch.Resource()); err != nil {
			return err
		}
		if _, err := chat.CleanOptional("title", in.Title, chat.MaxTitleLen); err != nil {
			return err
		}
		if err := checkContent(in.Content); err != nil {
			return err
		}
		if err := checkClientMsgID(in.ClientMsgID); err != nil {
			return err
		}
		if in.ClientMsgID != "" {
			prev, err := s.store.MessageByClientID(ctx, actor.ID, in.ClientMsgID)
			switch {
			case err == nil:
				pt, err := s.threads.Thread(ctx, prev.ThreadID)
				if err != nil {
					return err
				}
				if pt.ChannelID != ch.ID || pt.IsMain {
					return kernel.Errorf(kernel.CodeConflict, "client_msg_id was already used for another message")
				}
				th, m = pt, prev
				return nil
			case !kernel.IsCode(err, kernel.CodeNotFound):
				return err
			}
		}
		mentions, err := s.resolveMentions(ctx, in.Content)
		if err != nil {
			return err
		}
		if th, err = s.threads.CreateThread(ctx, actor.ID, ch, in.Title); err != nil {
			return err
		}
		now := s.now()
		m = Message{ID: kernel.NewID(), ThreadID: th.ID, ChannelID: th.ChannelID, SpaceID: th.SpaceID,
			AuthorID: actor.ID, Content: in.Content, ClientMsgID: ClientMsgID(in.ClientMsgID), Mentions: mentions,
			Version: 1, CreatedAt: now, ChannelKind: th.ChannelKind}
		inserted, err := s.store.InsertMessage(ctx, m)
		if err != nil {
			return err
		}
		if !inserted { // only a concurrent twin on an engine with several writers gets here
			return kernel.Errorf(kernel.CodeConflict, "client_msg_id is being used by a concurrent request")
		}
		if err := s.threads.AppendToThread(ctx, th.ID, now); err != nil {
			return err
		}
		th.MessageCount, th.LastMessageAt = th.MessageCount+1, &now
		if err := s.posted(ctx, actor, &m, true); err != nil {
			return err
		}
		created = true
		return nil
	})
	return th, m, created, err
}

// posted appends message.created for the new message m and then publishes MessagePosted, in
// that order, so that the log holds a message before what it causes (the runs of the agents it
// invokes). The event's payload is m itself: a payload is encoded at commit (kernel.Event), so
// message.created carries the trigger state that a subscriber records after the append, as the
// answer does.
func (s *Service) posted(ctx context.Context, actor kernel.Actor, m *Message, newThread bool) error {
	s.events.Append(ctx, kernel.Event{Type: kernel.EvMessageCreated, Scope: m.Scope(), SubjectID: m.ID,
		ActorID: actor.ID, Payload: m})
	var trigger string
	if err := kernel.Publish(ctx, s.bus, MessagePosted{Message: *m, NewThread: newThread, Author: actor, Trigger: &trigger}); err != nil {
		return err
	}
	if trigger == "" {
		return nil
	}
	if err := s.store.SetTriggerState(ctx, m.ID, trigger); err != nil {
		return err
	}
	m.TriggerState = &trigger
	return nil
}

// resolveMentions finds the @handles of content and resolves them in one read; unknown handles
// are plain text. The answer is never nil, so the JSON form is always a list.
func (s *Service) resolveMentions(ctx context.Context, content string) ([]kernel.ID, error) {
	keys := scanMentions(content)
	if len(keys) == 0 {
		return []kernel.ID{}, nil
	}
	found, err := s.dir.ResolveHandles(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]kernel.ID, 0, len(found))
	seen := make(map[kernel.ID]bool, len(found))
	for _, k := range keys {
		if id, ok := found[k]; ok && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	slices.Sort(out) // the order the store reads them back in
	return out, nil
}

// ListMessages returns one page of a thread's messages, oldest first (message.read on the
// thread), and whether more lie beyond it. Errors: not_found, validation_failed, unauthenticated.
func (s *Service) ListMessages(ctx context.Context, actor kernel.Actor, threadID kernel.ID, p chat.Page) ([]Message, bool, error) {
	th, err := s.threads.Thread(ctx, threadID)
	if err != nil {
		return nil, false, err
	}
	if err := s.authz.Authorize(ctx, actor, kernel.ActMessageRead, th.Resource()); err != nil {
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
	if err := s.authz.Authorize(ctx, actor, kernel.ActMessageRead, m.Resource()); err != nil {
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
	var m Message
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		var err error
		if m, err = s.store.Message(ctx, id); err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, kernel.ActMessageUpdate, m.Resource()); err != nil {
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
		if err := checkContent(content); err != nil {
			return err
		}
		if content == m.Content {
			return nil
		}
		prev := Revision{MessageID: m.ID, Version: m.Version, Content: m.Content, CreatedAt: m.CreatedAt}
		if m.EditedAt != nil {
			prev.CreatedAt = *m.EditedAt
		}
		if m.Mentions, err = s.resolveMentions(ctx, content); err != nil {
			return err
		}
		now := s.now()
		m.Content, m.Version, m.EditedAt = content, m.Version+1, &now
		if err := s.store.UpdateMessage(ctx, m, prev); err != nil {
			return err
		}
		s.events.Append(ctx, kernel.Event{Type: kernel.EvMessageUpdated, Scope: m.Scope(), SubjectID: m.ID,
			ActorID: actor.ID, Payload: m})
		return nil
	})
	return m, err
}

var errDeleted = &kernel.Error{Code: kernel.CodeMessageDeleted, Message: "the message was deleted"}

// DeleteMessage turns a message into a tombstone (message.delete; authz decides who besides the
// author may): content, mentions and revisions go, the version grows by one, message.deleted is
// appended and the content of the message's earlier message.created and message.updated events
// is redacted in the log. Errors: not_found, forbidden, message_deleted (deleted already).
func (s *Service) DeleteMessage(ctx context.Context, actor kernel.Actor, id kernel.ID) error {
	return s.uow.Do(ctx, func(ctx context.Context) error {
		m, err := s.store.Message(ctx, id)
		if err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, kernel.ActMessageDelete, m.Resource()); err != nil {
			return err
		}
		if m.Deleted {
			return errDeleted
		}
		m.Content, m.Mentions, m.Deleted, m.Version = "", []kernel.ID{}, true, m.Version+1
		if err := s.store.DeleteMessage(ctx, m, s.now()); err != nil {
			return err
		}
		if err := s.threads.RemoveFromThread(ctx, m.ThreadID); err != nil {
			return err
		}
		if err := s.redactor.RedactEvents(ctx, m.ID, kernel.Redacts(kernel.EvMessageDeleted), m); err != nil {
			return err
		}
		if err := kernel.Publish(ctx, s.bus, MessageDeleted{Message: m}); err != nil {
			return err
		}
		s.events.Append(ctx, kernel.Event{Type: kernel.EvMessageDeleted, Scope: m.Scope(), SubjectID: m.ID,
			ActorID: actor.ID, Payload: m})
		return nil
	})
}

// ListRevisions returns the earlier contents of a message, oldest first
// (message.revisions.read). A tombstone has none. Errors: not_found, forbidden.
func (s *Service) ListRevisions(ctx context.Context, actor kernel.Actor, id kernel.ID) ([]Revision, error) {
	m, err := s.store.Message(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.authz.Authorize(ctx, actor, kernel.ActRevisionsRead, m.Resource()); err != nil {
		return nil, err
	}
	return s.store.Revisions(ctx, m.ID)
}

// AddReaction puts actor's emoji on a message (reaction.add). It is idempotent: only the first
// call appends reaction.added. Errors: not_found, forbidden, message_deleted, validation_failed.
func (s *Service) AddReaction(ctx context.Context, actor kernel.Actor, id kernel.ID, emoji string) error {
	return s.react(ctx, actor, id, emoji, kernel.ActReactionAdd)
}

// RemoveReaction takes actor's emoji off a message (reaction.remove). It is idempotent: only a
// call that removed something appends reaction.removed. Errors: as AddReaction.
func (s *Service) RemoveReaction(ctx context.Context, actor kernel.Actor, id kernel.ID, emoji string) error {
	return s.react(ctx, actor, id, emoji, kernel.ActReactionRemove)
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
		typ := kernel.EvReactionAdded
		if action == kernel.ActReactionAdd {
			changed, err = s.store.AddReaction(ctx, r)
		} else {
			typ = kernel.EvReactionRemoved
			changed, err = s.store.RemoveReaction(ctx, m.ID, actor.ID, emoji)
		}
		if err != nil || !changed {
			return err
		}
		s.events.Append(ctx, kernel.Event{Type: typ, Scope: m.Scope(), SubjectID: m.ID, ActorID: actor.ID, Payload: r})
		return nil
	})
}
