package messaging

import (
	"reflect"
	"strings"
	"testing"
)

func TestScanMentions(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"finds a handle at the start", "@bob hi", []string{"bob"}},
		{"lower-cases and deduplicates", "@Bob and @BOB and @bob", []string{"bob"}},
		{"keeps the order of first appearance", "@zed then @amy", []string{"zed", "amy"}},
		{"ends a handle at punctuation", "hi @bob, @amy! (@cy) @dee's", []string{"bob", "amy", "cy", "dee"}},
		{"drops a sentence's trailing dot", "ask @bob.", []string{"bob"}},
		{"keeps inner dots, dashes and underscores", "@a.b-c_d", []string{"a.b-c_d"}},
		{"ignores a mail address", "write to me@example.org", nil},
		{"ignores a double at", "@@bob", nil},
		{"ignores a lone at", "@ @. @-", nil},
		{"ignores a handle over 64 bytes", "@" + strings.Repeat("a", 65), nil},
		{"finds a handle after multi-byte text", "ünd @bob", []string{"bob"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := scanMentions(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("scanMentions(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	t.Run("stops at the mention limit", func(t *testing.T) {
		var sb strings.Builder
		for i := 0; i < MaxMentions+10; i++ {
			sb.WriteString("@u")
			sb.WriteString(strings.Repeat("x", i))
			sb.WriteString(" ")
		}
		if got := scanMentions(sb.String()); len(got) != MaxMentions {
			t.Fatalf("%d mentions", len(got))
		}
	})
}

func TestCheckContent(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"accepts text with newlines and tabs", "a\n\tb\r\n", true},
		{"accepts exactly 40000 bytes", strings.Repeat("a", MaxContentBytes), true},
		{"accepts emoji", "👍", true},
		{"refuses the empty string", "", false},
		{"refuses only whitespace, also non-ASCII", " \u00a0\u3000\n", false},
		{"refuses DEL", "a\x7f", false},
		{"refuses an escape character", "\x1b[31m", false},
		{"refuses a truncated rune", "\xe2\x82", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkContent(tt.in); (err == nil) != tt.ok {
				t.Fatalf("checkContent = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
