package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Files: a file is uploaded first (UploadFile, or UploadFileResumable for a large one on a link
// that may drop), then attached to a message by its id (NewMessage.AttachmentIDs). Until a
// message carries it, it is its uploader's alone; from then on whoever may read the message's
// channel may download it, and deleting the message deletes it. An agent sees the files of the
// message that invoked it in Invocation.Attachments and downloads them with its own token, so
// its rights on the channel decide what it may read.

// File is a file as the API answers it.
type File struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	ContentType string    `json:"content_type"`
	Size        int64     `json:"size"`
	SHA256      string    `json:"sha256"` // of the bytes as stored, in hex
	CreatedAt   time.Time `json:"created_at"`
	// Width and Height are an image's dimensions; 0 for anything else.
	Width      int    `json:"width,omitempty"`
	Height     int    `json:"height,omitempty"`
	UploaderID string `json:"uploader_id"`
	// MessageID, ChannelID and ThreadID are where the file is attached; empty while it is not.
	MessageID string `json:"message_id"`
	ChannelID string `json:"channel_id"`
	ThreadID  string `json:"thread_id"`
	// Thumbnail describes an image's thumbnail once the server has made it; nil before, and for
	// anything that gets none.
	Thumbnail *Thumbnail `json:"thumbnail,omitempty"`
}

// Thumbnail is the small image Client.Thumbnail answers.
type Thumbnail struct {
	ContentType string `json:"content_type"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
}

// Attachment is a file as a message (and agent.invocation) carries it.
type Attachment struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	// Width and Height are an image's dimensions; 0 for anything else.
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
}

// Upload is a resumable upload: a file announced by its name, size and type, sent in parts of
// PartSize bytes (the last one the rest) and completed into a File.
type Upload struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	PartSize    int64  `json:"part_size"`
	Parts       int    `json:"parts"`
	// Received are the numbers (from 1) of the parts the server has, in order.
	Received  []int     `json:"received"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt is when the server drops an upload that was not completed, parts and all.
	ExpiresAt time.Time `json:"expires_at"`
}

// Download is a file's bytes as the server sends them, with what its headers say of them. Read
// it and Close it.
type Download struct {
	io.ReadCloser
	// Name is the file's name (for a thumbnail, "thumbnail-" + name + ".jpg").
	Name        string
	ContentType string
	// Size is the length of the bytes, -1 when the server did not say.
	Size int64
	// SHA256 is the hash of the bytes in hex, from the ETag.
	SHA256 string
}

// UploadFile uploads r as a file named name of type contentType (empty lets the server judge
// from the first bytes, which decide anyway where they disagree with it). r is streamed as the
// request's body, never held whole; its length is sent ahead when it is a *bytes.Reader,
// *bytes.Buffer, *strings.Reader or a regular *os.File, so that a file over the server's limit is
// refused before it is sent (413 file_too_large, else after files.max_upload_bytes). r is not
// closed. The request cannot be retried by itself: r is read once.
func (c *Client) UploadFile(ctx context.Context, name, contentType string, r io.Reader) (File, error) {
	path := "/api/v1/files?" + url.Values{"name": {name}}.Encode()
	n := lengthOf(r)
	var body io.Reader = http.NoBody
	if r != nil && n != 0 {
		body = io.NopCloser(r) // the transport closes a body; r is the caller's
	} else {
		n = 0
	}
	req, err := c.newRequest(ctx, http.MethodPost, path, body)
	if err != nil {
		return File{}, err
	}
	req.ContentLength = n // -1: unknown, sent chunked
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	req.Header.Set("Content-Type", contentType)
	var f File
	err = c.send(req, "/api/v1/files", &f)
	return f, err
}

// lengthOf is how many bytes are left in r when it says so cheaply, else -1.
func lengthOf(r io.Reader) int64 {
	switch v := r.(type) {
	case *bytes.Reader:
		return int64(v.Len())
	case *bytes.Buffer:
		return int64(v.Len())
	case *strings.Reader:
		return int64(v.Len())
	case *os.File:
		fi, err := v.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return -1
		}
		off, err := v.Seek(0, io.SeekCurrent)
		if err != nil || off > fi.Size() {
			return -1
		}
		return fi.Size() - off
	}
	return -1
}

// File reads a file's metadata. A file the token may not read answers 404 not_found, like one
// that does not exist.
func (c *Client) File(ctx context.Context, id string) (File, error) {
	var f File
	err := c.do(ctx, http.MethodGet, "/api/v1/files/"+url.PathEscape(id), nil, &f)
	return f, err
}

// DownloadFile opens a file's bytes; the caller reads and closes the Download. Errors are
// *APIError (404 not_found for a file the token may not read).
func (c *Client) DownloadFile(ctx context.Context, id string) (*Download, error) {
	return c.download(ctx, "/api/v1/files/"+url.PathEscape(id)+"/content")
}

// Thumbnail opens an image's thumbnail (a JPEG). Before the server has made it the answer is 404
// thumbnail_unavailable with a RetryAfter; without a RetryAfter there will be none.
func (c *Client) Thumbnail(ctx context.Context, id string) (*Download, error) {
	return c.download(ctx, "/api/v1/files/"+url.PathEscape(id)+"/thumbnail")
}

