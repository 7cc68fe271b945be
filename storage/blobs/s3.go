package blobs

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/kernel"
)

// S3Config says which bucket S3 keeps blobs in and how to reach it.
type S3Config struct {
	Bucket string
	// Prefix is put before every object's name ("bothy" gives bothy/<sha256>); empty for none.
	Prefix string
	// Endpoint is the service's host[:port], or a URL whose scheme says http or https;
	// empty for AWS (s3.amazonaws.com).
	Endpoint string
	Region   string
	// AccessKeyID and SecretAccessKey sign the requests; when both are empty the AWS
	// environment variables are read, then the instance's IAM role.
	AccessKeyID     string
	SecretAccessKey string
	// PathStyle names the bucket in the path (host/bucket/key) instead of the host, as
	// MinIO and most services that are not AWS want.
	PathStyle bool
	// Insecure speaks plain HTTP to an endpoint given without a scheme.
	Insecure bool
}

// S3 keeps blobs in a bucket:
//
//	<prefix>/<sha256>           a blob
//	<prefix>/uploads/<id>/<n>   part n of the resumable upload id
//	<prefix>/tmp/<random>       a blob on its way in, before its hash is known
type S3 struct {
	c      *minio.Client
	bucket string
	prefix string
	// plain is true when the endpoint speaks HTTP, not HTTPS (see upload).
	plain bool
	live  liveSet
}

// s3PartSize is the part of a streamed upload minio-go buffers: the memory one Put holds.
// S3 wants parts of at least 5 MiB (but the last), and at most 10000 of them, so a blob of up
// to about 78 GiB fits.
const s3PartSize = 8 << 20

// maxCopySize is the largest object one server-side copy may write; a larger one is copied
// in ranges (a multipart copy).
const maxCopySize = 5 << 30

// NewS3 connects to the bucket of cfg and checks that it exists.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) { return newS3(ctx, cfg, nil) }

// newS3 is NewS3 over transport (nil: minio-go's own), which the tests set to trust their
// server's certificate.
func newS3(ctx context.Context, cfg S3Config, transport http.RoundTripper) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("blobs: s3: no bucket")
	}
	endpoint, secure := cfg.Endpoint, !cfg.Insecure
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
			return nil, fmt.Errorf("blobs: s3: endpoint %q is not host[:port] nor an http(s) URL of a host", cfg.Endpoint)
		}
		endpoint, secure = u.Host, u.Scheme == "https"
	}
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	var creds *credentials.Credentials
	if cfg.AccessKeyID != "" || cfg.SecretAccessKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, "")
	} else {
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{},
			&credentials.IAM{},
		})
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	c, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: secure, Region: cfg.Region, BucketLookup: lookup, Transport: transport})
	if err != nil {
		return nil, fmt.Errorf("blobs: s3: %w", err)
	}
	ok, err := c.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("blobs: s3: bucket %q: %w", cfg.Bucket, err)
	}
	if !ok {
		return nil, fmt.Errorf("blobs: s3: bucket %q does not exist", cfg.Bucket)
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &S3{c: c, bucket: cfg.Bucket, prefix: prefix, plain: !secure}, nil
}

func (s *S3) partPrefix(upload kernel.ID) string { return s.prefix + "uploads/" + string(upload) + "/" }

