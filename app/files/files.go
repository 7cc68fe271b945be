package files

import (
	"time"

	"bothy.dev/bothy/app/kernel"
)

// File is one upload's metadata: its JSON form is the REST answer and the payload of
// file.updated. The bytes are the blob SHA256 names.
type File struct {
	ID          kernel.ID `json:"id"`
	Name        string    `json:"name"`
	ContentType string    `json:"content_type"`
	Size        int64     `json:"size"`
	SHA256      string    `json:"sha256"`
	CreatedAt   time.Time `json:"created_at"`
	// Width and Height are an image's dimensions; nil for anything else.
	Width  *int `json:"width,omitempty"`
	Height *int `json:"height,omitempty"`
	// UploaderID is who uploaded the file.
	UploaderID kernel.ID `json:"uploader_id"`
	// MessageID, ChannelID and ThreadID are where the file is attached; nil while it is not.
	MessageID *kernel.ID `json:"message_id"`
	ChannelID *kernel.ID `json:"channel_id"`
	ThreadID  *kernel.ID `json:"thread_id"`
	// Thumbnail describes the image's thumbnail once the job has made it; nil before, and for
	// anything that gets none.
	Thumbnail *Thumbnail `json:"thumbnail,omitempty"`

	// SpaceID and ChannelKind of the channel it is attached to, for Authorize.
	SpaceID     kernel.ID `json:"-"`
	ChannelKind string    `json:"-"`
	// ThumbnailKey is the blob of the thumbnail; empty for none.
	ThumbnailKey string `json:"-"`
	// thumbState is where the thumbnail job stands (ThumbNone, ...): stored, never shown.
	thumbState string
}

// Thumbnail is the small image GET /api/v1/files/{id}/thumbnail answers.
type Thumbnail struct {
	ContentType string `json:"content_type"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
}

// Attachment is a file as a message carries it, in its JSON form and in message.created.
type Attachment struct {
	ID          kernel.ID `json:"id"`
	Name        string    `json:"name"`
	ContentType string    `json:"content_type"`
	Size        int64     `json:"size"`
	Width       *int      `json:"width,omitempty"`
	Height      *int      `json:"height,omitempty"`
}

// AttachmentOf is f as a message carries it.
func AttachmentOf(f File) Attachment {
	return Attachment{ID: f.ID, Name: f.Name, ContentType: f.ContentType, Size: f.Size, Width: f.Width, Height: f.Height}
}

// MaxAttachments is how many files one message may carry.
const MaxAttachments = 10