func (c *Client) download(ctx context.Context, path string) (*Download, error) {
	req, err := c.newRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "*/*")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: GET %s: %w", path, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return nil, fmt.Errorf("client: GET %s: read the answer: %w", path, err)
		}
		return nil, answerError(resp, raw)
	}
	d := &Download{ReadCloser: resp.Body, ContentType: resp.Header.Get("Content-Type"), Size: resp.ContentLength,
		SHA256: strings.Trim(resp.Header.Get("ETag"), `"`)}
	if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil {
		d.Name = params["filename"]
	}
	return d, nil
}

// CreateUpload announces a resumable upload of size bytes; ResumeUpload sends it. Keep its ID to
// go on after a restart of the program (until its ExpiresAt).
func (c *Client) CreateUpload(ctx context.Context, name, contentType string, size int64) (Upload, error) {
	var u Upload
	err := c.do(ctx, http.MethodPost, "/api/v1/uploads", map[string]any{"name": name, "size": size, "content_type": contentType}, &u)
	return u, err
}

// GetUpload reads an upload with the parts the server has.
func (c *Client) GetUpload(ctx context.Context, id string) (Upload, error) {
	var u Upload
	err := c.do(ctx, http.MethodGet, "/api/v1/uploads/"+url.PathEscape(id), nil, &u)
	return u, err
}

// partAttempts is how often a part is sent before ResumeUpload gives up on it.
const partAttempts = 5

// ResumeUpload sends the parts of upload id the server does not have yet, read from r (the
// whole file, from offset 0), one after the other, and completes it into a File. A part that
// fails on the way (the link, a 5xx, 429) is sent again after a backoff (the client's, see
// WithBackoff, or the server's Retry-After), up to 5 times; a refusal (4xx) ends it at once. The
// upload stays on the server after an error: calling ResumeUpload again sends only what is
// missing.
func (c *Client) ResumeUpload(ctx context.Context, id string, r io.ReaderAt) (File, error) {
	u, err := c.GetUpload(ctx, id)
	if err != nil {
		return File{}, err
	}
	for range 2 {
		for n := 1; n <= u.Parts; n++ {
			if slices.Contains(u.Received, n) {
				continue
			}
			if err := c.putPart(ctx, u, n, r); err != nil {
				return File{}, err
			}
		}
		var f File
		err := c.do(ctx, http.MethodPost, "/api/v1/uploads/"+url.PathEscape(id)+"/complete", nil, &f)
		if !IsCode(err, "upload_incomplete") {
			return f, err
		}
		// A part the server counted and then lost (or one it refused to count): ask again
		// which it has, and send the rest once more.
		if u, err = c.GetUpload(ctx, id); err != nil {
			return File{}, err
		}
	}
	return File{}, fmt.Errorf("client: upload %s: the server still misses parts after they were sent again", id)
}

// UploadFileResumable uploads a file of size bytes from r in parts: CreateUpload, then
// ResumeUpload. For a large file, or a link that may drop; a small one goes in one request with
// UploadFile.
func (c *Client) UploadFileResumable(ctx context.Context, name, contentType string, size int64, r io.ReaderAt) (File, error) {
	u, err := c.CreateUpload(ctx, name, contentType, size)
	if err != nil {
		return File{}, err
	}
	f, err := c.ResumeUpload(ctx, u.ID, r)
	if err != nil {
		return File{}, fmt.Errorf("client: upload %s (ResumeUpload goes on with it): %w", u.ID, err)
	}
	return f, nil
}

// putPart sends part n of u from r, again after a failure that may pass.
func (c *Client) putPart(ctx context.Context, u Upload, n int, r io.ReaderAt) error {
	off := int64(n-1) * u.PartSize
	size := min(u.PartSize, u.Size-off)
	path := "/api/v1/uploads/" + url.PathEscape(u.ID) + "/parts/" + strconv.Itoa(n)
	for attempt := 1; ; attempt++ {
		req, err := c.newRequest(ctx, http.MethodPut, path, io.NewSectionReader(r, off, size))
		if err != nil {
			return err
		}
		req.ContentLength = size
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(io.NewSectionReader(r, off, size)), nil }
		req.Header.Set("Content-Type", "application/octet-stream")
		err = c.send(req, path, nil)
		if err == nil {
			return nil
		}
		wait, again := c.retryAfter(err, attempt)
		if !again || attempt == partAttempts || ctx.Err() != nil {
			return fmt.Errorf("client: upload %s part %d: %w", u.ID, n, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// retryAfter says whether a request that failed with err may succeed when sent again, and after
// how long: a failure of the link, a server error, 408 or 429 may pass; any other answer would
// be the same again. The wait is the server's Retry-After, else the client's backoff.
func (c *Client) retryAfter(err error, attempt int) (time.Duration, bool) {
	var ae *APIError
	if errors.As(err, &ae) {
		if ae.Status < 500 && ae.Status != http.StatusTooManyRequests && ae.Status != http.StatusRequestTimeout {
			return 0, false
		}
		if ae.RetryAfter > 0 {
			return ae.RetryAfter, true
		}
	}
	ceiling := c.backoffCap
	if d := c.backoffBase << (attempt - 1); d > 0 && d < ceiling {
		ceiling = d
	}
	return c.jitter(ceiling), true
}

// Client is the agent's client, for the calls an Invocation does not make itself: downloading
// the files of Attachments and uploading the files of its answer (ReplyWith's AttachmentIDs).
func (inv *Invocation) Client() *Client { return inv.a.c }
