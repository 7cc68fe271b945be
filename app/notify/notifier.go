package notify

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// CursorName is the notifier's row in log_cursors.
const CursorName = "notifier"

// Log is the read side of the event log the notifier consumes; *storage.DB implements it.
type Log interface {
	// EventsAfter reads up to limit committed events with seq > after, in seq order.
	EventsAfter(ctx context.Context, after int64, limit int) ([]kernel.LoggedEvent, error)
	// ReadHead returns the highest committed seq as the database has it.
	ReadHead(ctx context.Context) (int64, error)
}

// Focus tells whether a person is looking at a thread right now: the gateway answers it from its
// connections' focus. It knows only the connections of its own node: with several nodes, a
// person focused on a thread through another node is notified all the same.
type Focus interface {
	Focused(principalID, threadID kernel.ID) bool
}

// Push is what the notifier hands the Pusher for one notification.
type Push struct {
	MessageID kernel.ID
	ChannelID kernel.ID
	ThreadID  kernel.ID
	Reason    string
	// Preview is the start of the message's text (at most PreviewLen characters).
	Preview string
}

// PreviewLen bounds Push.Preview, in characters.
const PreviewLen = 140

// Pusher queues a push for a recipient in the caller's Unit of Work (a job, never a network call
// in the transaction). Errors: internal.
type Pusher interface {
	Enqueue(ctx context.Context, principalID kernel.ID, p Push) error
}

// DMs answers the participants of a direct message; *dms.Service implements it.
type DMs interface {
	// Participants returns the participants of the DM channelID; ok is false when it is none.
	Participants(ctx context.Context, channelID kernel.ID) ([]kernel.ID, bool, error)
}

// Waker tells when the log's head next advances, with other nodes' commits too (on PostgreSQL
// its LISTEN); *storage.DB implements it.
type Waker interface {
	Changed() <-chan struct{}
}

// NotifierDeps are what the notifier needs; Focus, Pusher, Wake, Clock, Logger, PollInterval and
// BatchSize may be left empty.
type NotifierDeps struct {
	Log     Log
	Store   Store
	Threads Threads
	DMs     DMs
	Authz   kernel.Authorizer
	UoW     kernel.UnitOfWork
	Events  kernel.EventLog
	Focus   Focus
	Pusher  Pusher
	// Wake, when set, wakes the notifier at every advance of the head, another node's commit
	// included, so that a message posted on a node of role api is not left to the poll.
	Wake   Waker
	Clock  kernel.Clock
	Logger *slog.Logger
	// PollInterval is how often the log is read without a wake-up (Observe): the commits of
	// other nodes. Default 1 s.
	PollInterval time.Duration
	// BatchSize is how many events one read takes, and so one Unit of Work at most. Default 256.
	BatchSize int
}

// Notifier is a consumer of the log with a durable cursor (log_cursors, CursorName): it reads the
// committed message.created events after it, decides who hears of each (Decide), and in one Unit
// of Work per batch appends their notification.created events, queues their pushes and moves the
// cursor with a compare-and-set, so that a crash neither loses nor repeats a notification and two
// nodes reading the same events write them once. It starts at the head of the log the first time
// it runs, never in the history.
type Notifier struct {
	d    NotifierDeps
	wake chan struct{}

	// Used by Run's goroutine only: pos is the seq read up to, stored the cursor's seq in the
	// database (below pos while the batches since had nothing to notify).
	pos, stored int64
	// handed holds this process's committed events as Observe was handed them, in seq order,
	// so that a Step whose events are all there reads none from the database; it is bounded by
	// maxHanded and cleared when it does not follow the cursor.
	mu     sync.Mutex
	handed []kernel.LoggedEvent

	// choosers holds, per channel, who chose level all for it, as read from the store the first
	// time a message of the channel is decided; a notification_level.updated of the channel, met
	// in the log in its order, drops it. Used by Run's goroutine only; bounded by maxChoosers.
	choosers map[kernel.ID][]kernel.ID
}

// maxChoosers bounds the channels whose choosers the notifier keeps; beyond it, it starts over.
const maxChoosers = 4096

// maxHanded bounds the committed events the notifier keeps in memory for its next Step; beyond
// it, it drops them and reads the log.
const maxHanded = 4096

