package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// The actions of files. Anyone signed in may upload (a file is theirs alone until a message
// carries it); a file attached to a message is read like the message (view on its channel); a
// file attached nowhere is read by its uploader only.
const (
	ActFileUpload  kernel.Action = "file.upload"
	ActFileRead    kernel.Action = "file.read"
	ActFileReadOwn kernel.Action = "file.read_own"
)

// ResFile is a file as Authorize sees it: the channel it is attached to, or its uploader.
const ResFile kernel.ResourceKind = "file"

// EvFileUpdated carries a file whose metadata changed (its thumbnail is ready, or was refused).
// It goes to the readers of the file's thread when it is attached, else to its uploader alone.
var EvFileUpdated = kernel.DefineEvent[File]("file.updated")

// The jobs of files.
const (
	// JobThumbnail makes the thumbnail of a new image (FileJobArgs).
	JobThumbnail = "files.thumbnail"
	// JobUnattachedExpiry deletes a file that no message carries files.unattached_ttl after
	// its upload (FileJobArgs).
	JobUnattachedExpiry = "files.unattached_expiry"
	// JobUploadExpiry deletes a resumable upload never completed at its expires_at (UploadJobArgs).
	JobUploadExpiry = "files.upload_expiry"
	// JobBlobRemoval removes bytes no file names any more, after the Unit of Work that dropped
	// the last file naming them (BlobJobArgs).
	JobBlobRemoval = "files.blob_removal"
)

// FileJobArgs names the file of a job.
type FileJobArgs struct {
	FileID kernel.ID `json:"file_id"`
}

// UploadJobArgs names the upload of a job.
type UploadJobArgs struct {
	UploadID kernel.ID `json:"upload_id"`
}

// BlobJobArgs names a blob by its key (a SHA-256, no content).
type BlobJobArgs struct {
	Key string `json:"key"`
}

// Thumbnail states.
const (
	ThumbNone    = "none"
	ThumbPending = "pending"
	ThumbReady   = "ready"
	ThumbRefused = "refused"
)

// More error codes of files.
var (
	// CodeAttachmentInvalid: a message names a file that is not the author's, does not exist,
	// or is attached to another message.
	CodeAttachmentInvalid = kernel.NewCode("attachment_invalid", kernel.ClassUnprocessable)
	// CodeUploadIncomplete: completing an upload with parts missing.
	CodeUploadIncomplete = kernel.NewCode("upload_incomplete", kernel.ClassConflict)
	// CodeThumbnailUnavailable: a file with no thumbnail (yet, or ever).
	CodeThumbnailUnavailable = kernel.NewCode("thumbnail_unavailable", kernel.ClassNotFound)
)

// Deps are the ports files uses; none may be nil.
type Deps struct {
	Store  Store
	Blobs  Blobs
	Imager Imager
	// Sniff answers the content type the first bytes of a file say (at most 512 of them).
	Sniff  func(head []byte) string
	UoW    kernel.UnitOfWork
	Events kernel.EventLog
	Jobs   kernel.Jobs
	Authz  kernel.Authorizer
	Clock  kernel.Clock
}

// Config tunes files.
type Config struct {
	// MaxUploadBytes bounds one file (files.max_upload_bytes).
	MaxUploadBytes int64
	// PartSize is the size of a resumable upload's parts (the last one is the rest).
	PartSize int64
	// UploadTTL is how long a resumable upload may take to complete (files.upload_ttl).
	UploadTTL time.Duration
	// UnattachedTTL is how long a file no message carries is kept (files.unattached_ttl).
	UnattachedTTL time.Duration
	// MaxImagePixels bounds the images the thumbnail job decodes (files.max_image_pixels).
	MaxImagePixels int64
	// StripMetadata removes EXIF, XMP and text chunks from stored images (files.strip_metadata).
	StripMetadata bool
	// ThumbnailSide is the long side of a thumbnail, in pixels.
	ThumbnailSide int
}

// DefaultConfig is what an instance without settings uses.
func DefaultConfig() Config {
	return Config{MaxUploadBytes: 100 << 20, PartSize: 8 << 20, UploadTTL: 24 * time.Hour, UnattachedTTL: 24 * time.Hour,
		MaxImagePixels: 50_000_000, StripMetadata: true, ThumbnailSide: 400}
}

