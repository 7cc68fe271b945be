package components

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestAttachments(t *testing.T) {
	render := func(t *testing.T, v MessageView) string {
		t.Helper()
		var b bytes.Buffer
		if err := Message(v).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}

	t.Run("an image shows its thumbnail at its size scaled into the preview box, linking to the full image", func(t *testing.T) {
		html := render(t, MessageView{ID: "m1", Attachments: []AttachmentView{
			NewAttachmentView("f1", "view.jpg", "image/jpeg", 254_000, 1200, 800),
			NewAttachmentView("f2", "tall.png", "image/png", 10, 300, 900),
		}})
		for _, want := range []string{
			`data-testid="attachments"`,
			`href="/api/v1/files/f1/content" data-viewer="1" data-name="view.jpg" data-file="f1" data-testid="attachment-image" title="view.jpg (248 KB)"`,
			`src="/api/v1/files/f1/thumbnail" data-full="/api/v1/files/f1/content" data-file="f1" alt="view.jpg" width="360" height="240"`,
			`alt="tall.png" width="90" height="270"`,
		} {
			if !strings.Contains(html, want) {
				t.Errorf("the message lacks %s:\n%s", want, html)
			}
		}
		if strings.Contains(html, "attachment-file") {
			t.Errorf("an image shows as a file card:\n%s", html)
		}
	})

	t.Run("an image of unknown size has no size attributes", func(t *testing.T) {
		html := render(t, MessageView{ID: "m1", Attachments: []AttachmentView{NewAttachmentView("f1", "a.gif", "image/gif", 10, 0, 0)}})
		if !strings.Contains(html, `alt="a.gif" data-testid="attachment-preview"`) || strings.Contains(html, "width=") {
			t.Fatalf("%s", html)
		}
	})

	t.Run("any other file is a card with its kind, name, size and a download link", func(t *testing.T) {
		html := render(t, MessageView{ID: "m1", Attachments: []AttachmentView{
			NewAttachmentView("f3", "report.pdf", "application/pdf", 3_500_000, 0, 0),
			NewAttachmentView("f4", "logo.svg", "image/svg+xml", 900, 0, 0),
			NewAttachmentView("f5", "notes.md", "application/octet-stream", 2048, 0, 0),
		}})
		for _, want := range []string{
			`<span class="file-icon" aria-hidden="true">PDF</span>`,
			`data-testid="attachment-name">report.pdf</span>`,
			`data-testid="attachment-size">3.3 MB</span>`,
			`<a href="/api/v1/files/f3/content" download="report.pdf" data-testid="attachment-download">Download</a>`,
			// SVG may carry script: it is served as a download, never previewed.
			`data-testid="attachment-name">logo.svg</span>`,
			`<span class="file-icon" aria-hidden="true">MD</span>`,
		} {
			if !strings.Contains(html, want) {
				t.Errorf("the message lacks %s:\n%s", want, html)
			}
		}
		if strings.Contains(html, "attachment-image") {
			t.Errorf("a file shows as an image:\n%s", html)
		}
	})

	t.Run("a message without files and a deleted one show none", func(t *testing.T) {
		if html := render(t, MessageView{ID: "m2"}); strings.Contains(html, "attachments") {
			t.Fatalf("%s", html)
		}
		v := MessageView{ID: "m3", Deleted: true, Attachments: []AttachmentView{NewAttachmentView("f1", "a.png", "image/png", 1, 1, 1)}}
		if html := render(t, v); strings.Contains(html, "attachments") {
			t.Fatalf("a deleted message shows its files:\n%s", html)
		}
	})

	t.Run("a name with markup stays text", func(t *testing.T) {
		html := render(t, MessageView{ID: "m1", Attachments: []AttachmentView{NewAttachmentView("f1", `<img src=x onerror=alert(1)>.txt`, "text/plain", 1, 0, 0)}})
		if strings.Contains(html, "<img src=x") || !strings.Contains(html, "&lt;img src=x onerror=alert(1)&gt;.txt") {
			t.Fatalf("%s", html)
		}
	})
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KB", 1536: "1.5 KB", 10 * 1024: "10 KB",
		5 << 20: "5.0 MB", 1 << 30: "1.0 GB", 3 << 40: "3.0 TB"} {
		if got := HumanSize(n); got != want {
			t.Errorf("HumanSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestComposerFiles(t *testing.T) {
	var b bytes.Buffer
	if err := ComposerFiles().Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	// Without the script the form posts no files, so the button is not offered.
	for _, want := range []string{`data-testid="composer-files" data-max="10" hidden`, `type="file" multiple`} {
		if !strings.Contains(html, want) {
			t.Errorf("the composer's files lack %s:\n%s", want, html)
		}
	}
	// The file input has no name: the form's fields are the uploaded files' ids, never bytes.
	if strings.Contains(html, `type="file" name=`) || strings.Contains(html, `name="attachment_id"`) {
		t.Errorf("%s", html)
	}
}
