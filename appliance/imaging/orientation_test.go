package imaging_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"

	"bothy.dev/bothy/appliance/imaging"
)

// exifTIFF is the TIFF of an Exif block in order, as a phone writes one in short: IFD0 with
// the camera's make, the orientation o (none when o is 0) and a pointer to a GPS IFD that
// holds the gps marker, then IFD1, a thumbnail's.
func exifTIFF(order binary.AppendByteOrder, o int) []byte {
	n0 := 2
	if o != 0 {
		n0 = 3
	}
	ifd0 := uint32(8)
	makeAt := ifd0 + 2 + 12*uint32(n0) + 4
	const maker = "Phone\x00"
	gpsIFD := makeAt + uint32(len(maker))
	gpsAt := gpsIFD + 2 + 12 + 4
	gpsText := gps + "\x00"
	ifd1 := gpsAt + uint32(len(gpsText))
	if ifd1%2 == 1 {
		ifd1++ // IFDs start on a word
	}
	entry := func(b []byte, tag, typ uint16, count, value uint32) []byte {
		b = order.AppendUint16(b, tag)
		b = order.AppendUint16(b, typ)
		b = order.AppendUint32(b, count)
		return order.AppendUint32(b, value)
	}
	short := func(b []byte, tag, v uint16) []byte {
		b = order.AppendUint16(b, tag)
		b = order.AppendUint16(b, 3)
		b = order.AppendUint32(b, 1)
		b = order.AppendUint16(b, v)
		return append(b, 0, 0)
	}
	var b []byte
	if order.String() == binary.LittleEndian.String() {
		b = append(b, 'I', 'I', 42, 0)
	} else {
		b = append(b, 'M', 'M', 0, 42)
	}
	b = order.AppendUint32(b, ifd0)
	b = order.AppendUint16(b, uint16(n0))
	b = entry(b, 0x010F, 2, uint32(len(maker)), makeAt) // Make, ASCII
	if o != 0 {
		b = short(b, 0x0112, uint16(o)) // Orientation
	}
	b = entry(b, 0x8825, 4, 1, gpsIFD) // the GPS IFD, LONG
	b = order.AppendUint32(b, ifd1)
	b = append(b, maker...)
	b = order.AppendUint16(b, 1)
	b = entry(b, 0x0012, 2, uint32(len(gpsText)), gpsAt) // GPSMapDatum, ASCII
	b = order.AppendUint32(b, 0)
	b = append(b, gpsText...)
	for uint32(len(b)) < ifd1 {
		b = append(b, 0)
	}
	b = order.AppendUint16(b, 1)
	b = short(b, 0x0103, 6) // Compression: a JPEG thumbnail
	return order.AppendUint32(b, 0)
}

// withExif is jpeg with an APP1 Exif segment of tiff right after SOI, where Exif puts it.
func withExif(jpeg, tiff []byte) []byte {
	b := append([]byte{}, jpeg[:2]...)
	b = append(b, jpegSegment(0xE1, append([]byte("Exif\x00\x00"), tiff...))...)
	return append(b, jpeg[2:]...)
}

// app1s are the APP1 segments (marker and length included) before the first scan of jpeg.
func app1s(t *testing.T, jpeg []byte) [][]byte {
	t.Helper()
	var segs [][]byte
	b := jpeg[2:]
	for len(b) >= 4 && b[0] == 0xFF && b[1] != 0xDA {
		if b[1] == 0xFF {
			b = b[1:]
			continue
		}
		n := 2 + int(binary.BigEndian.Uint16(b[2:]))
		if n > len(b) {
			t.Fatalf("a segment runs past the end")
		}
		if b[1] == 0xE1 {
			segs = append(segs, b[:n])
		}
		b = b[n:]
	}
	return segs
}

// orientationAPP1 is the one APP1 segment a stripped JPEG turned or mirrored by o carries,
// byte for byte: Exif of a big-endian TIFF whose IFD0 holds the orientation alone.
func orientationAPP1(o int) []byte {
	return []byte{
		0xFF, 0xE1, 0x00, 0x22,
		'E', 'x', 'i', 'f', 0, 0,
		'M', 'M', 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08,
		0x00, 0x01,
		0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, byte(o), 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00,
	}
}

var (
	red   = color.NRGBA{255, 0, 0, 255}
	green = color.NRGBA{0, 255, 0, 255}
	blue  = color.NRGBA{0, 0, 255, 255}
	white = color.NRGBA{255, 255, 255, 255}
)

