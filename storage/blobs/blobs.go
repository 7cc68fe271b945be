package blobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"strconv"
	"sync"
	"time"

	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/kernel"
)

// Both drivers implement the port, and sweep.
var (
	_ files.Blobs = (*FS)(nil)
	_ files.Blobs = (*S3)(nil)
	_ Sweeper     = (*FS)(nil)
	_ Sweeper     = (*S3)(nil)
)

// Sweeper removes what writes cut off by a crash left in a store: the temporaries (and, on
// S3, the unfinished multipart uploads) older than olderThan that this process is not
// writing now. Nothing a reader can see is ever swept.
type Sweeper interface {
	Sweep(ctx context.Context, olderThan time.Duration) error
}

// validKey reports whether key is a SHA-256 in lower-case hex, and so can never name
// anything but a blob (no separator, no dot, no upper case that a case-insensitive disk
// would fold onto another key).
func validKey(key string) bool {
	if len(key) != sha256.Size*2 {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func checkKey(key string) error {
	if !validKey(key) {
		return kernel.Errorf(kernel.CodeValidation, "malformed blob key")
	}
	return nil
}

// partName checks an upload's id and a part's number and answers the part's name below the
// upload's folder. The id must be a kernel id (its form has no separator) and n at least 1.
func partName(upload kernel.ID, n int) (string, error) {
	if _, err := kernel.ParseID(string(upload)); err != nil {
		return "", kernel.Errorf(kernel.CodeValidation, "malformed upload id")
	}
	if n < 1 {
		return "", kernel.Errorf(kernel.CodeValidation, "part number %d: parts count from 1", n)
	}
	return strconv.Itoa(n), nil
}

func checkUpload(upload kernel.ID) error {
	_, err := partName(upload, 1)
	return err
}

func tooLarge(limit int64) error {
	return kernel.Errorf(files.CodeFileTooLarge, "more than %d bytes", limit)
}

func notFound(what string) error {
	return kernel.Errorf(kernel.CodeNotFound, "no %s", what)
}

// meter is the reader a Put reads its body through: it hashes and counts the bytes that
// pass, never hands on more than limit+1 of them, answers file_too_large as soon as that
// one byte too many has come, and stops when ctx is done. Its error, once set, stays, so
// that the driver can tell its own refusal from a failure of the store.
type meter struct {
	ctx   context.Context
	r     io.Reader
	h     hash.Hash
	n     int64
	limit int64
	err   error
}

func newMeter(ctx context.Context, r io.Reader, limit int64) *meter {
	return &meter{ctx: ctx, r: r, h: sha256.New(), limit: limit}
}

func (m *meter) Read(p []byte) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	if err := m.ctx.Err(); err != nil {
		m.err = err
		return 0, err
	}
	if room := m.limit + 1 - m.n; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := m.r.Read(p)
	m.h.Write(p[:n])
	m.n += int64(n)
	if m.n > m.limit {
		// The byte beyond the limit is not handed on: what was read is refused anyway.
		m.err = tooLarge(m.limit)
		return n - 1, m.err
	}
	return n, err
}

// blob is what the meter read, once it has been read to its end.
func (m *meter) blob() files.Blob {
	return files.Blob{Key: hex.EncodeToString(m.h.Sum(nil)), Size: m.n}
}

func checkLimit(limit int64) error {
	if limit < 0 {
		return kernel.Errorf(kernel.CodeValidation, "negative size limit %d", limit)
	}
	return nil
}

// copyBufSize is the one buffer a body passes through on its way to disk: large enough that a
// big upload costs few system calls, small enough that many at once cost little memory.
const copyBufSize = 256 << 10

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// liveSet is the names of the temporaries this process is writing now: Sweep leaves them,
// however old, because a slow upload is still an upload.
type liveSet struct {
	mu    sync.Mutex
	names map[string]struct{}
}

func (l *liveSet) add(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.names == nil {
		l.names = map[string]struct{}{}
	}
	l.names[name] = struct{}{}
}

func (l *liveSet) remove(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.names, name)
}

func (l *liveSet) has(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.names[name]
	return ok
}
