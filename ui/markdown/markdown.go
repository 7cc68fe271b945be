// Package markdown renders the Markdown of chat messages to HTML for the console, safely. The
// parser is goldmark: CommonMark with GitHub's extensions (tables, strikethrough, task lists and
// bare URLs made links), plus @mentions. A single line break is a line break, as in a chat.
//
// The console marks the output safe (templ.Raw) on the strength of this package alone, so it
// has no escape hatch:
//   - raw HTML is not parsed at all: "<b>" in a message is shown as the text "<b>";
//   - a link goes only to an http or https URL with a host, or to a mailto address, and carries
//     rel="noopener nofollow ugc"; any other link (javascript:, data:, vbscript:, relative
//     paths) is shown as the text that was written;
//   - an image is not loaded from the message (that would tell a stranger who reads it): it is
//     a link to the image, under its alt text;
//   - every character of the source is HTML-escaped where it lands.
//
// goldmark is the only third-party package the console's rendering uses, and only here.
package markdown

import (
	"bytes"
	"net/url"
	"reflect"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// HTML is markup this package made from Markdown; only it produces values of the type, so a
// page that writes an HTML unescaped knows where it came from.
type HTML string

// linkRel is the rel of every link in a message: the page it opens gets no handle on the
// console, and search engines do not credit it to the hub.
const linkRel = "noopener nofollow ugc"

var md = newMarkdown()

// Render renders src. It never fails: what it does not understand is text. The same text gives
// the same markup, so what was rendered lately is kept (rendered): the console shows the same
// page of messages to every reader and at every load.
func Render(src string) HTML {
	if h, ok := rendered.get(src); ok {
		return h
	}
	h := renderGuarded(src)
	rendered.put(src, h)
	return h
}

// renderGuarded is render behind a guard against a defect of the parser.
func renderGuarded(src string) (out HTML) {
	defer func() {
		// A defect of the parser must not take the page down: the message is then shown as text.
		if recover() != nil {
			out = asText(src)
		}
	}()
	return render(src)
}

// render is Render without its guard, for the fuzz test to see a panic.
func render(src string) HTML {
	var b bytes.Buffer
	b.Grow(len(src) + len(src)/4 + 16)
	if err := md.Convert([]byte(src), &b); err != nil {
		return asText(src) // converting into a buffer does not fail; should it, text it is
	}
	return HTML(b.String())
}

// cacheBytes bounds what the cache of rendered messages holds, source and markup counted: a
// few thousand messages of chat length.
const cacheBytes = 8 << 20

var rendered = &cache{limit: cacheBytes}

// cache keeps the markup of recently rendered texts in two generations: a text is looked up in
// the current one, then in the one before (and moved up); when the current one has grown to
// half the limit it becomes the one before and the oldest is dropped whole. That bounds the
// memory without keeping a recency list, at the price of forgetting texts not seen for a while.
type cache struct {
	mu        sync.Mutex
	limit     int
	size      int // bytes in cur
	cur, prev map[string]HTML
}

func (c *cache) get(src string) (HTML, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.cur[src]; ok {
		return h, true
	}
	if h, ok := c.prev[src]; ok {
		c.add(src, h)
		return h, true
	}
	return "", false
}

func (c *cache) put(src string, h HTML) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.add(src, h)
}

func (c *cache) add(src string, h HTML) {
	n := len(src) + len(h)
	if n > c.limit/16 {
		return // one huge message must not flush the others
	}
	if c.size+n > c.limit/2 {
		c.prev, c.cur, c.size = c.cur, nil, 0
	}
	if c.cur == nil {
		c.cur = map[string]HTML{}
	}
	if _, ok := c.cur[src]; !ok {
		c.cur[src] = h
		c.size += n
	}
}

// asText is src as one escaped paragraph.
func asText(src string) HTML {
	return HTML("<p>" + escape(src) + "</p>\n")
}

