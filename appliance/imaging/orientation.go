package imaging

import (
	"bytes"
	"encoding/binary"
	"image"
)

// A camera does not turn the pixels of a photo taken upright: it stores them as the sensor
// saw them and records in Exif's Orientation tag (0x0112 in IFD0) how they are to be shown,
// 1 as they are to 8. Browsers apply it; image/jpeg does not. So the filter keeps that one
// tag when it drops the rest of Exif, and the thumbnail applies it itself.

// exifPrefix starts the data of an APP1 segment that holds Exif (XMP, the other common
// APP1, starts with its namespace).
var exifPrefix = []byte("Exif\x00\x00")

// exifOrientation answers the orientation, 1 to 8, that IFD0 of data (an APP1 segment's data)
// records; 0 when data is no Exif, holds no orientation, or is not well formed where the
// orientation would be (an offset out of range, an entry cut short, a type other than SHORT,
// a value outside 1..8). Only IFD0 is read: the orientation lives there, and no offset is
// followed beyond it.
func exifOrientation(data []byte) int {
	tiff, ok := bytes.CutPrefix(data, exifPrefix)
	if !ok || len(tiff) < 8 {
		return 0
	}
	var order binary.ByteOrder
	switch string(tiff[:4]) {
	case "II*\x00":
		order = le
	case "MM\x00*":
		order = be
	default:
		return 0
	}
	ifd := int64(order.Uint32(tiff[4:]))
	if ifd+2 > int64(len(tiff)) {
		return 0
	}
	count := int64(order.Uint16(tiff[ifd:]))
	entries := tiff[ifd+2:]
	if 12*count > int64(len(entries)) {
		return 0
	}
	for i := range count {
		e := entries[12*i : 12*i+12]
		if order.Uint16(e) != 0x0112 {
			continue
		}
		// A SHORT (type 3), one of them, whose value sits in the first two bytes of the
		// entry's four.
		if order.Uint16(e[2:]) != 3 || order.Uint32(e[4:]) != 1 {
			return 0
		}
		if v := order.Uint16(e[8:]); v >= 1 && v <= 8 {
			return int(v)
		}
		return 0
	}
	return 0
}

// orientationSegment is a whole APP1 segment (marker and length included) whose Exif holds
// nothing but IFD0 with one entry, the orientation o: no GPS IFD, no maker notes, no second
// IFD with its thumbnail. Big-endian, as any reader of Exif reads both byte orders.
func orientationSegment(o int) []byte {
	b := make([]byte, 0, 36)
	b = append(b, 0xFF, 0xE1, 0, 34) // the length counts itself and the 32 bytes of data
	b = append(b, exifPrefix...)
	b = append(b, 'M', 'M', 0, 42, 0, 0, 0, 8) // the TIFF header; IFD0 right after it
	b = append(b, 0, 1)                        // one entry
	b = append(b, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, byte(o), 0, 0)
	return append(b, 0, 0, 0, 0) // no next IFD
}

// jpegOrientation answers the orientation of the JPEG whose first bytes are b: the first
// APP1 Exif segment's, as the filter reads it; 0 when there is none in b before the first
// scan. b is what image/jpeg read for the header, which reaches the frame (SOF): Exif puts its
// APP1 right after SOI, before the frame, and so does the filter with the segment it keeps.
func jpegOrientation(b []byte) int {
	if len(b) < 2 || b[0] != 0xFF || b[1] != 0xD8 {
		return 0
	}
	b = b[2:]
	for len(b) >= 2 && b[0] == 0xFF {
		marker := b[1]
		switch {
		case marker == 0xFF: // a fill byte
			b = b[1:]
			continue
		case marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7): // no length
			b = b[2:]
			continue
		case marker == 0x00 || marker == 0xD8 || marker == 0xD9 || marker == 0xDA:
			return 0
		}
		if len(b) < 4 {
			return 0
		}
		length := int(be.Uint16(b[2:]))
		if length < 2 || 2+length > len(b) {
			return 0
		}
		if data := b[4 : 2+length]; marker == 0xE1 && bytes.HasPrefix(data, exifPrefix) {
			return exifOrientation(data)
		}
		b = b[2+length:]
	}
	return 0
}

// orient answers m turned and flipped as orientation o says it is to be shown: m itself for
// 1 (and for 0, no orientation), a new image otherwise, of swapped sides for 5 to 8.
func orient(m *image.RGBA, o int) *image.RGBA {
	if o < 2 || o > 8 {
		return m
	}
	w, h := m.Rect.Dx(), m.Rect.Dy()
	ow, oh := w, h
	if o >= 5 {
		ow, oh = h, w
	}
	out := image.NewRGBA(image.Rect(0, 0, ow, oh))
	for y := range h {
		row := m.Pix[y*m.Stride:]
		for x := range w {
			var ox, oy int
			switch o {
			case 2: // mirrored left to right
				ox, oy = w-1-x, y
			case 3: // turned half a turn
				ox, oy = w-1-x, h-1-y
			case 4: // mirrored top to bottom
				ox, oy = x, h-1-y
			case 5: // mirrored along the diagonal from the top left
				ox, oy = y, x
			case 6: // turned a quarter clockwise
				ox, oy = h-1-y, x
			case 7: // mirrored along the diagonal from the top right
				ox, oy = h-1-y, w-1-x
			case 8: // turned a quarter anticlockwise
				ox, oy = y, w-1-x
			}
			copy(out.Pix[oy*out.Stride+4*ox:][:4], row[4*x:4*x+4])
		}
	}
	return out
}
