// Package markdown renders the Markdown of chat messages to HTML for the console, safely: every
// character of the source is HTML-escaped, and the only markup in the output is the one this
// package writes (p, br, strong, em, code, pre, a, ul, ol, li, blockquote, span). No raw HTML of
// the source ever passes, a link goes only to http, https or mailto and carries
// rel="noopener nofollow", and no attribute but href, rel, class and start is ever written.
//
// It is a small subset, on purpose: paragraphs and line breaks, **bold**, *italic*, `code`,
// fenced code blocks, [links](https://…) and bare URLs, lists, blockquotes and @mentions. It
// must not grow an escape hatch: the console marks its output safe (templ.Raw) on the strength
// of this package alone.
package markdown

import (
	"html"
	"net/url"
	"strconv"
	"strings"
)

// HTML is markup this package made from Markdown; only it produces values of the type, so a
// page that writes an HTML unescaped knows where it came from.
type HTML string

// maxDepth bounds the nesting of blockquotes and of emphasis; deeper input is shown as text.
const maxDepth = 6

// Render renders src. It never fails: what it does not understand is text.
func Render(src string) HTML {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	var b strings.Builder
	b.Grow(len(src) + len(src)/4 + 16)
	blocks(&b, strings.Split(src, "\n"), 0)
	return HTML(b.String())
}

// blocks writes the block structure of lines: fenced code, blockquotes, lists and paragraphs.
func blocks(b *strings.Builder, lines []string, depth int) {
	for i := 0; i < len(lines); {
		line := lines[i]
		switch {
		case strings.TrimSpace(line) == "":
			i++
		case isFence(line):
			fence := fenceOf(line)
			j := i + 1
			for j < len(lines) && !(isFence(lines[j]) && strings.HasPrefix(strings.TrimSpace(lines[j]), fence) && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(lines[j]), "`~")) == "") {
				j++
			}
			b.WriteString("<pre><code>")
			for k := i + 1; k < j; k++ {
				b.WriteString(html.EscapeString(lines[k]))
				if k < j-1 {
					b.WriteByte('\n')
				}
			}
			b.WriteString("</code></pre>\n")
			i = min(j+1, len(lines))
		case quoteLine(line) && depth < maxDepth:
			var inner []string
			for i < len(lines) && quoteLine(lines[i]) {
				inner = append(inner, unquote(lines[i]))
				i++
			}
			b.WriteString("<blockquote>\n")
			blocks(b, inner, depth+1)
			b.WriteString("</blockquote>\n")
		case listMarker(line) != nil:
			i = list(b, lines, i, depth)
		default:
			j := i
			for j < len(lines) && strings.TrimSpace(lines[j]) != "" && (j == i || !startsBlock(lines[j], depth)) {
				j++
			}
			b.WriteString("<p>")
			for k := i; k < j; k++ {
				if k > i {
					b.WriteString("<br>\n")
				}
				inline(b, strings.TrimSpace(lines[k]), depth, false)
			}
			b.WriteString("</p>\n")
			i = j
		}
	}
}

// startsBlock reports whether line begins another block than a paragraph.
func startsBlock(line string, depth int) bool {
	return isFence(line) || (quoteLine(line) && depth < maxDepth) || listMarker(line) != nil
}

func isFence(line string) bool {
	t := strings.TrimLeft(line, " ")
	return len(line)-len(t) < 4 && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"))
}

// fenceOf is the run of backticks or tildes that opens a fence; the closing one is at least as
// long.
func fenceOf(line string) string {
	t := strings.TrimSpace(line)
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	return t[:n]
}

func quoteLine(line string) bool {
	t := strings.TrimLeft(line, " ")
	return len(line)-len(t) < 4 && strings.HasPrefix(t, ">")
}

func unquote(line string) string {
	t := strings.TrimLeft(line, " ")[1:]
	return strings.TrimPrefix(t, " ")
}

// marker is the start of a list item: ordered or not, its number, and where its text begins.
type marker struct {
	ordered bool
	num     int
	text    int
}

// listMarker parses "- ", "* ", "+ " or "12. " / "12) " at the start of line (up to three
// spaces in); nil when line is no list item.
func listMarker(line string) *marker {
	t := strings.TrimLeft(line, " ")
	ind := len(line) - len(t)
	if ind > 3 || t == "" {
		return nil
	}
	if (t[0] == '-' || t[0] == '*' || t[0] == '+') && len(t) > 1 && t[1] == ' ' && strings.TrimSpace(t[2:]) != "" {
		// "---" and "* * *" are rules elsewhere; here a line of only marks is text.
		return &marker{text: ind + 2}
	}
	n := 0
	for n < len(t) && n < 9 && t[n] >= '0' && t[n] <= '9' {
		n++
	}
	if n > 0 && n+1 < len(t) && (t[n] == '.' || t[n] == ')') && t[n+1] == ' ' && strings.TrimSpace(t[n+2:]) != "" {
		num, _ := strconv.Atoi(t[:n])
		return &marker{ordered: true, num: num, text: ind + n + 2}
	}
	return nil
}

