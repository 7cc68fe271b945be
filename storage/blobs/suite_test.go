package blobs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/kernel"
)

// store is one driver under the shared suite: a fresh, empty store and what it holds.
type store struct {
	files.Blobs
	// contents names everything the store holds (files, objects, unfinished uploads), sorted.
	contents func(t *testing.T) []string
}

// runSuite holds a driver to the port's promises; fresh makes a new, empty store.
func runSuite(t *testing.T, fresh func(t *testing.T) store) {
	ctx := context.Background()

	t.Run("put and read back", func(t *testing.T) {
		s := fresh(t)
		// Empty, small, larger than the copy buffer, and more than two S3 parts.
		for _, size := range []int{0, 11, copyBufSize + 7, 2*s3PartSize + 5} {
			body := randomBytes(size)
			b, err := s.Put(ctx, bytes.NewReader(body), int64(size))
			if err != nil {
				t.Fatalf("put %d bytes: %v", size, err)
			}
			if want := sha(body); b.Key != want || b.Size != int64(size) {
				t.Fatalf("put %d bytes = %+v, want key %s size %d", size, b, want, size)
			}
			if got := readBlob(t, s, b.Key); !bytes.Equal(got, body) {
				t.Fatalf("read back %d bytes of %d, not the same", len(got), size)
			}
		}
	})

	t.Run("same content twice is one blob", func(t *testing.T) {
		s := fresh(t)
		body := randomBytes(1000)
		first, err := s.Put(ctx, bytes.NewReader(body), 1000)
		if err != nil {
			t.Fatal(err)
		}
		before := s.contents(t)
		second, err := s.Put(ctx, bytes.NewReader(body), 1000)
		if err != nil {
			t.Fatal(err)
		}
		if first != second {
			t.Fatalf("second put = %+v, first %+v", second, first)
		}
		if after := s.contents(t); len(after) != 1 || !slices.Equal(after, before) {
			t.Fatalf("store holds %v after the second put, %v before", after, before)
		}
	})

	t.Run("too large is refused and leaves nothing", func(t *testing.T) {
		s := fresh(t)
		// One byte too many; and one that fails after an S3 part has gone out.
		for _, size := range []int{1000, s3PartSize + s3PartSize/2} {
			_, err := s.Put(ctx, bytes.NewReader(randomBytes(size)), int64(size-1))
			if !kernel.IsCode(err, files.CodeFileTooLarge) {
				t.Fatalf("put %d bytes with a limit of %d: %v, want file_too_large", size, size-1, err)
			}
			if c := s.contents(t); len(c) != 0 {
				t.Fatalf("a refused put left %v", c)
			}
		}
		// Exactly the limit is fine.
		if _, err := s.Put(ctx, bytes.NewReader(randomBytes(1000)), 1000); err != nil {
			t.Fatalf("put of exactly the limit: %v", err)
		}
		if _, err := s.Put(ctx, strings.NewReader("x"), -1); !kernel.IsCode(err, kernel.CodeValidation) {
			t.Fatalf("negative limit: %v", err)
		}
	})

	t.Run("a failing body or a cancelled context leaves nothing", func(t *testing.T) {
		s := fresh(t)
		boom := errors.New("boom")
		r := io.MultiReader(bytes.NewReader(randomBytes(copyBufSize*2)), &failingReader{err: boom})
		if _, err := s.Put(ctx, r, 1<<30); !errors.Is(err, boom) {
			t.Fatalf("put of a failing body: %v, want the body's error", err)
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.Put(cancelled, strings.NewReader("abc"), 10); !errors.Is(err, context.Canceled) {
			t.Fatalf("put with a cancelled context: %v", err)
		}
		if c := s.contents(t); len(c) != 0 {
			t.Fatalf("failed puts left %v", c)
		}
	})

	t.Run("seek and partial reads", func(t *testing.T) {
		s := fresh(t)
		body := []byte("0123456789abcdefghij")
		b, err := s.Put(ctx, bytes.NewReader(body), 100)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Open(ctx, b.Key)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if r.Size() != int64(len(body)) {
			t.Fatalf("size %d, want %d", r.Size(), len(body))
		}
		expect := func(offset int64, whence int, wantPos int64, n int, want string) {
			t.Helper()
			pos, err := r.Seek(offset, whence)
			if err != nil || pos != wantPos {
				t.Fatalf("seek(%d, %d) = %d, %v; want %d", offset, whence, pos, err, wantPos)
			}
			buf := make([]byte, n)
			if _, err := io.ReadFull(r, buf); err != nil || string(buf) != want {
				t.Fatalf("after seek(%d, %d) read %q, %v; want %q", offset, whence, buf, err, want)
			}
		}
		expect(5, io.SeekStart, 5, 4, "5678")
		expect(2, io.SeekCurrent, 11, 3, "bcd")
		expect(-3, io.SeekEnd, 17, 3, "hij")
		expect(0, io.SeekStart, 0, 2, "01")
		if _, err := r.Seek(0, io.SeekEnd); err != nil {
			t.Fatal(err)
		}
		if n, err := r.Read(make([]byte, 4)); n != 0 || err != io.EOF {
			t.Fatalf("read at the end = %d, %v; want 0, EOF", n, err)
		}
	})

	t.Run("missing blob is not found and delete is idempotent", func(t *testing.T) {
		s := fresh(t)
		b, err := s.Put(ctx, strings.NewReader("to be deleted"), 100)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := s.Delete(ctx, b.Key); err != nil {
				t.Fatalf("delete: %v", err)
			}
		}
		if _, err := s.Open(ctx, b.Key); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("open of a deleted blob: %v, want not_found", err)
		}
		if c := s.contents(t); len(c) != 0 {
			t.Fatalf("store holds %v after the delete", c)
		}
		if err := s.Delete(ctx, sha([]byte("never stored"))); err != nil {
			t.Fatalf("delete of a blob never stored: %v", err)
		}
	})

	t.Run("parts", func(t *testing.T) {
		s := fresh(t)
		up, other := kernel.NewID(), kernel.NewID()
		putPart := func(id kernel.ID, n int, body string) {
			t.Helper()
			b, err := s.PutPart(ctx, id, n, strings.NewReader(body), 100)
			if err != nil {
				t.Fatalf("put part %d: %v", n, err)
			}
			if b.Key != sha([]byte(body)) || b.Size != int64(len(body)) {
				t.Fatalf("put part %d = %+v", n, b)
			}
		}
		expectPart := func(id kernel.ID, n int, want string) {
			t.Helper()
			r, err := s.OpenPart(ctx, id, n)
			if err != nil {
				t.Fatalf("open part %d: %v", n, err)
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			if err != nil || string(got) != want || r.Size() != int64(len(want)) {
				t.Fatalf("part %d holds %q (size %d), %v; want %q", n, got, r.Size(), err, want)
			}
		}
		putPart(up, 1, "first try")
		putPart(up, 1, "second")
		putPart(up, 2, "two")
		putPart(other, 1, "another upload")
		expectPart(up, 1, "second")
		expectPart(up, 2, "two")
		if _, err := s.PutPart(ctx, up, 1, bytes.NewReader(randomBytes(101)), 100); !kernel.IsCode(err, files.CodeFileTooLarge) {
			t.Fatalf("part too large: %v", err)
		}
		expectPart(up, 1, "second")
		if _, err := s.OpenPart(ctx, up, 3); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("open of a part never sent: %v, want not_found", err)
		}
		if err := s.DeleteParts(ctx, up); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteParts(ctx, up); err != nil {
			t.Fatalf("second delete of the parts: %v", err)
		}
		for n := 1; n <= 2; n++ {
			if _, err := s.OpenPart(ctx, up, n); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("open of deleted part %d: %v, want not_found", n, err)
			}
		}
		expectPart(other, 1, "another upload")
		if err := s.DeleteParts(ctx, other); err != nil {
			t.Fatal(err)
		}
		if c := s.contents(t); len(c) != 0 {
			t.Fatalf("store holds %v after the parts were deleted", c)
		}
	})

	t.Run("invalid keys and parts are refused", func(t *testing.T) {
		s := fresh(t)
		good := sha([]byte("x"))
		for _, key := range []string{"", "abc", strings.ToUpper(good), good[:63], good + "0",
			"../../../../etc/passwd", good[:60] + "/../", "tmp/" + good[4:], good[:63] + "g"} {
			if _, err := s.Open(ctx, key); !kernel.IsCode(err, kernel.CodeValidation) {
				t.Errorf("open %q: %v, want validation_failed", key, err)
			}
			if err := s.Delete(ctx, key); !kernel.IsCode(err, kernel.CodeValidation) {
				t.Errorf("delete %q: %v, want validation_failed", key, err)
			}
		}
		for _, id := range []kernel.ID{"", "..", "../../x", kernel.ID(strings.ToUpper(string(kernel.NewID())))} {
			if _, err := s.PutPart(ctx, id, 1, strings.NewReader("x"), 10); !kernel.IsCode(err, kernel.CodeValidation) {
				t.Errorf("put part of upload %q: %v, want validation_failed", id, err)
			}
			if _, err := s.OpenPart(ctx, id, 1); !kernel.IsCode(err, kernel.CodeValidation) {
				t.Errorf("open part of upload %q: %v, want validation_failed", id, err)
			}
			if err := s.DeleteParts(ctx, id); !kernel.IsCode(err, kernel.CodeValidation) {
				t.Errorf("delete parts of upload %q: %v, want validation_failed", id, err)
			}
		}
		for _, n := range []int{0, -1} {
			if _, err := s.PutPart(ctx, kernel.NewID(), n, strings.NewReader("x"), 10); !kernel.IsCode(err, kernel.CodeValidation) {
				t.Errorf("put part %d: %v, want validation_failed", n, err)
			}
			if _, err := s.OpenPart(ctx, kernel.NewID(), n); !kernel.IsCode(err, kernel.CodeValidation) {
				t.Errorf("open part %d: %v, want validation_failed", n, err)
			}
		}
		if c := s.contents(t); len(c) != 0 {
			t.Fatalf("refused calls left %v", c)
		}
	})

	t.Run("concurrent puts of the same content", func(t *testing.T) {
		s := fresh(t)
		body := randomBytes(copyBufSize*3 + 1)
		const n = 8
		var wg sync.WaitGroup
		got := make([]files.Blob, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { got[i], errs[i] = s.Put(ctx, bytes.NewReader(body), int64(len(body))) })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil || got[i].Key != sha(body) || got[i].Size != int64(len(body)) {
				t.Fatalf("put %d = %+v, %v", i, got[i], errs[i])
			}
		}
		if c := s.contents(t); len(c) != 1 {
			t.Fatalf("store holds %v, want one blob", c)
		}
		if !bytes.Equal(readBlob(t, s, sha(body)), body) {
			t.Fatal("the blob does not read back as its content")
		}
	})
}

func readBlob(t *testing.T, s files.Blobs, key string) []byte {
	t.Helper()
	r, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatalf("open %s: %v", key, err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	if r.Size() != int64(len(got)) {
		t.Fatalf("size %d, read %d bytes", r.Size(), len(got))
	}
	return got
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

var rng = struct {
	sync.Mutex
	*rand.ChaCha8
}{ChaCha8: rand.NewChaCha8([32]byte{1})}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rng.Lock()
	rng.Read(b)
	rng.Unlock()
	return b
}

type failingReader struct{ err error }

func (r *failingReader) Read([]byte) (int, error) { return 0, r.err }

func kernelID(s string) kernel.ID { return kernel.ID(s) }
