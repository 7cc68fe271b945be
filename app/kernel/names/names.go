// Package names is the one rule for what a person names in bothy: the handles of principals,
// the display names of people and agents, the names of spaces, channels, API tokens and the
// instance, and the short texts next to them (topics, thread titles, descriptions). It also
// holds the limits of each, in characters (Unicode code points), which the API document
// states as minLength and maxLength.
//
// A name is shown to others, so it must read as what it is: it is kept in Unicode
// Normalization Form C, so that two names that look alike are alike, and it may hold no
// control, bidirectional-formatting or invisible character, which would let it display as
// something else (U+202E turns "gpj.exe" into "exe.jpg") or let two names that look the same
// differ. The texts keep the looser rule they had: no control or bidirectional-formatting
// character.
//
// It must not import anything of the project but the kernel, or a third-party module.
package names

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"bothy.dev/bothy/app/kernel"
)

// Limits, in characters. Every name and handle has at least MinLen; a text (Text) may be
// empty.
const (
	MinLen = 1
	// MaxHandle bounds the handle of a person or an agent.
	MaxHandle = 32
	// MaxDisplayName bounds the display name of a person or an agent.
	MaxDisplayName = 64
	// MaxName bounds the name of a space or a channel.
	MaxName = 80
	// MaxTokenName bounds the name of an API token.
	MaxTokenName = 64
	// MaxInstanceName bounds the instance's name.
	MaxInstanceName = 64
	// MaxDescription bounds an agent's description.
	MaxDescription = 500
	// MaxTopic bounds a channel's topic.
	MaxTopic = 1000
	// MaxTitle bounds a thread's title.
	MaxTitle = 200
	// MaxClientMsgID bounds a message's client_msg_id, printable ASCII.
	MaxClientMsgID = 64
)

// Handle checks a handle: MinLen to MaxHandle characters of a-z, A-Z, 0-9, '_', '.' and '-'
// (compared case-insensitively elsewhere). Errors: validation_failed naming "handle".
func Handle(h string) error {
	if len(h) < MinLen || len(h) > MaxHandle {
		return kernel.Invalid("handle", "handle must be %d to %d characters", MinLen, MaxHandle)
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return kernel.Invalid("handle", "handle may hold only letters a-z, digits, '_', '.' and '-'")
		}
	}
	return nil
}

// Name checks a required name of MinLen to max characters and returns it as it is kept:
// without surrounding white space, in NFC. It must be valid UTF-8 and hold no control,
// bidirectional-formatting or invisible character (Invisible). Errors: validation_failed
// naming field.
func Name(field, s string, max int) (string, error) {
	if !utf8.ValidString(s) {
		return "", kernel.Invalid(field, "%s must be valid UTF-8", field)
	}
	// Normalized first, so that the check and the count see the name as it is kept.
	s = strings.TrimSpace(NFC(s))
	prev, n := rune(-1), 0
	for _, r := range s {
		if Invisible(r, prev) {
			return "", kernel.Invalid(field, "%s must not hold control, bidirectional or invisible characters (it holds %s)", field, codePoint(r))
		}
		prev = r
		n++
	}
	if n < MinLen || n > max {
		return "", kernel.Invalid(field, "%s must be %d to %d characters", field, MinLen, max)
	}
	return s, nil
}

// Text checks a short text that may be empty (a topic, a thread title, a description) and
// returns it without surrounding white space: at most max characters of valid UTF-8 without
// control or bidirectional-formatting characters (Bidi). Unlike a name it is kept as written:
// it may hold the joiners of an emoji sequence or of a script that needs them. Errors:
// validation_failed naming field.
func Text(field, s string, max int) (string, error) {
	if !utf8.ValidString(s) {
		return "", kernel.Invalid(field, "%s must be valid UTF-8", field)
	}
	s = strings.TrimSpace(s)
	n := 0
	for _, r := range s {
		if unicode.IsControl(r) || r == 0x2028 || r == 0x2029 || Bidi(r) {
			return "", kernel.Invalid(field, "%s must not hold control or bidirectional characters (it holds %s)", field, codePoint(r))
		}
		n++
	}
	if n > max {
		return "", kernel.Invalid(field, "%s must be at most %d characters", field, max)
	}
	return s, nil
}

// Bidi reports the bidirectional formatting characters: the embeddings and overrides
// (U+202A–U+202E), the isolates (U+2066–U+2069) and the implicit marks (U+200E, U+200F,
// U+061C).
func Bidi(r rune) bool {
	return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 || r == 0x200E || r == 0x200F || r == 0x061C
}

func codePoint(r rune) string { return fmt.Sprintf("U+%04X", r) }

// Invisible reports whether r, after prev (-1 at the start), is a character a name must not
// hold: a control character (C0, DEL, C1), a line or paragraph separator, a format character
// (the bidirectional embeddings, overrides, isolates and marks, zero-width space and joiners,
// word joiner, byte order mark, soft hyphen, tags, …), another default-ignorable code point
// (the Hangul fillers, the combining grapheme joiner, Mongolian variation selectors, …), or
// U+2800, a braille cell without dots, which shows as nothing. A variation selector is
// accepted only for the text or emoji form of a symbol ("❤️"), where it is all it does.
func Invisible(r, prev rune) bool {
	switch {
	case r < 0x80:
		return r < 0x20 || r == 0x7F
	case unicode.IsControl(r), r == 0x2028, r == 0x2029, r == 0x2800:
		return true
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r):
		return true
	case unicode.Is(unicode.Variation_Selector, r):
		return !(r == 0xFE0E || r == 0xFE0F) || prev < 0 || !unicode.Is(unicode.So, prev)
	}
	return false
}
