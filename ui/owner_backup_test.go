package ui

import (
	"testing"
	"time"

	"bothy.dev/bothy/app/instance"
)

type fakeBackups struct {
	run        instance.BackupRun
	failed, ok bool
}

func (f fakeBackups) LastBackup() (instance.BackupRun, bool, bool) { return f.run, f.failed, f.ok }

func TestBackupLine(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name                 string
		b                    fakeBackups
		when, detail, result string
	}{
		{"before the first run", fakeBackups{}, "never", "none made yet", "none"},
		{"a completed run", fakeBackups{run: instance.BackupRun{StartedAt: now.Add(-3 * time.Hour), Bytes: 5 << 20, HeadSeq: 12345}, ok: true},
			"3 hours ago", "completed, 5.0 MiB, head seq 12\u202f345", "completed"},
		{"a failed run", fakeBackups{run: instance.BackupRun{StartedAt: now.Add(-90 * time.Second), Error: "the disk is full"}, failed: true, ok: true},
			"1 minute ago", "failed: the disk is full", "failed"},
		{"a run days ago", fakeBackups{run: instance.BackupRun{StartedAt: now.Add(-72 * time.Hour), Bytes: 10}, ok: true},
			"3 days ago", "completed, 10 B, head seq 0", "completed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := backupLine(tc.b, now)
			if v.When != tc.when || v.Detail != tc.detail || v.Result != tc.result {
				t.Fatalf("line %+v, want %q %q %q", v, tc.when, tc.detail, tc.result)
			}
		})
	}
}
