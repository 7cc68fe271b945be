package files

import (
	"context"
	"io"

	"bothy.dev/bothy/app/kernel"
)

// Blobs is where the bytes of files live: content-addressed by their SHA-256, so that a blob is
// written once and never changes under its name. storage/blobs implements it on a directory
// (fs) and on an S3 bucket (s3). Methods are safe for concurrent use.
type Blobs interface {
	// Put streams r into the store, hashing it on the way, and answers its key (the SHA-256 in
	// lower-case hex) and size. It reads at most limit bytes: when r holds more it stops, leaves
	// nothing behind and answers CodeFileTooLarge. A blob of the same content that exists
	// already is kept as it is (the new copy is discarded). A crash in the middle leaves no
	// blob under a real key, only a temporary that a later Put or Sweep removes.
	Put(ctx context.Context, r io.Reader, limit int64) (Blob, error)
	// Open opens the blob of key for reading. Errors: not_found.
	Open(ctx context.Context, key string) (BlobReader, error)
	// Delete removes the blob of key; a missing blob is no error.
	Delete(ctx context.Context, key string) error

	// PutPart stores part n (1-based) of the resumable upload upload, replacing a part of
	// that number sent before (a part sent twice is stored once). It reads at most limit
	// bytes (CodeFileTooLarge beyond, nothing kept).
	PutPart(ctx context.Context, upload kernel.ID, n int, r io.Reader, limit int64) (Blob, error)
	// OpenPart opens part n of upload. Errors: not_found.
	OpenPart(ctx context.Context, upload kernel.ID, n int) (BlobReader, error)
	// DeleteParts removes every part of upload; none is no error.
	DeleteParts(ctx context.Context, upload kernel.ID) error
}

// Blob names stored bytes: Key is their SHA-256 in lower-case hex.
type Blob struct {
	Key  string
	Size int64
}

// BlobReader reads one stored blob; Seek lets a download answer a range.
type BlobReader interface {
	io.ReadSeekCloser
	Size() int64
}

// Imager understands images without cgo (appliance/imaging implements it).
type Imager interface {
	// Filter returns a reader of r's bytes, which are of contentType (as sniffed), with the
	// metadata of a JPEG, PNG or WebP image removed when strip is set (EXIF, XMP and text
	// chunks: where a photo was taken must not travel with it; a JPEG keeps only the EXIF
	// orientation, so that it still shows the right way up). It reads r as a stream and
	// never holds it whole. Once it has been read to EOF, Dimensions reports the image's width
	// and height when r is an image it knows.
	Filter(r io.Reader, contentType string, strip bool) ImageFilter
	// Thumbnail decodes the image r of contentType and writes a thumbnail of at most maxSide
	// pixels on its long side to w. It refuses, without decoding the pixels, an image of more
	// than maxPixels pixels (CodeImageTooLarge: a small file can expand to gigabytes), and an
	// image it cannot decode (CodeImageUnreadable).
	Thumbnail(r io.Reader, contentType string, maxSide int, maxPixels int64, w io.Writer) (Thumb, error)
}

// ImageFilter is the reader Imager.Filter answers.
type ImageFilter interface {
	io.Reader
	// Dimensions are the image's width and height as it is shown (a JPEG whose EXIF turns it
	// by a quarter has them swapped from its frame's); ok is false when the bytes were no image
	// the filter knows or have not been read to the image's header yet.
	Dimensions() (width, height int, ok bool)
}

// Thumb describes a thumbnail Imager.Thumbnail wrote.
type Thumb struct {
	ContentType string
	Width       int
	Height      int
}

// Error codes of files.
var (
	// CodeFileTooLarge: an upload or a part above its limit (413).
	CodeFileTooLarge = kernel.NewCode("file_too_large", kernel.ClassTooLarge)
	// CodeImageTooLarge: an image of more pixels than files.max_image_pixels gets no thumbnail.
	CodeImageTooLarge = kernel.NewCode("image_too_large", kernel.ClassUnprocessable)
	// CodeImageUnreadable: bytes that claim to be an image but do not decode as one.
	CodeImageUnreadable = kernel.NewCode("image_unreadable", kernel.ClassUnprocessable)
)
