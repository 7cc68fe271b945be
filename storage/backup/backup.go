// Package backup makes, checks and restores a backup of an instance on SQLite: a consistent
// copy of the database taken while the server writes to it, the bytes of the files that copy
// names (the fs blob driver's directory), and manifest.json, which says what the backup holds
// and the SHA-256 of every part.
//
// A backup is a directory:
//
//	manifest.json          written last; a directory without it is no backup
//	bothy.db               the database as of one read transaction (VACUUM INTO)
//	files/ab/cd/abcd…      each blob the copy names, laid out as the fs driver lays it out
//
// The copy of the database is one read transaction on a connection of its own: in WAL mode
// it sees the database as of its start and holds back no writer (see bench/README.md,
// "Backups", for its cost under load). Blobs are content-addressed and never change once
// named, so the ones the copy names can be copied after it, while the server goes on.
package backup

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"bothy.dev/bothy/storage/sqlite"
)

// FormatVersion is the version of the layout and of manifest.json. A reader refuses a backup
// of a later format.
const FormatVersion = 1

// The names inside a backup, and of the database inside a data directory.
const (
	ManifestFile = "manifest.json"
	DatabaseFile = "bothy.db"
	FilesDir     = "files"
)

// Manifest is manifest.json: what the backup is of and what it holds.
type Manifest struct {
	Format       int       `json:"format"`
	BothyVersion string    `json:"bothy_version"`
	Engine       string    `json:"engine"`
	CreatedAt    time.Time `json:"created_at"`
	// FilesOnly is a backup of the files alone (PostgreSQL, whose database pg_dump backs up).
	FilesOnly bool `json:"files_only,omitempty"`
	// BlobsElsewhere is a backup of the database alone, whose files are in a bucket.
	BlobsElsewhere bool `json:"blobs_elsewhere,omitempty"`
	// SchemaVersion is the highest migration applied to the copy, HeadSeq the last seq of its
	// event log: every event up to it, and nothing after, is in the backup.
	SchemaVersion int   `json:"schema_version,omitempty"`
	HeadSeq       int64 `json:"head_seq"`
	// Counts are rows of the copy by table (and "blobs": the files copied).
	Counts map[string]int64 `json:"counts"`
	// MissingBlobs are blobs the copy names that the blob directory no longer had when they
	// were copied: a file deleted after the copy of the database, whose bytes were removed
	// before their turn came.
	MissingBlobs []string `json:"missing_blobs,omitempty"`
	Parts        []Part   `json:"parts"`
}

// Part is one file of the backup, by its path inside it (with forward slashes).
type Part struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Size is the sum of the parts' sizes.
func (m Manifest) Size() int64 {
	var n int64
	for _, p := range m.Parts {
		n += p.Size
	}
	return n
}

// countedTables are the tables whose rows the manifest counts: what a restore must give back.
var countedTables = []string{"principals", "spaces", "channels", "threads", "messages", "event_log", "files",
	"grants", "agent_consumers", "runs"}

// CreateOptions say what to back up and where.
type CreateOptions struct {
	// DataDir is the instance's data directory: its database (unless FilesOnly) and its files/.
	DataDir string
	// Dir is the directory the backup goes into: it must not exist; its parent is made.
	Dir string
	// FilesOnly copies the blob directory alone (every blob in it), without a database.
	FilesOnly bool
	// BlobsElsewhere copies the database alone: the files are in a bucket (files.storage
	// s3), which its own tools back up.
	BlobsElsewhere bool
	Engine         string // written into the manifest: "sqlite", or "postgres" with FilesOnly
	BothyVersion   string
	BusyTimeout    time.Duration
	// Progress receives a line for each step of the work; nil discards them.
	Progress func(format string, args ...any)
	// Copy replaces the copy of the database (sqlite.VacuumInto); bench/backup passes
	// sqlite.BackupInto to compare them.
	Copy func(ctx context.Context, src, dst string, busyTimeout time.Duration) error
	Now  func() time.Time
}

// Result is a backup made.
type Result struct {
	Dir      string
	Manifest Manifest
	// Copy is how long the copy of the database took, Total the whole backup with its check.
	Copy, Total time.Duration
}

