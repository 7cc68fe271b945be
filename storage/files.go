package storage

import (
	"context"
	"database/sql"
	"fmt"

	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage/engine"
)

// FileStore implements files.Store on files, uploads and upload_parts (migration 0024).
type FileStore struct{ db *DB }

var _ files.Store = (*FileStore)(nil)

// NewFileStore returns the files repository on db.
func NewFileStore(db *DB) *FileStore { return &FileStore{db: db} }

const fileColumns = `id, uploader_id, name, content_type, size, sha256, width, height, message_id, thread_id, channel_id,
	space_id, channel_kind, thumb_state, thumb_sha256, thumb_type, thumb_width, thumb_height, created_at`

// InsertFile implements files.Store.
func (s *FileStore) InsertFile(ctx context.Context, f files.File) error {
	return s.db.Do(ctx, func(ctx context.Context) error {
		_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO files (id, uploader_id, name, content_type, size, sha256, width, height,
			thumb_state, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			string(f.ID), string(f.UploaderID), f.Name, f.ContentType, f.Size, f.SHA256, nullIntPtr(f.Width), nullIntPtr(f.Height),
			f.ThumbState(), fmtTime(f.CreatedAt))
		return s.db.mapErr(err, "file")
	})
}

func nullIntPtr(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func scanFile(sc interface{ Scan(...any) error }) (files.File, error) {
	var f files.File
	var id, uploader, created, state string
	var width, height, tw, th sql.NullInt64
	var message, thread, channel, space, kind, tkey, ttype sql.NullString
	if err := sc.Scan(&id, &uploader, &f.Name, &f.ContentType, &f.Size, &f.SHA256, &width, &height, &message, &thread, &channel,
		&space, &kind, &state, &tkey, &ttype, &tw, &th, &created); err != nil {
		return files.File{}, err
	}
	f.ID, f.UploaderID, f.CreatedAt = kernel.ID(id), kernel.ID(uploader), parseTime(created)
	if width.Valid && height.Valid {
		w, h := int(width.Int64), int(height.Int64)
		f.Width, f.Height = &w, &h
	}
	if message.Valid {
		m, t, c := kernel.ID(message.String), kernel.ID(thread.String), kernel.ID(channel.String)
		f.MessageID, f.ThreadID, f.ChannelID = &m, &t, &c
		f.SpaceID, f.ChannelKind = kernel.ID(space.String), kind.String
	}
	if state == files.ThumbReady && tkey.Valid {
		f.ThumbnailKey = tkey.String
		f.Thumbnail = &files.Thumbnail{ContentType: ttype.String, Width: int(tw.Int64), Height: int(th.Int64)}
	}
	return f.WithThumbState(state), nil
}

func (s *FileStore) list(ctx context.Context, q string, args ...any) ([]files.File, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.db.mapErr(err, "files")
	}
	defer rows.Close()
	var out []files.File
	for rows.Next() {
		f, err := scanFile(rows)
		if err != nil {
			return nil, s.db.mapErr(err, "files")
		}
		out = append(out, f)
	}
	return out, s.db.mapErr(rows.Err(), "files")
}

// File implements files.Store.
func (s *FileStore) File(ctx context.Context, id kernel.ID) (files.File, error) {
	out, err := s.list(ctx, `SELECT `+fileColumns+` FROM files WHERE id = ?`, string(id))
	if err != nil {
		return files.File{}, err
	}
	if len(out) == 0 {
		return files.File{}, kernel.ErrNotFound
	}
	return out[0], nil
}

// FilesByID implements files.Store.
func (s *FileStore) FilesByID(ctx context.Context, ids []kernel.ID) ([]files.File, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return s.list(ctx, `SELECT `+fileColumns+` FROM files WHERE id IN (`+placeholders(len(ids))+`)`, idArgs(nil, ids)...)
}