// quadrants is a w×h image red at the top left, green at the top right, blue at the bottom
// left and white at the bottom right: each way of turning or mirroring it looks different.
func quadrants(w, h int) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := [2][2]color.NRGBA{{red, green}, {blue, white}}[2*y/h][2*x/w]
			m.SetNRGBA(x, y, c)
		}
	}
	return m
}

type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

var orders = []struct {
	name  string
	order byteOrder
}{{"big-endian", binary.BigEndian}, {"little-endian", binary.LittleEndian}}

func TestFilterKeepsTheOrientationAndDropsTheRestOfExif(t *testing.T) {
	plain := encodeJPEG(t, quadrants(300, 100))
	for _, o := range orders {
		t.Run(o.name, func(t *testing.T) {
			in := withExif(plain, exifTIFF(o.order, 6))
			if !bytes.Contains(in, []byte(gps)) || !bytes.Contains(in, []byte("Phone")) {
				t.Fatal("the sample's Exif is not where the test put it")
			}
			out, f := filterAll(t, iotest.OneByteReader(bytes.NewReader(in)), "image/jpeg", true)
			if bytes.Contains(out, []byte(gps)) || bytes.Contains(out, []byte("Phone")) {
				t.Error("the stripped JPEG still holds the GPS IFD or the make")
			}
			segs := app1s(t, out)
			if len(segs) != 1 || !bytes.Equal(segs[0], orientationAPP1(6)) {
				t.Errorf("APP1 segments % x, want the orientation alone: % x", segs, orientationAPP1(6))
			}
			if !bytes.Equal(out[2:2+36], orientationAPP1(6)) {
				t.Error("the orientation is not where the Exif segment was")
			}
			samePixels(t, decode(t, "image/jpeg", plain), decode(t, "image/jpeg", out))
			if w, h, ok := f.Dimensions(); !ok || w != 100 || h != 300 {
				t.Errorf("dimensions %d×%d %v, want the displayed 100×300", w, h, ok)
			}

			// Without strip the bytes stay as they are, and the size is the displayed one too.
			kept, f := filterAll(t, iotest.OneByteReader(bytes.NewReader(in)), "image/jpeg", false)
			if !bytes.Equal(kept, in) {
				t.Error("without strip the bytes changed")
			}
			if w, h, ok := f.Dimensions(); !ok || w != 100 || h != 300 {
				t.Errorf("without strip: dimensions %d×%d %v, want 100×300", w, h, ok)
			}
		})
	}
}

func TestFilterDropsTheExifOfAPhotoShownAsStored(t *testing.T) {
	plain := encodeJPEG(t, quadrants(300, 100))
	for _, o := range orders {
		for _, orientation := range []int{0, 1} { // none, and "as stored"
			in := withExif(plain, exifTIFF(o.order, orientation))
			out, f := filterAll(t, bytes.NewReader(in), "image/jpeg", true)
			if segs := app1s(t, out); len(segs) != 0 || bytes.Contains(out, []byte("Exif")) {
				t.Errorf("%s, orientation %d: APP1 segments % x, want none", o.name, orientation, segs)
			}
			if bytes.Contains(out, []byte(gps)) {
				t.Errorf("%s, orientation %d: the GPS IFD is still there", o.name, orientation)
			}
			if w, h, ok := f.Dimensions(); !ok || w != 300 || h != 100 {
				t.Errorf("%s, orientation %d: dimensions %d×%d %v, want 300×100", o.name, orientation, w, h, ok)
			}
		}
	}
}

