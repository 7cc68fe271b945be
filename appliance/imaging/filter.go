package imaging

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
)

// bufferSize bounds what a filter holds of its image at once: the headers it looks at are a
// few bytes each, and the rest streams through. The one exception is a JPEG's Exif segment,
// held whole (at most 64 KiB) to read the orientation in it.
const bufferSize = 32 << 10

// filter streams an image's bytes through a parser of its format. The parser looks at a
// segment or chunk header (Peek, so nothing is consumed yet) and decides what the next bytes
// become: passed on as they are (keep), left out (drop), replaced by zeros (zero), or
// rewritten (pending). When the parser stops understanding the bytes, or has nothing more to
// look at, it clears step and the rest passes through unchanged.
type filter struct {
	br   *bufio.Reader
	step func() // looks at the next header; nil: pass the rest through

	pending []byte // rewritten bytes to hand out first, in head
	head    [32]byte
	keep    int64 // bytes of the source to pass on unchanged
	drop    int64 // bytes of the source to leave out
	zero    int64 // bytes of the source to replace by zeros

	// err is a read error a Peek met: bufio hands it out once, to the Peek, so the filter
	// keeps it for the Read that reaches it.
	err error

	width, height int
	ok            bool
	// turned is set when the image is shown turned a quarter (Exif orientations 5 to 8):
	// Dimensions then answers the sides swapped.
	turned bool
}

func newFilter(r io.Reader) *filter {
	return &filter{br: bufio.NewReaderSize(r, bufferSize)}
}

// Dimensions implements files.ImageFilter. They are the displayed size: for a JPEG whose Exif
// orientation turns it a quarter (5 to 8) the width is the frame's height and the other way
// round, as the console lays a preview out by them and every browser shows it turned.
func (f *filter) Dimensions() (width, height int, ok bool) {
	if !f.ok {
		return 0, 0, false
	}
	if f.turned {
		return f.height, f.width, true
	}
	return f.width, f.height, true
}

func (f *filter) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		switch {
		case len(f.pending) > 0:
			n := copy(p, f.pending)
			f.pending = f.pending[n:]
			return n, nil
		case f.keep > 0:
			n, err := f.br.Read(p[:min(int64(len(p)), f.keep)])
			f.keep -= int64(n)
			return n, f.sourceErr(n, err)
		case f.zero > 0:
			n, err := f.br.Read(p[:min(int64(len(p)), f.zero)])
			clear(p[:n])
			f.zero -= int64(n)
			return n, f.sourceErr(n, err)
		case f.drop > 0:
			n, err := f.br.Discard(int(min(f.drop, bufferSize)))
			f.drop -= int64(n)
			if err != nil {
				// The source ended inside what was to be left out: what there was of it stays
				// out, so a cut file still carries none of its metadata.
				f.stop()
				return 0, err
			}
		case f.step != nil:
			f.step()
		default:
			if f.err != nil && f.br.Buffered() == 0 {
				return 0, f.err
			}
			return f.br.Read(p)
		}
	}
}

// sourceErr is what Read answers with n bytes read and err from the source: an image cut short
// stops being parsed, so its dimensions are not reported.
func (f *filter) sourceErr(n int, err error) error {
	if err == nil {
		return nil
	}
	f.stop()
	if n > 0 {
		// The bytes go out now; the next Read meets the error again.
		if !errors.Is(err, io.EOF) {
			f.err = err
		}
		return nil
	}
	return err
}

// stop ends the parsing: the rest passes through, and the image's dimensions are not reported
// as it was not understood to its end.
func (f *filter) stop() {
	f.step = nil
	f.ok = false
	f.keep, f.zero, f.drop = 0, 0, 0
}

// peek returns the next n bytes without consuming them; false when the source has fewer (the
// parser then stops and whatever there is passes through).
func (f *filter) peek(n int) ([]byte, bool) {
	b, err := f.br.Peek(n)
	if err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
			f.err = err
		}
		return b, false
	}
	return b, true
}

// rewrite hands out b (at most len(head) bytes, already peeked) in place of the next len(b)
// bytes of the source.
func (f *filter) rewrite(b []byte) {
	n := copy(f.head[:], b)
	f.pending = f.head[:n]
	_, _ = f.br.Discard(n) // peeked, so they are buffered
}

