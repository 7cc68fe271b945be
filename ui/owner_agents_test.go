package ui

import (
	"testing"
	"time"
)

func TestAgoText(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		at   time.Time
		want string
	}{
		{now.Add(-10 * time.Second), "just now"},
		{now.Add(-3*time.Minute - 20*time.Second), "3 min ago"},
		{now.Add(-5 * time.Hour), "5 h ago"},
		{now.Add(-72 * time.Hour), "on 2026-02-26"},
	} {
		if got := agoText(now, tt.at); got != tt.want {
			t.Errorf("agoText(%v) = %q, want %q", now.Sub(tt.at), got, tt.want)
		}
	}
}

func TestWhenText(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 4, 59, 0, time.FixedZone("X", 3600))
	if got := whenText(at); got != "2026-03-01 11:04 UTC" {
		t.Errorf("whenText = %q", got)
	}
	if whenText(time.Time{}) != "" {
		t.Error("the zero time is shown")
	}
}
