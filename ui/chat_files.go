package ui

import (
	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/ui/components"
)

// The files of the chat view. The composer's script uploads each file at once through the
// REST API (POST /api/v1/files, with the session and the page's CSRF token) and sends the ids
// it answers with the message as repeated attachment_id fields; the handlers pass them to
// messaging, which attaches them in the message's own Unit of Work. Messages show their files
// from the attachments they carry, so a page reads nothing more for them.

// attachmentField is the form field of one file a message carries.
const attachmentField = "attachment_id"

// attachmentIDs are the files a post carries, in the order the composer sent them: at most
// files.MaxAttachments, each a well-formed id (messaging decides whether the person may attach
// it). Errors: validation_failed.
func attachmentIDs(rq *request) ([]kernel.ID, error) {
	raw := rq.r.PostForm[attachmentField]
	if len(raw) == 0 {
		return nil, nil
	}
	if len(raw) > files.MaxAttachments {
		return nil, kernel.Invalid(attachmentField, "a message carries at most %d files", files.MaxAttachments)
	}
	out := make([]kernel.ID, 0, len(raw))
	for _, s := range raw {
		id, err := kernel.ParseID(s)
		if err != nil {
			return nil, kernel.Invalid(attachmentField, "an attached file has a malformed id")
		}
		out = append(out, id)
	}
	return out, nil
}

// attachmentViews are a message's files as it shows them.
func attachmentViews(as []files.Attachment) []components.AttachmentView {
	if len(as) == 0 {
		return nil
	}
	out := make([]components.AttachmentView, len(as))
	for i, a := range as {
		w, h := 0, 0
		if a.Width != nil && a.Height != nil {
			w, h = *a.Width, *a.Height
		}
		out[i] = components.NewAttachmentView(string(a.ID), a.Name, a.ContentType, a.Size, w, h)
	}
	return out
}
