package components

import (
	"strconv"
	"strings"
)

// AttachmentView is a file a message carries, as the message shows it: an image as a preview
// that opens the viewer, anything else as a card with a download link.
type AttachmentView struct {
	ID, Name, ContentType string
	// Size is the file's size for people ("12 KB").
	Size string
	// Href is the file's content (GET /api/v1/files/{id}/content): an image opens inline,
	// anything else downloads.
	Href string
	// Image marks a file the browser shows as a picture: its preview is Thumb (the thumbnail,
	// which the script swaps for Href while the thumbnail job has not made it yet), sized
	// Width by Height so that the thread does not jump when it loads (0 when unknown).
	Image         bool
	Thumb         string
	Width, Height int
	// Kind is the short label of a card's icon ("PDF", "ZIP", "TXT", …).
	Kind string
}

// Preview bounds: an image's preview fits in this box, as the CSS does, so the attributes
// are the size it is shown at.
const (
	previewMaxWidth  = 360
	previewMaxHeight = 270
)

// NewAttachmentView is the view of the file id: its name, content type, size in bytes and,
// for an image, its width and height when known (0 otherwise).
func NewAttachmentView(id, name, contentType string, size int64, width, height int) AttachmentView {
	v := AttachmentView{ID: id, Name: name, ContentType: contentType, Size: HumanSize(size),
		Href: "/api/v1/files/" + id + "/content", Kind: fileKind(name, contentType)}
	if previewable(contentType) {
		v.Image, v.Thumb = true, "/api/v1/files/"+id+"/thumbnail"
		v.Width, v.Height = fitPreview(width, height)
	}
	return v
}

// previewable reports whether the content type is an image that gets a thumbnail and opens in
// the viewer. SVG is left out: it is a document that may carry script, and is served as an
// attachment.
func previewable(contentType string) bool {
	switch mediaType(contentType) {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
		return true
	}
	return false
}

func mediaType(contentType string) string {
	t, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(t))
}

// fitPreview scales width by height down into the preview box, keeping its shape; an image of
// unknown size gets no attributes.
func fitPreview(w, h int) (int, int) {
	if w <= 0 || h <= 0 {
		return 0, 0
	}
	if w > previewMaxWidth {
		h, w = max(1, h*previewMaxWidth/w), previewMaxWidth
	}
	if h > previewMaxHeight {
		w, h = max(1, w*previewMaxHeight/h), previewMaxHeight
	}
	return w, h
}

// fileKind is the label of a file card's icon: the kind of file in a few letters, from its
// content type or else its name's extension.
func fileKind(name, contentType string) string {
	t := mediaType(contentType)
	switch {
	case t == "application/pdf":
		return "PDF"
	case strings.HasPrefix(t, "image/"):
		return "IMG"
	case strings.HasPrefix(t, "audio/"):
		return "AUDIO"
	case strings.HasPrefix(t, "video/"):
		return "VIDEO"
	case t == "application/zip", t == "application/gzip", t == "application/x-tar", t == "application/x-7z-compressed":
		return "ZIP"
	case t == "application/json":
		return "JSON"
	case t == "text/html":
		return "HTML"
	case t == "text/csv":
		return "CSV"
	case strings.HasPrefix(t, "text/"):
		return "TXT"
	}
	if i := strings.LastIndexByte(name, '.'); i >= 0 && len(name)-i-1 >= 1 && len(name)-i-1 <= 4 {
		return strings.ToUpper(name[i+1:])
	}
	return "FILE"
}

// HumanSize is a size in bytes for people: "812 B", "12 KB", "3.4 MB" (powers of 1024, as
// file managers show them).
func HumanSize(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	units := []string{"KB", "MB", "GB", "TB"}
	f := float64(n) / 1024
	u := 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	if f < 10 {
		return strconv.FormatFloat(f, 'f', 1, 64) + " " + units[u]
	}
	return strconv.FormatFloat(f, 'f', 0, 64) + " " + units[u]
}

// imagesOf and cardsOf split a message's attachments into its previews and its file cards.
func imagesOf(as []AttachmentView) []AttachmentView {
	var out []AttachmentView
	for _, a := range as {
		if a.Image {
			out = append(out, a)
		}
	}
	return out
}

func cardsOf(as []AttachmentView) []AttachmentView {
	var out []AttachmentView
	for _, a := range as {
		if !a.Image {
			out = append(out, a)
		}
	}
	return out
}
