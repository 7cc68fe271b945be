package names

import (
	"errors"
	"strings"
	"testing"
	"unicode"

	"bothy.dev/bothy/app/kernel"
)

func TestNFC(t *testing.T) {
	// Vectors of UAX #15 and of the scripts whose names people type; gen.go -check compares
	// the whole tables with golang.org/x/text.
	cases := []struct{ name, in, want string }{
		{"leaves ASCII as it is", "Ada Lovelace", "Ada Lovelace"},
		{"composes a letter and its accent", "e\u0301", "\u00e9"},
		{"keeps a composed letter", "\u00e9", "\u00e9"},
		{"composes two accents in canonical order", "u\u0308\u0304", "\u01d6"},
		{"reorders marks before composing", "e\u0302\u0323", "\u1ec7"},
		{"composes a dot below under a composed letter", "\u00e9\u0323", "\u1eb9\u0301"},
		{"replaces a singleton (ANGSTROM SIGN)", "\u212b", "\u00c5"},
		{"replaces an excluded composition (DEVANAGARI QA)", "\u0958", "\u0915\u093c"},
		{"replaces a CJK compatibility ideograph", "\uf900", "\u8c48"},
		{"composes Hangul jamo into a syllable", "\u1100\u1161\u11a8", "\uac01"},
		{"keeps a Hangul syllable", "\ud55c\uad6d", "\ud55c\uad6d"},
		{"composes a Bengali vowel sign", "\u09c7\u09be", "\u09cb"},
		{"keeps a Tamil vowel sign that composes with nothing before it", "\u0b95\u0bbe", "\u0b95\u0bbe"},
		{"does not compose across a blocking mark of the same class", "a\u0301\u0301", "\u00e1\u0301"},
		{"does not compose across a starter", "a b\u0301", "a b\u0301"},
		{"keeps a lone combining mark", "\u0301", "\u0301"},
		{"keeps emoji", "🦊 fox", "🦊 fox"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := NFC(c.in); got != c.want {
				t.Fatalf("NFC(%+q) = %+q, want %+q", c.in, got, c.want)
			}
			if again := NFC(c.want); again != c.want {
				t.Fatalf("NFC is not stable on %+q: %+q", c.want, again)
			}
		})
	}
	t.Run("has the tables of Go's Unicode", func(t *testing.T) {
		if unicodeVersion != unicode.Version {
			t.Fatalf("tables of Unicode %s, Go has %s: run go run app/kernel/names/gen.go", unicodeVersion, unicode.Version)
		}
	})
}

