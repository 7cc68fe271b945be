package blobs

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"

	"bothy.dev/bothy/app/kernel"
)

const testBucket = "bothy-test"

// fakeS3 starts an in-memory S3 server with one empty bucket.
func fakeS3(t *testing.T, tls bool) *httptest.Server {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(testBucket); err != nil {
		t.Fatal(err)
	}
	h := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
	srv := httptest.NewUnstartedServer(h)
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

// newTestS3 is an S3 on a fake server over HTTPS, as a bucket on AWS is reached.
func newTestS3(t *testing.T, prefix string) *S3 {
	t.Helper()
	return newTestS3Over(t, prefix, true)
}

// newTestS3Over is an S3 on a fake server over HTTPS (tls) or plain HTTP, as a MinIO on the
// home network is often reached. Over plain HTTP minio-go would sign a part in chunks, which
// gofakes3 reads only for a whole object: the suite over HTTP holds S3 to sending parts
// that any service reads.
func newTestS3Over(t *testing.T, prefix string, tls bool) *S3 {
	t.Helper()
	srv := fakeS3(t, tls)
	s, err := newS3(context.Background(), S3Config{
		Bucket:          testBucket,
		Prefix:          prefix,
		Endpoint:        srv.URL,
		Region:          "us-east-1",
		AccessKeyID:     "test",
		SecretAccessKey: "test-secret",
		PathStyle:       true,
	}, srv.Client().Transport)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// objects names every object in the bucket and every unfinished multipart upload (as
// "unfinished:<key>"), sorted.
func (s *S3) objects(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	var names []string
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		names = append(names, o.Key)
	}
	for u := range s.c.ListIncompleteUploads(ctx, s.bucket, "", true) {
		if u.Err != nil && isNotFound(u.Err) {
			break // gofakes3's answer for a bucket that never had an unfinished upload
		}
		if u.Err != nil {
			t.Fatal(u.Err)
		}
		names = append(names, "unfinished:"+u.Key)
	}
	slices.Sort(names)
	return names
}

func TestS3(t *testing.T) {
	runSuite(t, func(t *testing.T) store {
		s := newTestS3(t, "some/prefix")
		return store{Blobs: s, contents: s.objects}
	})
}

func TestS3OverPlainHTTP(t *testing.T) {
	runSuite(t, func(t *testing.T) store {
		s := newTestS3Over(t, "some/prefix", false)
		if !s.plain {
			t.Fatal("an http:// endpoint is not taken for plain HTTP")
		}
		return store{Blobs: s, contents: s.objects}
	})
}

func TestS3Layout(t *testing.T) {
	s := newTestS3(t, "/bothy/")
	ctx := context.Background()
	b, err := s.Put(ctx, strings.NewReader("hello"), 10)
	if err != nil {
		t.Fatal(err)
	}
	up := kernel.NewID()
	if _, err := s.PutPart(ctx, up, 3, strings.NewReader("part"), 10); err != nil {
		t.Fatal(err)
	}
	want := []string{"bothy/" + b.Key, "bothy/uploads/" + string(up) + "/3"}
	if got := s.objects(t); !slices.Equal(got, want) {
		t.Fatalf("objects %v, want %v", got, want)
	}
}

func TestS3SweepRemovesTemporariesAndUnfinishedUploads(t *testing.T) {
	s := newTestS3(t, "p")
	ctx := context.Background()
	b, err := s.Put(ctx, strings.NewReader("a blob that stays"), 100)
	if err != nil {
		t.Fatal(err)
	}
	// What a crash leaves: a temporary object, and a multipart upload never completed.
	if _, err := s.c.PutObject(ctx, s.bucket, "p/tmp/left", strings.NewReader("left"), 4, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	core := minio.Core{Client: s.c}
	if _, err := core.NewMultipartUpload(ctx, s.bucket, "p/tmp/cut", minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := s.objects(t); len(got) != 3 {
		t.Fatalf("before the sweep: %v", got)
	}
	// Too young to be swept.
	if err := s.Sweep(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := s.objects(t); len(got) != 3 {
		t.Fatalf("a sweep of what is older than an hour removed something: %v", got)
	}
	if err := s.Sweep(ctx, -time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := s.objects(t); !slices.Equal(got, []string{"p/" + b.Key}) {
		t.Fatalf("after the sweep: %v, want only the blob", got)
	}
}

func TestS3RefusesAMissingBucket(t *testing.T) {
	_, err := NewS3(context.Background(), S3Config{
		Bucket: "no-such-bucket", Endpoint: fakeS3(t, false).URL, Region: "us-east-1",
		AccessKeyID: "test", SecretAccessKey: "test-secret", PathStyle: true,
	})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("NewS3 of a missing bucket: %v", err)
	}
	for _, cfg := range []S3Config{{}, {Bucket: "b", Endpoint: "ftp://host"}, {Bucket: "b", Endpoint: "http://host/path"}} {
		if _, err := NewS3(context.Background(), cfg); err == nil {
			t.Errorf("NewS3(%+v) took it", cfg)
		}
	}
}