// list writes the list that starts at lines[i] and returns the index after it. An item goes on
// over the indented lines that follow it.
func list(b *strings.Builder, lines []string, i, depth int) int {
	first := listMarker(lines[i])
	tag := "ul"
	if first.ordered {
		tag = "ol"
	}
	b.WriteString("<" + tag)
	if first.ordered && first.num != 1 {
		b.WriteString(` start="` + strconv.Itoa(first.num) + `"`)
	}
	b.WriteString(">\n")
	for i < len(lines) {
		m := listMarker(lines[i])
		if m == nil || m.ordered != first.ordered {
			break
		}
		text := []string{strings.TrimSpace(lines[i][m.text:])}
		i++
		for i < len(lines) && strings.HasPrefix(lines[i], "  ") && strings.TrimSpace(lines[i]) != "" && listMarker(lines[i]) == nil {
			text = append(text, strings.TrimSpace(lines[i]))
			i++
		}
		b.WriteString("<li>")
		for k, t := range text {
			if k > 0 {
				b.WriteString("<br>\n")
			}
			inline(b, t, depth, false)
		}
		b.WriteString("</li>\n")
	}
	b.WriteString("</" + tag + ">\n")
	return i
}

// inline writes the spans of s: escapes, code, emphasis, links, bare URLs and mentions. Inside a
// link's text (noLinks) no other link is made.
func inline(b *strings.Builder, s string, depth int, noLinks bool) {
	if depth > maxDepth {
		b.WriteString(html.EscapeString(s))
		return
	}
	var (
		plain   = 0                 // start of the text not yet written
		noClose = map[string]bool{} // delimiters with no closer after the current position
		closeSq = -1                // index of the next ']' at or after i, cached
		href    string              // the link that ']' closes, when a safe (url) follows it
		hrefEnd = -1                // where that link's source ends; -1 when it is no link
	)
	flush := func(end int) {
		if end > plain {
			b.WriteString(html.EscapeString(s[plain:end]))
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && isPunct(s[i+1]):
			flush(i)
			b.WriteString(html.EscapeString(s[i+1 : i+2]))
			i += 2
			plain = i
			continue
		case c == '`':
			n := run(s, i, '`')
			delim := s[i : i+n]
			if !noClose[delim] {
				if end := closingRun(s, i+n, n); end >= 0 {
					flush(i)
					code := s[i+n : end]
					if len(code) > 1 && code[0] == ' ' && code[len(code)-1] == ' ' && strings.TrimSpace(code) != "" {
						code = code[1 : len(code)-1]
					}
					b.WriteString("<code>" + html.EscapeString(code) + "</code>")
					i = end + n
					plain = i
					continue
				}
				noClose[delim] = true
			}
			i += n
			continue
		case c == '*' || c == '_':
			if end, n, ok := emphasis(s, i, noClose); ok {
				flush(i)
				tag := "em"
				if n == 2 {
					tag = "strong"
				}
				b.WriteString("<" + tag + ">")
				inline(b, s[i+n:end], depth+1, noLinks)
				b.WriteString("</" + tag + ">")
				i = end + n
				plain = i
				continue
			}
			i += run(s, i, c)
			continue
		case c == '[' && !noLinks:
			if closeSq < i {
				// The next ']' and what follows it are worked out once for all the '[' before it.
				closeSq, href, hrefEnd = len(s), "", -1 // none: never look again
				if k := strings.IndexByte(s[i:], ']'); k >= 0 {
					closeSq = i + k
					if closeSq+1 < len(s) && s[closeSq+1] == '(' {
						if k := strings.IndexByte(s[closeSq+2:], ')'); k >= 0 {
							if u, ok := safeURL(strings.TrimSpace(s[closeSq+2:closeSq+2+k]), true); ok {
								href, hrefEnd = u, closeSq+2+k+1
							}
						}
					}
				}
			}
			if hrefEnd > 0 && closeSq > i+1 {
				flush(i)
				b.WriteString(`<a href="` + html.EscapeString(href) + `" rel="noopener nofollow">`)
				inline(b, s[i+1:closeSq], depth+1, true)
				b.WriteString("</a>")
				i = hrefEnd
				plain = i
				continue
			}
		case c == '<' && !noLinks:
			if k := strings.IndexByte(s[i:], '>'); k > 1 {
				if href, ok := safeURL(s[i+1:i+k], true); ok && !strings.ContainsAny(s[i+1:i+k], " <") {
					flush(i)
					link(b, href)
					i += k + 1
					plain = i
					continue
				}
			}
		case (c == 'h' || c == 'H') && !noLinks && (i == 0 || !isWordByte(s[i-1])):
			if end := bareURL(s, i); end > i {
				if href, ok := safeURL(s[i:end], false); ok {
					flush(i)
					link(b, href)
					i = end
					plain = i
					continue
				}
			}
		case c == '@' && (i == 0 || !isHandleByte(s[i-1]) && s[i-1] != '@'):
			j := i + 1
			for j < len(s) && isHandleByte(s[j]) {
				j++
			}
			h := strings.TrimRight(s[i+1:j], ".-")
			if h != "" && len(h) <= 64 {
				flush(i)
				b.WriteString(`<span class="mention">@` + html.EscapeString(h) + "</span>")
				i += 1 + len(h)
				plain = i
				continue
			}
		}
		i++
	}
	flush(len(s))
}

