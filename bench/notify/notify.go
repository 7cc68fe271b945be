// Package notifybench measures the notifier from outside, as the person notified sees it: a
// message that mentions a person in a channel of many members at their default levels, from its
// commit to the person's notification.created on the gateway.
//
// The instance is made over the REST API (the owner, the poster, the person, the channel), then
// the other members are written straight into the stopped server's SQLite file (a principal and a
// grant each: creating a thousand people over HTTP costs a password hash each, and the figure is
// about the notifier, which must not read them). The server is started again on that file; the
// person follows the gateway while the poster posts one message at a time, each mentioning the
// person. A notification lost, duplicated or of another message is an error, never a figure.
package notifybench

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"bothy.dev/bothy/app/kernel"
	gatewaybench "bothy.dev/bothy/bench/gateway"
	httpbench "bothy.dev/bothy/bench/http"
	"bothy.dev/bothy/bench/internal/fixture"
	"bothy.dev/bothy/bench/internal/measure"
)

// Instance is what Prepare made.
type Instance struct {
	Base string
	// Poster posts; Person is mentioned (handle PersonHandle) and follows the gateway.
	PosterToken, PersonToken, PersonHandle string
	ChannelID, ThreadID                    string
}

// Prepare sets the instance up over the REST API: an owner, two people with post on one channel.
func Prepare(ctx context.Context, c *http.Client, base, setupCode string) (Instance, error) {
	t, err := httpbench.Prepare(ctx, c, base, setupCode, 2, 1)
	if err != nil {
		return Instance{}, err
	}
	in := Instance{Base: base, PosterToken: t.Tokens[0], PersonToken: t.Tokens[1], ThreadID: t.Threads[0]}
	var me struct {
		Handle string `json:"handle"`
	}
	if err := httpbench.Get(ctx, c, base, in.PersonToken, "/api/v1/me", &me); err != nil {
		return in, err
	}
	in.PersonHandle = me.Handle
	var th struct {
		ChannelID string `json:"channel_id"`
	}
	if err := httpbench.Get(ctx, c, base, in.PosterToken, "/api/v1/threads/"+in.ThreadID, &th); err != nil {
		return in, err
	}
	in.ChannelID = th.ChannelID
	return in, nil
}

// SeedMembers adds members people to the channel of in, straight into the SQLite database of the
// stopped server: a principal and a grant of the level the poster holds each, at the default
// notification level (no row).
func SeedMembers(ctx context.Context, db *sql.DB, in Instance, members int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var rank int
	var level, owner string
	if err := tx.QueryRowContext(ctx, `SELECT level, level_rank, created_by FROM grants WHERE resource_id = ? LIMIT 1`, in.ChannelID).Scan(&level, &rank, &owner); err != nil {
		return fmt.Errorf("the channel's grants: %w", err)
	}
	now := fixture.Stamp(time.Now())
	for i := range members {
		id := string(kernel.NewID())
		handle := fmt.Sprintf("member%d", i)
		if _, err := tx.ExecContext(ctx, `INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at) VALUES (?, 'person', ?, ?, ?, ?, ?)`,
			id, handle, handle, "Member "+handle, now, now); err != nil {
			return fmt.Errorf("insert a member: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO grants (id, resource_kind, resource_id, principal_id, level, level_rank, created_by, created_at) VALUES (?, 'channel', ?, ?, ?, ?, ?, ?)`,
			string(kernel.NewID()), in.ChannelID, id, level, rank, owner, now); err != nil {
			return fmt.Errorf("grant a member: %w", err)
		}
	}
	return tx.Commit()
}

// Result is what Measure measured.
type Result struct {
	// Latency is, per message, the person's receipt of its notification.created − the message's
	// created_at (taken in its Unit of Work, before the commit: a bound from above).
	Latency measure.Latencies
	// Create is the poster's POST, timed at the client.
	Create measure.Latencies
}

// Measure connects the person to the gateway and posts warmup+samples messages one after the
// other, each mentioning the person, every interval, waiting for each notification (at most
// timeout) before the next post.
func Measure(ctx context.Context, c *http.Client, in Instance, warmup, samples int, interval, timeout time.Duration) (Result, error) {
	conn, err := gatewaybench.Dial(ctx, in.Base)
	if err != nil {
		return Result{}, err
	}
	defer conn.Close()
	if _, err := conn.Identify(in.PersonToken, -1); err != nil {
		return Result{}, err
	}
	var mu sync.Mutex
	got := map[string]time.Time{}
	arrived := make(chan struct{}, 1)
	complete := make(chan struct{})
	r := gatewaybench.NewReader()
	r.Start(func() error {
		for {
			f, at, err := conn.Read()
			if err != nil {
				if conn.Closing() {
					return nil
				}
				return err
			}
			op, _ := gatewaybench.FrameOp(f)
			switch string(op) {
			case "catchup.complete":
				close(complete)
			case "event":
				e, err := gatewaybench.ParseEvent(f)
				if err != nil {
					return err
				}
				if string(e.Type) != "notification.created" {
					continue
				}
				var n struct {
					MessageID string `json:"message_id"`
					Reason    string `json:"reason"`
				}
				if err := json.Unmarshal(e.Data, &n); err != nil {
					return err
				}
				mu.Lock()
				_, dup := got[n.MessageID]
				got[n.MessageID] = at
				mu.Unlock()
				if dup || n.Reason != "mention" {
					return fmt.Errorf("notification %s: duplicate %v, reason %q", n.MessageID, dup, n.Reason)
				}
				select {
				case arrived <- struct{}{}:
				default:
				}
			}
		}
	})
	select {
	case <-complete:
	case <-time.After(10 * time.Second):
		return Result{}, errors.New("notifybench: no catchup.complete within 10 s")
	}
	var lat, create []time.Duration
	for i := range warmup + samples {
		var m struct {
			ID        string    `json:"id"`
			CreatedAt time.Time `json:"created_at"`
		}
		start := time.Now()
		if err := httpbench.Call(ctx, c, in.Base, in.PosterToken, "/api/v1/threads/"+in.ThreadID+"/messages",
			map[string]string{"content": fmt.Sprintf("@%s message %d of the notify bench", in.PersonHandle, i)}, &m); err != nil {
			return Result{}, err
		}
		answered := time.Now()
		deadline := time.After(timeout)
		for {
			mu.Lock()
			at, ok := got[m.ID]
			mu.Unlock()
			if ok {
				if i >= warmup {
					lat = append(lat, at.Sub(m.CreatedAt))
					create = append(create, answered.Sub(start))
				}
				break
			}
			select {
			case <-arrived:
			case <-deadline:
				return Result{}, fmt.Errorf("notifybench: no notification of message %d (%s) within %s", i, m.ID, timeout)
			case <-r.Done():
				return Result{}, fmt.Errorf("notifybench: the person's connection ended: %v", r.Err())
			case <-ctx.Done():
				return Result{}, ctx.Err()
			}
		}
		time.Sleep(interval)
	}
	if n := len(got); n != warmup+samples {
		return Result{}, fmt.Errorf("notifybench: %d notifications for %d messages", n, warmup+samples)
	}
	return Result{Latency: measure.Summarise(lat), Create: measure.Summarise(create)}, nil
}