func TestName(t *testing.T) {
	accept := []struct{ name, in, want string }{
		{"a plain name", "General", "General"},
		{"surrounding white space, trimmed", "  Zoë Ünal\u00a0", "Zoë Ünal"},
		{"a decomposed name, composed", "Zoe\u0308", "Zoë"},
		{"exactly the limit", strings.Repeat("ü", 64), strings.Repeat("ü", 64)},
		{"the limit counted after composing", strings.Repeat("u\u0308", 64), strings.Repeat("ü", 64)},
		{"an emoji", "🦊 fox", "🦊 fox"},
		{"an emoji in its emoji form", "\u2764\ufe0f fans", "\u2764\ufe0f fans"},
		{"Arabic, Hebrew and Devanagari", "مرحبا שלום नमस्ते", "مرحبا שלום नमस्ते"},
		{"a Hangul name", "한국어", "한국어"},
	}
	for _, c := range accept {
		t.Run("accepts "+c.name, func(t *testing.T) {
			got, err := Name("display_name", c.in, 64)
			if err != nil || got != c.want {
				t.Fatalf("Name(%+q) = %+q, %v; want %+q", c.in, got, err, c.want)
			}
		})
	}

	refuse := []struct{ name, in string }{
		{"an empty name", ""},
		{"a name of white space", " \t "},
		{"one character over the limit", strings.Repeat("ü", 65)},
		{"invalid UTF-8", "bad\xffname"},
		{"a newline", "a\nb"},
		{"a tab", "tab\there"},
		{"NUL", "a\x00b"},
		{"DEL", "a\x7fb"},
		{"a C1 control", "a\u0085b"},
		{"a line separator", "line\u2028sep"},
		{"RIGHT-TO-LEFT OVERRIDE", "gpj\u202eexe"},
		{"LEFT-TO-RIGHT EMBEDDING", "a\u202ab"},
		{"a bidi isolate", "a\u2067b\u2069"},
		{"FIRST STRONG ISOLATE", "\u2068a"},
		{"RIGHT-TO-LEFT MARK", "a\u200f"},
		{"ARABIC LETTER MARK", "a\u061cb"},
		{"ZERO WIDTH SPACE", "gen\u200beral"},
		{"ZERO WIDTH NON-JOINER", "a\u200cb"},
		{"ZERO WIDTH JOINER", "a\u200db"},
		{"WORD JOINER", "a\u2060b"},
		{"a byte order mark", "\ufeffname"},
		{"SOFT HYPHEN", "soft\u00adhyphen"},
		{"a tag character", "a\U000e0041"},
		{"COMBINING GRAPHEME JOINER", "a\u034fb"},
		{"HANGUL FILLER", "\u3164"},
		{"HALFWIDTH HANGUL FILLER", "a\uffa0"},
		{"a Mongolian variation selector", "a\u180bb"},
		{"a variation selector after a letter", "a\ufe0f"},
		{"a variation selector at the start", "\ufe0fa"},
		{"BRAILLE PATTERN BLANK", "\u2800"},
	}
	for _, c := range refuse {
		t.Run("refuses "+c.name, func(t *testing.T) {
			got, err := Name("display_name", c.in, 64)
			var ke *kernel.Error
			if !errors.As(err, &ke) || ke.Code != kernel.CodeValidation || ke.Field != "display_name" {
				t.Fatalf("Name(%+q) = %+q, %v; want validation_failed on display_name", c.in, got, err)
			}
		})
	}
}

func TestText(t *testing.T) {
	t.Run("accepts an empty text", func(t *testing.T) {
		if got, err := Text("topic", "   ", MaxTopic); err != nil || got != "" {
			t.Fatalf("%q %v", got, err)
		}
	})
	t.Run("keeps the joiners of an emoji sequence", func(t *testing.T) {
		in := "standup \U0001F469\u200d\U0001F4BB"
		if got, err := Text("title", in, MaxTitle); err != nil || got != in {
			t.Fatalf("%+q %v", got, err)
		}
	})
	t.Run("refuses bidirectional formatting and controls", func(t *testing.T) {
		for _, in := range []string{"a\u202eb", "a\u2066b", "a\nb", "a\x00b", "a\u2029b", "bad\xff"} {
			if _, err := Text("topic", in, MaxTopic); fieldOf(err) != "topic" {
				t.Errorf("Text(%+q): %v", in, err)
			}
		}
	})
	t.Run("counts characters, not bytes", func(t *testing.T) {
		if _, err := Text("title", strings.Repeat("ü", MaxTitle), MaxTitle); err != nil {
			t.Fatal(err)
		}
		if _, err := Text("title", strings.Repeat("ü", MaxTitle+1), MaxTitle); fieldOf(err) != "title" {
			t.Fatal(err)
		}
	})
}

func TestHandle(t *testing.T) {
	for _, h := range []string{"a", "alice", "Alice.B-c_9", strings.Repeat("x", MaxHandle)} {
		if err := Handle(h); err != nil {
			t.Errorf("refuses %q: %v", h, err)
		}
	}
	for _, h := range []string{"", strings.Repeat("x", MaxHandle+1), "al ice", "alice@home", "ålice", "a/b", "a\u202eb", "a\u200bb", " alice"} {
		if err := Handle(h); fieldOf(err) != "handle" {
			t.Errorf("accepts %q: %v", h, err)
		}
	}
}

func fieldOf(err error) string {
	var ke *kernel.Error
	if errors.As(err, &ke) && ke.Code == kernel.CodeValidation {
		return ke.Field
	}
	return ""
}
