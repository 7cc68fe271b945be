package chat

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"bothy.dev/bothy/app/kernel"
)

// Limits of display texts, in characters (runes).
const (
	MaxNameLen  = 80
	MaxTopicLen = 1000
	MaxTitleLen = 200
)

// CleanName trims s and checks it as a required display text of at most max characters: valid
// UTF-8, no control characters, no bidirectional overrides (SEC-IN-4). Errors: validation_failed
// naming field.
func CleanName(field, s string, max int) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", kernel.Invalid(field, "%s must not be empty", field)
	}
	return checkText(field, s, max)
}

// CleanOptional is CleanName for a text that may be empty.
func CleanOptional(field, s string, max int) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	return checkText(field, s, max)
}

func checkText(field, s string, max int) (string, error) {
	if !utf8.ValidString(s) {
		return "", kernel.Invalid(field, "%s is not valid UTF-8", field)
	}
	if n := utf8.RuneCountInString(s); n > max {
		return "", kernel.Invalid(field, "%s must be at most %d characters", field, max)
	}
	for _, r := range s {
		if unicode.IsControl(r) || isBidiControl(r) {
			return "", kernel.Invalid(field, "%s must not contain control characters", field)
		}
	}
	return s, nil
}

// isBidiControl reports the explicit directional formatting characters, which can make a name
// display as something else than it is.
func isBidiControl(r rune) bool {
	return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 || r == 0x200E || r == 0x200F || r == 0x061C
}
