package messaging

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/names"
)

// Limits of message input.
const (
	MaxContentBytes   = 40_000
	MaxClientMsgIDLen = names.MaxClientMsgID
	MaxEmojiBytes     = 64
	// MaxMentions bounds the distinct @handles resolved per message; the rest stay plain text.
	MaxMentions = 50
	// maxHandleLen is the longest @handle the scanner considers.
	maxHandleLen = 64
)

// checkContent validates a message body. The content is kept as given; it must not be blank,
// must be valid UTF-8 of at most MaxContentBytes bytes and may hold no control characters but
// tab, newline and carriage return. Errors: validation_failed.
func checkContent(s string) error {
	if len(s) > MaxContentBytes {
		return kernel.Invalid("content", "content must be at most %d bytes", MaxContentBytes)
	}
	blank := true
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\t' || c == '\n' || c == '\r' || c == ' ':
			case c < 0x20 || c == 0x7f:
				return kernel.Invalid("content", "content must not contain control characters")
			default:
				blank = false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return kernel.Invalid("content", "content is not valid UTF-8")
		}
		if !unicode.IsSpace(r) {
			blank = false
		}
		i += n
	}
	if blank {
		return kernel.Invalid("content", "content must not be empty")
	}
	return nil
}

// checkBody validates the content of a new message that carries attachments files: blank
// content is allowed when it carries at least one (a picture needs no words).
func checkBody(s string, attachments int) error {
	err := checkContent(s)
	if err != nil && attachments > 0 && len(s) <= MaxContentBytes && strings.TrimSpace(s) == "" {
		return nil
	}
	return err
}

// checkClientMsgID validates the optional idempotency key of a message: at most
// MaxClientMsgIDLen printable ASCII characters. Errors: validation_failed.
func checkClientMsgID(s string) error {
	if len(s) > MaxClientMsgIDLen {
		return kernel.Invalid("client_msg_id", "client_msg_id must be at most %d characters", MaxClientMsgIDLen)
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return kernel.Invalid("client_msg_id", "client_msg_id must be printable ASCII without spaces")
		}
	}
	return nil
}

// checkEmoji validates a reaction: 1 to MaxEmojiBytes bytes of UTF-8 without whitespace or
// control characters (a short name like "thumbsup" or the emoji itself). Errors: validation_failed.
func checkEmoji(s string) error {
	if s == "" || len(s) > MaxEmojiBytes {
		return kernel.Invalid("emoji", "emoji must be 1 to %d bytes", MaxEmojiBytes)
	}
	if !utf8.ValidString(s) {
		return kernel.Invalid("emoji", "emoji is not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return kernel.Invalid("emoji", "emoji must not contain whitespace or control characters")
		}
	}
	return nil
}

// The words that mention a whole channel instead of a handle: @here and @channel.
const (
	broadcastHere    = "here"
	broadcastChannel = "channel"
)

// splitBroadcast takes the words that mention a whole channel out of the handle keys and
// answers the first of them ("" for none): they are no handles, even of a principal named so.
func splitBroadcast(keys []string) (handles []string, broadcast string) {
	handles = keys[:0:0]
	for _, k := range keys {
		if k == broadcastHere || k == broadcastChannel {
			if broadcast == "" {
				broadcast = k
			}
			continue
		}
		handles = append(handles, k)
	}
	return handles, broadcast
}

// MentionRow is a mention as the store reads it back: the principal and its handle key.
type MentionRow struct {
	PrincipalID kernel.ID
	HandleKey   string
}

// ReadMentions splits a stored message's mention rows (in principal id order) into what its
// JSON form shows: the explicit mentions, and Broadcast when @here or @channel reached more.
// The store writes a row for everyone a message mentions; a message whose content has no
// @here or @channel has only explicit ones. A handle renamed since the message was posted is
// no longer in its content: on a broadcast message, that person then counts as reached by the
// broadcast.
func ReadMentions(content string, rows []MentionRow) (mentions []kernel.ID, broadcast string) {
	mentions = make([]kernel.ID, 0, len(rows))
	keys, word := splitBroadcast(scanMentions(content))
	if word == "" {
		for _, r := range rows {
			mentions = append(mentions, r.PrincipalID)
		}
		return mentions, ""
	}
	for _, r := range rows {
		for _, k := range keys {
			if k == r.HandleKey {
				mentions = append(mentions, r.PrincipalID)
				break
			}
		}
	}
	if len(mentions) < len(rows) {
		broadcast = word
	}
	return mentions, broadcast
}

// isHandleByte reports the bytes a handle is made of.
func isHandleByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// scanMentions returns the distinct handle keys (lower case) of the @handles in s, in order of
// first appearance, at most MaxMentions. An @ counts only at the start or after a byte that
// cannot be part of a handle (so "a@b.example" is no mention); trailing dots and dashes end a
// sentence, not a handle.
func scanMentions(s string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		if s[i] != '@' || i > 0 && (isHandleByte(s[i-1]) || s[i-1] == '@') {
			continue
		}
		j := i + 1
		for j < len(s) && isHandleByte(s[j]) {
			j++
		}
		h := strings.TrimRight(s[i+1:j], ".-")
		i = j - 1
		if h == "" || len(h) > maxHandleLen {
			continue
		}
		h = strings.ToLower(h)
		dup := false
		for _, o := range out {
			if o == h {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, h)
			if len(out) == MaxMentions {
				break
			}
		}
	}
	return out
}

// MentionKeys returns the distinct handle keys (lower case) of the @handles in content, as the
// mentions are read: runs finds among them the disabled agents, whose handles resolve to no
// mention, to say why they were not invoked.
func MentionKeys(content string) []string {
	keys, _ := splitBroadcast(scanMentions(content))
	return keys
}