// Create makes a backup of o.DataDir in o.Dir: it writes every part into a temporary sibling
// of o.Dir, syncs each, writes the manifest, renames the temporary to o.Dir and syncs the
// parent, then verifies o.Dir as Verify does. On an error nothing is left but what was there.
func Create(ctx context.Context, o CreateOptions) (Result, error) {
	start := time.Now()
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	if o.Copy == nil {
		o.Copy = sqlite.VacuumInto
	}
	if o.Engine == "" {
		o.Engine = "sqlite"
	}
	if _, err := os.Lstat(o.Dir); err == nil {
		return Result{}, fmt.Errorf("backup: %s exists already", o.Dir)
	}
	parent := filepath.Dir(o.Dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return Result{}, fmt.Errorf("backup: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(o.Dir)+".tmp-")
	if err != nil {
		return Result{}, fmt.Errorf("backup: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()

	m := Manifest{Format: FormatVersion, BothyVersion: o.BothyVersion, Engine: o.Engine, CreatedAt: o.Now().UTC(),
		FilesOnly: o.FilesOnly, BlobsElsewhere: o.BlobsElsewhere, Counts: map[string]int64{}}
	var res Result
	var keys []string
	if o.FilesOnly {
		keys, err = listBlobs(filepath.Join(o.DataDir, FilesDir))
		if err != nil {
			return Result{}, err
		}
	} else {
		dbPath := filepath.Join(tmp, DatabaseFile)
		o.Progress("copying the database %s", filepath.Join(o.DataDir, DatabaseFile))
		t := time.Now()
		if err := o.Copy(ctx, filepath.Join(o.DataDir, DatabaseFile), dbPath, o.BusyTimeout); err != nil {
			return Result{}, fmt.Errorf("backup: %w", err)
		}
		res.Copy = time.Since(t)
		part, err := hashFile(dbPath, DatabaseFile, true)
		if err != nil {
			return Result{}, err
		}
		m.Parts = append(m.Parts, part)
		o.Progress("database copied: %s in %s", humanBytes(part.Size), res.Copy.Round(time.Millisecond))
		info, err := inspect(ctx, dbPath, o.BusyTimeout, false)
		if err != nil {
			return Result{}, err
		}
		m.SchemaVersion, m.HeadSeq, m.Counts, keys = info.schema, info.head, info.counts, info.blobs
		if o.BlobsElsewhere {
			o.Progress("files.storage is not fs: the %d files stay in their bucket", len(keys))
			keys = nil
		}
	}

	o.Progress("copying %d files", len(keys))
	blobDir := filepath.Join(o.DataDir, FilesDir)
	last := time.Now()
	for i, key := range keys {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		rel := blobRel(key)
		part, err := copyBlob(filepath.Join(o.DataDir, filepath.FromSlash(rel)), filepath.Join(tmp, filepath.FromSlash(rel)), rel)
		if errors.Is(err, fs.ErrNotExist) {
			o.Progress("file %s is gone from the blob directory: deleted after the copy of the database", key)
			m.MissingBlobs = append(m.MissingBlobs, key)
			continue
		}
		if err != nil {
			return Result{}, err
		}
		if part.SHA256 != key {
			return Result{}, fmt.Errorf("backup: the blob %s in %s holds other bytes (SHA-256 %s)", key, blobDir, part.SHA256)
		}
		m.Parts = append(m.Parts, part)
		if time.Since(last) > 2*time.Second {
			o.Progress("copied %d of %d files", i+1, len(keys))
			last = time.Now()
		}
	}
	m.Counts["blobs"] = int64(len(keys) - len(m.MissingBlobs))
	if err := syncTree(tmp); err != nil {
		return Result{}, err
	}
	if err := writeManifest(tmp, m); err != nil {
		return Result{}, err
	}
	if err := os.Rename(tmp, o.Dir); err != nil {
		return Result{}, fmt.Errorf("backup: %w", err)
	}
	done = true
	if err := syncDir(parent); err != nil {
		return Result{}, err
	}
	o.Progress("verifying %s", o.Dir)
	if _, err := Verify(ctx, o.Dir); err != nil {
		return Result{}, fmt.Errorf("backup: the backup written does not verify: %w", err)
	}
	res.Dir, res.Manifest, res.Total = o.Dir, m, time.Since(start)
	o.Progress("backup complete: %s, %s, head seq %d, in %s", o.Dir, humanBytes(m.Size()), m.HeadSeq, res.Total.Round(time.Millisecond))
	return res, nil
}

// PartError is a part of a backup that is missing, of another size or hash, or a database
// that fails its check: Part names it.
type PartError struct {
	Part   string
	Detail string
}

func (e *PartError) Error() string { return e.Part + ": " + e.Detail }

// Verify checks the backup in dir: its manifest, the size and SHA-256 of every part, that no
// file is there that the manifest does not list, and for the database PRAGMA integrity_check,
// the head seq and the counts of rows. A failure is a *PartError naming the part.
func Verify(ctx context.Context, dir string) (Manifest, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return Manifest{}, err
	}
	listed := map[string]bool{ManifestFile: true}
	for _, p := range m.Parts {
		if err := ctx.Err(); err != nil {
			return Manifest{}, err
		}
		if !validRel(p.Path) {
			return Manifest{}, &PartError{Part: ManifestFile, Detail: fmt.Sprintf("the part %q is not a path inside the backup", p.Path)}
		}
		listed[p.Path] = true
		got, err := hashFile(filepath.Join(dir, filepath.FromSlash(p.Path)), p.Path, false)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return Manifest{}, &PartError{Part: p.Path, Detail: "missing"}
		case err != nil:
			return Manifest{}, &PartError{Part: p.Path, Detail: err.Error()}
		case got.Size != p.Size:
			return Manifest{}, &PartError{Part: p.Path, Detail: fmt.Sprintf("%d bytes, the manifest says %d", got.Size, p.Size)}
		case got.SHA256 != p.SHA256:
			return Manifest{}, &PartError{Part: p.Path, Detail: "its SHA-256 differs from the manifest's: the bytes changed"}
		}
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if !listed[filepath.ToSlash(rel)] {
			return &PartError{Part: filepath.ToSlash(rel), Detail: "not listed in the manifest"}
		}
		return nil
	})
	if err != nil {
		return Manifest{}, err
	}
	if m.FilesOnly {
		return m, nil
	}
	if !listed[DatabaseFile] {
		return Manifest{}, &PartError{Part: DatabaseFile, Detail: "the manifest lists no database"}
	}
	info, err := inspect(ctx, filepath.Join(dir, DatabaseFile), 0, true)
	if err != nil {
		return Manifest{}, &PartError{Part: DatabaseFile, Detail: err.Error()}
	}
	if info.head != m.HeadSeq {
		return Manifest{}, &PartError{Part: DatabaseFile, Detail: fmt.Sprintf("head seq %d, the manifest says %d", info.head, m.HeadSeq)}
	}
	for table, n := range info.counts {
		if m.Counts[table] != n {
			return Manifest{}, &PartError{Part: DatabaseFile, Detail: fmt.Sprintf("%d rows in %s, the manifest says %d", n, table, m.Counts[table])}
		}
	}
	for _, key := range info.blobs {
		if m.BlobsElsewhere {
			break
		}
		rel := blobRel(key)
		if !listed[rel] && !slices.Contains(m.MissingBlobs, key) {
			return Manifest{}, &PartError{Part: rel, Detail: "the database names this file, the manifest does not list it"}
		}
	}
	return m, nil
}

// ReadManifest reads dir's manifest.json, refusing a format later than this binary's.
func ReadManifest(dir string) (Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(dir); serr != nil {
			return Manifest{}, fmt.Errorf("backup: %w", serr)
		}
		return Manifest{}, &PartError{Part: ManifestFile, Detail: "missing: this directory is not a complete backup"}
	}
	if err != nil {
		return Manifest{}, &PartError{Part: ManifestFile, Detail: err.Error()}
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, &PartError{Part: ManifestFile, Detail: "not valid JSON: " + err.Error()}
	}
	if m.Format < 1 || m.Format > FormatVersion {
		return Manifest{}, &PartError{Part: ManifestFile, Detail: fmt.Sprintf("format %d, this binary reads up to %d", m.Format, FormatVersion)}
	}
	return m, nil
}