func newMarkdown() goldmark.Markdown {
	// Raw HTML is left out of the parsers rather than dropped by the renderer: it stays text.
	noHTML := func(defaults []util.PrioritizedValue, drop any) []util.PrioritizedValue {
		var kept []util.PrioritizedValue
		for _, v := range defaults {
			if reflect.TypeOf(v.Value) != reflect.TypeOf(drop) {
				kept = append(kept, v)
			}
		}
		return kept
	}
	inlines := noHTML(parser.DefaultInlineParsers(), parser.NewRawHTMLParser())
	for i, v := range inlines {
		if reflect.TypeOf(v.Value) == reflect.TypeOf(parser.NewLinkParser()) {
			inlines[i].Value = boundedLinks{v.Value.(parser.InlineParser)}
		}
	}
	blocks := noHTML(parser.DefaultBlockParsers(), parser.NewHTMLBlockParser())
	for i, v := range blocks {
		switch reflect.TypeOf(v.Value) {
		case reflect.TypeOf(parser.NewBlockquoteParser()), reflect.TypeOf(parser.NewListParser()):
			blocks[i].Value = shallow{v.Value.(parser.BlockParser)}
		}
	}
	p := parser.NewParser(
		parser.WithBlockParsers(blocks...),
		parser.WithInlineParsers(inlines...),
		parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
	)
	return goldmark.New(
		goldmark.WithParser(p),
		goldmark.WithExtensions(
			extension.Strikethrough,
			extension.TaskList,
			extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
			extension.NewLinkify(extension.WithLinkifyAllowedProtocols([]string{"http:", "https:"})),
			mentions{},
		),
		goldmark.WithRendererOptions(html.WithHardWraps()),
	)
}

// maxLinkScan bounds how far past a "](" the link parser looks for the destination. goldmark
// scans the rest of the line for it at each "](", which costs quadratic time on a long line of
// them; a destination this long would not be a safe link anyway (see safeURL).
const maxLinkScan = 2560

// boundedLinks is goldmark's link parser, shown at most maxLinkScan bytes of the line.
type boundedLinks struct{ parser.InlineParser }

func (p boundedLinks) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	return p.InlineParser.Parse(parent, boundedReader{block}, pc)
}

// CloseBlock lets goldmark's link parser forget, at the end of a paragraph, the brackets that
// closed no link; without it a "]" in a later paragraph would close them.
func (p boundedLinks) CloseBlock(parent ast.Node, block text.Reader, pc parser.Context) {
	if c, ok := p.InlineParser.(parser.CloseBlocker); ok {
		c.CloseBlock(parent, block, pc)
	}
}

// boundedReader is a text.Reader whose lines end at most maxLinkScan bytes ahead.
type boundedReader struct{ text.Reader }

func (r boundedReader) PeekLine() ([]byte, text.Segment) {
	line, seg := r.Reader.PeekLine()
	if len(line) > maxLinkScan {
		line, seg = line[:maxLinkScan], seg.WithStop(seg.Start+maxLinkScan)
	}
	return line, seg
}

// maxDepth bounds the nesting of blockquotes and lists; a deeper ">", "-" or "1." is text.
// goldmark's cost grows with the square of the depth, and a chat has no use for more.
const maxDepth = 8

// shallow is goldmark's blockquote or list parser, opening no block maxDepth deep.
type shallow struct{ parser.BlockParser }

func (p shallow) Open(parent ast.Node, reader text.Reader, pc parser.Context) (ast.Node, parser.State) {
	depth := 0
	for n := parent; n != nil; n = n.Parent() {
		if n.Kind() == ast.KindBlockquote || n.Kind() == ast.KindList {
			if depth++; depth >= maxDepth {
				return nil, parser.NoChildren
			}
		}
	}
	return p.BlockParser.Open(parent, reader, pc)
}

// mentions is the goldmark extension for @handles and for the link policy of messages.
type mentions struct{}

func (mentions) Extend(m goldmark.Markdown) {
	m.Parser().AddOptions(
		parser.WithInlineParsers(util.Prioritized(mentionParser{}, 900)),
		parser.WithASTTransformers(util.Prioritized(linkPolicy{}, 100)),
	)
	m.Renderer().AddOptions(renderer.WithNodeRenderers(util.Prioritized(nodeRenderer{}, 100)))
}

// kindMention is the node of an @handle, kindLiteral that of text written as it is (the source
// of a link that may not be one).
var (
	kindMention = ast.NewNodeKind("Mention")
	kindLiteral = ast.NewNodeKind("Literal")
)

type mention struct {
	ast.BaseInline
	handle string
}

func (n *mention) Kind() ast.NodeKind { return kindMention }
func (n *mention) Dump(source []byte, level int) {
	ast.DumpHelper(n, source, level, map[string]string{"Handle": n.handle}, nil)
}

type literal struct {
	ast.BaseInline
	text string
}

func (n *literal) Kind() ast.NodeKind { return kindLiteral }
func (n *literal) Dump(source []byte, level int) {
	ast.DumpHelper(n, source, level, map[string]string{"Text": n.text}, nil)
}

// maxHandle is the longest handle a mention may name.
const maxHandle = 64

