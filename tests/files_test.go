package tests

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
)

// The document describes uploads and downloads as raw bytes of any type; the validator reads
// them as such.
func init() {
	for _, ct := range []string{"application/octet-stream", "image/png", "image/jpeg", "image/gif", "image/webp",
		"text/html", "text/plain", "text/plain; charset=utf-8", "text/html; charset=utf-8"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
	}
}

// fileAnswer is a file as the API answers it.
type fileAnswer struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	ContentType string  `json:"content_type"`
	Size        int64   `json:"size"`
	SHA256      string  `json:"sha256"`
	Width       *int    `json:"width"`
	Height      *int    `json:"height"`
	UploaderID  string  `json:"uploader_id"`
	MessageID   *string `json:"message_id"`
	Thumbnail   *struct {
		ContentType string `json:"content_type"`
		Width       int    `json:"width"`
		Height      int    `json:"height"`
	} `json:"thumbnail"`
}

// upload sends body as a whole upload named name of the declared type.
func (c *client) upload(tb testing.TB, name, contentType string, body []byte) *response {
	tb.Helper()
	return c.do(tb, http.MethodPost, "/api/v1/files?name="+url.QueryEscape(name), nil, rawBody(body), header("Content-Type", contentType))
}

func (c *client) mustUpload(tb testing.TB, name, contentType string, body []byte) fileAnswer {
	tb.Helper()
	var f fileAnswer
	c.upload(tb, name, contentType, body).want(tb, http.StatusCreated).decode(tb, &f)
	return f
}

func (c *client) mustPostFiles(tb testing.TB, threadID, content string, ids ...string) map[string]any {
	tb.Helper()
	return c.do(tb, http.MethodPost, api("threads", threadID, "messages"), map[string]any{"content": content, "attachment_ids": ids}).
		want(tb, http.StatusCreated).obj()
}

// waitFile polls a file's metadata until done says it is ready.
func (c *client) waitFile(tb testing.TB, id string, done func(fileAnswer) bool) fileAnswer {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var f fileAnswer
		c.do(tb, http.MethodGet, api("files", id), nil).want(tb, http.StatusOK).decode(tb, &f)
		if done(f) {
			return f
		}
		if time.Now().After(deadline) {
			tb.Fatalf("file %s never got ready: %+v", id, f)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func pngOf(tb testing.TB, w, h int) []byte {
	tb.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 0x80, 0xff})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func jpegOf(tb testing.TB, w, h int) []byte {
	tb.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x * 3), uint8(y * 2), 0x40, 0xff})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 85}); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// withEXIF puts an APP1 Exif segment that names a place right after the JPEG's SOI marker.
func withEXIF(jpg []byte, marker string) []byte {
	payload := append([]byte("Exif\x00\x00"), []byte("GPS "+marker)...)
	seg := []byte{0xFF, 0xE1, 0, 0}
	binary.BigEndian.PutUint16(seg[2:], uint16(len(payload)+2))
	out := append([]byte{}, jpg[:2]...)
	out = append(out, seg...)
	out = append(out, payload...)
	return append(out, jpg[2:]...)
}

