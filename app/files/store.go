package files

import (
	"context"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// Store is files' repository. Methods join the Unit of Work of ctx when there is one.
type Store interface {
	// InsertFile stores a new file.
	InsertFile(ctx context.Context, f File) error
	// File loads one file. Errors: not_found.
	File(ctx context.Context, id kernel.ID) (File, error)
	// FilesByID loads the files of ids that exist, in no particular order.
	FilesByID(ctx context.Context, ids []kernel.ID) ([]File, error)
	// AttachFiles places the files of ids (in this order: position) where p says, each only if
	// it is attached nowhere yet, and answers how many it placed.
	AttachFiles(ctx context.Context, ids []kernel.ID, p Placement) (int, error)
	// DeleteFilesOfMessage deletes the files attached to a message and answers them.
	DeleteFilesOfMessage(ctx context.Context, messageID kernel.ID) ([]File, error)
	// DeleteUnattached deletes a file that is still attached nowhere and answers it; deleted is
	// false when it is attached or gone.
	DeleteUnattached(ctx context.Context, id kernel.ID) (f File, deleted bool, err error)
	// SetThumbnail records the outcome of the thumbnail job of a pending file (state ready with
	// thumb and its blob key, or refused) and answers the file as it now is. Errors: not_found
	// (the file is gone), conflict (it is not pending any more).
	SetThumbnail(ctx context.Context, id kernel.ID, state string, thumb *Thumbnail, key string) (File, error)
	// BlobInUse reports whether a file names key as its bytes or its thumbnail.
	BlobInUse(ctx context.Context, key string) (bool, error)
	// LockBlob makes the Units of Work that decide about the blob key (one that stores a file
	// naming it, one that removes it) run one after the other: it holds until the end of the
	// Unit of Work of ctx. Errors: internal outside a Unit of Work.
	LockBlob(ctx context.Context, key string) error

	// InsertUpload stores a new resumable upload.
	InsertUpload(ctx context.Context, u Upload) error
	// Upload loads a resumable upload with the parts received. Errors: not_found.
	Upload(ctx context.Context, id kernel.ID) (Upload, error)
	// PutPart records part n of an upload with its size, replacing an earlier record of it.
	PutPart(ctx context.Context, upload kernel.ID, n int, size int64) error
	// DeleteUpload deletes an upload and its parts' records; deleted reports whether it existed.
	DeleteUpload(ctx context.Context, id kernel.ID) (deleted bool, err error)
}

// Placement is where a message puts the files it carries.
type Placement struct {
	MessageID   kernel.ID
	ThreadID    kernel.ID
	ChannelID   kernel.ID
	SpaceID     kernel.ID
	ChannelKind string
	At          time.Time
}

// Upload is a resumable upload: a file announced by its name, size and type, sent in parts of
// PartSize bytes (the last one the rest), completed into a File.
type Upload struct {
	ID          kernel.ID `json:"id"`
	Name        string    `json:"name"`
	ContentType string    `json:"content_type"`
	Size        int64     `json:"size"`
	PartSize    int64     `json:"part_size"`
	Parts       int       `json:"parts"`
	// Received are the numbers of the parts stored so far, in order.
	Received  []int     `json:"received"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`

	UploaderID kernel.ID `json:"-"`
	// PartSizes are the sizes of the parts received, by number.
	PartSizes map[int]int64 `json:"-"`
}
