// Package blobs keeps the bytes of files (the files.Blobs port of app/files) on a directory
// (FS) or on an S3 bucket (S3). A blob is named by the SHA-256 of its bytes, so a name once
// written never changes: the same content put twice is stored once, and a reader never sees
// a half-written blob.
//
// Neither driver holds a body in memory. FS streams it to a temporary file through a fixed
// buffer and renames it to its name once it is on disk (fsync of the file, then of its
// directory): a crash in the middle leaves only the temporary, which Sweep removes. S3
// streams it as a multipart upload of bounded parts to a temporary object, and copies that
// on the server to its name once the hash is known: S3 shows an upload only when it is
// complete, so a crash leaves at most the temporary object or an unfinished upload, which
// Sweep removes too. For the same reason a part of a resumable upload, whose name is known
// before its bytes, goes to S3 under its name at once.
//
// Keys and upload ids are checked before they become a path or an object's name (a key is
// 64 lower-case hex digits, an upload id a kernel id), so no caller can reach outside the
// store.
//
// minio-go is imported here and nowhere else in bothy (arch_test.go).
package blobs
