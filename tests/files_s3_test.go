package tests

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// The servers under test read the fake bucket's credentials from these variables
// (files.s3.*_ref=env:…), as a real deployment would; the harness hands the test's environment
// on to them (cleanEnv), and the values never change, so they are set once for all tests.
const (
	s3AccessKeyEnv = "FILES_TEST_S3_ACCESS_KEY_ID"
	s3SecretKeyEnv = "FILES_TEST_S3_SECRET_ACCESS_KEY"
)

func init() {
	os.Setenv(s3AccessKeyEnv, "bothy-test")
	os.Setenv(s3SecretKeyEnv, "bothy-test-secret")
}

// s3Bucket and s3Prefix are where the servers on the fake S3 keep their blobs.
const (
	s3Bucket = "bothy-files"
	s3Prefix = "instance-1"
)

// blobStore is where a server under test keeps the bytes of files: its data directory (fs),
// or a bucket on an in-memory S3 the test runs in its own process (s3), reached over plain
// HTTP as a MinIO on the home network is.
type blobStore struct {
	driver string
	// args are the server's settings of files.storage and files.s3.*.
	args []string
	// s3 is the fake S3 server's base URL (s3 only).
	s3 string
}

// blobDrivers are the drivers every test of files runs on.
var blobDrivers = []string{"fs", "s3"}

// newBlobStore makes a fresh store of driver: for s3, an S3 server with one empty bucket,
// closed when the test ends.
func newBlobStore(tb testing.TB, driver string) blobStore {
	tb.Helper()
	if driver == "fs" {
		return blobStore{driver: "fs"}
	}
	backend := s3mem.New()
	if err := backend.CreateBucket(s3Bucket); err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	tb.Cleanup(srv.Close)
	return blobStore{driver: "s3", s3: srv.URL, args: []string{
		"--set", "files.storage=s3",
		"--set", "files.s3.endpoint=" + srv.URL,
		"--set", "files.s3.bucket=" + s3Bucket,
		"--set", "files.s3.prefix=" + s3Prefix,
		"--set", "files.s3.region=us-east-1",
		"--set", "files.s3.path_style=true",
		"--set", "files.s3.access_key_id_ref=env:" + s3AccessKeyEnv,
		"--set", "files.s3.secret_access_key_ref=env:" + s3SecretKeyEnv,
	}}
}

// onEachBlobStore runs body on each engine with each blob driver, all in parallel, each with a
// store of its own.
func onEachBlobStore(t *testing.T, body func(t *testing.T, eng engine, st blobStore)) {
	t.Helper()
	for _, driver := range blobDrivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			onEachEngine(t, true, func(t *testing.T, eng engine) {
				body(t, eng, newBlobStore(t, driver))
			})
		})
	}
}

// with is the server's arguments args plus the store's settings.
func (st blobStore) with(args ...string) []string {
	return append(append([]string{}, st.args...), args...)
}

// contents names everything the store of srv holds, temporaries included: the files under
// the data directory's files/ (fs), or the bucket's objects and its unfinished multipart
// uploads as "unfinished:<key>" (s3). Names are relative to the store's root (for s3, below
// the prefix), with slashes; sorted.
func (st blobStore) contents(tb testing.TB, srv *server) []string {
	tb.Helper()
	var out []string
	switch st.driver {
	case "fs":
		root := filepath.Join(srv.dataDir, "files")
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				rel, _ := filepath.Rel(root, p)
				out = append(out, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			tb.Fatalf("walk %s: %v", root, err)
		}
	case "s3":
		for _, k := range st.s3Keys(tb) {
			out = append(out, strings.TrimPrefix(k, s3Prefix+"/"))
		}
		for _, k := range st.s3Unfinished(tb) {
			out = append(out, "unfinished:"+strings.TrimPrefix(k, s3Prefix+"/"))
		}
	default:
		tb.Fatalf("unknown blob driver %q", st.driver)
	}
	slices.Sort(out)
	return out
}

// s3Keys lists the bucket's objects. The fake S3 takes requests unsigned.
func (st blobStore) s3Keys(tb testing.TB) []string {
	tb.Helper()
	var res struct {
		Contents []struct {
			Key string `xml:"Key"`
		} `xml:"Contents"`
		IsTruncated bool `xml:"IsTruncated"`
	}
	st.s3Get(tb, "/"+s3Bucket+"/?max-keys=1000", &res)
	if res.IsTruncated {
		tb.Fatal("the bucket holds more than 1000 objects")
	}
	var keys []string
	for _, c := range res.Contents {
		keys = append(keys, c.Key)
	}
	return keys
}

// s3Unfinished lists the keys of the bucket's multipart uploads never completed nor aborted.
func (st blobStore) s3Unfinished(tb testing.TB) []string {
	tb.Helper()
	var res struct {
		Uploads []struct {
			Key string `xml:"Key"`
		} `xml:"Upload"`
	}
	if !st.s3Get(tb, "/"+s3Bucket+"/?uploads", &res) {
		return nil // the fake's answer for a bucket that never had one
	}
	var keys []string
	for _, u := range res.Uploads {
		keys = append(keys, u.Key)
	}
	return keys
}

// s3Get GETs path from the fake S3 and decodes its XML answer into v; it reports false when
// the answer is 404 (NoSuchUpload).
func (st blobStore) s3Get(tb testing.TB, path string, v any) bool {
	tb.Helper()
	resp, err := http.Get(st.s3 + path)
	if err != nil {
		tb.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("GET %s: %v", path, err)
	}
	if resp.StatusCode == http.StatusNotFound && strings.Contains(string(b), "NoSuchUpload") {
		return false
	}
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET %s: %s %s", path, resp.Status, b)
	}
	if err := xml.Unmarshal(b, v); err != nil {
		tb.Fatalf("GET %s: %v in %s", path, err, b)
	}
	return true
}

// blobs is what the store holds under the names of blobs: no temporary, no part of an
// upload, nothing unfinished.
func (st blobStore) blobs(tb testing.TB, srv *server) []string {
	tb.Helper()
	var out []string
	for _, name := range st.contents(tb, srv) {
		if !strings.HasPrefix(name, "tmp/") && !strings.HasPrefix(name, "uploads/") && !strings.HasPrefix(name, "unfinished:") {
			out = append(out, name)
		}
	}
	return out
}