// Service holds the use cases of files.
type Service struct {
	store  Store
	blobs  Blobs
	imager Imager
	sniff  func([]byte) string
	uow    kernel.UnitOfWork
	events kernel.EventLog
	jobs   kernel.Jobs
	authz  kernel.Authorizer
	clock  kernel.Clock
	cfg    Config
}

// New makes the service.
func New(d Deps, c Config) *Service {
	return &Service{store: d.Store, blobs: d.Blobs, imager: d.Imager, sniff: d.Sniff, uow: d.UoW, events: d.Events,
		jobs: d.Jobs, authz: d.Authz, clock: d.Clock, cfg: c}
}

// Config answers the service's settings (the HTTP adapter states the limits).
func (s *Service) Config() Config { return s.cfg }

func (s *Service) now() time.Time { return s.clock.Now().UTC().Truncate(time.Microsecond) }

// NewFile is the input of Upload.
type NewFile struct {
	Name string
	// DeclaredType is the Content-Type the client sent; the sniffed type wins where they differ
	// (ChooseType).
	DeclaredType string
	// Length is the body's length when the client said it (Content-Length), else -1.
	Length int64
	Body   io.Reader
}

// Upload streams a file into the blob store (hashed on the way, never held whole) and records
// it as the actor's, attached nowhere: it is visible to the actor alone until a message carries
// it, and deleted after UnattachedTTL if none does. An image gets its metadata stripped (when
// the setting says so) and a thumbnail job. Errors: unauthenticated, file_too_large (nothing is
// kept), validation_failed (no name).
func (s *Service) Upload(ctx context.Context, actor kernel.Actor, in NewFile) (File, error) {
	if err := s.authz.Authorize(ctx, actor, ActFileUpload, kernel.Resource{Kind: ResFile, OwnerID: actor.ID}); err != nil {
		return File{}, err
	}
	if in.Name == "" {
		return File{}, kernel.Invalid("name", "the file needs a name (the query parameter name)")
	}
	if in.Length > s.cfg.MaxUploadBytes {
		return File{}, s.tooLarge()
	}
	blob, ct, dims, err := s.store1(ctx, in.Body, in.DeclaredType)
	if err != nil {
		return File{}, err
	}
	f := File{ID: kernel.NewID(), Name: SanitizeName(in.Name), ContentType: ct, Size: blob.Size, SHA256: blob.Key,
		CreatedAt: s.now(), UploaderID: actor.ID}
	if dims.ok {
		w, h := dims.w, dims.h
		f.Width, f.Height = &w, &h
	}
	if err := s.record(ctx, f, nil); err != nil {
		return File{}, err
	}
	return f, nil
}

// dimensions are what the image filter found.
type dimensions struct {
	w, h int
	ok   bool
}

// store1 streams body, whose first bytes decide its type, into the blob store through the image
// filter, counting it against MaxUploadBytes.
func (s *Service) store1(ctx context.Context, body io.Reader, declared string) (Blob, string, dimensions, error) {
	limited := &limitReader{r: body, left: s.cfg.MaxUploadBytes}
	head := make([]byte, 512)
	n, err := io.ReadFull(limited, head)
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
	case err != nil:
		return Blob{}, "", dimensions{}, s.readErr(limited, err)
	}
	head = head[:n]
	ct := ChooseType(declared, s.sniff(head))
	src := io.MultiReader(bytes.NewReader(head), limited)
	var filter ImageFilter
	if Thumbnailable(ct) {
		filter = s.imager.Filter(src, ct, s.cfg.StripMetadata)
		src = filter
	}
	blob, err := s.blobs.Put(ctx, src, s.cfg.MaxUploadBytes)
	if err != nil {
		return Blob{}, "", dimensions{}, s.readErr(limited, err)
	}
	var d dimensions
	if filter != nil {
		d.w, d.h, d.ok = filter.Dimensions()
	}
	return blob, ct, d, nil
}

// readErr is the error of a body that failed: too large when it passed the limit.
func (s *Service) readErr(l *limitReader, err error) error {
	if l.over || kernel.IsCode(err, CodeFileTooLarge) {
		return s.tooLarge()
	}
	var ke *kernel.Error
	if errors.As(err, &ke) {
		return err
	}
	return kernel.Errorf(kernel.CodeMalformedRequest, "the file's body could not be read to its end: %v", err)
}

