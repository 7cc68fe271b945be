package llm

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"bothy.dev/bothy/client"
)

// The model reads the text files of the invoking message and the names of the others.
func TestAttachmentsInThePrompt(t *testing.T) {
	m := newFakeModel(t, "openai", reply{text: []string{"It says hello."}, in: 10, out: 3})
	th, j := newThread()
	th.files = map[string]string{"f-notes": "hello from the notes", "f-data": `{"answer":42}`}
	j.Attachments = []client.Attachment{
		{ID: "f-notes", Name: "notes.txt", ContentType: "text/plain; charset=utf-8", Size: 20},
		{ID: "f-cat", Name: "cat.png", ContentType: "image/png", Size: 3 << 20, Width: 640, Height: 480},
		{ID: "f-data", Name: "data.json", ContentType: "application/json", Size: 13},
		{ID: "f-gone", Name: "gone.txt", ContentType: "text/plain", Size: 5},
	}
	run := &fakeRun{}
	if err := newTestAgent(m.provider(), nil).handle(context.Background(), j, run, th); err != nil {
		t.Fatal(err)
	}
	if run.outcome != client.Succeeded {
		t.Fatalf("outcome %q", run.outcome)
	}
	body := m.requests()[0]
	for _, want := range []string{
		`@llm what is 2+3?\n\n[attached: notes.txt (text/plain; charset=utf-8, 20 bytes); its content follows]\nhello from the notes\n[end of notes.txt]`,
		`[attached: cat.png (image/png, 3.0 MiB), not shown]`,
		`[attached: data.json (application/json, 13 bytes); its content follows]\n{\"answer\":42}\n[end of data.json]`,
		`[attached: gone.txt (text/plain, 5 bytes), could not be read]`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the request lacks %q:\n%s", want, body)
		}
	}
}

// The text files together are read up to maxAttachmentText, cut at a character; what is left
// over is only named.
func TestAttachmentsLimit(t *testing.T) {
	// Two bytes a character after the first: the limit falls inside one.
	big := "a" + strings.Repeat("é", maxAttachmentText)
	th := &fakeThread{files: map[string]string{"f1": big, "f2": "never read", "f3": "\xff\xfe binary"}}
	a := newTestAgent(nil, nil)
	got := a.attachments(context.Background(), th, []client.Attachment{
		{ID: "f3", Name: "blob.txt", ContentType: "text/plain", Size: 9},
		{ID: "f1", Name: "big.txt", ContentType: "text/plain", Size: int64(len(big))},
		{ID: "f2", Name: "late.txt", ContentType: "text/markdown", Size: 10},
	})
	if !strings.Contains(got, "[attached: blob.txt (text/plain, 9 bytes), could not be read]") {
		t.Errorf("a text file that is not UTF-8: %q", got[:min(len(got), 200)])
	}
	if !strings.Contains(got, "[attached: big.txt (text/plain, 64.0 KiB), the first 32.0 KiB shown; its content follows]\n") {
		t.Errorf("the big file's header: %q", got[:min(len(got), 300)])
	}
	start := strings.Index(got, "follows]\n") + len("follows]\n")
	end := strings.Index(got, "\n[end of big.txt]")
	if start < len("follows]\n") || end < start {
		t.Fatalf("no content of big.txt in %q", got[:min(len(got), 300)])
	}
	text := got[start:end]
	if len(text) != maxAttachmentText-1 || !utf8.ValidString(text) {
		t.Errorf("big.txt's content is %d bytes (valid UTF-8: %v), want %d", len(text), utf8.ValidString(text), maxAttachmentText-1)
	}
	if strings.Contains(got, "never read") || !strings.Contains(got, "[attached: late.txt (text/markdown, 10 bytes), not shown]") {
		t.Errorf("a file past the limit: %q", got[end:])
	}
}
