package imaging_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/color/palette"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"golang.org/x/image/webp"

	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/appliance/imaging"
)

// gps stands for where a photo was taken: every piece of metadata the tests put in an image
// carries it, so that its absence from the filtered bytes shows the metadata went.
const gps = "GPS 51.4778N 0.0015W"

// picture is a small image with pixels that differ from their neighbours, so that a filter
// that broke the compressed data would show.
func picture(w, h int) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.Set(x, y, color.NRGBA{uint8(x * 255 / w), uint8(y * 255 / h), uint8((x ^ y) * 7), 255})
		}
	}
	return m
}

func encodePNG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeGIF(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := gif.Encode(&b, m, &gif.Options{NumColors: 256, Quantizer: nil, Drawer: nil}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func pngChunk(typ string, data []byte) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(append([]byte(typ), data...)))
}

// pngWithMetadata is an encoded PNG with every kind of chunk a stripped PNG loses, after IHDR
// (where cameras put them) and after the image data (where some editors do).
func pngWithMetadata(t testing.TB, m image.Image) []byte {
	plain := encodePNG(t, m)
	ihdrEnd := 8 + 12 + 13
	iendStart := len(plain) - 12
	var b []byte
	b = append(b, plain[:ihdrEnd]...)
	b = append(b, pngChunk("eXIf", []byte("MM\x00\x2a"+gps))...)
	b = append(b, pngChunk("tEXt", []byte("Comment\x00"+gps))...)
	b = append(b, pngChunk("zTXt", []byte("Comment\x00\x00"+gps))...)
	b = append(b, pngChunk("tIME", []byte{0x07, 0xea, 12, 2, 1, 2, 3})...)
	b = append(b, pngChunk("gAMA", []byte{0, 0, 0xb1, 0x8f})...) // kept: it changes colours
	b = append(b, plain[ihdrEnd:iendStart]...)
	b = append(b, pngChunk("iTXt", []byte("XML:com.adobe.xmp\x00\x00\x00\x00\x00"+gps))...)
	return append(b, plain[iendStart:]...)
}

func jpegSegment(marker byte, data []byte) []byte {
	b := []byte{0xFF, marker}
	b = binary.BigEndian.AppendUint16(b, uint16(len(data)+2))
	return append(b, data...)
}

// jpegWithMetadata is an encoded JPEG with Exif, XMP, IPTC and a comment, beside the segments
// that must stay (JFIF, an ICC profile, Adobe's).
func jpegWithMetadata(t testing.TB, m image.Image) []byte {
	plain := encodeJPEG(t, m)
	b := append([]byte{}, plain[:2]...) // SOI
	b = append(b, jpegSegment(0xE0, []byte("JFIF\x00\x01\x02\x00\x00\x01\x00\x01\x00\x00"))...)
	b = append(b, jpegSegment(0xE1, []byte("Exif\x00\x00MM\x00\x2a"+gps))...)
	b = append(b, jpegSegment(0xE1, []byte("http://ns.adobe.com/xap/1.0/\x00<x:xmpmeta>"+gps+"</x:xmpmeta>"))...)
	b = append(b, jpegSegment(0xE2, []byte("ICC_PROFILE\x00\x01\x01not a real profile"))...)
	b = append(b, jpegSegment(0xED, []byte("Photoshop 3.0\x008BIM"+gps))...)
	b = append(b, 0xFF) // a fill byte before the next marker
	b = append(b, jpegSegment(0xEE, []byte("Adobe\x00\x64\x00\x00\x00\x00\x01"))...)
	b = append(b, jpegSegment(0xFE, []byte(gps))...)
	return append(b, plain[2:]...)
}

// bitWriter writes a VP8L bit stream: least significant bit first.
type bitWriter struct {
	b     []byte
	nbits uint
}

func (w *bitWriter) write(v uint32, n uint) {
	for i := range n {
		if w.nbits%8 == 0 {
			w.b = append(w.b, 0)
		}
		w.b[len(w.b)-1] |= byte(v>>i&1) << (w.nbits % 8)
		w.nbits++
	}
}