func (s *Service) tooLarge() error {
	return kernel.Errorf(CodeFileTooLarge, "a file may be at most %d bytes", s.cfg.MaxUploadBytes)
}

// record stores the new file f with its jobs, and does also (when not nil) in the same Unit of
// Work; when that fails the bytes are let go again.
func (s *Service) record(ctx context.Context, f File, also func(ctx context.Context) error) error {
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		if also != nil {
			if err := also(ctx); err != nil {
				return err
			}
		}
		if err := s.claim(ctx, f.SHA256); err != nil {
			return err
		}
		state := ThumbNone
		if Thumbnailable(f.ContentType) {
			state = ThumbPending
		}
		if err := s.store.InsertFile(ctx, f.WithThumbState(state)); err != nil {
			return err
		}
		if state == ThumbPending {
			if err := s.jobs.Enqueue(ctx, kernel.Job{Name: JobThumbnail, Args: FileJobArgs{FileID: f.ID}, Key: string(f.ID)}); err != nil {
				return err
			}
		}
		return s.jobs.Enqueue(ctx, kernel.Job{Name: JobUnattachedExpiry, Args: FileJobArgs{FileID: f.ID},
			At: f.CreatedAt.Add(s.cfg.UnattachedTTL), Key: string(f.ID)})
	})
	if err != nil && !kernel.IsCode(err, CodeBlobGone) {
		_ = s.RemoveBlob(context.WithoutCancel(ctx), f.SHA256)
	}
	return err
}

// CodeBlobGone: the bytes of an upload were removed between their write and the file's record,
// by the removal of an identical file's blob at that very moment. Nothing was kept; the client
// sends the file again.
var CodeBlobGone = kernel.NewCode("upload_interrupted", kernel.ClassUnavailable)

// claim makes sure, in the Unit of Work that records a file naming key, that the blob is still
// there: an identical file's blob may have been found to be unused and removed after this
// upload found it stored already (Put keeps an existing blob), and before the new file's row
// made it used. With the lock on key, the removal (RemoveBlob) and the record are ordered: the
// removal either sees the new row and keeps the blob, or has removed it before, which the check
// here sees.
func (s *Service) claim(ctx context.Context, key string) error {
	if err := s.store.LockBlob(ctx, key); err != nil {
		return err
	}
	r, err := s.blobs.Open(ctx, key)
	if kernel.IsCode(err, kernel.CodeNotFound) {
		return kernel.RetryAfter(kernel.Errorf(CodeBlobGone, "the upload was interrupted; send the file again"), time.Second)
	}
	if err != nil {
		return err
	}
	return r.Close()
}

// ThumbState is the thumbnail state of f as stored (ThumbNone, ThumbPending, ...).
func (f File) ThumbState() string {
	if f.thumbState == "" {
		return ThumbNone
	}
	return f.thumbState
}

// WithThumbState is f with its thumbnail state, as it is stored (the store sets it when it
// loads a file).
func (f File) WithThumbState(state string) File {
	f.thumbState = state
	return f
}