// AttachFiles implements files.Store: one statement per file, each guarded by message_id IS
// NULL, so that two messages racing for a file cannot both take it.
func (s *FileStore) AttachFiles(ctx context.Context, ids []kernel.ID, p files.Placement) (int, error) {
	n := 0
	err := s.db.Do(ctx, func(ctx context.Context) error {
		n = 0
		for i, id := range ids {
			res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE files SET message_id = ?, thread_id = ?, channel_id = ?, space_id = ?,
				channel_kind = ?, position = ?, attached_at = ? WHERE id = ? AND message_id IS NULL`,
				string(p.MessageID), string(p.ThreadID), string(p.ChannelID), string(p.SpaceID), p.ChannelKind, i, fmtTime(p.At), string(id))
			if err != nil {
				return s.db.mapErr(err, "file")
			}
			k, err := res.RowsAffected()
			if err != nil {
				return s.db.mapErr(err, "file")
			}
			n += int(k)
		}
		return nil
	})
	return n, err
}

// DeleteFilesOfMessage implements files.Store.
func (s *FileStore) DeleteFilesOfMessage(ctx context.Context, messageID kernel.ID) ([]files.File, error) {
	var out []files.File
	err := s.db.Do(ctx, func(ctx context.Context) error {
		var err error
		if out, err = s.list(ctx, `SELECT `+fileColumns+` FROM files WHERE message_id = ? ORDER BY position`, string(messageID)); err != nil || len(out) == 0 {
			return err
		}
		_, err = s.db.q(ctx).ExecContext(ctx, `DELETE FROM files WHERE message_id = ?`, string(messageID))
		return s.db.mapErr(err, "files")
	})
	return out, err
}

// DeleteUnattached implements files.Store.
func (s *FileStore) DeleteUnattached(ctx context.Context, id kernel.ID) (files.File, bool, error) {
	var f files.File
	var deleted bool
	err := s.db.Do(ctx, func(ctx context.Context) error {
		out, err := s.list(ctx, `SELECT `+fileColumns+` FROM files WHERE id = ? AND message_id IS NULL`, string(id))
		if err != nil || len(out) == 0 {
			return err
		}
		f = out[0]
		res, err := s.db.q(ctx).ExecContext(ctx, `DELETE FROM files WHERE id = ? AND message_id IS NULL`, string(id))
		if err != nil {
			return s.db.mapErr(err, "file")
		}
		k, err := res.RowsAffected()
		deleted = k == 1
		return s.db.mapErr(err, "file")
	})
	return f, deleted, err
}

// SetThumbnail implements files.Store.
func (s *FileStore) SetThumbnail(ctx context.Context, id kernel.ID, state string, thumb *files.Thumbnail, key string) (files.File, error) {
	var f files.File
	err := s.db.Do(ctx, func(ctx context.Context) error {
		var ttype, tw, th, tkey any
		if thumb != nil {
			ttype, tw, th, tkey = thumb.ContentType, thumb.Width, thumb.Height, key
		}
		res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE files SET thumb_state = ?, thumb_sha256 = ?, thumb_type = ?, thumb_width = ?,
			thumb_height = ? WHERE id = ? AND thumb_state = ?`, state, tkey, ttype, tw, th, string(id), files.ThumbPending)
		if err != nil {
			return s.db.mapErr(err, "file")
		}
		if f, err = s.File(ctx, id); err != nil {
			return err
		}
		if k, err := res.RowsAffected(); err != nil {
			return s.db.mapErr(err, "file")
		} else if k == 0 {
			return kernel.Errorf(kernel.CodeConflict, "the file's thumbnail is not pending")
		}
		return nil
	})
	return f, err
}