// NewNotifier returns the notifier.
func NewNotifier(d NotifierDeps) *Notifier {
	if d.Log == nil || d.Store == nil || d.Threads == nil || d.DMs == nil || d.Authz == nil || d.UoW == nil || d.Events == nil {
		panic("notify: NewNotifier: missing dependency")
	}
	if d.Clock == nil {
		d.Clock = kernel.SystemClock{}
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.PollInterval <= 0 {
		d.PollInterval = time.Second
	}
	if d.BatchSize <= 0 {
		d.BatchSize = 256
	}
	return &Notifier{d: d, wake: make(chan struct{}, 1), choosers: map[kernel.ID][]kernel.ID{}}
}

// Observe is handed each batch of this process's committed events right after COMMIT
// (storage.DB.OnCommit): it keeps them for the next Step, which then need not read them back
// from the database, and a message.created among them wakes the notifier. It never blocks.
func (n *Notifier) Observe(events []kernel.LoggedEvent) {
	if len(events) == 0 {
		return
	}
	n.mu.Lock()
	switch {
	case len(n.handed)+len(events) > maxHanded:
		n.handed = nil // too far behind: the Step reads the log
	case len(n.handed) > 0 && events[0].Seq != n.handed[len(n.handed)-1].Seq+1:
		n.handed = append(n.handed[:0], events...) // another node's commits lie between
	default:
		n.handed = append(n.handed, events...)
	}
	n.mu.Unlock()
	for _, e := range events {
		if e.Type == messaging.EvMessageCreated.Name {
			select {
			case n.wake <- struct{}{}:
			default:
			}
			return
		}
	}
}

// next is the batch of events after the cursor: those Observe kept when they follow the cursor
// without a gap, else a read of the log.
func (n *Notifier) next(ctx context.Context) ([]kernel.LoggedEvent, error) {
	n.mu.Lock()
	h := n.handed
	i, _ := slices.BinarySearchFunc(h, n.pos+1, func(e kernel.LoggedEvent, seq int64) int { return cmp.Compare(e.Seq, seq) })
	if i < len(h) && h[i].Seq == n.pos+1 {
		end := min(len(h), i+n.d.BatchSize)
		evs := slices.Clone(h[i:end])
		n.handed = append(h[:0], h[end:]...)
		n.mu.Unlock()
		return evs, nil
	}
	n.handed = append(h[:0], h[i:]...) // those behind the cursor go; a gap is read from the log
	n.mu.Unlock()
	return n.d.Log.EventsAfter(ctx, n.pos, n.d.BatchSize)
}

// Run consumes the log until ctx ends. A failing read or write is logged and tried again at the
// next poll: the cursor has not moved, so nothing is lost.
func (n *Notifier) Run(ctx context.Context) error {
	if err := n.Start(ctx); err != nil {
		return err
	}
	tick := time.NewTicker(n.d.PollInterval)
	defer tick.Stop()
	failing := false
	for {
		// Taken before the read, so that a commit during it wakes the next wait.
		var changed <-chan struct{}
		if n.d.Wake != nil {
			changed = n.d.Wake.Changed()
		}
		more, err := n.Step(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && !failing:
			failing = true
			n.d.Logger.Warn("notifier: cannot go on; trying again at the next poll", "seq", n.pos, "err", err)
		case err == nil && failing:
			failing = false
			n.d.Logger.Info("notifier: going on", "seq", n.pos)
		}
		if more && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-n.wake:
		case <-changed:
		case <-tick.C:
			if err := n.flush(ctx); err != nil && ctx.Err() == nil {
				n.d.Logger.Warn("notifier: cannot save the cursor", "seq", n.pos, "err", err)
			}
		}
	}
}

// Start reads the cursor, storing the head of the log for it the first time; Run calls it, and
// it retries until it succeeds or ctx ends.
func (n *Notifier) Start(ctx context.Context) error {
	for {
		head, err := n.d.Log.ReadHead(ctx)
		if err == nil {
			var cur int64
			if cur, err = n.d.Store.Cursor(ctx, CursorName, head); err == nil {
				n.pos, n.stored = cur, cur
				clear(n.choosers)
				return nil
			}
		}
		n.d.Logger.Warn("notifier: cannot read its cursor; trying again", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(n.d.PollInterval):
		}
	}
}

// errCursorMoved rolls back a batch whose cursor another node moved first.
var errCursorMoved = errors.New("notify: the cursor was moved by another node")

// outgoing is one notification to append.
type outgoing struct {
	to      kernel.ID
	actor   kernel.ID
	n       Notification
	preview string
}