// limitReader reads r up to left bytes and fails past them, so that a body over the limit is
// refused as soon as its limit is crossed.
type limitReader struct {
	r    io.Reader
	left int64
	over bool
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.over {
		return 0, kernel.Errorf(CodeFileTooLarge, "the file is above its limit")
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	if int64(n) > l.left {
		l.over = true
		return 0, kernel.Errorf(CodeFileTooLarge, "the file is above its limit")
	}
	l.left -= int64(n)
	return n, err
}

// File answers the metadata of a file the actor may see. Errors: not_found.
func (s *Service) File(ctx context.Context, actor kernel.Actor, id kernel.ID) (File, error) {
	f, err := s.store.File(ctx, id)
	if err != nil {
		return File{}, err
	}
	if err := s.authorizeRead(ctx, actor, f); err != nil {
		return File{}, err
	}
	return f, nil
}

// authorizeRead lets the actor read f: a reader of its channel when it is attached, its
// uploader while it is not. Anyone else learns nothing, not even that it exists (not_found).
func (s *Service) authorizeRead(ctx context.Context, actor kernel.Actor, f File) error {
	var err error
	if f.ChannelID != nil {
		err = s.authz.Authorize(ctx, actor, ActFileRead, kernel.Resource{Kind: ResFile, ID: f.ID, SpaceID: f.SpaceID,
			ChannelID: *f.ChannelID, ChannelKind: f.ChannelKind, OwnerID: f.UploaderID})
	} else {
		err = s.authz.Authorize(ctx, actor, ActFileReadOwn, kernel.Resource{Kind: ResFile, ID: f.ID, OwnerID: f.UploaderID})
		if err == nil {
			// Reading one's own file is a read of a file as any other: the route that
			// serves both proves the one action it declares.
			kernel.RecordCheck(ctx, ActFileRead)
		}
	}
	if kernel.IsCode(err, kernel.CodeForbidden) {
		return kernel.ErrNotFound
	}
	return err
}

// Open answers a file the actor may see with a reader of its bytes, which the caller closes.
// Errors: not_found.
func (s *Service) Open(ctx context.Context, actor kernel.Actor, id kernel.ID) (File, BlobReader, error) {
	f, err := s.File(ctx, actor, id)
	if err != nil {
		return File{}, nil, err
	}
	r, err := s.blobs.Open(ctx, f.SHA256)
	if err != nil {
		return File{}, nil, err
	}
	return f, r, nil
}

// OpenThumbnail answers a file the actor may see with a reader of its thumbnail. Errors:
// not_found, thumbnail_unavailable (none yet, or none ever).
func (s *Service) OpenThumbnail(ctx context.Context, actor kernel.Actor, id kernel.ID) (File, BlobReader, error) {
	f, err := s.File(ctx, actor, id)
	if err != nil {
		return File{}, nil, err
	}
	if f.Thumbnail == nil || f.ThumbnailKey == "" {
		if f.ThumbState() == ThumbPending {
			return File{}, nil, kernel.RetryAfter(kernel.Errorf(CodeThumbnailUnavailable, "the thumbnail is being made"), time.Second)
		}
		return File{}, nil, kernel.Errorf(CodeThumbnailUnavailable, "this file has no thumbnail")
	}
	r, err := s.blobs.Open(ctx, f.ThumbnailKey)
	if err != nil {
		return File{}, nil, err
	}
	return f, r, nil
}

// MakeThumbnail is the job of a new image: it decodes the stored bytes, writes a thumbnail of at
// most ThumbnailSide pixels and records it, or records that the image gets none (too many pixels,
// or not decodable), and tells whoever may see the file (file.updated).
func (s *Service) MakeThumbnail(ctx context.Context, id kernel.ID) error {
	f, err := s.store.File(ctx, id)
	if kernel.IsCode(err, kernel.CodeNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if f.ThumbState() != ThumbPending {
		return nil
	}
	state, thumb, key, err := s.thumbnail(ctx, f)
	if err != nil {
		return err
	}
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		if key != "" {
			if err := s.claim(ctx, key); err != nil {
				return err
			}
		}
		nf, err := s.store.SetThumbnail(ctx, id, state, thumb, key)
		if err != nil {
			return err
		}
		s.events.Append(ctx, EvFileUpdated.Event(kernel.Event{Scope: nf.scope(), SubjectID: nf.ID}, nf))
		return nil
	})
	if kernel.IsCode(err, kernel.CodeNotFound) || kernel.IsCode(err, kernel.CodeConflict) {
		err = nil // the file went, or another run of the job recorded it first
		if key != "" {
			return s.RemoveBlob(ctx, key)
		}
	}
	return err
}

// thumbnail makes f's thumbnail: ready with the thumbnail and its blob key, or refused.
func (s *Service) thumbnail(ctx context.Context, f File) (state string, thumb *Thumbnail, key string, err error) {
	r, err := s.blobs.Open(ctx, f.SHA256)
	if err != nil {
		return "", nil, "", err
	}
	defer r.Close()
	var buf bytes.Buffer
	t, err := s.imager.Thumbnail(r, f.ContentType, s.cfg.ThumbnailSide, s.cfg.MaxImagePixels, &buf)
	switch {
	case kernel.IsCode(err, CodeImageTooLarge), kernel.IsCode(err, CodeImageUnreadable):
		return ThumbRefused, nil, "", nil
	case err != nil:
		return "", nil, "", fmt.Errorf("thumbnail of file %s: %w", f.ID, err)
	}
	b, err := s.blobs.Put(ctx, &buf, s.cfg.MaxUploadBytes)
	if err != nil {
		return "", nil, "", err
	}
	return ThumbReady, &Thumbnail{ContentType: t.ContentType, Width: t.Width, Height: t.Height}, b.Key, nil
}

