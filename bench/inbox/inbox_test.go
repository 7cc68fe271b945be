package inboxbench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/bench/internal/fixture"
)

// TestSeed holds that the seed leaves what posting and reading would: each thread counts its
// messages and names its newest, the person's mentions are rows of their threads, and a read
// position holds the messages up to it and the mentions among them; a thread never read but
// with a mention has a position that has read nothing.
func TestSeed(t *testing.T) {
	ctx := context.Background()
	w, r, err := fixture.OpenMigrated(ctx, filepath.Join(t.TempDir(), "bothy.db"), "NORMAL")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fx, err := fixture.Seed(ctx, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	person := kernel.NewID()
	now := fixture.Stamp(time.Now())
	if _, err := w.ExecContext(ctx, `INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at)
		VALUES (?, 'person', 'reader', 'reader', 'Reader', ?, ?)`, string(person), now, now); err != nil {
		t.Fatal(err)
	}
	in := Instance{PersonID: string(person), Others: []string{string(fx.AuthorID)}}
	for _, th := range fx.Threads {
		in.Threads = append(in.Threads, Thread{ID: string(th.ID), ChannelID: string(th.ChannelID), SpaceID: string(fx.SpaceID)})
	}
	// 4 threads (3 channels and a DM with the author), 40 messages: 10 each; every 5th mentions
	// the person; positions at half of the first 2 threads.
	l := Layout{Channels: 3, DMs: 1, Messages: 40, MentionEvery: 5, ReadThreads: 2, ReadFraction: 0.5}
	if err := Seed(ctx, w, in, l); err != nil {
		t.Fatal(err)
	}
	for k, th := range in.Threads {
		var posts, live int64
		var last string
		if err := r.QueryRowContext(ctx, `SELECT post_count, message_count, last_message_id FROM threads WHERE id = ?`, th.ID).Scan(&posts, &live, &last); err != nil {
			t.Fatal(err)
		}
		var newest string
		if err := r.QueryRowContext(ctx, `SELECT MAX(id) FROM messages WHERE thread_id = ?`, th.ID).Scan(&newest); err != nil {
			t.Fatal(err)
		}
		if posts != 10 || live != 10 || last != newest {
			t.Errorf("thread %d: post_count %d, message_count %d, last %s (newest %s); want 10, 10 and the newest", k, posts, live, last, newest)
		}
		var readTo string
		var read, mentions, mentionsRead int64
		err := r.QueryRowContext(ctx, `SELECT last_read_message_id, read_count, mention_count, mentions_read FROM read_states
			WHERE principal_id = ? AND thread_id = ?`, in.PersonID, th.ID).Scan(&readTo, &read, &mentions, &mentionsRead)
		if err != nil {
			t.Fatalf("thread %d: the person's position: %v", k, err)
		}
		var rows, before int64
		if err := r.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(CASE WHEN message_id <= ? THEN 1 ELSE 0 END), 0) FROM mentions
			WHERE principal_id = ? AND thread_id = ?`, readTo, in.PersonID, th.ID).Scan(&rows, &before); err != nil {
			t.Fatal(err)
		}
		var upTo int64
		if err := r.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages WHERE thread_id = ? AND id <= ?`, th.ID, readTo).Scan(&upTo); err != nil {
			t.Fatal(err)
		}
		wantRead := int64(0)
		if k < l.ReadThreads {
			wantRead = 5
		}
		if read != wantRead || upTo != read || mentions != rows || mentionsRead != before || rows == 0 {
			t.Errorf("thread %d: read %d (%d messages up to it, want %d), %d mentions (%d rows), %d read (%d before the position)",
				k, read, upTo, wantRead, mentions, rows, mentionsRead, before)
		}
	}
}

func TestValues(t *testing.T) {
	if got := values(2, 3); got != "(?, ?, ?), (?, ?, ?)" {
		t.Fatalf("values(2, 3) = %q", got)
	}
}
