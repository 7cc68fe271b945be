// Package inboxbench measures what a person's unread state costs to read: GET /api/v1/me/unread
// for a person who may see many channels and direct messages in an instance that holds a large
// number of messages.
//
// The instance is made over the REST API (the owner, the people, the channels, the grants, the
// DMs: everything whose rules live in bothy), then the messages are written straight into the
// stopped server's SQLite file, with the thread counters, mentions and read positions that
// posting and reading would have left: posting a million messages over HTTP would take the
// better part of ten minutes, and the figure is about the read, not the writes. The server is
// started again on that file and the person's GETs are timed at the client, one at a time.
package inboxbench

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"bothy.dev/bothy/app/kernel"
	httpbench "bothy.dev/bothy/bench/http"
	"bothy.dev/bothy/bench/internal/fixture"
	"bothy.dev/bothy/bench/internal/measure"
)

// Layout is the instance: the person sees Channels channels and DMs direct messages, whose main
// threads hold Messages messages in all; every MentionEvery-th message mentions the person, and
// the person has read ReadThreads of the threads up to ReadFraction of their messages.
type Layout struct {
	Channels, DMs, Messages, MentionEvery, ReadThreads int
	ReadFraction                                       float64
}

// Instance is what Prepare made.
type Instance struct {
	Base string
	// Token is the person's session token; PersonID their id.
	Token, PersonID string
	// Others are the people the person has a DM with (each also authors messages).
	Others []string
	// Threads are the main threads the person sees, with their channels: the channels first,
	// then the DMs.
	Threads []Thread
	SpaceID string
}

// Thread is a main thread and its channel.
type Thread struct{ ID, ChannelID, SpaceID string }

// Prepare sets the instance up over the REST API: an owner, the person and l.DMs other people,
// l.Channels channels in one space each with a post grant for the person, and one DM between
// the person and each other person.
func Prepare(ctx context.Context, c *http.Client, base, setupCode string, l Layout) (Instance, error) {
	if l.Channels < 1 || l.DMs < 0 {
		return Instance{}, errors.New("inboxbench: at least one channel")
	}
	t, err := httpbench.Prepare(ctx, c, base, setupCode, 1+l.DMs, 1)
	if err != nil {
		return Instance{}, err
	}
	in := Instance{Base: base, Token: t.Tokens[0]}
	var me struct {
		ID string `json:"id"`
	}
	ids := make([]string, len(t.Tokens))
	for i, tok := range t.Tokens {
		if err := httpbench.Get(ctx, c, base, tok, "/api/v1/me", &me); err != nil {
			return in, err
		}
		ids[i] = me.ID
	}
	in.PersonID, in.Others = ids[0], ids[1:]
	var owner struct {
		Token string `json:"token"`
	}
	if err := httpbench.Call(ctx, c, base, "", "/api/v1/auth/login", map[string]string{"handle": "owner", "password": httpbench.Password}, &owner); err != nil {
		return in, err
	}
	var spaces struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if err := httpbench.Get(ctx, c, base, owner.Token, "/api/v1/spaces", &spaces); err != nil || len(spaces.Items) != 1 {
		return in, fmt.Errorf("the space httpbench.Prepare made: %d spaces, %v", len(spaces.Items), err)
	}
	var chans struct {
		Items []struct {
			ID           string `json:"id"`
			SpaceID      string `json:"space_id"`
			MainThreadID string `json:"main_thread_id"`
		} `json:"items"`
	}
	if err := httpbench.Get(ctx, c, base, owner.Token, "/api/v1/spaces/"+spaces.Items[0].ID+"/channels", &chans); err != nil || len(chans.Items) != 1 {
		return in, fmt.Errorf("the channel httpbench.Prepare made: %d channels, %v", len(chans.Items), err)
	}
	var ch struct {
		ID           string `json:"id"`
		SpaceID      string `json:"space_id"`
		MainThreadID string `json:"main_thread_id"`
	}
	ch.ID, ch.SpaceID, ch.MainThreadID = chans.Items[0].ID, chans.Items[0].SpaceID, chans.Items[0].MainThreadID
	in.SpaceID = ch.SpaceID
	in.Threads = append(in.Threads, Thread{ID: ch.MainThreadID, ChannelID: ch.ID, SpaceID: ch.SpaceID})
	for i := 1; i < l.Channels; i++ {
		if err := httpbench.Call(ctx, c, base, owner.Token, "/api/v1/spaces/"+in.SpaceID+"/channels", map[string]string{"name": fmt.Sprintf("inbox-%d", i)}, &ch); err != nil {
			return in, err
		}
		if err := httpbench.Call(ctx, c, base, owner.Token, "/api/v1/channels/"+ch.ID+"/grants", map[string]string{"principal_id": in.PersonID, "level": "post"}, nil); err != nil {
			return in, err
		}
		in.Threads = append(in.Threads, Thread{ID: ch.MainThreadID, ChannelID: ch.ID, SpaceID: ch.SpaceID})
	}
	for _, other := range in.Others {
		if err := httpbench.Call(ctx, c, base, in.Token, "/api/v1/dms", map[string][]string{"participant_ids": {other}}, &ch); err != nil {
			return in, err
		}
		in.Threads = append(in.Threads, Thread{ID: ch.MainThreadID, ChannelID: ch.ID, SpaceID: ch.SpaceID})
	}
	return in, nil
}

