package markdown

import (
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
		{"an attribute is text", `<img src=x onerror="alert(1)">`, "<p>&lt;img src=x onerror=&#34;alert(1)&#34;&gt;</p>\n"},
		{"entities are escaped", "a & b 'c'", "<p>a &amp; b &#39;c&#39;</p>\n"},
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
		{"fenced code", "```go\nif a < b {\n}\n```", "<pre><code>if a &lt; b {\n}</code></pre>\n"},
		{"fenced code without end", "```\n<b>", "<pre><code>&lt;b&gt;</code></pre>\n"},
		{"fenced code between paragraphs", "a\n```\nx\n```\nb", "<p>a</p>\n<pre><code>x</code></pre>\n<p>b</p>\n"},
		{"a link", "[bothy](https://bothy.dev/x?a=1&b=2)", `<p><a href="https://bothy.dev/x?a=1&amp;b=2" rel="noopener nofollow">bothy</a></p>` + "\n"},
		{"a link with bold text", "[**b**](http://x.example)", `<p><a href="http://x.example" rel="noopener nofollow"><strong>b</strong></a></p>` + "\n"},
		{"a mailto link", "[mail](mailto:a@b.example)", `<p><a href="mailto:a@b.example" rel="noopener nofollow">mail</a></p>` + "\n"},
		{"a javascript link is text", "[x](javascript:alert(1))", "<p>[x](javascript:alert(1))</p>\n"},
		{"a javascript link in capitals is text", "[x](JaVaScRiPt:alert(1))", "<p>[x](JaVaScRiPt:alert(1))</p>\n"},
		{"a data link is text", "[x](data:text/html,hi)", "<p>[x](data:text/html,hi)</p>\n"},
		{"a relative link is text", "[x](/console/)", "<p>[x](/console/)</p>\n"},
		{"a link with a quote is escaped", `[x](https://a.example/"onmouseover=)`, `<p><a href="https://a.example/&#34;onmouseover=" rel="noopener nofollow">x</a></p>` + "\n"},
		{"a bare url", "see https://bothy.dev/docs.", `<p>see <a href="https://bothy.dev/docs" rel="noopener nofollow">https://bothy.dev/docs</a>.</p>` + "\n"},
		{"a bare url in parentheses", "(https://a.example/x)", `<p>(<a href="https://a.example/x" rel="noopener nofollow">https://a.example/x</a>)</p>` + "\n"},
		{"a url with parentheses", "https://a.example/W_(x)", `<p><a href="https://a.example/W_(x)" rel="noopener nofollow">https://a.example/W_(x)</a></p>` + "\n"},
		{"an angle autolink", "<https://a.example>", `<p><a href="https://a.example" rel="noopener nofollow">https://a.example</a></p>` + "\n"},
		{"a url inside a word is text", "xhttps://a.example", "<p>xhttps://a.example</p>\n"},
		{"a javascript url is text", "javascript:alert(1)", "<p>javascript:alert(1)</p>\n"},
		{"a mention", "hi @alice.", `<p>hi <span class="mention">@alice</span>.</p>` + "\n"},
		{"an address is no mention", "a@b.example", "<p>a@b.example</p>\n"},
		{"a list", "- one\n- two", "<ul>\n<li>one</li>\n<li>two</li>\n</ul>\n"},
		{"a list with a continuation", "- one\n  more\n- two", "<ul>\n<li>one<br>\nmore</li>\n<li>two</li>\n</ul>\n"},
		{"an ordered list", "1. a\n2. b", "<ol>\n<li>a</li>\n<li>b</li>\n</ol>\n"},
		{"an ordered list from 3", "3) a", "<ol start=\"3\">\n<li>a</li>\n</ol>\n"},
		{"a list after a paragraph", "items:\n* a", "<p>items:</p>\n<ul>\n<li>a</li>\n</ul>\n"},
		{"a blockquote", "> quoted\n> **more**", "<blockquote>\n<p>quoted<br>\n<strong>more</strong></p>\n</blockquote>\n"},
		{"a nested blockquote", ">> deep", "<blockquote>\n<blockquote>\n<p>deep</p>\n</blockquote>\n</blockquote>\n"},
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

// TestRenderIsLinear holds that hostile input (long runs of openers without closers) renders in
// linear time: a message of the largest size takes milliseconds, not seconds.
func TestRenderIsLinear(t *testing.T) {
	long := strings.Repeat("[", 30_000) + "](https://a.example/" + strings.Repeat("x", 2000) + ")"
	for _, unit := range []string{"*a ", "**a ", "[a", "[a](", "`a ", "_a ", "https://", "@", "> ", "- ", "*a *b ", "a** ", "<https:", long} {
		src := strings.Repeat(unit, max(1, 40_000/len(unit)))
		start := time.Now()
		Render(src)
		if d := time.Since(start); d > 300*time.Millisecond {
			t.Errorf("%d bytes of %q took %v", len(src), unit, d)
		}
	}
}

// FuzzRender holds the promise of the package: whatever the input, the output holds only the
// tags and attributes the package writes, no script, no on… attribute and no link that is not
// http, https or mailto.
func FuzzRender(f *testing.F) {
	for _, s := range []string{"<script>alert(1)</script>", "[x](javascript:alert(1))", "**a *b* c**", "```\n<b>\n```",
		"> - [a](https://x.example) @bob", "<https://a.example/\"onclick=\"x>", "[a](https://a.example/'onerror='x)",
		"https://a.example/<script>", "[x](java\tscript:1)", "[x](&#106;avascript:1)", "_a_ `b` \\<i>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out := string(Render(src))
		if msg := checkSafe(out); msg != "" {
			t.Fatalf("Render(%q) = %q: %s", src, out, msg)
		}
	})
}

var allowedTags = map[string]map[string]bool{
	"p": {}, "br": {}, "strong": {}, "em": {}, "code": {}, "pre": {}, "ul": {}, "ol": {"start": true}, "li": {},
	"blockquote": {}, "span": {"class": true}, "a": {"href": true, "rel": true},
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
				if val != "noopener nofollow" {
					return "rel " + val
				}
			case "class":
				if val != "mention" {
					return "class " + val
				}
			}
		}
		if name == "a" && !closing && !strings.Contains(tag, `rel="noopener nofollow"`) {
			return "a link without rel"
		}
	}
	return ""
}
