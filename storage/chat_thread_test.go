package storage_test

import (
	"context"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// TestUpdateThread holds that a thread's title and updated_at are written, and an unknown thread
// is not found, on both engines.
func TestUpdateThread(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		e := newRunEnv(t, eng)
		st := storage.NewChatStore(e.db)
		parent := e.post(t, e.pia, "plans")
		th, _, _, err := e.msgs.Reply(bg, e.paul, parent.ID, messaging.NewReply{Content: "yes"})
		if err != nil {
			t.Fatal(err)
		}
		th.Title, th.UpdatedAt = "Plans — ü", time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)
		if err := e.db.Do(bg, func(ctx context.Context) error { return st.UpdateThread(ctx, th) }); err != nil {
			t.Fatal(err)
		}
		got, err := st.Thread(bg, th.ID)
		if err != nil || got.Title != th.Title || !got.UpdatedAt.Equal(th.UpdatedAt) {
			t.Fatalf("got %+v, %v", got, err)
		}
		th.ID = kernel.NewID()
		if err := e.db.Do(bg, func(ctx context.Context) error { return st.UpdateThread(ctx, th) }); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("unknown thread: %v", err)
		}
	})
}
