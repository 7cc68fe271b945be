package ui

import (
	"fmt"
	"time"

	"bothy.dev/bothy/app/instance"
	"bothy.dev/bothy/ui/pages"
)

// BackupStatus answers the last run of the scheduled backup (the appliance's scheduler, which
// keeps it beside the backups): ok is false before the first run.
type BackupStatus interface {
	LastBackup() (run instance.BackupRun, failed, ok bool)
}

// backupLine is the overview's line of the last backup run as of now.
func backupLine(b BackupStatus, now time.Time) *pages.BackupView {
	run, failed, ok := b.LastBackup()
	if !ok {
		return &pages.BackupView{When: "never", Detail: "none made yet", Result: "none"}
	}
	v := &pages.BackupView{When: fmtAgo(now.Sub(run.StartedAt)), At: run.StartedAt.UTC().Format(time.RFC3339)}
	if failed {
		v.Result, v.Detail = "failed", "failed: "+run.Error
		return v
	}
	v.Result, v.Detail = "completed", "completed, "+fmtBytes(run.Bytes)+", head seq "+fmtCount(run.HeadSeq)
	return v
}

// fmtAgo is how long ago something happened, in its largest whole unit.
func fmtAgo(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return ago(int64(d/time.Minute), "minute")
	case d < 48*time.Hour:
		return ago(int64(d/time.Hour), "hour")
	}
	return ago(int64(d/(24*time.Hour)), "day")
}

func ago(n int64, unit string) string { return fmt.Sprintf("%d %s ago", n, plural(n, unit)) }
