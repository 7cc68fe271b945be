package ui

import (
	"strings"
	"testing"
)

func TestTriggerNoteOfNewRefusals(t *testing.T) {
	for state, want := range map[string]string{
		"command_ambiguous":      "/command@agent",
		"budget_exhausted":       "budget is used up",
		"handoff_depth_exceeded": "handed this on",
	} {
		t.Run("a message refused with "+state+" says why in the thread", func(t *testing.T) {
			if got := triggerNote(&state); !strings.HasPrefix(got, "No agent was invoked") || !strings.Contains(got, want) {
				t.Fatalf("note %q", got)
			}
		})
	}
}

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		used, cap float64
		want      int
	}{{0, 100, 0}, {80, 100, 80}, {99.9, 100, 99}, {250, 100, 100}, {5, 0, 0}} {
		if got := percent(tc.used, tc.cap); got != tc.want {
			t.Errorf("percent(%v, %v) = %d, want %d", tc.used, tc.cap, got, tc.want)
		}
	}
}
