package storage

import (
	"context"
	"encoding/json"
	"fmt"

	"bothy.dev/bothy/app/runs"
)

// InteractionStore keeps the answers people give to messages' components (runs.InteractionStore;
// migrate 0020_message_components).
type InteractionStore struct{ db *DB }

var _ runs.InteractionStore = (*InteractionStore)(nil)

// NewInteractionStore returns the interactions repository on db.
func NewInteractionStore(db *DB) *InteractionStore { return &InteractionStore{db: db} }

func (s *InteractionStore) InsertInteraction(ctx context.Context, i runs.Interaction) error {
	picked, err := json.Marshal(i.Values)
	if err != nil {
		return fmt.Errorf("storage: interaction values: %w", err)
	}
	_, err = s.db.q(ctx).ExecContext(ctx, `INSERT INTO interactions (id, message_id, thread_id, channel_id, component_id, picked, user_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, string(i.ID), string(i.MessageID), string(i.ThreadID), string(i.ChannelID),
		i.ComponentID, string(picked), string(i.UserID), fmtTime(i.CreatedAt))
	return s.db.mapErr(err, "interaction")
}