// BlobInUse implements files.Store on the indexes files_sha256 and files_thumb_sha256.
func (s *FileStore) BlobInUse(ctx context.Context, key string) (bool, error) {
	var one int
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT 1 FROM files WHERE sha256 = ? UNION ALL SELECT 1 FROM files WHERE thumb_sha256 = ? LIMIT 1`,
		key, key).Scan(&one)
	if err == sql.ErrNoRows {
		return false, nil
	}
	if err != nil {
		return false, s.db.mapErr(err, "file")
	}
	return true, nil
}

// LockBlob implements files.Store: on SQLite the write transaction excludes every other writer
// already; on PostgreSQL a transaction-scoped advisory lock on the key's hash.
func (s *FileStore) LockBlob(ctx context.Context, key string) error {
	if !inTx(ctx) {
		return fmt.Errorf("storage: LockBlob outside a Unit of Work")
	}
	if s.db.dialect.Name() != engine.Postgres {
		return nil
	}
	_, err := s.db.q(ctx).ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(?, 7411))`, "blob:"+key)
	return s.db.mapErr(err, "blob lock")
}

// InsertUpload implements files.Store.
func (s *FileStore) InsertUpload(ctx context.Context, u files.Upload) error {
	return s.db.Do(ctx, func(ctx context.Context) error {
		_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO uploads (id, uploader_id, name, content_type, size, part_size, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, string(u.ID), string(u.UploaderID), u.Name, u.ContentType, u.Size, u.PartSize,
			fmtTime(u.CreatedAt), fmtTime(u.ExpiresAt))
		return s.db.mapErr(err, "upload")
	})
}

// Upload implements files.Store.
func (s *FileStore) Upload(ctx context.Context, id kernel.ID) (files.Upload, error) {
	var u files.Upload
	var uid, uploader, created, expires string
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT id, uploader_id, name, content_type, size, part_size, created_at, expires_at
		FROM uploads WHERE id = ?`, string(id)).Scan(&uid, &uploader, &u.Name, &u.ContentType, &u.Size, &u.PartSize, &created, &expires)
	if err == sql.ErrNoRows {
		return files.Upload{}, kernel.ErrNotFound
	}
	if err != nil {
		return files.Upload{}, s.db.mapErr(err, "upload")
	}
	u.ID, u.UploaderID, u.CreatedAt, u.ExpiresAt = kernel.ID(uid), kernel.ID(uploader), parseTime(created), parseTime(expires)
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT n, size FROM upload_parts WHERE upload_id = ?`, string(id))
	if err != nil {
		return files.Upload{}, s.db.mapErr(err, "upload parts")
	}
	defer rows.Close()
	u.PartSizes = map[int]int64{}
	for rows.Next() {
		var n int
		var size int64
		if err := rows.Scan(&n, &size); err != nil {
			return files.Upload{}, s.db.mapErr(err, "upload parts")
		}
		u.PartSizes[n] = size
	}
	return u, s.db.mapErr(rows.Err(), "upload parts")
}

// PutPart implements files.Store.
func (s *FileStore) PutPart(ctx context.Context, upload kernel.ID, n int, size int64) error {
	return s.db.Do(ctx, func(ctx context.Context) error {
		_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO upload_parts (upload_id, n, size) VALUES (?, ?, ?)
			ON CONFLICT (upload_id, n) DO UPDATE SET size = excluded.size`, string(upload), n, size)
		return s.db.mapErr(err, "upload part")
	})
}

// DeleteUpload implements files.Store.
func (s *FileStore) DeleteUpload(ctx context.Context, id kernel.ID) (bool, error) {
	var deleted bool
	err := s.db.Do(ctx, func(ctx context.Context) error {
		if _, err := s.db.q(ctx).ExecContext(ctx, `DELETE FROM upload_parts WHERE upload_id = ?`, string(id)); err != nil {
			return s.db.mapErr(err, "upload parts")
		}
		res, err := s.db.q(ctx).ExecContext(ctx, `DELETE FROM uploads WHERE id = ?`, string(id))
		if err != nil {
			return s.db.mapErr(err, "upload")
		}
		k, err := res.RowsAffected()
		deleted = k == 1
		return s.db.mapErr(err, "upload")
	})
	return deleted, err
}

// attachmentsColumn is a message's attachments as stored with it (JSON), NULL for none.
func attachmentsColumn(list []files.Attachment) (any, error) {
	return jsonListColumn("attachments", list)
}