// Put streams r to a temporary object, then copies it on the server to the name its hash
// gives it (unless that exists already) and removes the temporary.
func (s *S3) Put(ctx context.Context, r io.Reader, limit int64) (files.Blob, error) {
	var rnd [16]byte
	rand.Read(rnd[:])
	tmp := s.prefix + "tmp/" + hex.EncodeToString(rnd[:])
	s.live.add(tmp)
	defer s.live.remove(tmp)
	// The temporary goes in any case (a refused upload has none: minio-go aborts it); when
	// its removal fails Sweep finds it later.
	defer s.c.RemoveObject(context.WithoutCancel(ctx), s.bucket, tmp, minio.RemoveObjectOptions{})
	b, err := s.upload(ctx, tmp, r, limit)
	if err != nil {
		return files.Blob{}, err
	}
	name := s.prefix + b.Key
	_, err = s.c.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{})
	if err == nil {
		return b, nil
	}
	if !isNotFound(err) {
		return files.Blob{}, fmt.Errorf("blobs: s3: %w", err)
	}
	dst := minio.CopyDestOptions{Bucket: s.bucket, Object: name}
	src := minio.CopySrcOptions{Bucket: s.bucket, Object: tmp}
	if b.Size <= maxCopySize {
		_, err = s.c.CopyObject(ctx, dst, src)
	} else {
		_, err = s.c.ComposeObject(ctx, dst, src)
	}
	if err != nil {
		return files.Blob{}, fmt.Errorf("blobs: s3: copy to %s: %w", name, err)
	}
	return b, nil
}

// PutPart streams r to the part's own name: S3 shows an upload only once it is complete,
// so a part cut off in the middle, or refused for its size, leaves the part sent before.
func (s *S3) PutPart(ctx context.Context, upload kernel.ID, n int, r io.Reader, limit int64) (files.Blob, error) {
	part, err := partName(upload, n)
	if err != nil {
		return files.Blob{}, err
	}
	name := s.partPrefix(upload) + part
	s.live.add(name)
	defer s.live.remove(name)
	return s.upload(ctx, name, r, limit)
}

// upload streams r to the object name as a multipart upload of s3PartSize parts, which
// minio-go aborts when r fails (or the meter refuses r's size).
func (s *S3) upload(ctx context.Context, name string, r io.Reader, limit int64) (files.Blob, error) {
	if err := checkLimit(limit); err != nil {
		return files.Blob{}, err
	}
	m := newMeter(ctx, r, limit)
	opts := minio.PutObjectOptions{PartSize: s3PartSize, ContentType: "application/octet-stream"}
	if s.plain {
		// Over plain HTTP minio-go signs each part as a stream of signed chunks
		// (aws-chunked), which not every service reads in a part of a multipart upload
		// (gofakes3 does not). Each part is in a buffer of its own anyway, so it goes as
		// a plain body of known length with an unsigned payload (UNSIGNED-PAYLOAD), and
		// its Content-MD5 still lets the service refuse a part changed on the way.
		opts.DisableContentSha256, opts.SendContentMd5 = true, true
	}
	// An empty body goes as one plain PUT: an empty part of a multipart upload would go out
	// without a Content-Length, which S3 refuses.
	first := make([]byte, 1)
	n, err := io.ReadFull(m, first)
	var info minio.UploadInfo
	switch {
	case m.err != nil:
		return files.Blob{}, m.err
	case err == io.EOF:
		info, err = s.c.PutObject(ctx, s.bucket, name, bytes.NewReader(nil), 0, opts)
	case err != nil:
		return files.Blob{}, fmt.Errorf("blobs: s3: put %s: %w", name, err)
	default:
		info, err = s.c.PutObject(ctx, s.bucket, name, io.MultiReader(bytes.NewReader(first[:n]), m), -1, opts)
	}
	if m.err != nil {
		return files.Blob{}, m.err
	}
	if err != nil {
		return files.Blob{}, fmt.Errorf("blobs: s3: put %s: %w", name, err)
	}
	b := m.blob()
	if info.Size != b.Size {
		return files.Blob{}, fmt.Errorf("blobs: s3: put %s: the store took %d bytes of %d", name, info.Size, b.Size)
	}
	return b, nil
}

// Open opens the blob of key; reads are ranged requests, so Seek costs nothing until the next Read.
func (s *S3) Open(ctx context.Context, key string) (files.BlobReader, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return s.open(ctx, s.prefix+key, "blob "+key)
}

// OpenPart opens part n of upload.
func (s *S3) OpenPart(ctx context.Context, upload kernel.ID, n int) (files.BlobReader, error) {
	part, err := partName(upload, n)
	if err != nil {
		return nil, err
	}
	return s.open(ctx, s.partPrefix(upload)+part, fmt.Sprintf("part %d of upload %s", n, upload))
}