// ErrNotEmpty is Restore's refusal of a data directory that holds something.
var ErrNotEmpty = errors.New("the data directory is not empty")

// Restore verifies the backup in dir, then restores it as the data directory dataDir, which
// must be absent or empty: the database and the files are written into a temporary sibling,
// synced, and renamed to dataDir. It answers the backup's manifest.
func Restore(ctx context.Context, dir, dataDir string, progress func(string, ...any)) (Manifest, error) {
	if progress == nil {
		progress = func(string, ...any) {}
	}
	entries, err := os.ReadDir(dataDir)
	switch {
	case err == nil && len(entries) > 0:
		return Manifest{}, fmt.Errorf("%w: %s holds %d entries; restore into a new directory", ErrNotEmpty, dataDir, len(entries))
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return Manifest{}, fmt.Errorf("restore: %w", err)
	}
	progress("verifying %s", dir)
	m, err := Verify(ctx, dir)
	if err != nil {
		return Manifest{}, err
	}
	parent := filepath.Dir(filepath.Clean(dataDir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return Manifest{}, fmt.Errorf("restore: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dataDir)+".restore-")
	if err != nil {
		return Manifest{}, fmt.Errorf("restore: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	progress("restoring %d parts into %s", len(m.Parts), dataDir)
	for _, p := range m.Parts {
		if err := ctx.Err(); err != nil {
			return Manifest{}, err
		}
		got, err := copyBlob(filepath.Join(dir, filepath.FromSlash(p.Path)), filepath.Join(tmp, filepath.FromSlash(p.Path)), p.Path)
		if err != nil {
			return Manifest{}, err
		}
		if got.SHA256 != p.SHA256 {
			return Manifest{}, &PartError{Part: p.Path, Detail: "changed while it was restored"}
		}
	}
	if err := syncTree(tmp); err != nil {
		return Manifest{}, err
	}
	if err := os.Chmod(tmp, 0o700); err != nil {
		return Manifest{}, fmt.Errorf("restore: %w", err)
	}
	// An empty dataDir goes first; a file arriving in it meanwhile makes Remove fail.
	if err := os.Remove(dataDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, fmt.Errorf("restore: %w", err)
	}
	if err := os.Rename(tmp, dataDir); err != nil {
		return Manifest{}, fmt.Errorf("restore: %w", err)
	}
	done = true
	if err := syncDir(parent); err != nil {
		return Manifest{}, err
	}
	progress("restored %s into %s: head seq %d", dir, dataDir, m.HeadSeq)
	return m, nil
}

// Prune removes the backups in dir (the directories holding a manifest.json) but the newest
// keep, by their manifest's time, and the temporaries of backups that never finished. It
// answers the directories removed.
func Prune(dir string, keep int) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	type found struct {
		path string
		at   time.Time
	}
	var backups []found
	var removed []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".tmp-") {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
				if err := os.RemoveAll(path); err == nil {
					removed = append(removed, path)
				}
			}
			continue
		}
		m, err := ReadManifest(path)
		if err != nil {
			continue // not a backup of ours: left alone
		}
		backups = append(backups, found{path, m.CreatedAt})
	}
	slices.SortFunc(backups, func(a, b found) int { return b.at.Compare(a.at) })
	var errs []error
	for i, b := range backups {
		if i < keep {
			continue
		}
		if err := os.RemoveAll(b.path); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, b.path)
	}
	return removed, errors.Join(errs...)
}

