package storage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"bothy.dev/bothy/app/instance"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/app/stats"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// statsFixture fills a store with two people, an agent, a space with a channel and a DM, and
// messages and runs at the given times.
func statsFixture(tb testing.TB, db *storage.DB, messages, runAt []time.Time) {
	tb.Helper()
	const t0 = "2026-01-01T00:00:00.000000Z"
	for _, q := range []string{
		`INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at) VALUES ('p1', 'person', 'olga', 'olga', 'Olga', '` + t0 + `', '` + t0 + `')`,
		`INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at) VALUES ('p2', 'person', 'bob', 'bob', 'Bob', '` + t0 + `', '` + t0 + `')`,
		`INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at) VALUES ('a1', 'agent', 'bot', 'bot', 'Bot', '` + t0 + `', '` + t0 + `')`,
		`INSERT INTO spaces (id, name, created_by, created_at, updated_at) VALUES ('s1', 'Home', 'p1', '` + t0 + `', '` + t0 + `')`,
		`INSERT INTO channels (id, space_id, name, main_thread_id, created_by, created_at, updated_at) VALUES ('c1', 's1', 'general', 't1', 'p1', '` + t0 + `', '` + t0 + `')`,
		`INSERT INTO channels (id, space_id, kind, name, main_thread_id, created_by, created_at, updated_at) VALUES ('d1', 's1', 'dm', 'dm', 't2', 'p1', '` + t0 + `', '` + t0 + `')`,
		`INSERT INTO threads (id, channel_id, space_id, created_by, created_at, updated_at) VALUES ('t1', 'c1', 's1', 'p1', '` + t0 + `', '` + t0 + `')`,
	} {
		storage.ExecInTest(tb, db, q)
	}
	// Through the stores, which count what they create as they write it.
	ms, rs := storage.NewMessageStore(db), storage.NewRunStore(db)
	for i, at := range messages {
		err := db.Do(context.Background(), func(ctx context.Context) error {
			_, err := ms.InsertMessage(ctx, messaging.Message{ID: kernel.ID(fmt.Sprintf("m%03d", i)), ThreadID: "t1", ChannelID: "c1",
				SpaceID: "s1", AuthorID: "p1", Content: "hi", Version: 1, CreatedAt: at})
			return err
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	for i, at := range runAt {
		err := rs.CreateRun(context.Background(), runs.Run{Summary: runs.Summary{ID: kernel.ID(fmt.Sprintf("r%03d", i)), AgentID: "a1", ThreadID: "t1",
			ChannelID: "c1", SpaceID: "s1", InvokedBy: "p1", Status: runs.StatusQueued, Version: 1, CreatedAt: at, LastActivityAt: at, UpdatedAt: at}})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

func TestStatsStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		now := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
		hour := now.Truncate(time.Hour)

		t.Run("counts what the instance holds, channels without DMs", func(t *testing.T) {
			db := eng.Open(t, storage.Options{})
			st := storage.NewStatsStore(db)
			if c, err := st.Counts(ctx); err != nil || c != (stats.Counts{}) {
				t.Fatalf("empty: %+v %v", c, err)
			}
			statsFixture(t, db, []time.Time{now, now, now.Add(-48 * time.Hour)}, []time.Time{now})
			c, err := st.Counts(ctx)
			want := stats.Counts{People: 2, Agents: 1, Spaces: 1, Channels: 1, Messages: 3, Runs: 1}
			if err != nil || c != want {
				t.Fatalf("%+v %v, want %+v", c, err, want)
			}
		})

		t.Run("counts messages and runs by the hour they were created in, from the first hour on", func(t *testing.T) {
			db := eng.Open(t, storage.Options{})
			since := hour.Add(-23 * time.Hour)
			statsFixture(t, db,
				[]time.Time{since.Add(-time.Microsecond), since, since.Add(59 * time.Minute), hour, hour.Add(29 * time.Minute), hour.Add(-2 * time.Hour),
					hour.Add(time.Hour)},
				[]time.Time{since.Add(-time.Hour), hour.Add(time.Minute), hour.Add(-2*time.Hour + time.Second)})
			got, err := storage.NewStatsStore(db).Hourly(ctx, since, 24)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]stats.HourCount, 24)
			want[0], want[21], want[23] = stats.HourCount{Messages: 2}, stats.HourCount{Messages: 1, Runs: 1}, stats.HourCount{Messages: 2, Runs: 1}
			if len(got) != 24 {
				t.Fatalf("%d hours", len(got))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("hour %d: %+v, want %+v", i, got[i], want[i])
				}
			}
		})

		t.Run("sizes the database on disk", func(t *testing.T) {
			db := eng.Open(t, storage.Options{})
			statsFixture(t, db, []time.Time{now}, nil)
			d, err := storage.NewStatsStore(db).DatabaseSize(ctx)
			if err != nil || d.Engine != eng.Name || d.Bytes <= 0 || d.WAL < 0 {
				t.Fatalf("%+v %v", d, err)
			}
		})
	})
}

func TestInstanceStore(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		st := storage.NewInstanceStore(db)
		if s, err := st.Settings(ctx); err != nil || s.Name != instance.DefaultName {
			t.Fatalf("new instance: %+v %v", s, err)
		}
		if err := db.Do(ctx, func(ctx context.Context) error { return st.SetName(ctx, "Zoë's hub") }); err != nil {
			t.Fatal(err)
		}
		if s, err := st.Settings(ctx); err != nil || s.Name != "Zoë's hub" {
			t.Fatalf("after rename: %+v %v", s, err)
		}
	})
}