// mentionParser reads "@handle" as messaging scans it: the @ follows no handle character and no
// other @ (so a@b.example is no mention), the handle is letters, digits, '_', '-' and '.', and a
// trailing '.' or '-' belongs to the sentence.
type mentionParser struct{}

func (mentionParser) Trigger() []byte { return []byte{'@'} }

func (mentionParser) Parse(_ ast.Node, block text.Reader, _ parser.Context) ast.Node {
	if prev := block.PrecendingCharacter(); prev < 0x80 && (isHandleByte(byte(prev)) || prev == '@') {
		return nil
	}
	line, _ := block.PeekLine()
	j := 1
	for j < len(line) && isHandleByte(line[j]) {
		j++
	}
	h := strings.TrimRight(string(line[1:j]), ".-")
	if h == "" || len(h) > maxHandle {
		return nil
	}
	block.Advance(1 + len(h))
	return &mention{handle: h}
}

// isHandleByte is a byte of an @handle, as messaging scans them.
func isHandleByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// linkPolicy gives each safe link its rel and turns every other link back into the text that was
// written; an image becomes a link to it.
type linkPolicy struct{}

func (linkPolicy) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	source := reader.Source()
	var links []ast.Node
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			switch n.Kind() {
			case ast.KindLink, ast.KindAutoLink, ast.KindImage:
				links = append(links, n)
			}
		}
		return ast.WalkContinue, nil
	})
	for _, n := range links {
		switch n := n.(type) {
		case *ast.Link:
			if safeDestination(n.Destination) {
				n.SetAttributeString("rel", []byte(linkRel))
				continue
			}
			unlink(n, "[", "]("+string(n.Destination)+")")
		case *ast.AutoLink:
			u := string(n.URL(source))
			if n.AutoLinkType == ast.AutoLinkEmail && !hasPrefixFold(u, "mailto:") {
				u = "mailto:" + u
			}
			if safeURL(u) {
				n.SetAttributeString("rel", []byte(linkRel))
				continue
			}
			n.Parent().ReplaceChild(n.Parent(), n, &literal{text: string(n.Label(source))})
		case *ast.Image:
			if !safeDestination(n.Destination) {
				unlink(n, "![", "]("+string(n.Destination)+")")
				continue
			}
			a := ast.NewLink()
			a.Destination = n.Destination
			a.SetAttributeString("rel", []byte(linkRel))
			moveChildren(n, a)
			if !a.HasChildren() {
				a.AppendChild(a, &literal{text: string(n.Destination)})
			}
			n.Parent().ReplaceChild(n.Parent(), n, a)
		}
	}
}

// unlink replaces n by its children between open and close, as text.
func unlink(n ast.Node, open, close string) {
	parent := n.Parent()
	parent.InsertBefore(parent, n, &literal{text: open})
	for c := n.FirstChild(); c != nil; c = n.FirstChild() {
		parent.InsertBefore(parent, n, c)
	}
	parent.ReplaceChild(parent, n, &literal{text: close})
}

func moveChildren(from, to ast.Node) {
	for c := from.FirstChild(); c != nil; c = from.FirstChild() {
		to.AppendChild(to, c)
	}
}

// nodeRenderer writes mentions and literals.
type nodeRenderer struct{}

func (nodeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(kindMention, func(w util.BufWriter, _ []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			_, _ = w.WriteString(`<span class="mention">@` + escape(n.(*mention).handle) + "</span>")
		}
		return ast.WalkContinue, nil
	})
	reg.Register(kindLiteral, func(w util.BufWriter, _ []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			_, _ = w.WriteString(escape(n.(*literal).text))
		}
		return ast.WalkContinue, nil
	})
}

func escape(s string) string {
	return string(util.EscapeHTML([]byte(s)))
}

// safeDestination reports whether a link's destination is a safe URL both as written and as
// the renderer writes it (entities resolved, escaped).
func safeDestination(dest []byte) bool {
	return safeURL(string(dest)) && safeURL(string(util.URLEscape(dest, true)))
}

// safeURL reports whether a link may point to raw: an absolute http or https URL with a host, or
// a mailto address; anything else (javascript:, data:, vbscript:, relative paths, control
// characters) is no link.
func safeURL(raw string) bool {
	if raw == "" || len(raw) > 2048 {
		return false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] <= ' ' || raw[i] == 0x7f {
			return false
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return u.Host != "" && u.Opaque == ""
	case "mailto":
		return u.Opaque != ""
	}
	return false
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
