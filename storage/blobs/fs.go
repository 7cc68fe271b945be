package blobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/kernel"
)

// FS keeps blobs in a directory (the data directory's files/):
//
//	<dir>/ab/cd/abcd…    a blob, named by its SHA-256, under two levels of folders so that
//	                     no folder holds more than a few thousand names
//	<dir>/uploads/<id>/<n>  part n of the resumable upload id
//	<dir>/tmp/           what is being written; anything else there is left from a crash
type FS struct {
	dir  string
	tmp  string
	live liveSet
}

// staleAfter is how old a temporary must be for NewFS to take it for the remains of a crash.
const staleAfter = time.Hour

// NewFS opens the blob directory dir and removes the temporaries older than an hour that a
// crash left in it. A directory that does not exist yet is made by the first write, not here:
// an instance whose database is elsewhere (PostgreSQL) makes no data directory until a file
// arrives.
func NewFS(dir string) (*FS, error) {
	f := &FS{dir: dir, tmp: filepath.Join(dir, "tmp")}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err := f.makeDirs(); err != nil {
		return nil, err
	}
	if err := f.Sweep(context.Background(), staleAfter); err != nil {
		return nil, err
	}
	return f, nil
}

// makeDirs makes the blob directory with its folders of temporaries and of upload parts.
func (f *FS) makeDirs() error {
	for _, d := range []string{f.dir, f.tmp, filepath.Join(f.dir, "uploads")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("blobs: %w", err)
		}
	}
	return nil
}

// Sweep removes the temporaries older than olderThan, except the ones this FS is writing
// now. The blob directory belongs to one process, so a temporary it is not writing is the
// remains of a crash or of a failed removal. It stops early when ctx is done.
func (f *FS) Sweep(ctx context.Context, olderThan time.Duration) error {
	entries, err := os.ReadDir(f.tmp)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // nothing was ever written here
	}
	if err != nil {
		return fmt.Errorf("blobs: sweep: %w", err)
	}
	cutoff := time.Now().Add(-olderThan)
	var errs []error
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		path := filepath.Join(f.tmp, e.Name())
		if f.live.has(path) {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if info.ModTime().After(cutoff) {
			continue
		}
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("blobs: sweep: %w", err)
	}
	return nil
}

func (f *FS) blobPath(key string) string {
	return filepath.Join(f.dir, key[0:2], key[2:4], key)
}

func (f *FS) uploadDir(upload kernel.ID) string {
	return filepath.Join(f.dir, "uploads", string(upload))
}

// Put streams r to a temporary, then renames it to the name its hash gives it.
func (f *FS) Put(ctx context.Context, r io.Reader, limit int64) (files.Blob, error) {
	tmp, b, err := f.writeTemp(ctx, r, limit)
	if err != nil {
		return files.Blob{}, err
	}
	defer f.live.remove(tmp)
	path := f.blobPath(b.Key)
	_, err = os.Lstat(path)
	if err == nil {
		// The same content is there already: it stays as it is.
		if err := os.Remove(tmp); err != nil {
			return files.Blob{}, fmt.Errorf("blobs: %w", err)
		}
		return b, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		os.Remove(tmp)
		return files.Blob{}, fmt.Errorf("blobs: %w", err)
	}
	if err := f.place(tmp, path, filepath.Dir(filepath.Dir(path)), filepath.Dir(path)); err != nil {
		return files.Blob{}, err
	}
	return b, nil
}

// PutPart streams r to a temporary, then renames it over the part of that number.
func (f *FS) PutPart(ctx context.Context, upload kernel.ID, n int, r io.Reader, limit int64) (files.Blob, error) {
	name, err := partName(upload, n)
	if err != nil {
		return files.Blob{}, err
	}
	tmp, b, err := f.writeTemp(ctx, r, limit)
	if err != nil {
		return files.Blob{}, err
	}
	defer f.live.remove(tmp)
	dir := f.uploadDir(upload)
	if err := f.place(tmp, filepath.Join(dir, name), dir); err != nil {
		return files.Blob{}, err
	}
	return b, nil
}