// Step handles one batch of the events after the cursor; more reports that a full batch was read
// (there may be more now). A batch with nothing to notify moves the cursor in memory only; the
// next batch that notifies, or the poll (flush), stores it.
func (n *Notifier) Step(ctx context.Context) (more bool, err error) {
	evs, err := n.next(ctx)
	if err != nil || len(evs) == 0 {
		return false, err
	}
	last := evs[len(evs)-1].Seq
	more = len(evs) == n.d.BatchSize
	var outs []outgoing
	for _, e := range evs {
		switch e.Type {
		case EvLevelUpdated.Name:
			delete(n.choosers, e.SubjectID)
		case messaging.EvMessageCreated.Name:
			if outs, err = n.decide(ctx, e, outs); err != nil {
				return false, err
			}
		}
	}
	if len(outs) == 0 {
		n.pos = last
		return more, nil
	}
	return more, n.commit(ctx, last, outs)
}

// commit appends outs and moves the cursor to last in one Unit of Work.
func (n *Notifier) commit(ctx context.Context, last int64, outs []outgoing) error {
	err := n.d.UoW.Do(ctx, func(ctx context.Context) error {
		moved, err := n.d.Store.MoveCursor(ctx, CursorName, n.stored, last, n.d.Clock.Now())
		if err != nil {
			return err
		}
		if !moved {
			return errCursorMoved
		}
		for _, o := range outs {
			n.d.Events.Append(ctx, EvNotificationCreated.Event(kernel.Event{Scope: kernel.Scope{PrincipalID: o.to},
				SubjectID: o.n.MessageID, ActorID: o.actor}, o.n))
			if n.d.Pusher != nil {
				if err := n.d.Pusher.Enqueue(ctx, o.to, Push{MessageID: o.n.MessageID, ChannelID: o.n.ChannelID,
					ThreadID: o.n.ThreadID, Reason: o.n.Reason, Preview: o.preview}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, errCursorMoved):
		return n.reread(ctx)
	case err != nil:
		return err
	}
	n.pos, n.stored = last, last
	return nil
}

// flush stores the cursor where the batches without notifications left it.
func (n *Notifier) flush(ctx context.Context) error {
	if n.stored >= n.pos {
		return nil
	}
	to := n.pos
	err := n.d.UoW.Do(ctx, func(ctx context.Context) error {
		moved, err := n.d.Store.MoveCursor(ctx, CursorName, n.stored, to, n.d.Clock.Now())
		if err == nil && !moved {
			err = errCursorMoved
		}
		return err
	})
	switch {
	case errors.Is(err, errCursorMoved):
		return n.reread(ctx)
	case err != nil:
		return err
	}
	n.stored = to
	return nil
}

// reread takes the cursor another node moved: that node has notified up to there.
func (n *Notifier) reread(ctx context.Context) error {
	cur, err := n.d.Store.Cursor(ctx, CursorName, n.stored)
	if err != nil {
		return err
	}
	n.pos, n.stored = cur, cur
	clear(n.choosers) // the level changes up to there were not seen
	return nil
}

// decide appends to outs the notifications of the message.created e. The candidates are never
// the channel's members: they are those the message mentions, those who chose level all for the
// channel, the thread's followers and a DM's participants. Each is then decided by Decide, then
// must be an active person other than the author who may read the channel now, and not focused
// on the thread.
func (n *Notifier) decide(ctx context.Context, e kernel.LoggedEvent, outs []outgoing) ([]outgoing, error) {
	m, err := messaging.EvMessageCreated.Decode(e)
	if err != nil {
		n.d.Logger.Error("notifier: a message.created cannot be read; no one is notified of it", "err", err)
		return outs, nil
	}
	if m.Deleted { // deleted since: its payload is the tombstone
		return outs, nil
	}
	th, err := n.d.Threads.ThreadRef(ctx, m.ThreadID)
	if kernel.IsCode(err, kernel.CodeNotFound) {
		return outs, nil
	}
	if err != nil {
		return outs, err
	}
	dm := th.ChannelKind == chat.KindDM
	candidates := map[kernel.ID]struct{}{}
	add := func(ids []kernel.ID) {
		for _, id := range ids {
			candidates[id] = struct{}{}
		}
	}
	// A message mentions someone only where its payload says so (its explicit mentions, or a
	// broadcast, whose members are mention rows only): most messages need no read of them.
	var mentioned []kernel.ID
	if len(m.Mentions) > 0 || m.Broadcast != "" {
		if mentioned, err = n.d.Store.Mentioned(ctx, m.ID); err != nil {
			return outs, err
		}
	}
	add(mentioned)
	all, ok := n.choosers[m.ChannelID]
	if !ok {
		if all, err = n.d.Store.ChannelChoosing(ctx, m.ChannelID, LevelAll); err != nil {
			return outs, err
		}
		if len(n.choosers) >= maxChoosers {
			clear(n.choosers)
		}
		n.choosers[m.ChannelID] = all
	}
	add(all)
	var threadLevels map[kernel.ID]Level
	if !th.IsMain {
		if threadLevels, err = n.d.Store.ThreadLevels(ctx, th.ID); err != nil {
			return outs, err
		}
		for id, l := range threadLevels {
			if l == LevelAll {
				candidates[id] = struct{}{}
			}
		}
	}
	if dm {
		participants, _, err := n.d.DMs.Participants(ctx, m.ChannelID)
		if err != nil {
			return outs, err
		}
		add(participants)
	}
	delete(candidates, m.AuthorID)
	if len(candidates) == 0 {
		return outs, nil
	}
	ids := make([]kernel.ID, 0, len(candidates))
	for id := range candidates {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	people, err := n.d.Store.People(ctx, ids)
	if err != nil {
		return outs, err
	}
	ids = slices.DeleteFunc(ids, func(id kernel.ID) bool { _, ok := people[id]; return !ok })
	if len(ids) == 0 {
		return outs, nil
	}
	levels, err := n.d.Store.ChannelLevels(ctx, m.ChannelID, ids)
	if err != nil {
		return outs, err
	}
	res := kernel.Resource{Kind: kernel.ResChannel, ID: m.ChannelID, SpaceID: m.SpaceID, ChannelID: m.ChannelID, ChannelKind: th.ChannelKind}
	for _, id := range ids {
		f := Facts{Mentioned: slices.Contains(mentioned, id), DM: dm, Main: th.IsMain,
			Channel: DefaultChannelLevel(dm), Thread: DefaultSubscription}
		if l, ok := levels[id]; ok {
			f.Channel = l
		}
		if l, ok := threadLevels[id]; ok {
			f.Thread = l
		}
		reason := Decide(f)
		if reason == "" {
			continue
		}
		p := people[id]
		err := n.d.Authz.Authorize(ctx, kernel.Actor{ID: id, Kind: kernel.KindPerson, IsOwner: p.IsOwner}, chat.ActChannelRead, res)
		switch kernel.CodeOf(err) {
		case kernel.Code{}:
		case kernel.CodeNotFound, kernel.CodeForbidden, kernel.CodeUnauthenticated:
			continue
		default:
			return outs, err
		}
		if n.d.Focus != nil && n.d.Focus.Focused(id, th.ID) {
			continue
		}
		outs = append(outs, outgoing{to: id, actor: m.AuthorID, preview: preview(m.Content),
			n: Notification{MessageID: m.ID, ChannelID: m.ChannelID, ThreadID: m.ThreadID, Reason: reason}})
	}
	return outs, nil
}

// preview is s cut to PreviewLen characters, the last an ellipsis when it was longer.
func preview(s string) string {
	if utf8.RuneCountInString(s) <= PreviewLen {
		return s
	}
	r := []rune(s)
	return string(r[:PreviewLen-1]) + "…"
}

// Facts are what decides one candidate's notification of one message.
type Facts struct {
	Mentioned bool  // the message mentions the person
	DM        bool  // the message is in a DM
	Main      bool  // the message is in its channel's main thread
	Channel   Level // the person's level for the channel (its default when none chosen)
	Thread    Level // the person's level for the message's thread (mentions when none; unused for a main thread)
}

// Decide is the reason a person is notified of a message, or "" for none: a thread or a channel
// set to none is silent; then a mention notifies, then any message of a DM at level all, any
// main-thread message of a channel at level all, and any reply in a thread the person follows.
func Decide(f Facts) string {
	switch {
	case f.Channel == LevelNone || (!f.Main && f.Thread == LevelNone):
		return ""
	case f.Mentioned:
		return ReasonMention
	case f.DM && f.Channel == LevelAll:
		return ReasonDM
	case f.Main && f.Channel == LevelAll:
		return ReasonAll
	case !f.Main && f.Thread == LevelAll:
		return ReasonThread
	}
	return ""
}
