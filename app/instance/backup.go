package instance

import (
	"context"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// The events of the scheduled backups (backup.schedule): each run appends one of them to the
// log, personal to each active owner, so that owners see them and nobody else does.
var (
	EvBackupCompleted = kernel.DefineEvent[BackupRun]("backup.completed")
	EvBackupFailed    = kernel.DefineEvent[BackupRun]("backup.failed")
)

// BackupRun is one run of the scheduled backup. A completed run has its path, size and head
// seq; a failed one its error, and the path it was writing.
type BackupRun struct {
	Path       string    `json:"path"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS int64     `json:"duration_ms"`
	// Bytes is the size of the backup's parts; HeadSeq the last seq it holds.
	Bytes   int64  `json:"bytes"`
	HeadSeq int64  `json:"head_seq"`
	Error   string `json:"error,omitempty"`
}

// BackupOwners lists the active owners, who are told of each run (storage's AgentStore).
type BackupOwners interface {
	Owners(ctx context.Context) ([]kernel.ID, error)
}

// BackupLogDeps are the ports of BackupLog.
type BackupLogDeps struct {
	UoW    kernel.UnitOfWork
	Events kernel.EventLog
	Owners BackupOwners
}

// BackupLog records the runs of the scheduled backup in the event log. The backup job is the
// instance's own work, done for nobody in particular, so it decides no action.
type BackupLog struct{ d BackupLogDeps }

// NewBackupLog returns the log of backup runs.
func NewBackupLog(d BackupLogDeps) *BackupLog {
	if d.UoW == nil || d.Events == nil || d.Owners == nil {
		panic("instance: NewBackupLog needs UoW, Events and Owners")
	}
	return &BackupLog{d: d}
}

// Record appends backup.completed (failed false) or backup.failed for run, one event per
// active owner, in one Unit of Work. Errors: only the database's.
func (l *BackupLog) Record(ctx context.Context, run BackupRun, failed bool) error {
	ev := EvBackupCompleted
	if failed {
		ev = EvBackupFailed
	}
	return l.d.UoW.Do(ctx, func(ctx context.Context) error {
		owners, err := l.d.Owners.Owners(ctx)
		if err != nil {
			return err
		}
		for _, o := range owners {
			l.d.Events.Append(ctx, ev.Event(kernel.Event{Scope: kernel.Scope{PrincipalID: o}}, run))
		}
		return nil
	})
}
