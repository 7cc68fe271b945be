package httpapi

import (
	"context"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/kernel"
)

// FileUseCases is what the file routes call; *files.Service implements it.
type FileUseCases interface {
	Upload(ctx context.Context, actor kernel.Actor, in files.NewFile) (files.File, error)
	File(ctx context.Context, actor kernel.Actor, id kernel.ID) (files.File, error)
	Open(ctx context.Context, actor kernel.Actor, id kernel.ID) (files.File, files.BlobReader, error)
	OpenThumbnail(ctx context.Context, actor kernel.Actor, id kernel.ID) (files.File, files.BlobReader, error)
	CreateUpload(ctx context.Context, actor kernel.Actor, in files.NewUpload) (files.Upload, error)
	GetUpload(ctx context.Context, actor kernel.Actor, id kernel.ID) (files.Upload, error)
	PutPart(ctx context.Context, actor kernel.Actor, id kernel.ID, n int, body io.Reader) (files.Upload, error)
	CompleteUpload(ctx context.Context, actor kernel.Actor, id kernel.ID) (files.File, error)
}

var _ FileUseCases = (*files.Service)(nil)

// FileRoutes serves files: a whole upload as the raw body, resumable uploads in parts, a file's
// metadata, its bytes (ranges, ETag) and its thumbnail. Every route takes the console's session
// cookie too (Cookie), so that the console and agents use the same routes.
func FileRoutes(svc FileUseCases) []Route {
	rt := fileRoutes{svc: svc}
	return []Route{
		{Method: http.MethodPost, Pattern: "/api/v1/files", Action: files.ActFileUpload, Stream: true, Cookie: true, Handler: rt.upload},
		{Method: http.MethodGet, Pattern: "/api/v1/files/{id}", Action: files.ActFileRead, Cookie: true, Handler: withID(rt.get)},
		{Method: http.MethodGet, Pattern: "/api/v1/files/{id}/content", Action: files.ActFileRead, Cookie: true, Serve: rt.content},
		{Method: http.MethodGet, Pattern: "/api/v1/files/{id}/thumbnail", Action: files.ActFileRead, Cookie: true, Serve: rt.thumbnail},
		{Method: http.MethodPost, Pattern: "/api/v1/uploads", Action: files.ActFileUpload, Cookie: true, Handler: withBody(rt.createUpload)},
		{Method: http.MethodGet, Pattern: "/api/v1/uploads/{id}", Action: files.ActFileUpload, Cookie: true, Handler: withID(rt.getUpload)},
		{Method: http.MethodPut, Pattern: "/api/v1/uploads/{id}/parts/{n}", Action: files.ActFileUpload, Stream: true, Cookie: true, Handler: withID(rt.putPart)},
		{Method: http.MethodPost, Pattern: "/api/v1/uploads/{id}/complete", Action: files.ActFileUpload, Cookie: true, Handler: withID(rt.complete)},
	}
}

type fileRoutes struct{ svc FileUseCases }

func (rt fileRoutes) upload(r *Request) (int, any, error) {
	f, err := rt.svc.Upload(r.Context(), r.Actor, files.NewFile{Name: r.URL.Query().Get("name"),
		DeclaredType: r.Header.Get("Content-Type"), Length: r.ContentLength, Body: r.Body})
	if err != nil {
		return 0, nil, err
	}
	r.ResponseHeader().Set("Location", "/api/v1/files/"+string(f.ID))
	return http.StatusCreated, f, nil
}

func (rt fileRoutes) get(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.svc.File(r.Context(), r.Actor, id))
}

// content answers a file's bytes. The browser must never treat them as a page of this origin:
// nosniff keeps it to the stored type, a sandbox CSP takes script, forms and the origin away from
// anything rendered as a document (an uploaded HTML or SVG), Content-Disposition makes everything
// but safe media a download, and the resource may not be embedded by other sites. Caches keep
// the bytes per person and ask again each time (the ETag makes that a 304), since the right to
// read them may end.
func (rt fileRoutes) content(w http.ResponseWriter, r *Request) error {
	id, err := r.PathID("id")
	if err != nil {
		return err
	}
	f, body, err := rt.svc.Open(r.Context(), r.Actor, id)
	if err != nil {
		return err
	}
	defer body.Close()
	disposition := "attachment"
	if files.Inline(f.ContentType) {
		disposition = "inline"
	}
	serveBlob(w, r, f, f.ContentType, f.SHA256, disposition, f.Name, body)
	return nil
}