// found records the image's dimensions; a zero or negative side is no dimension.
func (f *filter) found(width, height int) bool {
	if width <= 0 || height <= 0 {
		return false
	}
	f.width, f.height = width, height
	return true
}

// finish ends the parsing of an image understood to its end: the rest (bytes after the
// image, or its compressed data) passes through and its dimensions are reported if found.
func (f *filter) finish(found bool) {
	f.step = nil
	f.ok = found
}

var (
	be = binary.BigEndian
	le = binary.LittleEndian
)

// JPEG: a sequence of segments, each a marker (0xFF and a code) and, for most, a two-byte
// length that counts itself, up to the start of a scan (SOS). The compressed data of the scan
// follows, in which a 0xFF byte is always followed by 0x00 or a restart marker; any other
// marker ends the scan: more segments and scans (a progressive JPEG), or the end of the image
// (EOI). After EOI may come further JPEGs (the previews, depth maps and gain maps of the
// Multi-Picture Format, each with its own Exif), which are filtered the same way.
type jpegParser struct {
	f        *filter
	strip    bool
	hasSize  bool
	scanned  bool // a scan of the first image began: its dimensions are known for good
	exifRead bool // the image's first Exif segment was read: it alone says which way up
}

func (p *jpegParser) start() {
	b, ok := p.f.peek(2)
	if !ok || b[0] != 0xFF || b[1] != 0xD8 {
		p.f.step = nil
		return
	}
	p.f.keep = 2
	p.f.step = p.segment
}

// fail ends the parsing where the bytes stop making sense. Before the first scan that makes
// the file no image the filter knows; after it, the image was understood and what follows is
// passed on as it is.
func (p *jpegParser) fail() {
	if p.scanned {
		p.f.step = nil
		return
	}
	p.f.stop()
}

func (p *jpegParser) segment() {
	f := p.f
	b, ok := f.peek(2)
	if !ok || b[0] != 0xFF {
		p.fail()
		return
	}
	marker := b[1]
	switch {
	case marker == 0xFF: // a fill byte before the marker
		f.keep = 1
		return
	case marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7): // TEM, RSTn: no length
		f.keep = 2
		return
	case marker == 0xD9 && p.scanned: // EOI
		f.keep = 2
		f.step = p.afterImage
		return
	case marker == 0x00 || marker == 0xD8 || marker == 0xD9: // no segment here
		p.fail()
		return
	}
	b, ok = f.peek(4)
	if !ok {
		p.fail()
		return
	}
	length := int64(be.Uint16(b[2:]))
	if length < 2 {
		p.fail()
		return
	}
	switch {
	case marker == 0xDA: // SOS
		if !p.scanned {
			p.scanned = true
			f.ok = p.hasSize
		}
		f.keep = 2 + length
		f.step = p.scan
	case isStartOfFrame(marker):
		if b, ok = f.peek(9); !ok || length < 8 {
			p.fail()
			return
		}
		if !p.hasSize {
			p.hasSize = f.found(int(be.Uint16(b[7:])), int(be.Uint16(b[5:])))
		}
		f.keep = 2 + length
	case marker == 0xE1 && !p.exifRead && p.isExif(length):
		f.step = p.exif(int(2 + length))
	case p.strip && (marker == 0xE1 || marker == 0xED || marker == 0xFE):
		// APP1 holds Exif (the camera, the time and the GPS position) and XMP, APP13 the IPTC
		// and Photoshop records, COM free text; Exif is read first (exif), to keep its
		// orientation. APP0 (JFIF), APP2 (the ICC colour profile) and APP14 (Adobe's colour
		// transform) stay: without them colours change.
		f.drop = 2 + length
	default:
		f.keep = 2 + length
	}
}

// isExif reports whether the segment of length whose header is next holds Exif: its data
// starts with the prefix of Exif, well formed after it or not (a reader of the orientation
// takes the first such segment whatever it holds). When the source ends before that can be
// told, the segment is cut and handled as any other.
func (p *jpegParser) isExif(length int64) bool {
	b, ok := p.f.peek(4 + len(exifPrefix))
	return ok && length >= 2+int64(len(exifPrefix)) && bytes.Equal(b[4:], exifPrefix)
}

