package runs_test

import (
	"testing"

	"bothy.dev/bothy/app/runs"
)

func TestParseCommand(t *testing.T) {
	for _, tc := range []struct {
		content string
		want    runs.CommandCall
		ok      bool
	}{
		{"/deploy", runs.CommandCall{Name: "deploy"}, true},
		{"/deploy prod  now ", runs.CommandCall{Name: "deploy", Args: "prod  now"}, true},
		{"/deploy@Ops-Bot prod", runs.CommandCall{Name: "deploy", Handle: "ops-bot", Args: "prod"}, true},
		{"/a_b-1\nline two", runs.CommandCall{Name: "a_b-1", Args: "line two"}, true},
		{"/Deploy", runs.CommandCall{}, false},
		{"/deploy! now", runs.CommandCall{}, false},
		{"/usr/bin/env", runs.CommandCall{}, false},
		{"/ hello", runs.CommandCall{}, false},
		{"/deploy@ prod", runs.CommandCall{}, false},
		{"say /deploy", runs.CommandCall{}, false},
		{"/abcdefghijklmnopqrstuvwxyz0123456", runs.CommandCall{}, false},
	} {
		t.Run(tc.content, func(t *testing.T) {
			got, ok := runs.ParseCommand(tc.content)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("ParseCommand(%q) = %+v, %v; want %+v, %v", tc.content, got, ok, tc.want, tc.ok)
			}
		})
	}
}