func (s *S3) open(ctx context.Context, name, what string) (files.BlobReader, error) {
	obj, err := s.c.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("blobs: s3: %w", err)
	}
	// GetObject sends nothing yet; Stat makes the first request and tells a missing object.
	info, err := obj.Stat()
	if err != nil {
		obj.Close()
		if isNotFound(err) {
			return nil, notFound(what)
		}
		return nil, fmt.Errorf("blobs: s3: %w", err)
	}
	return &objectReader{Object: obj, size: info.Size}, nil
}

// objectReader is an object being read that knows its size.
type objectReader struct {
	*minio.Object
	size int64
}

func (r *objectReader) Size() int64 { return r.size }

// Delete removes the blob of key (S3 answers a missing object with success too).
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := s.c.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
		return fmt.Errorf("blobs: s3: %w", err)
	}
	return nil
}

// DeleteParts lists the parts of upload and removes them.
func (s *S3) DeleteParts(ctx context.Context, upload kernel.ID) error {
	if err := checkUpload(upload); err != nil {
		return err
	}
	return s.removeWhere(ctx, s.partPrefix(upload), func(minio.ObjectInfo) bool { return true })
}

// removeWhere removes the objects under prefix that keep answers true for.
func (s *S3) removeWhere(ctx context.Context, prefix string, keep func(minio.ObjectInfo) bool) error {
	var doomed []minio.ObjectInfo
	var listErr error
	// The listing is read to its end even after an error: minio-go's lister blocks on a
	// send nobody receives otherwise.
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			listErr = o.Err
		} else if keep(o) {
			doomed = append(doomed, o)
		}
	}
	if listErr != nil {
		return fmt.Errorf("blobs: s3: list %s: %w", prefix, listErr)
	}
	if len(doomed) == 0 {
		return nil
	}
	ch := make(chan minio.ObjectInfo, len(doomed))
	for _, o := range doomed {
		ch <- o
	}
	close(ch)
	var errs []error
	for e := range s.c.RemoveObjects(ctx, s.bucket, ch, minio.RemoveObjectsOptions{}) {
		if e.Err != nil && !isNotFound(e.Err) {
			errs = append(errs, fmt.Errorf("%s: %w", e.ObjectName, e.Err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("blobs: s3: remove: %w", err)
	}
	return nil
}

// Sweep removes the temporary objects older than olderThan and the unfinished multipart
// uploads started before then (left by a crash, or by an abort that failed), except the
// ones this S3 is writing now. Other processes that share the bucket have uploads of their
// own in flight, so olderThan must be longer than the longest upload (an hour or more). A
// bucket lifecycle rule that aborts unfinished uploads does the second half as well.
func (s *S3) Sweep(ctx context.Context, olderThan time.Duration) error {
	cutoff := time.Now().Add(-olderThan)
	err := s.removeWhere(ctx, s.prefix+"tmp/", func(o minio.ObjectInfo) bool {
		return !s.live.has(o.Key) && !o.LastModified.After(cutoff)
	})
	if err != nil {
		return err
	}
	var errs []error
	var unfinished []string
	for u := range s.c.ListIncompleteUploads(ctx, s.bucket, s.prefix, true) {
		switch {
		case u.Err != nil && isNotFound(u.Err):
			// Some services (gofakes3) answer so for a bucket that never had one.
		case u.Err != nil:
			errs = append(errs, fmt.Errorf("list unfinished uploads: %w", u.Err))
		case !s.live.has(u.Key) && !u.Initiated.After(cutoff):
			unfinished = append(unfinished, u.Key)
		}
	}
	for _, key := range unfinished {
		if err := s.c.RemoveIncompleteUpload(ctx, s.bucket, key); err != nil && !isNotFound(err) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("blobs: s3: sweep: %w", err)
	}
	return nil
}

func isNotFound(err error) bool {
	switch minio.ToErrorResponse(err).Code {
	case minio.NoSuchKey, "NotFound", minio.NoSuchUpload:
		return true
	}
	return false
}
