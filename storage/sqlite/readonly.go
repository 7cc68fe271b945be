package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"time"
)

// OpenReadOnly opens the existing database at path for reading only (mode=ro, query_only): what
// reads it cannot change it, not even by creating the file. `bothy migrate copy` reads its
// source through it. One connection, so a caller's transaction is the only reader.
func OpenReadOnly(ctx context.Context, path string, busyTimeout time.Duration) (*sql.DB, error) {
	return openReadOnly(ctx, path, busyTimeout, true)
}

// openReadOnly opens the existing database at path with mode=ro and, with queryOnly, query_only
// on: one connection.
func openReadOnly(ctx context.Context, path string, busyTimeout time.Duration, queryOnly bool) (*sql.DB, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("sqlite: %s does not exist", path)
	}
	if busyTimeout <= 0 {
		busyTimeout = 5 * time.Second
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	if queryOnly {
		q.Add("_pragma", "query_only(1)")
	}
	db, err := sql.Open("sqlite", fileURI(path)+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s read-only: %w", path, err)
	}
	return db, nil
}