// vp8l is a lossless WebP bit stream of a w×h image whose pixels are set by pattern: green is
// 0 or 200 by one bit each (a two-symbol prefix code), red, blue and alpha fixed (one-symbol
// codes take no bits). golang.org/x/image has no WebP encoder, so the test writes one.
func vp8l(w, h int, pattern func(x, y int) bool) []byte {
	var bw bitWriter
	bw.write(0x2f, 8)
	bw.write(uint32(w-1), 14)
	bw.write(uint32(h-1), 14)
	bw.write(0, 1) // alpha is not used
	bw.write(0, 3) // version
	bw.write(0, 1) // no transform
	bw.write(0, 1) // no colour cache
	bw.write(0, 1) // no meta prefix codes
	simple := func(symbols ...uint32) {
		bw.write(1, 1) // a simple code
		bw.write(uint32(len(symbols)-1), 1)
		bw.write(1, 1) // the first symbol in 8 bits
		for _, s := range symbols {
			bw.write(s, 8)
		}
	}
	simple(0, 200) // green
	simple(40)     // red
	simple(90)     // blue
	simple(255)    // alpha
	simple(0)      // distance
	for y := range h {
		for x := range w {
			if pattern(x, y) {
				bw.write(1, 1)
			} else {
				bw.write(0, 1)
			}
		}
	}
	return bw.b
}

func riffChunk(fourCC string, data []byte) []byte {
	b := append([]byte(fourCC), binary.LittleEndian.AppendUint32(nil, uint32(len(data)))...)
	b = append(b, data...)
	if len(data)%2 == 1 {
		b = append(b, 0)
	}
	return b
}

func riff(chunks ...[]byte) []byte {
	body := []byte("WEBP")
	for _, c := range chunks {
		body = append(body, c...)
	}
	return append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...), body...)
}

func vp8x(flags byte, w, h int) []byte {
	b := []byte{flags, 0, 0, 0}
	b = append(b, byte(w-1), byte((w-1)>>8), byte((w-1)>>16))
	return append(b, byte(h-1), byte((h-1)>>8), byte((h-1)>>16))
}

func checker(x, y int) bool { return (x/3+y/2)%2 == 0 }

// webpWithMetadata is an extended WebP (VP8X) whose flags announce Exif and XMP, with both
// chunks after the image; the Exif chunk has an odd size, so it is padded.
func webpWithMetadata(w, h int) []byte {
	return riff(
		riffChunk("VP8X", vp8x(0x08|0x04, w, h)),
		riffChunk("VP8L", vp8l(w, h, checker)),
		riffChunk("EXIF", []byte("MM\x00\x2a"+gps+"!")),
		riffChunk("XMP ", []byte("<x:xmpmeta>"+gps+"</x:xmpmeta>")),
	)
}

func decode(t testing.TB, contentType string, b []byte) image.Image {
	t.Helper()
	var m image.Image
	var err error
	switch contentType {
	case "image/jpeg":
		m, err = jpeg.Decode(bytes.NewReader(b))
	case "image/png":
		m, err = png.Decode(bytes.NewReader(b))
	case "image/gif":
		m, err = gif.Decode(bytes.NewReader(b))
	case "image/webp":
		m, err = webp.Decode(bytes.NewReader(b))
	}
	if err != nil {
		t.Fatalf("%s does not decode: %v", contentType, err)
	}
	return m
}

func samePixels(t *testing.T, a, b image.Image) {
	t.Helper()
	if a.Bounds() != b.Bounds() {
		t.Fatalf("bounds %v, want %v", b.Bounds(), a.Bounds())
	}
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if ca, cb := color.NRGBAModel.Convert(a.At(x, y)), color.NRGBAModel.Convert(b.At(x, y)); ca != cb {
				t.Fatalf("pixel (%d,%d) is %v, want %v", x, y, cb, ca)
			}
		}
	}
}

func filterAll(t *testing.T, r io.Reader, contentType string, strip bool) ([]byte, files.ImageFilter) {
	t.Helper()
	f := imaging.New().Filter(r, contentType, strip)
	out, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return out, f
}

type sample struct {
	contentType string
	bytes       []byte
	w, h        int
	metadata    bool // whether the sample carries the gps marker
}