// scope is who hears of a change of f: its thread's readers, or its uploader alone.
func (f File) scope() kernel.Scope {
	if f.ChannelID == nil || f.ThreadID == nil {
		return kernel.Scope{PrincipalID: f.UploaderID}
	}
	return kernel.Scope{SpaceID: f.SpaceID, ChannelID: *f.ChannelID, ThreadID: *f.ThreadID}
}

// ExpireUnattached is the job that deletes a file still attached nowhere UnattachedTTL after its
// upload; an attached file is left alone.
func (s *Service) ExpireUnattached(ctx context.Context, id kernel.ID) error {
	return s.uow.Do(ctx, func(ctx context.Context) error {
		f, deleted, err := s.store.DeleteUnattached(ctx, id)
		if err != nil || !deleted {
			return err
		}
		return s.forget(ctx, f)
	})
}

// forget queues the removal of the bytes of the deleted file f, in the Unit of Work that deleted
// it: the job runs after the commit and removes each blob no other file names.
func (s *Service) forget(ctx context.Context, f File) error {
	for _, key := range []string{f.SHA256, f.ThumbnailKey} {
		if key == "" {
			continue
		}
		if err := s.jobs.Enqueue(ctx, kernel.Job{Name: JobBlobRemoval, Args: BlobJobArgs{Key: key}, Key: key}); err != nil {
			return err
		}
	}
	return nil
}

// RemoveBlob is the job that removes the bytes of key when no file names them any more. The
// check and the removal hold the lock on key (claim says why), so a file recorded at the same
// moment either keeps the blob or learns it is gone.
func (s *Service) RemoveBlob(ctx context.Context, key string) error {
	return s.uow.Do(ctx, func(ctx context.Context) error {
		if err := s.store.LockBlob(ctx, key); err != nil {
			return err
		}
		used, err := s.store.BlobInUse(ctx, key)
		if err != nil || used {
			return err
		}
		return s.blobs.Delete(ctx, key)
	})
}

// Attachable checks the files a message of actor will carry, in the Unit of Work of the
// message: at most MaxAttachments, no file twice, each one the actor uploaded. It answers them as
// the message shows them, in the order given. Whether each is still attached nowhere is decided
// by Attach, after the message is stored, so that the repeat of a post answers the first message.
// Errors: validation_failed, attachment_invalid.
func (s *Service) Attachable(ctx context.Context, actor kernel.Actor, ids []kernel.ID) ([]Attachment, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if len(ids) > MaxAttachments {
		return nil, kernel.Invalid("attachment_ids", "a message carries at most %d files", MaxAttachments)
	}
	seen := make(map[kernel.ID]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			return nil, kernel.Invalid("attachment_ids", "file %s is named twice", id)
		}
		seen[id] = true
	}
	found, err := s.store.FilesByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[kernel.ID]File, len(found))
	for _, f := range found {
		byID[f.ID] = f
	}
	out := make([]Attachment, 0, len(ids))
	for _, id := range ids {
		f, ok := byID[id]
		if !ok || f.UploaderID != actor.ID {
			return nil, kernel.Errorf(CodeAttachmentInvalid, "file %s is not one of your uploads", id)
		}
		out = append(out, AttachmentOf(f))
	}
	return out, nil
}

// Attach places the files of ids where the message p says, in the message's Unit of Work.
// Errors: attachment_invalid (a file is attached elsewhere already).
func (s *Service) Attach(ctx context.Context, ids []kernel.ID, p Placement) error {
	if len(ids) == 0 {
		return nil
	}
	n, err := s.store.AttachFiles(ctx, ids, p)
	if err != nil {
		return err
	}
	if n != len(ids) {
		return kernel.Errorf(CodeAttachmentInvalid, "a file is attached to another message already")
	}
	return nil
}

// DeleteOfMessage deletes the files a deleted message carried, in its Unit of Work, and queues
// the removal of their bytes after it.
func (s *Service) DeleteOfMessage(ctx context.Context, messageID kernel.ID) error {
	gone, err := s.store.DeleteFilesOfMessage(ctx, messageID)
	if err != nil {
		return err
	}
	for _, f := range gone {
		if err := s.forget(ctx, f); err != nil {
			return err
		}
	}
	return nil
}