// exif reads the Exif segment of size bytes (marker and length included) whole, as its
// orientation may sit anywhere in it, and hands out in its place the segment itself when
// not stripping, or a segment of the orientation alone (orientationSegment) when it turns or
// mirrors the image, or nothing: a photo taken upright, and Exif not well formed, lose it
// all. Only an image's first Exif segment is read so, as browsers take the orientation from
// it alone; any further one is metadata like the rest. The first image's decides whether
// the dimensions are swapped.
func (p *jpegParser) exif(size int) func() {
	return func() {
		f := p.f
		seg := make([]byte, size)
		n, err := io.ReadFull(f.br, seg)
		if err != nil {
			// The source ended or failed inside the segment. Stripped, what there was of it
			// stays out; otherwise it goes out as it came, and the rest passes through.
			if !p.strip {
				f.pending = seg[:n]
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				f.err = err
			}
			f.stop()
			return
		}
		o := exifOrientation(seg[4:])
		p.exifRead = true
		if !p.scanned {
			f.turned = o >= 5
		}
		switch {
		case !p.strip:
			f.pending = seg
		case o > 1:
			f.pending = orientationSegment(o)
		}
		f.step = p.segment
	}
}

// scan passes the compressed data of a scan on, up to the marker that ends it.
func (p *jpegParser) scan() {
	f := p.f
	if _, ok := f.peek(1); !ok {
		f.step = nil // the file ends inside the scan: cut, but its header was read
		return
	}
	buffered, _ := f.br.Peek(f.br.Buffered())
	if i := bytes.IndexByte(buffered, 0xFF); i != 0 {
		if i < 0 {
			i = len(buffered)
		}
		f.keep = int64(i)
		return
	}
	b, ok := f.peek(2)
	if !ok {
		f.step = nil
		return
	}
	switch m := b[1]; {
	case m == 0x00 || (m >= 0xD0 && m <= 0xD7): // a stuffed 0xFF, a restart marker
		f.keep = 2
	case m == 0xFF:
		f.keep = 1
	default:
		f.step = p.segment
	}
}

// afterImage looks past an EOI: another JPEG is filtered as well (its size is not the
// file's), anything else passes through.
func (p *jpegParser) afterImage() {
	f := p.f
	b, ok := f.peek(2)
	if !ok || b[0] != 0xFF || b[1] != 0xD8 {
		f.step = nil
		return
	}
	f.keep = 2
	f.step = p.segment
	p.exifRead = false
}

// isStartOfFrame reports whether marker is one of SOF0..SOF15, the segments that carry the
// image's size; C4 (DHT), C8 (JPG) and CC (DAC) share the range and are not frames.
func isStartOfFrame(marker byte) bool {
	return marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC
}

// PNG: the signature, then chunks of a four-byte length, a four-letter type, the data and a
// CRC, from IHDR (the size) to IEND.
type pngParser struct {
	f       *filter
	strip   bool
	hasSize bool
}

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

func (p *pngParser) start() {
	b, ok := p.f.peek(8)
	if !ok || string(b) != string(pngSignature) {
		p.f.step = nil
		return
	}
	p.f.keep = 8
	p.f.step = p.chunk
}

func (p *pngParser) chunk() {
	f := p.f
	b, ok := f.peek(8)
	if !ok {
		f.stop()
		return
	}
	length := int64(be.Uint32(b))
	typ := string(b[4:8])
	if length > 1<<31-1 || !isChunkType(b[4:8]) {
		f.stop()
		return
	}
	if !p.hasSize {
		if typ != "IHDR" || length != 13 {
			f.stop()
			return
		}
		if b, ok = f.peek(16); !ok {
			f.stop()
			return
		}
		w, h := be.Uint32(b[8:]), be.Uint32(b[12:])
		if w > 1<<31-1 || h > 1<<31-1 || !f.found(int(w), int(h)) {
			f.stop()
			return
		}
		p.hasSize = true
	}
	total := 12 + length
	switch {
	case typ == "IEND":
		f.keep = total
		f.finish(true)
	case p.strip && pngMetadata[typ]:
		f.drop = total
	default:
		f.keep = total
	}
}