func samples(t *testing.T) []sample {
	m := picture(37, 23)
	return []sample{
		{"image/jpeg", jpegWithMetadata(t, m), 37, 23, true},
		{"image/png", pngWithMetadata(t, m), 37, 23, true},
		{"image/webp", webpWithMetadata(37, 23), 37, 23, true},
		{"image/gif", encodeGIF(t, m), 37, 23, false},
		{"image/webp", lossyWebP(t), 64, 40, true},
		// Turned a quarter by an Exif orientation before the other, malformed, Exif: the
		// dimensions are the displayed ones.
		{"image/jpeg", withExif(jpegWithMetadata(t, m), exifTIFF(binary.LittleEndian, 6)), 23, 37, true},
	}
}

// lossyWebP is a real lossy WebP with alpha (VP8X, ALPH, VP8 ) and an Exif chunk, as libwebp
// writes them: made with `cwebp -q 80` from a 64×40 PNG with alpha, then
// `webpmux -set exif` with an Exif block that holds the gps marker.
func lossyWebP(t *testing.T) []byte {
	b, err := os.ReadFile("testdata/lossy-alpha-exif.webp")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(gps)) {
		t.Fatal("the lossy WebP holds no gps marker")
	}
	return b
}

func TestFilterKeepsThePictureAndDropsMetadata(t *testing.T) {
	for _, s := range samples(t) {
		t.Run(s.contentType, func(t *testing.T) {
			want := decode(t, s.contentType, s.bytes)
			for _, strip := range []bool{false, true} {
				// The source gives one byte at a time, and the output is read one byte at a time.
				out, f := filterAll(t, iotest.OneByteReader(bytes.NewReader(s.bytes)), s.contentType, strip)
				samePixels(t, want, decode(t, s.contentType, out))
				if w, h, ok := f.Dimensions(); !ok || w != s.w || h != s.h {
					t.Errorf("strip=%v: dimensions %d×%d %v, want %d×%d", strip, w, h, ok, s.w, s.h)
				}
				has := bytes.Contains(out, []byte(gps))
				switch {
				case strip && has:
					t.Errorf("stripped %s still carries the metadata", s.contentType)
				case !strip && !bytes.Equal(out, s.bytes):
					t.Errorf("without strip the bytes changed (%d bytes, want %d)", len(out), len(s.bytes))
				case !strip && has != s.metadata:
					t.Errorf("the sample's metadata is not where the test put it")
				}
				var small bytes.Buffer
				if _, err := io.Copy(&small, iotest.OneByteReader(imaging.New().Filter(bytes.NewReader(s.bytes), s.contentType, strip))); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(small.Bytes(), out) {
					t.Errorf("strip=%v: reading one byte at a time gives other bytes", strip)
				}
			}
		})
	}
}