// Name is the name of a backup made at t: its UTC time, sortable, without a colon.
func Name(t time.Time) string { return t.UTC().Format("20060102T150405.000Z") }

// dbInfo is what inspect reads of a copy of the database.
type dbInfo struct {
	schema int
	head   int64
	counts map[string]int64
	blobs  []string // the blob keys its files name, sorted
}

// inspect opens the database at path read-only and reads its schema version, head seq, counts
// and blob keys; check adds PRAGMA integrity_check.
func inspect(ctx context.Context, path string, busy time.Duration, check bool) (dbInfo, error) {
	db, err := sqlite.OpenReadOnly(ctx, path, busy)
	if err != nil {
		return dbInfo{}, err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return dbInfo{}, err
	}
	defer tx.Rollback()
	if check {
		rows, err := tx.QueryContext(ctx, "PRAGMA integrity_check")
		if err != nil {
			return dbInfo{}, fmt.Errorf("integrity_check: %w", err)
		}
		var problems []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				rows.Close()
				return dbInfo{}, err
			}
			problems = append(problems, s)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return dbInfo{}, fmt.Errorf("integrity_check: %w", err)
		}
		if len(problems) != 1 || problems[0] != "ok" {
			return dbInfo{}, fmt.Errorf("integrity_check: %s", strings.Join(problems, "; "))
		}
	}
	info := dbInfo{counts: map[string]int64{}}
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&info.schema); err != nil {
		return dbInfo{}, fmt.Errorf("read the schema version: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT value FROM sequence_counters WHERE name = 'event_seq'`).Scan(&info.head); err != nil {
		return dbInfo{}, fmt.Errorf("read the head seq: %w", err)
	}
	for _, t := range countedTables {
		var n int64
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t).Scan(&n); err != nil {
			return dbInfo{}, fmt.Errorf("count %s: %w", t, err)
		}
		info.counts[t] = n
	}
	rows, err := tx.QueryContext(ctx, `SELECT sha256 FROM files UNION SELECT thumb_sha256 FROM files WHERE thumb_sha256 IS NOT NULL ORDER BY 1`)
	if err != nil {
		return dbInfo{}, fmt.Errorf("list the files: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return dbInfo{}, err
		}
		if !blobKey.MatchString(k) {
			return dbInfo{}, fmt.Errorf("a file names the malformed blob %q", k)
		}
		info.blobs = append(info.blobs, k)
	}
	return info, rows.Err()
}

