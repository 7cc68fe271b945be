package inbox

import (
	"context"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// Service holds the use cases of the inbox.
type Service struct {
	store   Store
	threads chat.Threads
	uow     kernel.UnitOfWork
	events  kernel.EventLog
	authz   kernel.Authorizer
	scoper  kernel.Scoper
	clock   kernel.Clock
}

// New returns the inbox service; scoper decides which channels a list may show (authz
// implements it next to Authorizer).
func New(d Deps, scoper kernel.Scoper) *Service {
	if d.Store == nil || d.Threads == nil || d.UoW == nil || d.Events == nil || d.Authz == nil || scoper == nil {
		panic("inbox: missing dependency")
	}
	if d.Clock == nil {
		d.Clock = kernel.SystemClock{}
	}
	return &Service{store: d.Store, threads: d.Threads, uow: d.UoW, events: d.Events, authz: d.Authz, scoper: scoper, clock: d.Clock}
}

func (s *Service) now() time.Time { return s.clock.Now().UTC().Truncate(time.Microsecond) }

// MarkRead moves actor's read position in a thread forward to messageID (read_state.update,
// decided like reading the thread) and appends read_state.updated for actor's other
// connections. A message at or before the current position changes nothing and answers the
// position as it is. The answer counts what is unread after the position once the write is
// committed. Errors: not_found (the thread, or one actor may not read), message_not_in_thread
// (messageID is not a message of the thread; nothing is written), unauthenticated.
func (s *Service) MarkRead(ctx context.Context, actor kernel.Actor, threadID, messageID kernel.ID) (Position, error) {
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		th, err := s.threads.ThreadRef(ctx, threadID)
		if err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, ActReadMark, th.Resource()); err != nil {
			return err
		}
		in, err := s.store.MessageThread(ctx, messageID)
		switch {
		case kernel.IsCode(err, kernel.CodeNotFound) || err == nil && in != th.ID:
			return &kernel.Error{Code: CodeMessageNotInThread, Field: "message_id", Message: "message_id is not a message of this thread"}
		case err != nil:
			return err
		}
		cur, found, err := s.store.Position(ctx, actor.ID, th.ID)
		if err != nil {
			return err
		}
		if found && messageID <= cur.LastReadMessageID {
			return nil
		}
		st := ReadState{ThreadID: th.ID, ChannelID: th.ChannelID, LastReadMessageID: messageID}
		if err := s.store.Advance(ctx, actor.ID, st, s.now()); err != nil {
			return err
		}
		s.events.Append(ctx, EvReadStateUpdated.Event(kernel.Event{Scope: kernel.Scope{PrincipalID: actor.ID},
			SubjectID: th.ID, ActorID: actor.ID}, st))
		return nil
	})
	if err != nil {
		return Position{}, err
	}
	p, _, err := s.store.Position(ctx, actor.ID, threadID)
	return p, err
}

// Position is actor's read position in a thread with what is unread after it, decided as
// read_state.update is (whoever may read the thread); a LastReadMessageID of NilID is a thread
// never read. The console places its "new messages"
// line from it. Errors: not_found (the thread, or one actor may not read), unauthenticated.
func (s *Service) Position(ctx context.Context, actor kernel.Actor, threadID kernel.ID) (Position, error) {
	th, err := s.threads.ThreadRef(ctx, threadID)
	if err != nil {
		return Position{}, err
	}
	if err := s.authz.Authorize(ctx, actor, ActReadMark, th.Resource()); err != nil {
		return Position{}, err
	}
	p, _, err := s.store.Position(ctx, actor.ID, th.ID)
	return p, err
}

// OnMessagePosted moves the read position of a person who posts to the message posted: one's
// own message is never unread. It is the message-create hot path: it records the advance in the
// unit (made at the batch's commit) and reads nothing. Agents and apps keep no positions this
// way. Register it on the TxBus.
func (s *Service) OnMessagePosted(ctx context.Context, ev messaging.MessagePosted) error {
	if ev.Author.Kind != kernel.KindPerson || ev.Author.ID != ev.Message.AuthorID {
		return nil
	}
	m := ev.Message
	return s.store.Advance(ctx, m.AuthorID, ReadState{ThreadID: m.ThreadID, ChannelID: m.ChannelID, LastReadMessageID: m.ID}, m.CreatedAt)
}

// Unread lists what is unread for actor (inbox.unread.read): every channel and DM actor may
// read whose main thread has unread messages, and every other thread actor follows or has
// unread mentions in (and has not muted) with unread messages, with the sums. Errors:
// unauthenticated.
func (s *Service) Unread(ctx context.Context, actor kernel.Actor) (Unread, error) {
	vis, err := s.scoper.Visible(ctx, actor, ActUnreadRead)
	if err != nil {
		return Unread{}, err
	}
	cands, err := s.store.UnreadCandidates(ctx, actor.ID, actor.IsOwner)
	if err != nil {
		return Unread{}, err
	}
	out := Unread{Items: make([]Entry, 0, len(cands))}
	for _, c := range cands {
		if c.UnreadCount <= 0 || !vis.Channel(c.ChannelID) {
			continue
		}
		out.Items = append(out.Items, c)
		out.UnreadCount += c.UnreadCount
		out.MentionCount += c.MentionCount
	}
	return out, nil
}

// maxMentionScans bounds the store reads of one page of mentions: a page whose messages the
// caller may no longer read (a revoked channel) is filled from further pages, up to this.
const maxMentionScans = 8

// Mentions lists the messages that mention actor, newest first, one page after p.After
// (inbox.mentions.read): only those actor may still read, deleted ones left out, each with
// whether actor's read position in its thread has passed it. next is the cursor of the next
// page (NilID when there is none). Errors: validation_failed (limit), unauthenticated.
func (s *Service) Mentions(ctx context.Context, actor kernel.Actor, p Page) (items []Mention, next kernel.ID, err error) {
	vis, err := s.scoper.Visible(ctx, actor, ActMentionsRead)
	if err != nil {
		return nil, kernel.NilID, err
	}
	if p, err = p.Normalize(); err != nil {
		return nil, kernel.NilID, err
	}
	items = make([]Mention, 0, p.Limit)
	after := p.After
	for range maxMentionScans {
		got, more, err := s.store.Mentions(ctx, actor.ID, after, p.Limit+1-len(items))
		if err != nil {
			return nil, kernel.NilID, err
		}
		for _, m := range got {
			after = m.Message.ID
			if !vis.Channel(m.Message.ChannelID) {
				continue
			}
			if len(items) == p.Limit {
				// One visible item beyond the page: there is a next page.
				return items, items[len(items)-1].Message.ID, nil
			}
			items = append(items, m)
		}
		if !more {
			return items, kernel.NilID, nil
		}
	}
	// Still more to scan: the next page goes on from the last message read, past the ones
	// left out.
	return items, after, nil
}
