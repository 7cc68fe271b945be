package chat

import "bothy.dev/bothy/app/kernel/names"

// Limits of display texts, in characters (runes): those of app/kernel/names.
const (
	MaxNameLen  = names.MaxName
	MaxTopicLen = names.MaxTopic
	MaxTitleLen = names.MaxTitle
)

// CleanName trims s and checks it as a required name of at most max characters by the rule of
// every name (names.Name: NFC, no control, bidirectional or invisible characters).
// Errors: validation_failed naming field.
func CleanName(field, s string, max int) (string, error) {
	return names.Name(field, s, max)
}

// CleanOptional checks a text that may be empty, such as a topic or a title (names.Text: no
// control or bidirectional characters). Errors: validation_failed naming field.
func CleanOptional(field, s string, max int) (string, error) {
	return names.Text(field, s, max)
}