func TestFilterDropsExifThatIsNotWellFormed(t *testing.T) {
	plain := encodeJPEG(t, quadrants(300, 100))
	good := exifTIFF(binary.BigEndian, 6)
	// In good, IFD0 is at 8: its count at 8, the make's entry at 10, the orientation's at 22.
	mutate := func(at int, b ...byte) []byte {
		m := append([]byte{}, good...)
		copy(m[at:], b)
		return m
	}
	for name, tiff := range map[string][]byte{
		"IFD0 out of range":       mutate(4, 0xFF, 0xFF, 0xFF, 0xF0),
		"IFD0 just past the end":  mutate(4, 0, 0, 0, byte(len(good)-1)),
		"IFD0 in the header":      mutate(4, 0, 0, 0, 4),
		"entries past the end":    mutate(8, 0x7F, 0xFF),
		"an orientation of 9":     mutate(22+9, 9),
		"an orientation of 0":     mutate(22+9, 0),
		"an orientation as LONG":  mutate(22+3, 4),
		"two SHORTs for one":      mutate(22+7, 2),
		"no byte order":           mutate(0, 'M', 'I'),
		"not TIFF's magic":        mutate(2, 0, 43),
		"a TIFF header cut short": good[:7],
		"the entries cut short":   good[:22+6],
		"nothing after Exif":      nil,
	} {
		in := withExif(plain, tiff)
		out, f := filterAll(t, bytes.NewReader(in), "image/jpeg", true)
		if segs := app1s(t, out); len(segs) != 0 {
			t.Errorf("%s: APP1 segments % x, want none", name, segs)
		}
		if bytes.Contains(out, []byte(gps)) {
			t.Errorf("%s: the GPS IFD is still there", name)
		}
		samePixels(t, decode(t, "image/jpeg", plain), decode(t, "image/jpeg", out))
		if w, h, ok := f.Dimensions(); !ok || w != 300 || h != 100 {
			t.Errorf("%s: dimensions %d×%d %v, want the stored 300×100", name, w, h, ok)
		}
		if th, _ := thumb(t, "image/jpeg", in, 400); th.Width != 300 || th.Height != 100 {
			t.Errorf("%s: the thumbnail of the unstripped photo is %d×%d, want 300×100", name, th.Width, th.Height)
		}
	}
}

// shown are the colours of the top left, top right, bottom left and bottom right corners of
// quadrants shown with each orientation.
var shown = map[int][4]color.NRGBA{
	1:  {red, green, blue, white},
	2:  {green, red, white, blue}, // mirrored left to right
	3:  {white, blue, green, red}, // half a turn
	4:  {blue, white, red, green}, // mirrored top to bottom
	5:  {red, blue, green, white}, // mirrored along the diagonal from the top left
	6:  {blue, red, white, green}, // a quarter clockwise
	7:  {white, green, blue, red}, // mirrored along the diagonal from the top right
	8:  {green, white, red, blue}, // a quarter anticlockwise
	0:  {red, green, blue, white}, // no orientation
	-1: {red, green, blue, white}, // no Exif at all
}

func TestThumbnailStandsAsThePhotoIsShown(t *testing.T) {
	plain := encodeJPEG(t, quadrants(300, 100))
	for o, corners := range shown {
		for i, bo := range orders {
			in := plain
			if o >= 0 {
				in = withExif(plain, exifTIFF(bo.order, o))
			}
			stored, f := filterAll(t, bytes.NewReader(in), "image/jpeg", true)
			if w, h, _ := f.Dimensions(); o >= 5 && (w != 100 || h != 300) || o < 5 && (w != 300 || h != 100) {
				t.Errorf("orientation %d, %s: dimensions %d×%d", o, bo.name, w, h)
			}
			for _, c := range []struct {
				name    string
				b       []byte
				maxSide int
				long    int
			}{
				{"stored stripped", stored, 400, 300},
				{"stored stripped, scaled", stored, 120, 120},
				{"stored whole", in, 90, 90},
			} {
				name := fmt.Sprintf("orientation %d, %s, %s", o, bo.name, c.name)
				th, m := thumb(t, "image/jpeg", c.b, c.maxSide)
				w, h := c.long, c.long/3
				if o >= 5 {
					w, h = h, w
				}
				if th.Width != w || th.Height != h || m.Bounds() != image.Rect(0, 0, w, h) {
					t.Errorf("%s: %d×%d (the JPEG %v), want %d×%d", name, th.Width, th.Height, m.Bounds(), w, h)
					continue
				}
				const inset = 4
				for k, p := range []image.Point{{inset, inset}, {w - 1 - inset, inset}, {inset, h - 1 - inset}, {w - 1 - inset, h - 1 - inset}} {
					if got := color.NRGBAModel.Convert(m.At(p.X, p.Y)).(color.NRGBA); !near(got, corners[k]) {
						t.Errorf("%s: the corner at %v is %v, want %v", name, p, got, corners[k])
					}
				}
			}
			if o < 0 && i == 0 {
				break // no Exif: no byte order to vary
			}
		}
	}
}