// pngMetadata are the chunks a stripped PNG loses: Exif, the three kinds of text (which
// cameras and editors fill with XMP, comments, authors) and the time of the last change.
var pngMetadata = map[string]bool{"eXIf": true, "tEXt": true, "zTXt": true, "iTXt": true, "tIME": true}

func isChunkType(b []byte) bool {
	for _, c := range b {
		if (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}

// WebP: a RIFF file, "RIFF", the size of the rest, "WEBP", then chunks of a FourCC, a
// little-endian size and the data padded to an even length.
//
// The RIFF size sits in the first bytes, so a streamed file cannot lose a chunk without
// holding it whole. Stripping instead renames an EXIF or XMP chunk to JUNK, RIFF's name for
// padding, and zeroes its data: decoders skip chunks they do not know (libwebp and
// golang.org/x/image/webp both do), and the flags in VP8X that announce metadata are cleared.
type webpParser struct {
	f       *filter
	strip   bool
	left    int64 // bytes of the RIFF body not yet looked at
	hasSize bool
}

const (
	vp8xXMP  = 1 << 2
	vp8xEXIF = 1 << 3
)

func (p *webpParser) start() {
	b, ok := p.f.peek(12)
	if !ok || string(b[:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		p.f.step = nil
		return
	}
	size := int64(le.Uint32(b[4:]))
	if size < 4 {
		p.f.step = nil
		return
	}
	p.left = size - 4
	p.f.keep = 12
	p.f.step = p.chunk
}

func (p *webpParser) chunk() {
	f := p.f
	if p.left == 0 {
		f.finish(p.hasSize)
		return
	}
	b, ok := f.peek(8)
	if !ok || p.left < 8 {
		f.stop()
		return
	}
	fourCC := string(b[:4])
	size := int64(le.Uint32(b[4:]))
	padded := size + size&1
	if 8+padded > p.left {
		f.stop()
		return
	}
	switch fourCC {
	case "VP8X":
		if b, ok = f.peek(18); !ok || size != 10 || p.hasSize {
			f.stop()
			return
		}
		p.hasSize = f.found(1+int(uint24(b[12:])), 1+int(uint24(b[15:])))
		if p.strip && b[8]&(vp8xEXIF|vp8xXMP) != 0 {
			f.rewrite(b[:18])
			f.pending[8] &^= vp8xEXIF | vp8xXMP
			break
		}
		f.keep = 18
	case "VP8 ":
		if !p.hasSize {
			// A key frame: a three-byte tag whose low bit is 0, the start code 9d 01 2a,
			// then the width and height in 14 bits each.
			if b, ok = f.peek(18); ok && size >= 10 && b[8]&1 == 0 && b[11] == 0x9d && b[12] == 0x01 && b[13] == 0x2a {
				p.hasSize = f.found(int(le.Uint16(b[14:])&0x3fff), int(le.Uint16(b[16:])&0x3fff))
			}
		}
		f.keep = 8 + padded
	case "VP8L":
		if !p.hasSize {
			// The signature 0x2f, then the width and height less one in 14 bits each.
			if b, ok = f.peek(13); ok && size >= 5 && b[8] == 0x2f {
				bits := le.Uint32(b[9:])
				p.hasSize = f.found(int(bits&0x3fff)+1, int(bits>>14&0x3fff)+1)
			}
		}
		f.keep = 8 + padded
	case "EXIF", "XMP ":
		if p.strip {
			f.rewrite(b[:8])
			copy(f.pending, "JUNK")
			f.zero = padded
			break
		}
		f.keep = 8 + padded
	default:
		f.keep = 8 + padded
	}
	p.left -= 8 + padded
}

func uint24(b []byte) uint32 { return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 }

// gifHeader reads a GIF's logical screen size and passes the file through: GIF has no Exif,
// and its comment extensions are left as they are.
func gifHeader(f *filter) func() {
	return func() {
		f.step = nil
		b, ok := f.peek(10)
		if !ok || (string(b[:6]) != "GIF87a" && string(b[:6]) != "GIF89a") {
			return
		}
		f.ok = f.found(int(le.Uint16(b[6:])), int(le.Uint16(b[8:])))
	}
}
