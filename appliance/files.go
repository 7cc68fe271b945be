package appliance

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"

	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/appliance/config"
	"bothy.dev/bothy/storage/blobs"
)

// openBlobs opens where the bytes of files live (files.storage): a directory under the data
// directory, or an S3 bucket with its credentials read from their references.
func openBlobs(ctx context.Context, cfg config.Config) (files.Blobs, error) {
	if cfg.Files.Storage != "s3" {
		return blobs.NewFS(filepath.Join(cfg.Server.DataDir, "files"))
	}
	var id, secret string
	if ref := cfg.Files.S3AccessKeyIDRef; ref != "" {
		var err error
		if id, err = config.ResolveRef(ref); err != nil {
			return nil, fmt.Errorf("files.s3.access_key_id_ref: %w", err)
		}
		if secret, err = config.ResolveRef(cfg.Files.S3SecretAccessKeyRef); err != nil {
			return nil, fmt.Errorf("files.s3.secret_access_key_ref: %w", err)
		}
	}
	return blobs.NewS3(ctx, blobs.S3Config{Bucket: cfg.Files.S3Bucket, Prefix: cfg.Files.S3Prefix, Endpoint: cfg.Files.S3Endpoint,
		Region: cfg.Files.S3Region, AccessKeyID: id, SecretAccessKey: secret, PathStyle: cfg.Files.S3PathStyle})
}

// filesConfig is the files module's settings from the configuration.
func filesConfig(cfg config.Config) files.Config {
	c := files.DefaultConfig()
	c.MaxUploadBytes, c.UploadTTL, c.UnattachedTTL = cfg.Files.MaxUploadBytes, cfg.Files.UploadTTL, cfg.Files.UnattachedTTL
	c.MaxImagePixels, c.StripMetadata = cfg.Files.MaxImagePixels, cfg.Files.StripMetadata
	return c
}

// sniff is the content type the first bytes of a file say, by the WHATWG algorithm.
func sniff(head []byte) string { return http.DetectContentType(head) }