func TestOnlyTheFirstExifSaysWhichWayUp(t *testing.T) {
	plain := encodeJPEG(t, quadrants(300, 100))
	malformed := append([]byte("MM\x00*\xff\xff\xff\xff"), gps...)
	for name, c := range map[string]struct {
		first, second []byte
		want          int // the orientation the photo is shown with
	}{
		"upright, then turned":     {exifTIFF(binary.BigEndian, 0), exifTIFF(binary.LittleEndian, 6), 1},
		"malformed, then turned":   {malformed, exifTIFF(binary.BigEndian, 6), 1},
		"bare, then turned":        {nil, exifTIFF(binary.LittleEndian, 5), 1},
		"turned, then upside down": {exifTIFF(binary.LittleEndian, 6), exifTIFF(binary.BigEndian, 3), 6},
		"turned, then malformed":   {exifTIFF(binary.BigEndian, 8), malformed, 8},
	} {
		in := withExif(withExif(plain, c.second), c.first)
		stored, f := filterAll(t, bytes.NewReader(in), "image/jpeg", true)
		segs := app1s(t, stored)
		switch {
		case bytes.Contains(stored, []byte(gps)):
			t.Errorf("%s: the GPS IFD is still there", name)
		case c.want == 1 && len(segs) != 0:
			t.Errorf("%s: APP1 segments % x, want none", name, segs)
		case c.want != 1 && (len(segs) != 1 || !bytes.Equal(segs[0], orientationAPP1(c.want))):
			t.Errorf("%s: APP1 segments % x, want orientation %d alone", name, segs, c.want)
		}
		w, h := 300, 100
		if c.want >= 5 {
			w, h = h, w
		}
		if fw, fh, ok := f.Dimensions(); !ok || fw != w || fh != h {
			t.Errorf("%s: dimensions %d×%d %v, want %d×%d", name, fw, fh, ok, w, h)
		}
		for _, b := range [][]byte{in, stored} {
			if th, m := thumb(t, "image/jpeg", b, 400); th.Width != w || th.Height != h || !near(color.NRGBAModel.Convert(m.At(4, 4)).(color.NRGBA), shown[c.want][0]) {
				t.Errorf("%s: a thumbnail of %d×%d, its top left %v, want %d×%d and %v", name, th.Width, th.Height, m.At(4, 4), w, h, shown[c.want][0])
			}
		}
	}
}

func TestFilterKeepsTheOrientationOfEachImageOfAFile(t *testing.T) {
	// The Multi-Picture Format stores previews after the first image, each with its Exif:
	// each keeps its orientation, and the first one's alone decides the dimensions.
	first := withExif(encodeJPEG(t, quadrants(30, 10)), exifTIFF(binary.BigEndian, 3))
	second := withExif(encodeJPEG(t, quadrants(12, 4)), exifTIFF(binary.LittleEndian, 6))
	out, f := filterAll(t, bytes.NewReader(append(append([]byte{}, first...), second...)), "image/jpeg", true)
	if bytes.Contains(out, []byte(gps)) {
		t.Error("the GPS IFD of an image is still there")
	}
	soi := bytes.LastIndex(out, []byte{0xFF, 0xD8})
	if soi < 0 {
		t.Fatal("the second image is gone")
	}
	if segs := app1s(t, out[:soi]); len(segs) != 1 || !bytes.Equal(segs[0], orientationAPP1(3)) {
		t.Errorf("the first image's APP1 segments are % x, want orientation 3 alone", segs)
	}
	if segs := app1s(t, out[soi:]); len(segs) != 1 || !bytes.Equal(segs[0], orientationAPP1(6)) {
		t.Errorf("the second image's APP1 segments are % x, want orientation 6 alone", segs)
	}
	if w, h, ok := f.Dimensions(); !ok || w != 30 || h != 10 {
		t.Errorf("dimensions %d×%d %v, want the first image's 30×10", w, h, ok)
	}
}

func near(a, b color.NRGBA) bool {
	d := func(x, y uint8) bool { return max(x, y)-min(x, y) <= 40 }
	return d(a.R, b.R) && d(a.G, b.G) && d(a.B, b.B)
}

func TestFilterPassesReadErrorsInsideExifOn(t *testing.T) {
	in := withExif(encodeJPEG(t, quadrants(60, 20)), exifTIFF(binary.LittleEndian, 6))
	boom := io.ErrClosedPipe
	for _, strip := range []bool{false, true} {
		for _, cut := range []int{5, 20, 60} { // all inside the Exif segment
			r := io.MultiReader(bytes.NewReader(in[:cut]), &errOnce{err: boom})
			f := imaging.New().Filter(r, "image/jpeg", strip)
			out, err := io.ReadAll(f)
			if err != boom {
				t.Fatalf("strip=%v, cut at %d: error %v, want %v", strip, cut, err, boom)
			}
			if strip && bytes.Contains(out, []byte("II*")) || !strip && !bytes.Equal(out, in[:cut]) {
				t.Errorf("strip=%v, cut at %d: % x out", strip, cut, out)
			}
			if _, _, ok := f.Dimensions(); ok {
				t.Errorf("strip=%v, cut at %d: dimensions of an image that failed before its frame", strip, cut)
			}
		}
	}
}

