package search

import (
	"strings"
	"time"
	"unicode"

	"bothy.dev/bothy/app/kernel"
)

// Limits of a query.
const (
	// MaxQueryBytes is the longest q taken; a longer one is refused, not cut.
	MaxQueryBytes = 1024
	// MaxTerms is how many words, phrases and exclusions one query may hold.
	MaxTerms = 32
	// minPrefix is the shortest last word that is also searched as a prefix: up to three
	// letters begin a large part of the index's words, which no query reads quickly without a
	// prefix index, and SQLite's index keeps none, since each would cost every message's
	// create another write of each of its words (migrate/sqlite/0025_search.sql).
	minPrefix = 4
)

// Term is one condition on the text: a word (one entry in Words), or a phrase (several, in
// order). Prefix matches every word starting with the last one; Exclude asks for messages
// without it. Words are folded (Fold) and hold only letters, digits and marks, so no engine
// reads any of them as syntax.
type Term struct {
	Words   []string
	Prefix  bool
	Exclude bool
	// Expanded, set by an index, are the words of the index a one-word prefix term begins,
	// which it matches instead of the prefix.
	Expanded []string
}

// Query is q parsed: the conditions on the text and the filters it named.
type Query struct {
	Terms []Term
	// FromHandles are the handles of from:@handle (lower case, without @); ChannelNames those of
	// in:#channel (without #). Each filter given twice must hold twice: two authors find nothing.
	FromHandles  []string
	ChannelNames []string
	HasFile      bool
	// Before and After bound the creation time (zero: no bound): before:D is before the start
	// of day D (UTC), after:D after its end.
	Before, After time.Time
}

// positive reports whether the query holds a term a message must contain.
func (q Query) positive() bool {
	for _, t := range q.Terms {
		if !t.Exclude {
			return true
		}
	}
	return false
}

// ParseQuery reads q: words (all must match), "an exact phrase", -word or -"phrase" to exclude,
// from:@handle, in:#channel, has:file, before:YYYY-MM-DD and after:YYYY-MM-DD. The last word
// also matches as a prefix. Anything else in q is text: punctuation separates words and is
// never syntax of the engine. Errors: validation_failed (too long, not UTF-8, too many terms,
// a bad date or has: value).
func ParseQuery(q string) (Query, error) {
	var out Query
	if len(q) > MaxQueryBytes {
		return out, kernel.Invalid("q", "q is %d bytes long; at most %d are taken", len(q), MaxQueryBytes)
	}
	if !validUTF8(q) {
		return out, kernel.Invalid("q", "q is not valid UTF-8")
	}
	lastWord := -1 // index in out.Terms of the last plain word, the one matched as a prefix
	rest := q
	for {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if rest == "" {
			break
		}
		exclude := false
		if rest[0] == '-' && len(rest) > 1 && !unicode.IsSpace(rune(rest[1])) {
			exclude, rest = true, rest[1:]
		}
		if rest[0] == '"' {
			// A phrase runs to the next quote, or to the end when there is none.
			body, after, _ := strings.Cut(rest[1:], `"`)
			rest = after
			if ws := Words(body); len(ws) > 0 {
				out.Terms = append(out.Terms, Term{Words: ws, Exclude: exclude})
			}
			continue
		}
		end := strings.IndexFunc(rest, unicode.IsSpace)
		if end < 0 {
			end = len(rest)
		}
		tok := rest[:end]
		rest = rest[end:]
		if !exclude {
			if done, err := out.filter(tok); err != nil {
				return out, err
			} else if done {
				continue
			}
		}
		ws := Words(tok)
		if len(ws) == 0 {
			continue
		}
		out.Terms = append(out.Terms, Term{Words: ws, Exclude: exclude})
		if !exclude && len(ws) == 1 {
			lastWord = len(out.Terms) - 1
		} else if !exclude {
			lastWord = -1
		}
	}
	if lastWord >= 0 && lastWord == len(out.Terms)-1 && len([]rune(out.Terms[lastWord].Words[0])) >= minPrefix {
		out.Terms[lastWord].Prefix = true
	}
	if len(out.Terms) > MaxTerms {
		return out, kernel.Invalid("q", "q holds %d words, phrases and exclusions; at most %d are taken", len(out.Terms), MaxTerms)
	}
	return out, nil
}

// filter reads tok as a filter (from:, in:, has:, before:, after:) into q, and reports whether
// it was one. A word with another colon in it is text.
func (q *Query) filter(tok string) (bool, error) {
	key, val, ok := strings.Cut(tok, ":")
	if !ok || val == "" {
		return false, nil
	}
	switch strings.ToLower(key) {
	case "from":
		q.FromHandles = append(q.FromHandles, strings.ToLower(strings.TrimPrefix(val, "@")))
	case "in":
		q.ChannelNames = append(q.ChannelNames, strings.TrimPrefix(val, "#"))
	case "has":
		if strings.ToLower(val) != "file" {
			return false, kernel.Invalid("q", "has: takes only has:file")
		}
		q.HasFile = true
	case "before", "after":
		d, err := time.Parse(time.DateOnly, val)
		if err != nil {
			return false, kernel.Invalid("q", "%s: takes a date as YYYY-MM-DD", key)
		}
		if key == "before" {
			q.Before = earlier(q.Before, d)
		} else {
			q.After = later(q.After, d.AddDate(0, 0, 1).Add(-time.Nanosecond))
		}
	default:
		return false, nil
	}
	return true, nil
}

// ParseTime reads a before or after parameter: RFC 3339, or a date (YYYY-MM-DD, the start of
// that day in UTC). field names it in the error.
func ParseTime(field, s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, kernel.Invalid(field, "%s takes a time in RFC 3339 or a date as YYYY-MM-DD", field)
}

// earlier is the earlier of two bounds, zero being none.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// later is the later of two bounds, zero being none.
func later(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.After(a)) {
		return b
	}
	return a
}