// Seed writes l.Messages messages into the main threads of in, round-robin, straight into the
// SQLite database at path (the server must be stopped): the messages, their mentions of the
// person, the threads' counters as posting leaves them, and the person's read positions as
// reading leaves them. Authors are the other people (a DM's messages are its other
// participant's).
func Seed(ctx context.Context, db *sql.DB, in Instance, l Layout) error {
	if len(in.Others) == 0 {
		return errors.New("inboxbench: Seed needs other people to author the messages")
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	now := fixture.Stamp(time.Now())
	n := len(in.Threads)
	ids := make([][]kernel.ID, n)
	const rowsPerInsert = 200
	var msgArgs, menArgs []any
	var msgRows, menRows int
	flush := func(force bool) error {
		// A mention points to its message: the messages go first whenever mentions go.
		mentions := menRows > 0 && (force || menRows == rowsPerInsert)
		if msgRows > 0 && (force || mentions || msgRows == rowsPerInsert) {
			q := `INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, created_at) VALUES ` + values(msgRows, 7)
			if _, err := tx.ExecContext(ctx, q, msgArgs...); err != nil {
				return fmt.Errorf("insert messages: %w", err)
			}
			msgArgs, msgRows = msgArgs[:0], 0
		}
		if mentions {
			q := `INSERT INTO mentions (message_id, principal_id, thread_id) VALUES ` + values(menRows, 3)
			if _, err := tx.ExecContext(ctx, q, menArgs...); err != nil {
				return fmt.Errorf("insert mentions: %w", err)
			}
			menArgs, menRows = menArgs[:0], 0
		}
		return nil
	}
	channels := n - len(in.Others)
	mentioned := make([][]int, n) // per thread, the places of the messages that mention the person
	for i := range l.Messages {
		k := i % n
		th := in.Threads[k]
		author := in.Others[i%len(in.Others)]
		if k >= channels {
			author = in.Others[k-channels]
		}
		id := kernel.NewID()
		ids[k] = append(ids[k], id)
		msgArgs = append(msgArgs, string(id), th.ID, th.ChannelID, th.SpaceID, author, "a message of the inbox bench, a line long like most", now)
		msgRows++
		if l.MentionEvery > 0 && i%l.MentionEvery == 0 {
			mentioned[k] = append(mentioned[k], len(ids[k])-1)
			menArgs = append(menArgs, string(id), in.PersonID, th.ID)
			menRows++
		}
		if err := flush(false); err != nil {
			return err
		}
	}
	if err := flush(true); err != nil {
		return err
	}
	for k, th := range in.Threads {
		c := len(ids[k])
		if c == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE threads SET post_count = post_count + ?, message_count = message_count + ?,
			last_message_at = ?, last_message_id = ? WHERE id = ?`, c, c, now, string(ids[k][c-1]), th.ID); err != nil {
			return fmt.Errorf("count the thread: %w", err)
		}
		// The person's position: where they read to (none: nothing read), with their mentions
		// in the thread and those read, as posting and reading keep them.
		read, last := 0, ""
		if k < l.ReadThreads {
			read = max(1, int(float64(c)*l.ReadFraction))
			last = string(ids[k][read-1])
		}
		mentionsRead := 0
		for _, at := range mentioned[k] {
			if at < read {
				mentionsRead++
			}
		}
		if read == 0 && len(mentioned[k]) == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO read_states (principal_id, thread_id, channel_id, last_read_message_id, read_count, updated_at,
			mention_count, mentions_read) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			in.PersonID, th.ID, th.ChannelID, last, read, now, len(mentioned[k]), mentionsRead); err != nil {
			return fmt.Errorf("read position: %w", err)
		}
	}
	return tx.Commit()
}

// values is the VALUES list of rows rows of cols placeholders each.
func values(rows, cols int) string {
	b := make([]byte, 0, rows*(cols*3+3))
	for r := range rows {
		if r > 0 {
			b = append(b, ", "...)
		}
		b = append(b, '(')
		for c := range cols {
			if c > 0 {
				b = append(b, ", "...)
			}
			b = append(b, '?')
		}
		b = append(b, ')')
	}
	return string(b)
}

// Unread is what GET /api/v1/me/unread answers, as far as the bench checks it.
type Unread struct {
	Items []struct {
		ChannelID    string `json:"channel_id"`
		UnreadCount  int64  `json:"unread_count"`
		MentionCount int64  `json:"mention_count"`
	} `json:"items"`
	UnreadCount  int64 `json:"unread_count"`
	MentionCount int64 `json:"mention_count"`
}

// Measure GETs /api/v1/me/unread as the person warmup times, then samples times timed at the
// client to the last byte, one at a time; last is the last answer, for the caller to check.
func Measure(ctx context.Context, c *http.Client, in Instance, warmup, samples int) (lat measure.Latencies, last Unread, err error) {
	ds := make([]time.Duration, 0, samples)
	for i := range warmup + samples {
		start := time.Now()
		b, err := httpbench.GetBody(ctx, c, in.Base, in.Token, "/api/v1/me/unread")
		if err != nil {
			return lat, last, err
		}
		if i >= warmup {
			ds = append(ds, time.Since(start))
		}
		// Decoded after the clock stops: the figure is the server's answer, not the client's JSON.
		if i == warmup+samples-1 {
			if err := json.Unmarshal(b, &last); err != nil {
				return lat, last, fmt.Errorf("the unread answer: %w", err)
			}
		}
	}
	return measure.Summarise(ds), last, nil
}