// TestExifOfRandomBytes feeds the filter and the thumbnail Exif segments of random bytes and
// of well-formed Exif with random bytes changed: neither panics, the filter hands out either
// nothing of them or the orientation alone, the picture stays, and both agree on which way up
// the image stands.
func TestExifOfRandomBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	plain := encodeJPEG(t, quadrants(24, 8))
	want := decode(t, "image/jpeg", plain)
	wellFormed := [][]byte{exifTIFF(binary.BigEndian, 6), exifTIFF(binary.LittleEndian, 8), exifTIFF(binary.BigEndian, 3)}
	for i := range 3000 {
		var tiff []byte
		switch i % 4 {
		case 0: // noise
			tiff = make([]byte, rng.IntN(64))
			for j := range tiff {
				tiff[j] = byte(rng.Uint32())
			}
		case 1, 2: // a TIFF header, then noise with small offsets and counts likely
			tiff = append([]byte{}, [][]byte{[]byte("MM\x00*"), []byte("II*\x00")}[i%2]...)
			for range rng.IntN(80) {
				tiff = append(tiff, byte(rng.IntN(12)))
			}
		case 3: // well-formed, with a few bytes changed
			tiff = append([]byte{}, wellFormed[rng.IntN(len(wellFormed))]...)
			for range 1 + rng.IntN(3) {
				tiff[rng.IntN(len(tiff))] = byte(rng.Uint32())
			}
		}
		in := withExif(plain, tiff)
		out, f := filterAll(t, bytes.NewReader(in), "image/jpeg", true)
		segs := app1s(t, out)
		o := 1
		if len(segs) > 1 || len(segs) == 1 && (len(segs[0]) != 36 || !bytes.Equal(segs[0], orientationAPP1(int(segs[0][29])))) {
			t.Fatalf("Exif % x: APP1 segments % x, want the orientation alone or none", tiff, segs)
		}
		if len(segs) == 1 {
			if o = int(segs[0][29]); o < 2 || o > 8 {
				t.Fatalf("Exif % x: orientation %d kept", tiff, o)
			}
		}
		samePixels(t, want, decode(t, "image/jpeg", out))
		w, h, ok := f.Dimensions()
		if !ok {
			t.Fatalf("Exif % x: no dimensions", tiff)
		}
		if kept, _ := filterAll(t, bytes.NewReader(in), "image/jpeg", false); !bytes.Equal(kept, in) {
			t.Fatalf("Exif % x: without strip the bytes changed", tiff)
		}
		for _, b := range [][]byte{in, out} {
			th, _ := thumb(t, "image/jpeg", b, 100)
			if th.Width != w || th.Height != h {
				t.Fatalf("Exif % x (orientation %d): a thumbnail of %d×%d, dimensions %d×%d", tiff, o, th.Width, th.Height, w, h)
			}
		}
	}
}

func BenchmarkThumbnail4000x3000JPEGTurned(b *testing.B) {
	photo := withExif(encodeJPEG(b, picture(4000, 3000)), exifTIFF(binary.BigEndian, 6))
	b.SetBytes(int64(len(photo)))
	for b.Loop() {
		if _, err := imaging.New().Thumbnail(bytes.NewReader(photo), "image/jpeg", 320, 50_000_000, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFilterJPEGWithFullExif filters a photo whose Exif segment is as large as one can
// be, as a phone's is with its embedded preview: the segment is held whole.
func BenchmarkFilterJPEGWithFullExif(b *testing.B) {
	tiff := exifTIFF(binary.LittleEndian, 6)
	tiff = append(tiff, make([]byte, 65533-6-len(tiff))...)
	photo := withExif(encodeJPEG(b, picture(4000, 3000)), tiff)
	b.SetBytes(int64(len(photo)))
	for b.Loop() {
		if _, err := io.Copy(io.Discard, imaging.New().Filter(bytes.NewReader(photo), "image/jpeg", true)); err != nil {
			b.Fatal(err)
		}
	}
}