var blobKey = regexp.MustCompile(`^[0-9a-f]{64}$`)

// blobRel is the path of blob key inside a backup, as the fs driver lays it out.
func blobRel(key string) string { return FilesDir + "/" + key[0:2] + "/" + key[2:4] + "/" + key }

// validRel reports whether rel is a clean relative path inside a backup.
func validRel(rel string) bool {
	return rel != "" && fs.ValidPath(rel) && rel != "." && rel != ManifestFile
}

// listBlobs lists the blobs of the fs driver's directory: the files named by a hash in its
// two levels of folders (not tmp/ nor uploads/).
func listBlobs(dir string) ([]string, error) {
	var keys []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path == dir {
			return filepath.SkipAll
		}
		if err != nil {
			return err
		}
		if d.IsDir() && path != dir && (d.Name() == "tmp" || d.Name() == "uploads") && filepath.Dir(path) == dir {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() || !blobKey.MatchString(d.Name()) {
			return nil
		}
		if rel, _ := filepath.Rel(dir, path); filepath.ToSlash(rel) != blobRel(d.Name())[len(FilesDir)+1:] {
			return nil
		}
		keys = append(keys, d.Name())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("backup: list the files: %w", err)
	}
	slices.Sort(keys)
	return keys, nil
}

// hashFile answers the size and SHA-256 of the file at path; sync also syncs it to disk.
func hashFile(path, rel string, sync bool) (Part, error) {
	f, err := os.Open(path)
	if err != nil {
		return Part{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return Part{}, fmt.Errorf("backup: read %s: %w", rel, err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			return Part{}, fmt.Errorf("backup: sync %s: %w", rel, err)
		}
	}
	return Part{Path: rel, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// copyBlob copies src to dst (making its folders), hashing the bytes on the way, and syncs
// dst. Copying, not linking: a backup on the same file system must not share the inode of a
// blob the server could still remove and that a restore could write over.
func copyBlob(src, dst, rel string) (Part, error) {
	in, err := os.Open(src)
	if err != nil {
		return Part{}, err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return Part{}, fmt.Errorf("backup: %w", err)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Part{}, fmt.Errorf("backup: %w", err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Part{}, fmt.Errorf("backup: copy %s: %w", rel, err)
	}
	return Part{Path: rel, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

func writeManifest(dir string, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, ManifestFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backup: write the manifest: %w", err)
	}
	return syncDir(dir)
}

// syncTree syncs every folder under dir (the files were synced as they were written), so
// that their names survive a crash.
func syncTree(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return syncDir(path)
		}
		return nil
	})
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backup: sync %s: %w", dir, err)
	}
	return nil
}

// humanBytes is n in binary units, for progress lines.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