func gifOf(tb testing.TB, w, h int) []byte {
	tb.Helper()
	img := image.NewPaletted(image.Rect(0, 0, w, h), []color.Color{color.White, color.Black})
	for x := 0; x < w; x++ {
		img.SetColorIndex(x, x%h, 1)
	}
	var b bytes.Buffer
	if err := gif.Encode(&b, img, nil); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// pngBomb is a PNG whose header claims 100000×100000 pixels (40 GB decoded) over a few bytes.
func pngBomb() []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], 100000)
	binary.BigEndian.PutUint32(ihdr[4:], 100000)
	ihdr[8], ihdr[9] = 8, 6
	chunk := func(typ string, data []byte) {
		var l [4]byte
		binary.BigEndian.PutUint32(l[:], uint32(len(data)))
		b.Write(l[:])
		b.WriteString(typ)
		b.Write(data)
		crc := crc32.NewIEEE()
		crc.Write([]byte(typ))
		crc.Write(data)
		binary.BigEndian.PutUint32(l[:], crc.Sum32())
		b.Write(l[:])
	}
	chunk("IHDR", ihdr)
	chunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	chunk("IEND", nil)
	return b.Bytes()
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestFiles uploads, attaches and downloads files through the REST API on the real binary: a
// file is its uploader's alone until a message carries it, then exactly as visible as the
// message; ranges and conditional requests; what the browser is told about active content;
// images get their metadata stripped and a thumbnail, a decompression bomb none; a message's
// deletion takes its files. It runs on each blob driver (files_s3_test.go).
func TestFiles(t *testing.T) {
	t.Parallel()
	onEachBlobStore(t, func(t *testing.T, eng engine, st blobStore) {
		in := mustStartWithOwner(t, eng, st.args...)
		sp := in.owner.mustCreateSpace(t, "Files")
		ch := in.owner.mustCreateChannel(t, sp.ID, "general")
		bob, bobc := in.mustCreateUser(t, "bob")
		carol, carolc := in.mustCreateUser(t, "carol")
		_ = carol
		_, davec := in.mustCreateUser(t, "dave")
		in.owner.mustGrant(t, ch.ID, bob.ID, "post")
		in.owner.mustGrant(t, ch.ID, carol.ID, "view")
		start := in.owner.mustHead(t)

		img := pngOf(t, 640, 320)
		var f fileAnswer
		t.Run("an upload answers the file with its hash, type and dimensions", func(t *testing.T) {
			f = bobc.mustUpload(t, "../../etc/holiday\x00.png", "image/png", img)
			if f.Name != "holiday.png" || f.ContentType != "image/png" || f.Size != int64(len(img)) || f.SHA256 != sha(img) ||
				f.UploaderID != bob.ID || f.MessageID != nil || f.Width == nil || *f.Width != 640 || *f.Height != 320 {
				t.Fatalf("file %+v", f)
			}
			if got := st.blobs(t, in.srv); !slices.ContainsFunc(got, func(name string) bool { return strings.HasSuffix(name, f.SHA256) }) {
				t.Fatalf("the %s store holds the blobs %v, none of them %s", st.driver, got, f.SHA256)
			}
			if st.driver != "fs" {
				if _, err := os.Stat(filepath.Join(in.srv.dataDir, "files")); err == nil {
					t.Fatal("a server on S3 made the data directory's files/")
				}
			}
		})
		t.Run("a file attached nowhere is its uploader's alone", func(t *testing.T) {
			bobc.do(t, http.MethodGet, api("files", f.ID), nil).want(t, http.StatusOK)
			for _, c := range []*client{carolc, davec, in.owner} {
				if r := c.do(t, http.MethodGet, api("files", f.ID, "content"), nil); r.status != http.StatusNotFound {
					t.Fatalf("%s", r)
				}
			}
		})
		var msg map[string]any
		t.Run("a message carries the file, and its readers download it", func(t *testing.T) {
			msg = bobc.mustPostFiles(t, ch.MainThreadID, "", f.ID)
			atts, _ := msg["attachments"].([]any)
			if len(atts) != 1 || atts[0].(map[string]any)["id"] != f.ID || atts[0].(map[string]any)["name"] != "holiday.png" {
				t.Fatalf("message %v", msg)
			}
			r := carolc.do(t, http.MethodGet, api("files", f.ID, "content"), nil).want(t, http.StatusOK)
			if !bytes.Equal(r.raw, img) || r.header.Get("Content-Type") != "image/png" ||
				!strings.HasPrefix(r.header.Get("Content-Disposition"), "inline") || r.header.Get("ETag") != `"`+f.SHA256+`"` ||
				r.header.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(r.header.Get("Content-Security-Policy"), "sandbox") {
				t.Fatalf("%s headers %v", r, r.header)
			}
			if r := davec.do(t, http.MethodGet, api("files", f.ID), nil); r.status != http.StatusNotFound {
				t.Fatalf("a non-reader: %s", r)
			}
			events, _ := in.owner.mustAllEvents(t, start)
			found := false
			for _, e := range events {
				if e.Type == "message.created" && e.Data["id"] == msg["id"] {
					atts, _ := e.Data["attachments"].([]any)
					found = len(atts) == 1
				}
			}
			if !found {
				t.Fatalf("message.created carries no attachment: %v", types(events))
			}
		})
		t.Run("ranges and conditional requests", func(t *testing.T) {
			r := carolc.do(t, http.MethodGet, api("files", f.ID, "content"), nil, header("Range", "bytes=1-3")).want(t, http.StatusPartialContent)
			if !bytes.Equal(r.raw, img[1:4]) || r.header.Get("Content-Range") != "bytes 1-3/"+strconv.Itoa(len(img)) {
				t.Fatalf("%s %v", r, r.header)
			}
			carolc.do(t, http.MethodGet, api("files", f.ID, "content"), nil, header("If-None-Match", `"`+f.SHA256+`"`)).want(t, http.StatusNotModified)
			carolc.do(t, http.MethodGet, api("files", f.ID, "content"), nil, header("Range", "bytes=99999999-")).want(t, http.StatusRequestedRangeNotSatisfiable)
		})
		t.Run("a file is attached once, and only by its uploader", func(t *testing.T) {
			r := bobc.do(t, http.MethodPost, api("threads", ch.MainThreadID, "messages"), map[string]any{"content": "again", "attachment_ids": []string{f.ID}})
			if r.status != http.StatusUnprocessableEntity || r.code() != "attachment_invalid" {
				t.Fatalf("%s", r)
			}
			mine := carolc.mustUpload(t, "note.txt", "text/plain", []byte("carol's"))
			r = bobc.do(t, http.MethodPost, api("threads", ch.MainThreadID, "messages"), map[string]any{"content": "hers", "attachment_ids": []string{mine.ID}})
			if r.status != http.StatusUnprocessableEntity || r.code() != "attachment_invalid" {
				t.Fatalf("%s", r)
			}
			r = bobc.do(t, http.MethodPost, api("threads", ch.MainThreadID, "messages"), map[string]any{"content": " "}, breaksDocument())
			if r.status != http.StatusBadRequest {
				t.Fatalf("blank content without files: %s", r)
			}
		})
		t.Run("the thumbnail job makes a thumbnail of each image type", func(t *testing.T) {
			th := bobc.waitFile(t, f.ID, func(f fileAnswer) bool { return f.Thumbnail != nil })
			if th.Thumbnail.Width != 400 || th.Thumbnail.Height != 200 || th.Thumbnail.ContentType != "image/jpeg" {
				t.Fatalf("thumbnail %+v", th.Thumbnail)
			}
			r := carolc.do(t, http.MethodGet, api("files", f.ID, "thumbnail"), nil).want(t, http.StatusOK)
			if cfg, format, err := image.DecodeConfig(bytes.NewReader(r.raw)); err != nil || format != "jpeg" || cfg.Width != 400 {
				t.Fatalf("thumbnail %v %s %+v", err, format, cfg)
			}
			webp, err := os.ReadFile("../appliance/imaging/testdata/lossy-alpha-exif.webp")
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name, ct string
				body     []byte
			}{{"a.jpg", "image/jpeg", jpegOf(t, 300, 900)}, {"a.gif", "image/gif", gifOf(t, 50, 20)}, {"a.webp", "image/webp", webp}} {
				up := bobc.mustUpload(t, c.name, c.ct, c.body)
				got := bobc.waitFile(t, up.ID, func(f fileAnswer) bool { return f.Thumbnail != nil })
				long := max(got.Thumbnail.Width, got.Thumbnail.Height)
				if got.ContentType != c.ct || long > 400 || long < 1 || (c.name == "a.jpg" && got.Thumbnail.Height != 400) {
					t.Fatalf("%s: %+v %+v", c.name, got, got.Thumbnail)
				}
				bobc.do(t, http.MethodGet, api("files", up.ID, "thumbnail"), nil).want(t, http.StatusOK)
			}
		})
		t.Run("a decompression bomb gets no thumbnail", func(t *testing.T) {
			bomb := bobc.mustUpload(t, "bomb.png", "image/png", pngBomb())
			r := bobc.do(t, http.MethodGet, api("files", bomb.ID, "thumbnail"), nil)
			deadline := time.Now().Add(20 * time.Second)
			for r.status == http.StatusNotFound && r.header.Get("Retry-After") != "" && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				r = bobc.do(t, http.MethodGet, api("files", bomb.ID, "thumbnail"), nil)
			}
			if r.status != http.StatusNotFound || r.code() != "thumbnail_unavailable" || r.header.Get("Retry-After") != "" {
				t.Fatalf("%s", r)
			}
		})
		t.Run("the place a photo was taken does not travel with it", func(t *testing.T) {
			photo := withEXIF(jpegOf(t, 64, 64), "51.5007N-0.1246W")
			up := bobc.mustUpload(t, "photo.jpg", "image/jpeg", photo)
			r := bobc.do(t, http.MethodGet, api("files", up.ID, "content"), nil).want(t, http.StatusOK)
			if bytes.Contains(r.raw, []byte("51.5007N")) || bytes.Contains(r.raw, []byte("Exif")) {
				t.Fatal("the EXIF segment is still in the stored photo")
			}
			if _, err := jpeg.Decode(bytes.NewReader(r.raw)); err != nil || up.SHA256 != sha(r.raw) || up.Size != int64(len(r.raw)) {
				t.Fatalf("stored photo: %v, %+v", err, up)
			}
		})
		t.Run("an uploaded page is a download under a sandbox, whatever it claims to be", func(t *testing.T) {
			page := []byte("<html><body><script>document.title='owned'</script></body></html>")
			up := bobc.mustUpload(t, "page.png", "image/png", page)
			if !strings.HasPrefix(up.ContentType, "text/html") {
				t.Fatalf("a page declared as PNG is stored as %q", up.ContentType)
			}
			r := bobc.do(t, http.MethodGet, api("files", up.ID, "content"), nil).want(t, http.StatusOK)
			if !strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment") || !strings.HasPrefix(r.header.Get("Content-Security-Policy"), "sandbox") ||
				r.header.Get("X-Content-Type-Options") != "nosniff" {
				t.Fatalf("headers %v", r.header)
			}
		})
		t.Run("deleting the message deletes its files, and the bytes go", func(t *testing.T) {
			bobc.do(t, http.MethodDelete, api("messages", msg["id"].(string)), nil).want(t, http.StatusNoContent)
			for _, c := range []*client{bobc, carolc} {
				if r := c.do(t, http.MethodGet, api("files", f.ID), nil); r.status != http.StatusNotFound {
					t.Fatalf("%s", r)
				}
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				left := false
				for _, p := range st.contents(t, in.srv) {
					if strings.HasSuffix(p, f.SHA256) {
						left = true
					}
				}
				if !left {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the blob %s is still there", f.SHA256)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	})
}

// TestFileLimits holds uploads to files.max_upload_bytes (nothing is left behind by a refused
// one) and sends a file in resumable parts, one of them twice. It runs on each blob driver.
func TestFileLimits(t *testing.T) {
	t.Parallel()
	onEachBlobStore(t, func(t *testing.T, eng engine, st blobStore) {
		in := mustStartWithOwner(t, eng, st.with("--set", "files.max_upload_bytes=9500000")...)
		_, bobc := in.mustCreateUser(t, "bob")
		t.Run("a body over the limit is refused and leaves nothing", func(t *testing.T) {
			big := bytes.Repeat([]byte("x"), 9500001)
			r := bobc.upload(t, "big.bin", "application/octet-stream", big)
			if r.status != http.StatusRequestEntityTooLarge || r.code() != "file_too_large" {
				t.Fatalf("%s", r)
			}
			r = bobc.do(t, http.MethodPost, "/api/v1/files?name=big.bin", nil, rawBody(big), chunked(), header("Content-Type", "application/octet-stream"))
			if r.status != http.StatusRequestEntityTooLarge || r.code() != "file_too_large" {
				t.Fatalf("chunked: %s", r)
			}
			if left := st.contents(t, in.srv); len(left) != 0 {
				t.Fatalf("left behind: %v", left)
			}
		})
		t.Run("a resumable upload with a part sent twice", func(t *testing.T) {
			body := make([]byte, 9_000_000)
			for i := range body {
				body[i] = byte(i * 7)
			}
			var u struct {
				ID       string `json:"id"`
				PartSize int    `json:"part_size"`
				Parts    int    `json:"parts"`
				Received []int  `json:"received"`
			}
			bobc.do(t, http.MethodPost, api("uploads"), map[string]any{"name": "data.bin", "size": len(body), "content_type": "application/octet-stream"}).
				want(t, http.StatusCreated).decode(t, &u)
			if u.Parts != 2 || u.PartSize != 8<<20 || len(u.Received) != 0 {
				t.Fatalf("upload %+v", u)
			}
			part := func(n int, b []byte) *response {
				return bobc.do(t, http.MethodPut, api("uploads", u.ID, "parts", strconv.Itoa(n)), nil, rawBody(b), header("Content-Type", "application/octet-stream"))
			}
			if r := bobc.do(t, http.MethodPost, api("uploads", u.ID, "complete"), nil); r.status != http.StatusConflict || r.code() != "upload_incomplete" {
				t.Fatalf("%s", r)
			}
			part(2, body[u.PartSize:]).want(t, http.StatusOK)
			if r := part(1, body[:100]); r.status != http.StatusBadRequest {
				t.Fatalf("a short part: %s", r)
			}
			part(2, body[u.PartSize:]).want(t, http.StatusOK)
			r := part(1, body[:u.PartSize]).want(t, http.StatusOK)
			r.decode(t, &u)
			if len(u.Received) != 2 {
				t.Fatalf("received %v", u.Received)
			}
			bobc.do(t, http.MethodGet, api("uploads", u.ID), nil).want(t, http.StatusOK)
			var f fileAnswer
			bobc.do(t, http.MethodPost, api("uploads", u.ID, "complete"), nil).want(t, http.StatusCreated).decode(t, &f)
			if f.Size != int64(len(body)) || f.SHA256 != sha(body) || f.Name != "data.bin" {
				t.Fatalf("file %+v", f)
			}
			got := bobc.do(t, http.MethodGet, api("files", f.ID, "content"), nil).want(t, http.StatusOK)
			if !bytes.Equal(got.raw, body) {
				t.Fatal("the completed file is not the parts in order")
			}
			if r := bobc.do(t, http.MethodGet, api("uploads", u.ID), nil); r.status != http.StatusNotFound {
				t.Fatalf("the upload is still there: %s", r)
			}
			for _, name := range st.contents(t, in.srv) {
				if strings.HasPrefix(name, "uploads/") || strings.HasPrefix(name, "unfinished:") {
					t.Fatalf("the parts of the completed upload are still in the store: %s", name)
				}
			}
		})
	})
}