// link writes an autolink: its text is the URL.
func link(b *strings.Builder, href string) {
	e := html.EscapeString(href)
	b.WriteString(`<a href="` + e + `" rel="noopener nofollow">` + e + "</a>")
}

// emphasis finds the emphasis that opens at s[i] ("**", "__", "*" or "_"): the index of its
// closer and the delimiter's length. Underscores only count at word edges (snake_case stays).
// noClose remembers the delimiters that have no closer further on, so that a long run of
// openers costs linear time.
func emphasis(s string, i int, noClose map[string]bool) (end, n int, ok bool) {
	c := s[i]
	if c == '_' && i > 0 && isWordByte(s[i-1]) {
		return 0, 0, false
	}
	for _, n := range []int{2, 1} {
		if i+n > len(s) || strings.Count(s[i:i+n], string(c)) != n {
			continue
		}
		delim := s[i : i+n]
		if noClose[delim] {
			continue
		}
		if i+n >= len(s) || s[i+n] == ' ' || (n == 1 && s[i+n] == c) {
			continue
		}
		// A closer's fitness depends on its own place only, so when none fits after this
		// opener, none fits after a later one either.
		for from := i + n; from < len(s); {
			k := strings.Index(s[from:], delim)
			if k < 0 {
				break
			}
			e := from + k
			ok := s[e-1] != ' ' && e > i+n
			if n == 1 && e+1 < len(s) && s[e+1] == c {
				ok = false // part of a longer run: not this closer
			}
			if c == '_' && e+n < len(s) && isWordByte(s[e+n]) {
				ok = false
			}
			if ok {
				return e, n, true
			}
			from = e + n
			if n == 1 {
				from = e + run(s, e, c)
			}
		}
		noClose[delim] = true
	}
	return 0, 0, false
}

// run is the length of the run of c at s[i].
func run(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

// closingRun finds a run of exactly n backticks at or after from; -1 when there is none.
func closingRun(s string, from, n int) int {
	for from < len(s) {
		k := strings.IndexByte(s[from:], '`')
		if k < 0 {
			return -1
		}
		at := from + k
		m := run(s, at, '`')
		if m == n {
			return at
		}
		from = at + m
	}
	return -1
}

// bareURL is the end of the http(s) URL that starts at s[i], or i when none does. Trailing
// punctuation belongs to the sentence, and a closing parenthesis without an opening one too.
func bareURL(s string, i int) int {
	rest := s[i:]
	if !(hasPrefixFold(rest, "http://") || hasPrefixFold(rest, "https://")) {
		return i
	}
	j := i
	for j < len(s) && s[j] > ' ' && s[j] != '<' && s[j] != '>' && s[j] != '"' && s[j] != '`' {
		j++
	}
	for j > i {
		last := s[j-1]
		if strings.IndexByte(".,;:!?'*_", last) >= 0 {
			j--
			continue
		}
		if last == ')' && strings.Count(s[i:j], "(") < strings.Count(s[i:j], ")") {
			j--
			continue
		}
		break
	}
	return j
}

// safeURL returns the URL a link may point to: an absolute http or https URL with a host, or a
// mailto (when mailto is allowed); anything else (javascript:, data:, relative paths, control
// characters) is no link.
func safeURL(raw string, mailto bool) (string, bool) {
	if raw == "" || len(raw) > 2048 {
		return "", false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] <= ' ' || raw[i] == 0x7f {
			return "", false
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		if u.Host == "" || u.Opaque != "" {
			return "", false
		}
	case "mailto":
		if !mailto || u.Opaque == "" {
			return "", false
		}
	default:
		return "", false
	}
	return raw, true
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func isPunct(c byte) bool {
	return c > ' ' && c < 0x7f && !isWordByte(c)
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// isHandleByte is a byte of an @handle, as messaging scans them.
func isHandleByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}
