package search

import (
	"html"
	"strings"
)

// excerptBytes is about how long a highlight is, before its words are marked.
const excerptBytes = 200

// Highlight is an excerpt of the first of texts (the content, then the thread's title, then the
// names of the attachments) that holds a word of terms, HTML-escaped, with each matching word in
// <mark>…</mark>; the start of the content when none holds one (a query of filters alone).
func Highlight(terms []Term, content, title string, files []string) string {
	texts := append([]string{content, title}, files...)
	for _, t := range texts {
		if h, ok := highlightIn(terms, t); ok {
			return h
		}
	}
	return html.EscapeString(cut(content, 0, excerptBytes))
}

// highlightIn marks the words of text that match a positive term, in an excerpt around the
// first of them; ok is false when none matches.
func highlightIn(terms []Term, text string) (string, bool) {
	ws := words(text)
	match := make([]bool, len(ws))
	first := -1
	for i, w := range ws {
		f := Fold(text[w.start:w.end])
		for _, t := range terms {
			if t.Exclude {
				continue
			}
			for j, tw := range t.Words {
				if f == tw || (t.Prefix && j == len(t.Words)-1 && strings.HasPrefix(f, tw)) {
					match[i] = true
				}
			}
		}
		if match[i] && first < 0 {
			first = i
		}
	}
	if first < 0 {
		return "", false
	}
	// The excerpt starts a little before the first match, at a word's start, and ends at a
	// word's end near excerptBytes later.
	start := 0
	for i := first; i >= 0 && ws[first].start-ws[i].start <= excerptBytes/4; i-- {
		start = ws[i].start
	}
	end := len(text)
	if end-start > excerptBytes {
		end = start + excerptBytes
		for i := range ws {
			if ws[i].start < end && ws[i].end > end {
				end = ws[i].start
			}
		}
		for end > start && (text[end]&0xC0) == 0x80 {
			end--
		}
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	at := start
	for i, w := range ws {
		if !match[i] || w.start < start || w.end > end {
			continue
		}
		b.WriteString(html.EscapeString(text[at:w.start]))
		b.WriteString("<mark>")
		b.WriteString(html.EscapeString(text[w.start:w.end]))
		b.WriteString("</mark>")
		at = w.end
	}
	b.WriteString(html.EscapeString(text[at:end]))
	if end < len(text) {
		b.WriteString("…")
	}
	return b.String(), true
}

// cut is s[start:end] moved back to rune boundaries, ending in … when it is shorter than s.
func cut(s string, start, end int) string {
	if end >= len(s) {
		return s[start:]
	}
	for end > start && (s[end]&0xC0) == 0x80 {
		end--
	}
	return s[start:end] + "…"
}