func (rt fileRoutes) thumbnail(w http.ResponseWriter, r *Request) error {
	id, err := r.PathID("id")
	if err != nil {
		return err
	}
	f, body, err := rt.svc.OpenThumbnail(r.Context(), r.Actor, id)
	if err != nil {
		return err
	}
	defer body.Close()
	serveBlob(w, r, f, f.Thumbnail.ContentType, f.ThumbnailKey, "inline", "thumbnail-"+f.Name+".jpg", body)
	return nil
}

// serveBlob answers body (ranges, conditional requests) with the headers of a stored file.
func serveBlob(w http.ResponseWriter, r *Request, f files.File, contentType, etag, disposition, name string, body files.BlobReader) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("ETag", `"`+etag+`"`)
	h.Set("Cache-Control", "private, no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if d := mime.FormatMediaType(disposition, map[string]string{"filename": name}); d != "" {
		h.Set("Content-Disposition", d)
	} else {
		h.Set("Content-Disposition", disposition)
	}
	if size := body.Size(); !satisfiable(r.Header.Get("Range"), size) {
		h.Set("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
		writeProblem(w, kernel.Errorf(CodeRangeNotSatisfiable, "the range lies outside the file's %d bytes", size), correlationFrom(r.Context()))
		return
	}
	http.ServeContent(w, r.Request, "", f.CreatedAt, body)
}

// satisfiable reports whether the Range header asks for bytes the file has, as
// http.ServeContent would judge it, so that a refusal is answered as problem+json: no header, or
// one of its ranges that starts inside the file (a suffix range of the last n bytes counts when
// the file is not empty). A header that does not parse is refused too.
func satisfiable(header string, size int64) bool {
	if header == "" {
		return true
	}
	spec, ok := strings.CutPrefix(header, "bytes=")
	if !ok {
		return false
	}
	for _, r := range strings.Split(spec, ",") {
		first, last, ok := strings.Cut(strings.TrimSpace(r), "-")
		if !ok {
			return false
		}
		if first == "" {
			if n, err := strconv.ParseInt(last, 10, 64); err == nil && n > 0 && size > 0 {
				return true
			}
			continue
		}
		if start, err := strconv.ParseInt(first, 10, 64); err == nil && start >= 0 && start < size {
			return true
		}
	}
	return false
}

type uploadBody struct {
	Name        string `json:"name"`
	Size        int64  `json:"size"`
	ContentType string `json:"content_type"`
}

func (rt fileRoutes) createUpload(r *Request, in uploadBody) (int, any, error) {
	u, err := rt.svc.CreateUpload(r.Context(), r.Actor, files.NewUpload{Name: in.Name, Size: in.Size, ContentType: in.ContentType})
	if err != nil {
		return 0, nil, err
	}
	r.ResponseHeader().Set("Location", "/api/v1/uploads/"+string(u.ID))
	return http.StatusCreated, u, nil
}

func (rt fileRoutes) getUpload(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.svc.GetUpload(r.Context(), r.Actor, id))
}

func (rt fileRoutes) putPart(r *Request, id kernel.ID) (int, any, error) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil {
		return 0, nil, kernel.Invalid("n", "the part number must be an integer from 1")
	}
	return ok(rt.svc.PutPart(r.Context(), r.Actor, id, n, r.Body))
}

func (rt fileRoutes) complete(r *Request, id kernel.ID) (int, any, error) {
	f, err := rt.svc.CompleteUpload(r.Context(), r.Actor, id)
	if err != nil {
		return 0, nil, err
	}
	r.ResponseHeader().Set("Location", "/api/v1/files/"+string(f.ID))
	return http.StatusCreated, f, nil
}