// writeTemp streams r into a new temporary in tmp/ and syncs it to disk. It answers the
// temporary's path (still in the live set: the caller removes it once the temporary has its
// name) and the blob it holds. On an error nothing is left.
func (f *FS) writeTemp(ctx context.Context, r io.Reader, limit int64) (string, files.Blob, error) {
	if err := checkLimit(limit); err != nil {
		return "", files.Blob{}, err
	}
	file, err := os.CreateTemp(f.tmp, "put-*")
	if errors.Is(err, fs.ErrNotExist) {
		if err = f.makeDirs(); err == nil {
			file, err = os.CreateTemp(f.tmp, "put-*")
		}
	}
	if err != nil {
		return "", files.Blob{}, fmt.Errorf("blobs: %w", err)
	}
	tmp := file.Name()
	f.live.add(tmp)
	fail := func(err error) (string, files.Blob, error) {
		file.Close()
		os.Remove(tmp)
		f.live.remove(tmp)
		return "", files.Blob{}, err
	}
	m := newMeter(ctx, r, limit)
	buf := copyBufs.Get().(*[]byte)
	// Only Write of the file is visible to CopyBuffer (writeback offers no ReadFrom, as an
	// *os.File would), so the body goes through buf and nothing else.
	_, err = io.CopyBuffer(&writeback{f: file}, m, *buf)
	copyBufs.Put(buf)
	if m.err != nil {
		return fail(m.err)
	}
	if err != nil {
		return fail(fmt.Errorf("blobs: %w", err))
	}
	if err := file.Sync(); err != nil {
		return fail(fmt.Errorf("blobs: %w", err))
	}
	if err := file.Close(); err != nil {
		os.Remove(tmp)
		f.live.remove(tmp)
		return "", files.Blob{}, fmt.Errorf("blobs: %w", err)
	}
	return tmp, m.blob(), nil
}

// place renames tmp to path, making the folders dirs (from the outermost) on the way, and
// syncs the folder that holds path, so that the name survives a crash as the file did.
func (f *FS) place(tmp, path string, dirs ...string) error {
	for _, d := range dirs {
		err := os.Mkdir(d, 0o700)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err == nil {
			err = syncDir(filepath.Dir(d))
		}
		if err != nil {
			os.Remove(tmp)
			return fmt.Errorf("blobs: %w", err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("blobs: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Open opens the blob of key.
func (f *FS) Open(ctx context.Context, key string) (files.BlobReader, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return openFile(f.blobPath(key), "blob "+key)
}

// OpenPart opens part n of upload.
func (f *FS) OpenPart(ctx context.Context, upload kernel.ID, n int) (files.BlobReader, error) {
	name, err := partName(upload, n)
	if err != nil {
		return nil, err
	}
	return openFile(filepath.Join(f.uploadDir(upload), name), fmt.Sprintf("part %d of upload %s", n, upload))
}

func openFile(path, what string) (files.BlobReader, error) {
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound(what)
	}
	if err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("blobs: %w", err)
	}
	return &fileReader{File: file, size: info.Size()}, nil
}

// fileReader is an open blob file that knows its size.
type fileReader struct {
	*os.File
	size int64
}

func (r *fileReader) Size() int64 { return r.size }

// Delete removes the blob of key; its folders stay (there are at most 65536 of them).
func (f *FS) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	path := f.blobPath(key)
	err := os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
	return nil
}

// DeleteParts removes the folder of upload's parts.
func (f *FS) DeleteParts(ctx context.Context, upload kernel.ID) error {
	if err := checkUpload(upload); err != nil {
		return err
	}
	dir := f.uploadDir(upload)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	err := os.RemoveAll(dir)
	if err == nil {
		err = syncDir(filepath.Dir(dir))
	}
	if err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
	return nil
}
