package storage

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/gateway"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage/commit"
)

// ConsumerStore implements gateway.Consumers on agent_consumers: the durable cursor of each
// agent's consumer.
type ConsumerStore struct{ db *DB }

var _ gateway.Consumers = (*ConsumerStore)(nil)

// NewConsumerStore returns the consumer repository on db.
func NewConsumerStore(db *DB) *ConsumerStore { return &ConsumerStore{db: db} }

// AckedSeq implements gateway.Consumers and catchup.Cursors. An agent's consumer has its row from
// the agent's creation on (StartConsumer). An agent created before that has none until it first
// consumes: ok is false, and seq is where its consumer starts all the same, just before its
// agent.created event, so that what was addressed to it since is delivered (the head when the
// log does not hold that event).
func (s *ConsumerStore) AckedSeq(ctx context.Context, agent kernel.ID) (int64, bool, error) {
	var seq int64
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT acked_seq FROM agent_consumers WHERE agent_id = ?`, string(agent)).Scan(&seq)
	if err == nil {
		return seq, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, false, s.db.mapErr(err, "agent consumer")
	}
	var created sql.NullInt64
	err = s.db.q(ctx).QueryRowContext(ctx, `SELECT MIN(seq) FROM event_log WHERE subject_id = ? AND type = ? AND payload <> ''`,
		string(agent), agents.EvAgentCreated.Name).Scan(&created)
	if err != nil {
		return 0, false, s.db.mapErr(err, "event log")
	}
	if created.Valid {
		return created.Int64 - 1, false, nil
	}
	head, err := s.db.ReadHead(ctx)
	return head, false, err
}

// StartConsumer implements agents.Store: the consumer's row, in the Unit of Work that creates
// the agent, at the seq of the last event before the unit's own (its agent.created among them).
// That seq is known inside the unit although the unit's events get theirs only at commit: the
// writer numbers them right after it, in order. seen_at stays empty: the consumer has shown no
// sign of life yet, so the console does not call the agent online and the stall check does not
// count it as connected.
func (s *AgentStore) StartConsumer(ctx context.Context, agent kernel.ID) error {
	head, ok := commit.HeadBefore(ctx)
	if !ok {
		panic("storage: StartConsumer outside a unit of work")
	}
	_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO agent_consumers (agent_id, acked_seq, updated_at, seen_at) VALUES (?, ?, ?, '')`,
		string(agent), head, fmtTime(s.db.clock.Now()))
	return s.db.mapErr(err, "agent consumer")
}

// SaveAcks implements gateway.Consumers: one Unit of Work for all of them; a cursor only moves
// forward, so a late save of an older ack leaves acked_seq and updated_at as they are. Every save
// is a sign of life of the agent's consumer, though, even one that does not move the cursor: it
// raises seen_at to at (never lowers it), which runs' stall check reads (AgentStore.ConsumersSeen).
func (s *ConsumerStore) SaveAcks(ctx context.Context, acks map[kernel.ID]int64, at time.Time) error {
	if len(acks) == 0 {
		return nil
	}
	return s.db.Do(ctx, func(ctx context.Context) error {
		for agent, seq := range acks {
			_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO agent_consumers (agent_id, acked_seq, updated_at, seen_at) VALUES (?, ?, ?, ?)
				ON CONFLICT (agent_id) DO UPDATE SET
					acked_seq = CASE WHEN excluded.acked_seq > agent_consumers.acked_seq THEN excluded.acked_seq ELSE agent_consumers.acked_seq END,
					updated_at = CASE WHEN excluded.acked_seq > agent_consumers.acked_seq THEN excluded.updated_at ELSE agent_consumers.updated_at END,
					seen_at = CASE WHEN excluded.seen_at > agent_consumers.seen_at THEN excluded.seen_at ELSE agent_consumers.seen_at END`,
				string(agent), seq, fmtTime(at), fmtTime(at))
			if err != nil {
				return s.db.mapErr(err, "agent consumer")
			}
		}
		return nil
	})
}

// SeeConsumers implements gateway.Consumers and catchup.Cursors: it raises seen_at of the agents'
// consumers that have a row to at, without touching their cursors. The gateway calls it for the
// agents connected to it, the REST poll for the polling agent, so that runs' stall check tells
// an agent that is there but stuck (stale) from one that is gone (interrupted).
func (s *ConsumerStore) SeeConsumers(ctx context.Context, agents []kernel.ID, at time.Time) error {
	if len(agents) == 0 {
		return nil
	}
	args := make([]any, 0, len(agents)+2)
	args = append(args, fmtTime(at))
	for _, a := range agents {
		args = append(args, string(a))
	}
	args = append(args, fmtTime(at))
	return s.db.Do(ctx, func(ctx context.Context) error {
		_, err := s.db.q(ctx).ExecContext(ctx, `UPDATE agent_consumers SET seen_at = ?
			WHERE agent_id IN (`+placeholders(len(agents))+`) AND seen_at < ?`, args...)
		return s.db.mapErr(err, "agent consumers")
	})
}
