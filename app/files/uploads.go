package files

import (
	"context"
	"io"
	"slices"

	"bothy.dev/bothy/app/kernel"
)

// Resumable uploads: a client that may lose its link announces the file (CreateUpload), sends
// its parts in any order and as often as it needs (PutPart: a part sent again replaces the
// first), asks which parts arrived (GetUpload) and completes it (CompleteUpload), which streams
// the parts in order through the same path as a whole upload. An upload never completed is
// removed at its expires_at (the job files.upload_expiry), parts and all.

// NewUpload is the input of CreateUpload.
type NewUpload struct {
	Name        string
	Size        int64
	ContentType string
}

// CreateUpload announces a resumable upload of the actor. Errors: validation_failed,
// file_too_large.
func (s *Service) CreateUpload(ctx context.Context, actor kernel.Actor, in NewUpload) (Upload, error) {
	if err := s.authz.Authorize(ctx, actor, ActFileUpload, kernel.Resource{Kind: ResFile, OwnerID: actor.ID}); err != nil {
		return Upload{}, err
	}
	if in.Name == "" {
		return Upload{}, kernel.Invalid("name", "the upload needs the file's name")
	}
	if in.Size < 1 {
		return Upload{}, kernel.Invalid("size", "size must be the file's length in bytes, at least 1")
	}
	if in.Size > s.cfg.MaxUploadBytes {
		return Upload{}, s.tooLarge()
	}
	if len(in.ContentType) > MaxContentTypeBytes {
		return Upload{}, kernel.Invalid("content_type", "content_type must be at most %d bytes", MaxContentTypeBytes)
	}
	now := s.now()
	u := Upload{ID: kernel.NewID(), Name: SanitizeName(in.Name), ContentType: in.ContentType, Size: in.Size,
		PartSize: s.cfg.PartSize, CreatedAt: now, ExpiresAt: now.Add(s.cfg.UploadTTL), UploaderID: actor.ID}
	u.Parts = u.partCount()
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		if err := s.store.InsertUpload(ctx, u); err != nil {
			return err
		}
		return s.jobs.Enqueue(ctx, kernel.Job{Name: JobUploadExpiry, Args: UploadJobArgs{UploadID: u.ID}, At: u.ExpiresAt, Key: string(u.ID)})
	})
	if err != nil {
		return Upload{}, err
	}
	u.Received = []int{}
	return u, nil
}

func (u Upload) partCount() int { return int((u.Size + u.PartSize - 1) / u.PartSize) }

// partLen is the size part n must have: PartSize, the last one the rest.
func (u Upload) partLen(n int) int64 {
	if n < u.Parts {
		return u.PartSize
	}
	return u.Size - int64(u.Parts-1)*u.PartSize
}

// withReceived fills Parts and Received from the stored part sizes: a part counts as received
// only with the size it must have.
func (u Upload) withReceived() Upload {
	u.Parts = u.partCount()
	u.Received = []int{}
	for n, size := range u.PartSizes {
		if n >= 1 && n <= u.Parts && size == u.partLen(n) {
			u.Received = append(u.Received, n)
		}
	}
	slices.Sort(u.Received)
	return u
}

// upload loads the actor's upload id that has not expired. Errors: not_found.
func (s *Service) upload(ctx context.Context, actor kernel.Actor, id kernel.ID) (Upload, error) {
	if err := s.authz.Authorize(ctx, actor, ActFileUpload, kernel.Resource{Kind: ResFile, OwnerID: actor.ID}); err != nil {
		return Upload{}, err
	}
	u, err := s.store.Upload(ctx, id)
	if err != nil {
		return Upload{}, err
	}
	if u.UploaderID != actor.ID || !s.now().Before(u.ExpiresAt) {
		return Upload{}, kernel.ErrNotFound
	}
	return u.withReceived(), nil
}

// GetUpload answers the actor's upload with the parts received so far. Errors: not_found.
func (s *Service) GetUpload(ctx context.Context, actor kernel.Actor, id kernel.ID) (Upload, error) {
	return s.upload(ctx, actor, id)
}

