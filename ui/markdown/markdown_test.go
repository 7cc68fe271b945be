package markdown

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRender(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"a paragraph", "hello", "<p>hello</p>\n"},
		{"two paragraphs", "one\n\ntwo", "<p>one</p>\n<p>two</p>\n"},
		{"a line break", "one\ntwo", "<p>one<br>\ntwo</p>\n"},
		{"windows line ends", "one\r\ntwo", "<p>one<br>\ntwo</p>\n"},
		{"raw html is text", "<script>alert(1)</script>", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n"},
		{"an attribute is text", `<img src=x onerror="alert(1)">`, "<p>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</p>\n"},
		{"entities are escaped", "a & b 'c'", "<p>a &amp; b 'c'</p>\n"},
		{"bold", "**bold** text", "<p><strong>bold</strong> text</p>\n"},
		{"bold with underscores", "__bold__", "<p><strong>bold</strong></p>\n"},
		{"italic", "*it* and _it_", "<p><em>it</em> and <em>it</em></p>\n"},
		{"bold inside italic", "*a **b** c*", "<p><em>a <strong>b</strong> c</em></p>\n"},
		{"snake_case stays", "snake_case_name", "<p>snake_case_name</p>\n"},
		{"a lone star", "2 * 3 = 6", "<p>2 * 3 = 6</p>\n"},
		{"unclosed bold", "**open", "<p>**open</p>\n"},
		{"code", "use `x < y`", "<p>use <code>x &lt; y</code></p>\n"},
		{"code keeps stars", "`**a**`", "<p><code>**a**</code></p>\n"},
		{"double backticks", "``a ` b``", "<p><code>a ` b</code></p>\n"},
		{"unclosed code", "`open", "<p>`open</p>\n"},
		{"escapes", `\*not\* \[x\]`, "<p>*not* [x]</p>\n"},
		{"fenced code", "```go\nif a < b {\n}\n```", "<pre><code class=\"language-go\">if a &lt; b {\n}\n</code></pre>\n"},
		{"fenced code without end", "```\n<b>", "<pre><code>&lt;b&gt;\n</code></pre>\n"},
		{"fenced code between paragraphs", "a\n```\nx\n```\nb", "<p>a</p>\n<pre><code>x\n</code></pre>\n<p>b</p>\n"},
		{"a link", "[bothy](https://bothy.dev/x?a=1&b=2)", `<p><a href="https://bothy.dev/x?a=1&amp;b=2" rel="noopener nofollow ugc">bothy</a></p>` + "\n"},
		{"a link with bold text", "[**b**](http://x.example)", `<p><a href="http://x.example" rel="noopener nofollow ugc"><strong>b</strong></a></p>` + "\n"},
		{"a mailto link", "[mail](mailto:a@b.example)", `<p><a href="mailto:a@b.example" rel="noopener nofollow ugc">mail</a></p>` + "\n"},
		{"a javascript link is text", "[x](javascript:alert(1))", "<p>[x](javascript:alert(1))</p>\n"},
		{"a javascript link in capitals is text", "[x](JaVaScRiPt:alert(1))", "<p>[x](JaVaScRiPt:alert(1))</p>\n"},
		{"a data link is text", "[x](data:text/html,hi)", "<p>[x](data:text/html,hi)</p>\n"},
		{"a relative link is text", "[x](/console/)", "<p>[x](/console/)</p>\n"},
		{"a link with a quote is escaped", `[x](https://a.example/"onmouseover=)`, `<p><a href="https://a.example/%22onmouseover=" rel="noopener nofollow ugc">x</a></p>` + "\n"},
		{"a bare url", "see https://bothy.dev/docs.", `<p>see <a href="https://bothy.dev/docs" rel="noopener nofollow ugc">https://bothy.dev/docs</a>.</p>` + "\n"},
		{"a bare url in parentheses", "(https://a.example/x)", `<p>(<a href="https://a.example/x" rel="noopener nofollow ugc">https://a.example/x</a>)</p>` + "\n"},
		{"a url with parentheses", "https://a.example/W_(x)", `<p><a href="https://a.example/W_(x)" rel="noopener nofollow ugc">https://a.example/W_(x)</a></p>` + "\n"},
		{"an angle autolink", "<https://a.example>", `<p><a href="https://a.example" rel="noopener nofollow ugc">https://a.example</a></p>` + "\n"},
		{"a url inside a word is text", "xhttps://a.example", "<p>xhttps://a.example</p>\n"},
		{"a javascript url is text", "javascript:alert(1)", "<p>javascript:alert(1)</p>\n"},
		{"a mention", "hi @alice.", `<p>hi <span class="mention">@alice</span>.</p>` + "\n"},
		{"an address is no mention but a mail link", "a@b.example", `<p><a href="mailto:a@b.example" rel="noopener nofollow ugc">a@b.example</a></p>` + "\n"},
		{"a list", "- one\n- two", "<ul>\n<li>one</li>\n<li>two</li>\n</ul>\n"},
		{"a list with a continuation", "- one\n  more\n- two", "<ul>\n<li>one<br>\nmore</li>\n<li>two</li>\n</ul>\n"},
		{"an ordered list", "1. a\n2. b", "<ol>\n<li>a</li>\n<li>b</li>\n</ol>\n"},
		{"an ordered list from 3", "3) a", "<ol start=\"3\">\n<li>a</li>\n</ol>\n"},
		{"a list after a paragraph", "items:\n* a", "<p>items:</p>\n<ul>\n<li>a</li>\n</ul>\n"},
		{"a blockquote", "> quoted\n> **more**", "<blockquote>\n<p>quoted<br>\n<strong>more</strong></p>\n</blockquote>\n"},
		{"a nested blockquote", ">> deep", "<blockquote>\n<blockquote>\n<p>deep</p>\n</blockquote>\n</blockquote>\n"},
		{"a vbscript link is text", "[x](vbscript:msgbox(1))", "<p>[x](vbscript:msgbox(1))</p>\n"},
		{"a javascript link in angle brackets is text", "[x](<javascript:alert(1)>)", "<p>[x](javascript:alert(1))</p>\n"},
		{"a javascript reference link is text", "[x][r]\n\n[r]: javascript:alert(1)", "<p>[x](javascript:alert(1))</p>\n"},
		{"an entity-encoded javascript link is text", "[x](&#106;avascript:alert(1))", "<p>[x](&amp;#106;avascript:alert(1))</p>\n"},
		{"a javascript autolink is text", "<javascript:alert(1)>", "<p>javascript:alert(1)</p>\n"},
		{"a data autolink is text", "<data:text/html,hi>", "<p>data:text/html,hi</p>\n"},
		{"an ftp url is text", "ftp://a.example/x", "<p>ftp://a.example/x</p>\n"},
		{"a link keeps its title", `[x](https://a.example "the title")`, `<p><a href="https://a.example" title="the title" rel="noopener nofollow ugc">x</a></p>` + "\n"},
		{"a www address is a link", "www.bothy.dev/x", `<p><a href="http://www.bothy.dev/x" rel="noopener nofollow ugc">www.bothy.dev/x</a></p>` + "\n"},
		{"an image is a link under its alt text", "![a cat](https://a.example/cat.png)", `<p><a href="https://a.example/cat.png" rel="noopener nofollow ugc">a cat</a></p>` + "\n"},
		{"an image without alt text is a link under its url", "![](https://a.example/cat.png)", `<p><a href="https://a.example/cat.png" rel="noopener nofollow ugc">https://a.example/cat.png</a></p>` + "\n"},
		{"a javascript image is text", "![x](javascript:alert(1))", "<p>![x](javascript:alert(1))</p>\n"},
		{"raw html blocks are text", "<div>\nhi\n</div>", "<p>&lt;div&gt;<br>\nhi<br>\n&lt;/div&gt;</p>\n"},
		{"an html comment is text", "a <!-- b -->", "<p>a &lt;!-- b --&gt;</p>\n"},
		{"strikethrough", "~~gone~~ ~also~", "<p><del>gone</del> <del>also</del></p>\n"},
		{"a task list", "- [ ] todo\n- [x] done", "<ul>\n<li><input disabled=\"\" type=\"checkbox\"> todo</li>\n<li><input checked=\"\" disabled=\"\" type=\"checkbox\"> done</li>\n</ul>\n"},
		{"a table", "| a | b |\n|:--|--:|\n| 1 | 2 |", "<table>\n<thead>\n<tr>\n<th align=\"left\">a</th>\n<th align=\"right\">b</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td align=\"left\">1</td>\n<td align=\"right\">2</td>\n</tr>\n</tbody>\n</table>\n"},
		{"a heading and a rule", "# Title\n\n---", "<h1>Title</h1>\n<hr>\n"},
		{"mentions with dots and dashes", "@a.b. @c-d- @e_f", `<p><span class="mention">@a.b</span>. <span class="mention">@c-d</span>- <span class="mention">@e_f</span></p>` + "\n"},
		{"a mention in bold", "**@bob**", `<p><strong><span class="mention">@bob</span></strong></p>` + "\n"},
		{"a mention in a link", "[@bob](https://a.example)", `<p><a href="https://a.example" rel="noopener nofollow ugc"><span class="mention">@bob</span></a></p>` + "\n"},
		{"a mention in code is code", "`@bob`", "<p><code>@bob</code></p>\n"},
		{"a double at is no mention", "a@@bob", "<p>a@@bob</p>\n"},
		{"a handle too long is no mention", "@" + strings.Repeat("a", 65), "<p>@" + strings.Repeat("a", 65) + "</p>\n"},
		{"deep blockquotes stop nesting", strings.Repeat("> ", 10) + "x", strings.Repeat("<blockquote>\n", 8) + "<p>&gt; &gt; x</p>\n" + strings.Repeat("</blockquote>\n", 8)},
		{"a bracket does not close across paragraphs", "[\n\n]0", "<p>[</p>\n<p>]0</p>\n"},
		{"an empty message", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(Render(tt.in)); got != tt.want {
				t.Errorf("Render(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestRenderIsLinear holds that hostile input (long runs of openers without closers, deep
// nesting) renders in linear time. It compares how the time grows from a small message to one
// eight times as large, each the fastest of a few runs, so that a loaded machine slows both
// alike: linear growth is about 8x, quadratic 64x.
func TestRenderIsLinear(t *testing.T) {
	const small, large = 5_000, 40_000
	repeat := func(unit string) func(int) string {
		return func(n int) string { return strings.Repeat(unit, max(1, n/len(unit))) }
	}
	inputs := map[string]func(int) string{
		"many [ before one link": func(n int) string {
			return strings.Repeat("[", n*3/4) + "](https://a.example/" + strings.Repeat("x", n/20) + ")"
		},
	}
	for _, unit := range []string{"*a ", "**a ", "[a", "[a](", "![a](", "[a]((", "[[a]](", "[a](<", "[a][", "`a ", "_a ",
		"~~a ", "https://", "www.", "a@b.", "@", "@a", "> ", "- ", "+ ", "1. ", "- > + ", "*a *b ", "a** ", "<https:", "| a ", "[a]: "} {
		inputs[fmt.Sprintf("%q repeated", unit)] = repeat(unit)
	}
	fastest := func(src string) time.Duration {
		best := time.Duration(1<<63 - 1)
		for range 5 {
			start := time.Now()
			renderGuarded(src) // not Render: its cache would answer the repeats
			best = min(best, time.Since(start))
		}
		return best
	}
	for name, input := range inputs {
		t.Run(name, func(t *testing.T) {
			// A machine busy with other work can slow one size more than the other for a while,
			// so the growth is measured in up to three rounds and the lowest counts: quadratic
			// time grows about 64x in every round, linear time about 8x in the quiet ones.
			var report string
			for range 3 {
				tSmall, tLarge := fastest(input(small)), fastest(input(large))
				if tLarge < 5*time.Millisecond {
					return // too fast to measure growth, and harmless at the largest size
				}
				growth := float64(tLarge) / float64(max(tSmall, time.Microsecond))
				if growth <= 32 {
					return
				}
				report = fmt.Sprintf("%d bytes took %v, %d bytes %v: %.0fx for 8x the input", small, tSmall, large, tLarge, growth)
			}
			t.Error(report)
		})
	}
}

// FuzzRender holds the promise of the package: whatever the input, the parser does not panic
// (render has no guard) and the output holds only the tags and attributes the package writes, no
// script, no on… attribute and no link that is not http, https or mailto.
func FuzzRender(f *testing.F) {
	for _, s := range []string{"<script>alert(1)</script>", "[x](javascript:alert(1))", "**a *b* c**", "```\n<b>\n```",
		"> - [a](https://x.example) @bob", "<https://a.example/\"onclick=\"x>", "[a](https://a.example/'onerror='x)",
		"https://a.example/<script>", "[x](java\tscript:1)", "[x](&#106;avascript:1)", "_a_ `b` \\<i>",
		"<javascript:alert(1)>", "![x](data:text/html,<script>)", "[x][r]\n\n[r]: vbscript:x", "<img src=x onerror=alert(1)>",
		"- [x] ~~a~~ www.a.example\n\n| a |\n|:-:|\n| <b onclick=x> |", "```js onload=x\n<script>\n```", "# h @a.b\n\n---",
		"[a](https://a.example \"t\" onclick=\"x\")", "<div onmouseover=x>\n\n</div>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out := string(render(src))
		if msg := checkSafe(out); msg != "" {
			t.Fatalf("Render(%q) = %q: %s", src, out, msg)
		}
	})
}

var allowedTags = map[string]map[string]bool{
	"p": {}, "br": {}, "strong": {}, "em": {}, "del": {}, "code": {"class": true}, "pre": {}, "ul": {}, "ol": {"start": true},
	"li": {}, "blockquote": {}, "span": {"class": true}, "a": {"href": true, "rel": true, "title": true}, "hr": {},
	"h1": {}, "h2": {}, "h3": {}, "h4": {}, "h5": {}, "h6": {}, "table": {}, "thead": {}, "tbody": {}, "tr": {},
	"th": {"align": true}, "td": {"align": true}, "input": {"checked": true, "disabled": true, "type": true},
}

// checkSafe parses the tags of out and says what is wrong with them, "" when nothing.
func checkSafe(out string) string {
	lower := strings.ToLower(out)
	if strings.Contains(lower, "<script") {
		return "a script tag"
	}
	for i := 0; i < len(out); i++ {
		if out[i] == '>' {
			return "a > outside a tag"
		}
		if out[i] != '<' {
			continue
		}
		end := strings.IndexByte(out[i:], '>')
		if end < 0 {
			return "an unclosed tag"
		}
		tag := out[i+1 : i+end]
		i += end
		if strings.ContainsAny(tag, "<") {
			return "a < inside a tag"
		}
		closing := strings.HasPrefix(tag, "/")
		tag = strings.TrimPrefix(tag, "/")
		name, attrs, _ := strings.Cut(tag, " ")
		allowed, ok := allowedTags[name]
		if !ok {
			return "the tag " + name
		}
		if closing && attrs != "" {
			return "a closing tag with attributes"
		}
		for attrs != "" {
			key, rest, ok := strings.Cut(attrs, `="`)
			if !ok {
				return "a malformed attribute in " + tag
			}
			val, rest2, ok := strings.Cut(rest, `"`)
			if !ok {
				return "an unterminated attribute in " + tag
			}
			attrs = strings.TrimPrefix(rest2, " ")
			if !allowed[key] || strings.HasPrefix(strings.ToLower(key), "on") {
				return "the attribute " + key + " on " + name
			}
			switch key {
			case "href":
				v := strings.ToLower(val)
				if !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "mailto:") {
					return "the link " + val
				}
			case "rel":
				if val != "noopener nofollow ugc" {
					return "rel " + val
				}
			case "class":
				if !(name == "span" && val == "mention") && !(name == "code" && strings.HasPrefix(val, "language-") && !strings.Contains(val, " ")) {
					return "class " + val
				}
			case "type":
				if val != "checkbox" {
					return "type " + val
				}
			}
		}
		if name == "a" && !closing && !strings.Contains(tag, `rel="noopener nofollow ugc"`) {
			return "a link without rel"
		}
	}
	return ""
}

func TestRenderCache(t *testing.T) {
	t.Run("a text rendered again gives the same markup", func(t *testing.T) {
		src := "**cached** @ada"
		first := Render(src)
		if again := Render(src); again != first || again != render(src) {
			t.Fatalf("again %q, first %q, uncached %q", again, first, render(src))
		}
	})
	t.Run("holds at most its limit and keeps what was used lately", func(t *testing.T) {
		c := &cache{limit: 1000}
		c.put("kept", "<p>kept</p>\n")
		for i := range 200 {
			c.put(fmt.Sprintf("text %d", i), "<p>x</p>\n")
			if _, ok := c.get("kept"); !ok {
				t.Fatalf("a text used at every step was dropped after %d others", i)
			}
		}
		total := 0
		for _, m := range []map[string]HTML{c.cur, c.prev} {
			for k, v := range m {
				total += len(k) + len(v)
			}
		}
		if total > c.limit {
			t.Fatalf("the cache holds %d bytes, limit %d", total, c.limit)
		}
		if _, ok := c.get("text 0"); ok {
			t.Fatal("an old text no one asked for is still there")
		}
	})
	t.Run("a text too large for it is not kept", func(t *testing.T) {
		c := &cache{limit: 1000}
		c.put(strings.Repeat("a", 100), "<p>…</p>")
		if _, ok := c.get(strings.Repeat("a", 100)); ok {
			t.Fatal("kept a text over a sixteenth of the limit")
		}
	})
}
