// Package imaging implements files.Imager in pure Go, without cgo: a streaming filter that
// removes the metadata of JPEG, PNG and WebP images (where a photo was taken must not travel
// with it) and reads their dimensions on the way, and thumbnails decoded with the standard
// library and golang.org/x/image. A JPEG keeps one tag of its Exif, the orientation, without
// which a photo taken upright shows on its side (orientation.go).
//
// It is the one home of golang.org/x/image in the binary.
package imaging

import (
	"io"

	"bothy.dev/bothy/app/files"
)

// Imager understands JPEG, PNG, WebP and GIF images. The zero value is ready; it holds no
// state, so one value serves every request at once.
type Imager struct{}

// New returns the Imager.
func New() *Imager { return &Imager{} }

var _ files.Imager = (*Imager)(nil)

// Filter returns a reader of r's bytes with the metadata of a JPEG, PNG or WebP image removed
// when strip is set. Bytes of any other type, and the bytes of an image from the point where
// they stop making sense as one, pass through unchanged: an odd file is never refused here.
func (*Imager) Filter(r io.Reader, contentType string, strip bool) files.ImageFilter {
	f := newFilter(r)
	switch contentType {
	case "image/jpeg":
		f.step = (&jpegParser{f: f, strip: strip}).start
	case "image/png":
		f.step = (&pngParser{f: f, strip: strip}).start
	case "image/webp":
		f.step = (&webpParser{f: f, strip: strip}).start
	case "image/gif":
		f.step = gifHeader(f)
	}
	return f
}