func TestFilterIsAWellBehavedReader(t *testing.T) {
	for _, s := range samples(t) {
		t.Run(s.contentType, func(t *testing.T) {
			want, _ := filterAll(t, bytes.NewReader(s.bytes), s.contentType, true)
			if err := iotest.TestReader(imaging.New().Filter(bytes.NewReader(s.bytes), s.contentType, true), want); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestFilterKeepsWhatStripMustKeep(t *testing.T) {
	jp, _ := filterAll(t, bytes.NewReader(jpegWithMetadata(t, picture(8, 8))), "image/jpeg", true)
	for _, kept := range []string{"JFIF", "ICC_PROFILE", "Adobe"} {
		if !bytes.Contains(jp, []byte(kept)) {
			t.Errorf("the stripped JPEG lost its %s segment", kept)
		}
	}
	for _, gone := range []string{"Exif", "xap/1.0", "Photoshop"} {
		if bytes.Contains(jp, []byte(gone)) {
			t.Errorf("the stripped JPEG still holds %s", gone)
		}
	}
	pn, _ := filterAll(t, bytes.NewReader(pngWithMetadata(t, picture(8, 8))), "image/png", true)
	for _, typ := range []string{"eXIf", "tEXt", "zTXt", "iTXt", "tIME"} {
		if bytes.Contains(pn, []byte(typ)) {
			t.Errorf("the stripped PNG still holds a %s chunk", typ)
		}
	}
	if !bytes.Contains(pn, []byte("gAMA")) {
		t.Error("the stripped PNG lost its gAMA chunk")
	}
	in := webpWithMetadata(9, 5)
	wp, _ := filterAll(t, bytes.NewReader(in), "image/webp", true)
	if len(wp) != len(in) {
		t.Fatalf("the stripped WebP has %d bytes, want %d: the RIFF size would lie", len(wp), len(in))
	}
	if bytes.Contains(wp, []byte("EXIF")) || bytes.Contains(wp, []byte("XMP ")) || bytes.Count(wp, []byte("JUNK")) != 2 {
		t.Error("the Exif and XMP chunks of the stripped WebP are not JUNK")
	}
	if flags := wp[12+8]; flags&(0x08|0x04) != 0 {
		t.Errorf("VP8X flags %#x still announce metadata", flags)
	}
}

func TestFilterStripsWhatFollowsAJPEGsScan(t *testing.T) {
	first := jpegWithMetadata(t, picture(40, 30))
	// A comment between the end of the scan and EOI, where a progressive JPEG has its
	// further segments.
	withComment := append(append(append([]byte{}, first[:len(first)-2]...), jpegSegment(0xFE, []byte(gps))...), 0xFF, 0xD9)
	// A second JPEG after EOI, as the Multi-Picture Format stores previews and gain maps,
	// with Exif of its own; then bytes that are no JPEG.
	second := jpegWithMetadata(t, picture(16, 16))
	multi := append(append(append([]byte{}, withComment...), second...), "trailing bytes"...)
	out, f := filterAll(t, iotest.OneByteReader(bytes.NewReader(multi)), "image/jpeg", true)
	if bytes.Contains(out, []byte(gps)) {
		t.Error("the metadata after the scan, or of the second image, is still there")
	}
	samePixels(t, decode(t, "image/jpeg", first), decode(t, "image/jpeg", out))
	if w, h, ok := f.Dimensions(); !ok || w != 40 || h != 30 {
		t.Errorf("%d×%d %v, want the first image's 40×30", w, h, ok)
	}
	soi := bytes.LastIndex(out, []byte{0xFF, 0xD8})
	if soi < 0 || !bytes.HasSuffix(out, []byte("trailing bytes")) {
		t.Fatal("the second image or the trailing bytes are gone")
	}
	samePixels(t, decode(t, "image/jpeg", second), decode(t, "image/jpeg", out[soi:]))
	if kept, _ := filterAll(t, bytes.NewReader(multi), "image/jpeg", false); !bytes.Equal(kept, multi) {
		t.Error("without strip the bytes changed")
	}

	// Restart markers and stuffed bytes are part of the scan, not the end of it.
	b := append([]byte{0xFF, 0xD8}, jpegSegment(0xC0, []byte{8, 0, 2, 0, 2, 1, 1, 0x11, 0})...)
	b = append(b, jpegSegment(0xDA, []byte{1, 1, 0, 0, 63, 0})...)
	scan := []byte{1, 2, 0xFF, 0xD0, 3, 0xFF, 0x00, 4, 0xFF, 0xFF, 0xD7, 5}
	b = append(append(b, scan...), jpegSegment(0xFE, []byte(gps))...)
	b = append(b, 0xFF, 0xD9)
	out, _ = filterAll(t, iotest.OneByteReader(bytes.NewReader(b)), "image/jpeg", true)
	if want := append(b[:len(b)-len(gps)-6], 0xFF, 0xD9); !bytes.Equal(out, want) {
		t.Errorf("a scan with restart markers: % x, want % x", out, want)
	}
}

func TestFilterReadsTheSizeOfAJPEGFromItsFrameOnly(t *testing.T) {
	// DHT (C4), JPG (C8) and DAC (CC) sit in the range of the SOFn markers; their bytes here
	// read as a size of 4369×4369 if taken for a frame.
	size := []byte{8, 0x11, 0x11, 0x11, 0x11, 3, 1, 0x22, 0}
	frame := []byte{8, 0, 77, 0, 99, 3, 1, 0x22, 0} // SOF2: progressive, 99×77
	b := []byte{0xFF, 0xD8}
	for _, m := range []byte{0xC4, 0xC8, 0xCC} {
		b = append(b, jpegSegment(m, size)...)
	}
	b = append(b, jpegSegment(0xC2, frame)...)
	b = append(b, jpegSegment(0xDA, []byte{1, 1, 0, 0, 63, 0})...)
	b = append(b, 0x12, 0x34, 0xFF, 0xD9)
	out, f := filterAll(t, bytes.NewReader(b), "image/jpeg", true)
	if !bytes.Equal(out, b) {
		t.Error("the bytes changed")
	}
	if w, h, ok := f.Dimensions(); !ok || w != 99 || h != 77 {
		t.Errorf("%d×%d %v, want 99×77", w, h, ok)
	}
	// Without a frame before the scan, there is no size.
	noFrame := append(append([]byte{0xFF, 0xD8}, jpegSegment(0xC4, size)...), jpegSegment(0xDA, []byte{1, 1, 0, 0, 63, 0})...)
	if _, f := filterAll(t, bytes.NewReader(noFrame), "image/jpeg", true); func() bool { _, _, ok := f.Dimensions(); return ok }() {
		t.Error("a JPEG without a frame has dimensions")
	}
}

func TestFilterDimensionsOfOtherWebPKinds(t *testing.T) {
	lossy := make([]byte, 16)
	copy(lossy, []byte{0x50, 0x01, 0x00, 0x9d, 0x01, 0x2a})
	binary.LittleEndian.PutUint16(lossy[6:], 640|1<<14) // the top bits are a scale, not size
	binary.LittleEndian.PutUint16(lossy[8:], 480)
	for name, c := range map[string]struct {
		b    []byte
		w, h int
	}{
		"simple lossless": {riff(riffChunk("VP8L", vp8l(300, 2, checker))), 300, 2},
		"simple lossy":    {riff(riffChunk("VP8 ", lossy)), 640, 480},
		"extended canvas": {riff(riffChunk("VP8X", vp8x(0, 70000, 3)), riffChunk("VP8 ", lossy)), 70000, 3},
	} {
		_, f := filterAll(t, bytes.NewReader(c.b), "image/webp", true)
		if w, h, ok := f.Dimensions(); !ok || w != c.w || h != c.h {
			t.Errorf("%s: %d×%d %v, want %d×%d", name, w, h, ok, c.w, c.h)
		}
	}
	if _, f := filterAll(t, bytes.NewReader(riff(riffChunk("VP8L", vp8l(4, 4, checker)))), "image/png", true); func() bool { _, _, ok := f.Dimensions(); return ok }() {
		t.Error("a WebP named a PNG has dimensions")
	}
}

func TestFilterPassesCutFilesThrough(t *testing.T) {
	for _, s := range samples(t) {
		t.Run(s.contentType, func(t *testing.T) {
			for n := range len(s.bytes) {
				cut := s.bytes[:n]
				out, f := filterAll(t, bytes.NewReader(cut), s.contentType, false)
				if !bytes.Equal(out, cut) {
					t.Fatalf("cut at %d: %d bytes out, want them unchanged", n, len(out))
				}
				_, _, ok := f.Dimensions()
				if ok && (s.contentType == "image/png" || s.contentType == "image/webp") {
					t.Fatalf("cut at %d: dimensions reported for a file that ends before the image does", n)
				}
				stripped, _ := filterAll(t, bytes.NewReader(cut), s.contentType, true)
				if bytes.Contains(stripped, []byte(gps)) {
					t.Fatalf("cut at %d: the stripped bytes hold the metadata", n)
				}
			}
		})
	}
}

func TestFilterPassesWhatItDoesNotUnderstandUnchanged(t *testing.T) {
	jp := jpegWithMetadata(t, picture(8, 8))
	badJPEG := append(append(append([]byte{}, jp[:2]...), "not a marker"...), jp[2:]...)
	pn := pngWithMetadata(t, picture(8, 8))
	badPNG := append(append(append([]byte{}, pn[:33]...), pngChunk("t3Xt", []byte(gps))...), pn[33:]...)
	wp := webpWithMetadata(8, 8)
	badWebP := append([]byte{}, wp...)
	binary.LittleEndian.PutUint32(badWebP[12+4:], 11) // VP8X of the wrong size
	for name, c := range map[string]struct {
		contentType string
		b           []byte
	}{
		"jpeg with garbage after SOI": {"image/jpeg", badJPEG},
		"png with a bad chunk type":   {"image/png", badPNG},
		"webp with a bad VP8X":        {"image/webp", badWebP},
		"a pdf":                       {"application/pdf", []byte("%PDF-1.7\n" + gps)},
		"text called a png":           {"image/png", []byte(gps)},
		"nothing":                     {"image/jpeg", nil},
	} {
		out, f := filterAll(t, iotest.OneByteReader(bytes.NewReader(c.b)), c.contentType, true)
		if !bytes.Equal(out, c.b) {
			t.Errorf("%s: the bytes changed", name)
		}
		if _, _, ok := f.Dimensions(); ok {
			t.Errorf("%s: dimensions reported", name)
		}
	}
}

func TestFilterPassesReadErrorsOn(t *testing.T) {
	s := samples(t)[1]
	boom := io.ErrClosedPipe
	// The error comes once, as a connection's would, then the source would seem to end: the
	// filter must not lose it (bufio hands a read error to one call only).
	for _, cut := range []int{30, 33, 100} {
		r := io.MultiReader(bytes.NewReader(s.bytes[:cut]), &errOnce{err: boom})
		out, err := io.ReadAll(imaging.New().Filter(r, s.contentType, true))
		if err != boom {
			t.Fatalf("cut at %d: error %v, want %v", cut, err, boom)
		}
		if len(out) > cut {
			t.Fatalf("cut at %d: %d bytes before the error", cut, len(out))
		}
	}
}

type errOnce struct {
	err  error
	done bool
}

func (r *errOnce) Read([]byte) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	r.done = true
	return 0, r.err
}

func thumb(t *testing.T, contentType string, b []byte, maxSide int) (files.Thumb, image.Image) {
	t.Helper()
	var out bytes.Buffer
	th, err := imaging.New().Thumbnail(bytes.NewReader(b), contentType, maxSide, 50_000_000, &out)
	if err != nil {
		t.Fatalf("%s: %v", contentType, err)
	}
	m, err := jpeg.Decode(&out)
	if err != nil {
		t.Fatalf("the thumbnail is no JPEG: %v", err)
	}
	return th, m
}

func TestThumbnailSizes(t *testing.T) {
	for _, c := range []struct {
		name         string
		w, h         int
		maxSide      int
		wantW, wantH int
	}{
		{"landscape", 400, 300, 100, 100, 75},
		{"portrait", 300, 400, 100, 75, 100},
		{"small, not enlarged", 50, 20, 100, 50, 20},
		{"a line", 1000, 1, 100, 100, 1},
	} {
		m := picture(c.w, c.h)
		enc := map[string][]byte{
			"image/jpeg": encodeJPEG(t, m),
			"image/png":  encodePNG(t, m),
			"image/gif":  encodeGIF(t, m),
			"image/webp": riff(riffChunk("VP8L", vp8l(c.w, c.h, checker))),
		}
		for contentType, b := range enc {
			th, got := thumb(t, contentType, b, c.maxSide)
			if th.ContentType != "image/jpeg" || th.Width != c.wantW || th.Height != c.wantH {
				t.Errorf("%s %s: %+v, want image/jpeg %d×%d", c.name, contentType, th, c.wantW, c.wantH)
			}
			if got.Bounds().Dx() != c.wantW || got.Bounds().Dy() != c.wantH {
				t.Errorf("%s %s: the JPEG is %v", c.name, contentType, got.Bounds())
			}
		}
	}
}

func TestThumbnailLaysTransparencyOnWhite(t *testing.T) {
	_, m := thumb(t, "image/png", encodePNG(t, image.NewNRGBA(image.Rect(0, 0, 40, 40))), 20)
	r, g, b, _ := m.At(10, 10).RGBA()
	if r>>8 < 250 || g>>8 < 250 || b>>8 < 250 {
		t.Fatalf("a transparent image's thumbnail is %d,%d,%d, not white", r>>8, g>>8, b>>8)
	}
}

func TestThumbnailOfAGIFIsItsFirstFrame(t *testing.T) {
	red := image.NewPaletted(image.Rect(0, 0, 30, 30), palette.Plan9)
	blue := image.NewPaletted(image.Rect(0, 0, 30, 30), palette.Plan9)
	for i := range red.Pix {
		red.Pix[i] = uint8(red.Palette.Index(color.RGBA{255, 0, 0, 255}))
		blue.Pix[i] = uint8(blue.Palette.Index(color.RGBA{0, 0, 255, 255}))
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, &gif.GIF{Image: []*image.Paletted{red, blue}, Delay: []int{10, 10}}); err != nil {
		t.Fatal(err)
	}
	_, m := thumb(t, "image/gif", b.Bytes(), 10)
	if r, _, bl, _ := m.At(5, 5).RGBA(); r>>8 < 200 || bl>>8 > 60 {
		t.Fatalf("the thumbnail is not the red first frame: %v", m.At(5, 5))
	}
}

func TestThumbnailKeepsColoursAndAveragesFineDetail(t *testing.T) {
	solid := image.NewNRGBA(image.Rect(0, 0, 800, 600))
	stripes := image.NewNRGBA(image.Rect(0, 0, 800, 600))
	grey := image.NewGray(image.Rect(0, 0, 800, 600))
	for y := range 600 {
		for x := range 800 {
			solid.Set(x, y, color.NRGBA{200, 60, 30, 255})
			// Stripes one pixel wide: sampled, they would come out black or white; averaged,
			// they are grey.
			stripes.Set(x, y, color.Gray{uint8(255 * (x % 2))})
			grey.Set(x, y, color.Gray{uint8(255 * ((x + y) % 2))})
		}
	}
	near := func(got, want uint32) bool { return got>>8+12 >= want && got>>8 <= want+12 }
	for contentType, b := range map[string][]byte{
		"image/jpeg": encodeJPEG(t, solid),
		"image/png":  encodePNG(t, solid),
		"image/gif":  encodeGIF(t, solid),
	} {
		_, m := thumb(t, contentType, b, 100)
		if r, g, bl, _ := m.At(40, 30).RGBA(); !near(r, 200) || !near(g, 60) || !near(bl, 30) {
			t.Errorf("%s: the thumbnail of a solid colour is %d,%d,%d", contentType, r>>8, g>>8, bl>>8)
		}
	}
	for contentType, b := range map[string][]byte{
		"image/jpeg": encodeJPEG(t, stripes),
		"image/png":  encodePNG(t, stripes),
		"image/gif":  encodeGIF(t, stripes),
		"grey jpeg":  encodeJPEG(t, grey),
		"grey png":   encodePNG(t, grey),
	} {
		name := contentType
		if kind, ok := strings.CutPrefix(name, "grey "); ok {
			contentType = "image/" + kind
		}
		_, m := thumb(t, contentType, b, 100)
		if r, _, _, _ := m.At(40, 30).RGBA(); !near(r, 128) {
			t.Errorf("%s: fine stripes came out %d, not grey", name, r>>8)
		}
	}
}

func TestThumbnailKeepsThePictureInPlace(t *testing.T) {
	// The top half black, the bottom half white: a thumbnail made of the wrong rows or
	// columns shows it.
	colour := image.NewNRGBA(image.Rect(0, 0, 900, 600))
	grey := image.NewGray(image.Rect(0, 0, 900, 600))
	for y := range 600 {
		for x := range 900 {
			v := uint8(255 * (y / 300))
			if x >= 600 {
				v = 255 - v // the right third the other way round
			}
			colour.Set(x, y, color.NRGBA{v, v, v, 255})
			grey.Set(x, y, color.Gray{v})
		}
	}
	for name, c := range map[string]struct {
		contentType string
		b           []byte
	}{
		"colour jpeg": {"image/jpeg", encodeJPEG(t, colour)},
		"grey jpeg":   {"image/jpeg", encodeJPEG(t, grey)},
		"colour png":  {"image/png", encodePNG(t, colour)},
		"grey png":    {"image/png", encodePNG(t, grey)},
		"gif":         {"image/gif", encodeGIF(t, colour)},
	} {
		_, m := thumb(t, c.contentType, c.b, 90) // 90×60
		for _, p := range []struct {
			x, y  int
			light bool
		}{{20, 10, false}, {20, 50, true}, {80, 10, true}, {80, 50, false}} {
			v, _, _, _ := m.At(p.x, p.y).RGBA()
			if p.light != (v>>8 > 128) || (v>>8 > 30 && v>>8 < 225) {
				t.Errorf("%s: the thumbnail at (%d,%d) is %d", name, p.x, p.y, v>>8)
			}
		}
	}
}

// bomb is a PNG whose header claims 100000×100000 pixels (40 GB decoded) in a few bytes.
func bomb() []byte {
	ihdr := binary.BigEndian.AppendUint32(nil, 100000)
	ihdr = binary.BigEndian.AppendUint32(ihdr, 100000)
	ihdr = append(ihdr, 8, 6, 0, 0, 0)
	b := append([]byte("\x89PNG\r\n\x1a\n"), pngChunk("IHDR", ihdr)...)
	b = append(b, pngChunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})...)
	return append(b, pngChunk("IEND", nil)...)
}

func TestThumbnailRefusesTooManyPixelsBeforeDecoding(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := imaging.New().Thumbnail(bytes.NewReader(bomb()), "image/png", 320, 40_000_000, io.Discard)
	runtime.ReadMemStats(&after)
	if !kernel.IsCode(err, files.CodeImageTooLarge) {
		t.Fatalf("error %v, want image_too_large", err)
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20 {
		t.Fatalf("refusing the image allocated %d bytes", grown)
	}
	// The limit counts pixels, not the side: 8×8 is within 64 and refused at 63.
	small := encodePNG(t, picture(8, 8))
	if _, err := imaging.New().Thumbnail(bytes.NewReader(small), "image/png", 4, 63, io.Discard); !kernel.IsCode(err, files.CodeImageTooLarge) {
		t.Fatalf("64 pixels at a limit of 63: %v", err)
	}
	if _, err := imaging.New().Thumbnail(bytes.NewReader(small), "image/png", 4, 64, io.Discard); err != nil {
		t.Fatalf("64 pixels at a limit of 64: %v", err)
	}
}

func TestThumbnailRefusesWhatDoesNotDecode(t *testing.T) {
	jp := encodeJPEG(t, picture(64, 64))
	for name, c := range map[string]struct {
		contentType string
		b           []byte
	}{
		"garbage":           {"image/png", []byte("this is not a picture at all")},
		"empty":             {"image/jpeg", nil},
		"a cut jpeg":        {"image/jpeg", jp[:len(jp)/2]},
		"a png called jpeg": {"image/jpeg", encodePNG(t, picture(4, 4))},
		"not an image type": {"application/pdf", []byte("%PDF-1.7")},
		"a broken webp":     {"image/webp", riff(riffChunk("VP8L", []byte{0x2f, 1, 2}))},
	} {
		_, err := imaging.New().Thumbnail(bytes.NewReader(c.b), c.contentType, 100, 1<<30, io.Discard)
		if !kernel.IsCode(err, files.CodeImageUnreadable) {
			t.Errorf("%s: error %v, want image_unreadable", name, err)
		}
	}
}

func BenchmarkThumbnail4000x3000JPEG(b *testing.B) {
	photo := encodeJPEG(b, picture(4000, 3000))
	b.SetBytes(int64(len(photo)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := imaging.New().Thumbnail(bytes.NewReader(photo), "image/jpeg", 320, 50_000_000, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFilter4000x3000JPEG(b *testing.B) {
	photo := jpegWithMetadata(b, picture(4000, 3000))
	b.SetBytes(int64(len(photo)))
	for b.Loop() {
		if _, err := io.Copy(io.Discard, imaging.New().Filter(bytes.NewReader(photo), "image/jpeg", true)); err != nil {
			b.Fatal(err)
		}
	}
}
