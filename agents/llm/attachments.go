package llm

import (
	"context"
	"fmt"
	"io"
	"mime"
	"strings"
	"unicode/utf8"

	"bothy.dev/bothy/client"
)

// maxAttachmentText is how much of the invoking message's text files the model reads, all of
// them together: enough for a note, a log excerpt or a config, not so much that one file
// crowds the thread out of the model's context.
const maxAttachmentText = 32 << 10

// textual reports whether a file of type t is text the model can read as it is.
func textual(t string) bool {
	mt, _, err := mime.ParseMediaType(t)
	if err != nil {
		return false
	}
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// attachments is what the model reads of the files of the invoking message: each named with
// its type and size, and the content of the text files as far as maxAttachmentText reaches, cut
// at a character. A file the agent may not read, or that is not text after all, is only named.
func (a *Agent) attachments(ctx context.Context, files threadAPI, atts []client.Attachment) string {
	if len(atts) == 0 {
		return ""
	}
	var b strings.Builder
	left := maxAttachmentText
	for _, f := range atts {
		head := fmt.Sprintf("%s (%s, %s)", f.Name, f.ContentType, sizeLabel(f.Size))
		if !textual(f.ContentType) || left <= 0 {
			fmt.Fprintf(&b, "\n\n[attached: %s, not shown]", head)
			continue
		}
		text, cut, err := readText(ctx, files, f.ID, left)
		if err != nil {
			a.log.Warn("llm: cannot read an attachment", "file", f.ID, "err", err)
			fmt.Fprintf(&b, "\n\n[attached: %s, could not be read]", head)
			continue
		}
		left -= len(text)
		note := ""
		if cut {
			left = 0 // what a cut character left over is no room for another file
			note = fmt.Sprintf(", the first %s shown", sizeLabel(int64(len(text))))
		}
		fmt.Fprintf(&b, "\n\n[attached: %s%s; its content follows]\n%s\n[end of %s]", head, note, text, f.Name)
	}
	return b.String()
}

// readText reads up to limit bytes of file id as UTF-8 text; cut reports that there was more.
func readText(ctx context.Context, files threadAPI, id string, limit int) (text string, cut bool, err error) {
	d, err := files.DownloadFile(ctx, id)
	if err != nil {
		return "", false, err
	}
	defer d.Close()
	raw, err := io.ReadAll(io.LimitReader(d, int64(limit)+1))
	if err != nil {
		return "", false, err
	}
	if len(raw) > limit {
		raw, cut = raw[:limit], true
		// Leave out the bytes of a character cut in two.
		for i := 0; i < utf8.UTFMax-1 && len(raw) > 0; i++ {
			if r, size := utf8.DecodeLastRune(raw); r != utf8.RuneError || size > 1 {
				break
			}
			raw = raw[:len(raw)-1]
		}
	}
	if !utf8.Valid(raw) {
		return "", false, fmt.Errorf("file %s is not UTF-8 text", id)
	}
	return string(raw), cut, nil
}

// sizeLabel is a size in bytes as people write it.
func sizeLabel(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