// PutPart stores part n of the actor's upload from body, replacing a part n sent before.
// Errors: not_found, validation_failed (no such part, or a body of another size than the part's),
// file_too_large.
func (s *Service) PutPart(ctx context.Context, actor kernel.Actor, id kernel.ID, n int, body io.Reader) (Upload, error) {
	u, err := s.upload(ctx, actor, id)
	if err != nil {
		return Upload{}, err
	}
	if n < 1 || n > u.Parts {
		return Upload{}, kernel.Invalid("n", "the upload has parts 1 to %d", u.Parts)
	}
	want := u.partLen(n)
	b, err := s.blobs.PutPart(ctx, id, n, body, want)
	if kernel.IsCode(err, CodeFileTooLarge) {
		_ = s.store.PutPart(ctx, id, n, -1)
		return Upload{}, kernel.Errorf(CodeFileTooLarge, "part %d must be %d bytes", n, want)
	}
	if err != nil {
		return Upload{}, err
	}
	if err := s.store.PutPart(ctx, id, n, b.Size); err != nil {
		return Upload{}, err
	}
	if b.Size != want {
		return Upload{}, kernel.Invalid("body", "part %d must be %d bytes, not %d", n, want, b.Size)
	}
	if u.PartSizes == nil {
		u.PartSizes = map[int]int64{}
	}
	u.PartSizes[n] = b.Size
	return u.withReceived(), nil
}

// CompleteUpload makes the file of the actor's upload once every part has arrived: the parts are
// read in order, as one stream, through the path of Upload (type, metadata, hash), and the
// upload and its parts are removed. Errors: not_found, upload_incomplete.
func (s *Service) CompleteUpload(ctx context.Context, actor kernel.Actor, id kernel.ID) (File, error) {
	u, err := s.upload(ctx, actor, id)
	if err != nil {
		return File{}, err
	}
	if len(u.Received) != u.Parts {
		return File{}, kernel.Errorf(CodeUploadIncomplete, "%d of %d parts have arrived", len(u.Received), u.Parts)
	}
	parts := &partsReader{ctx: ctx, blobs: s.blobs, upload: id, parts: u.Parts}
	defer parts.Close()
	blob, ct, dims, err := s.store1(ctx, parts, u.ContentType)
	if err != nil {
		return File{}, err
	}
	f := File{ID: kernel.NewID(), Name: u.Name, ContentType: ct, Size: blob.Size, SHA256: blob.Key, CreatedAt: s.now(), UploaderID: actor.ID}
	if dims.ok {
		w, h := dims.w, dims.h
		f.Width, f.Height = &w, &h
	}
	err = s.record(ctx, f, func(ctx context.Context) error {
		deleted, err := s.store.DeleteUpload(ctx, id)
		if err != nil {
			return err
		}
		if !deleted {
			return kernel.ErrNotFound // completed by a concurrent request
		}
		return nil
	})
	if err != nil {
		return File{}, err
	}
	_ = s.blobs.DeleteParts(context.WithoutCancel(ctx), id)
	return f, nil
}

// ExpireUpload is the job that removes an upload never completed, its parts and their bytes.
func (s *Service) ExpireUpload(ctx context.Context, id kernel.ID) error {
	if err := s.uow.Do(ctx, func(ctx context.Context) error {
		_, err := s.store.DeleteUpload(ctx, id)
		return err
	}); err != nil {
		return err
	}
	return s.blobs.DeleteParts(ctx, id)
}

// partsReader reads the parts of an upload in order, opening each only when the one before it
// is done, so that one file handle at a time is open.
type partsReader struct {
	ctx    context.Context
	blobs  Blobs
	upload kernel.ID
	parts  int
	next   int
	cur    BlobReader
}

func (p *partsReader) Read(b []byte) (int, error) {
	for {
		if p.cur == nil {
			if p.next >= p.parts {
				return 0, io.EOF
			}
			p.next++
			r, err := p.blobs.OpenPart(p.ctx, p.upload, p.next)
			if err != nil {
				return 0, err
			}
			p.cur = r
		}
		n, err := p.cur.Read(b)
		if err == io.EOF {
			p.cur.Close()
			p.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (p *partsReader) Close() error {
	if p.cur != nil {
		return p.cur.Close()
	}
	return nil
}
