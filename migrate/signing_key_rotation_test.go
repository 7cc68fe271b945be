package migrate

import (
	"context"
	"database/sql"
	"testing"

	"bothy.dev/bothy/storage/engine"
)

// 0010 lets a purpose hold retired keys beside its current one: the key an instance signs with
// already stays, and becomes the current key (retired_at NULL); a second current key of the
// purpose is refused, a retired one is not.
func TestSigningKeyRotationMigration(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, eng engine.Name) {
		w, r, _ := openEmpty(t, eng)
		if _, err := up(ctx, w, until(t, eng, 9), eng, nil); err != nil {
			t.Fatal(err)
		}
		const at = "2026-03-01T10:00:00.000000Z"
		if _, err := w.ExecContext(ctx, `INSERT INTO signing_keys (kid, purpose, algorithm, private_key, created_at)
			VALUES ('k1', 'invocation', 'EdDSA', 'c2VlZA==', '`+at+`')`); err != nil {
			t.Fatal(err)
		}
		applied, err := Up(ctx, w, eng, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) == 0 || applied[0].Version != 10 {
			t.Fatalf("applied %v, want 0010 first", versions(applied))
		}
		var purpose, alg, seed, created string
		var retired sql.NullString
		if err := r.QueryRowContext(ctx, `SELECT purpose, algorithm, private_key, created_at, retired_at FROM signing_keys
			WHERE kid = 'k1'`).Scan(&purpose, &alg, &seed, &created, &retired); err != nil {
			t.Fatal(err)
		}
		if purpose != "invocation" || alg != "EdDSA" || seed != "c2VlZA==" || created != at || retired.Valid {
			t.Fatalf("key after 0010: %q %q %q %q, retired %v", purpose, alg, seed, created, retired)
		}
		if _, err := w.ExecContext(ctx, `INSERT INTO signing_keys (kid, purpose, algorithm, private_key, created_at)
			VALUES ('k2', 'invocation', 'EdDSA', 'c2VlZA==', '`+at+`')`); err == nil {
			t.Fatal("a second current key of the purpose was stored")
		}
		if _, err := w.ExecContext(ctx, `INSERT INTO signing_keys (kid, purpose, algorithm, private_key, created_at, retired_at)
			VALUES ('k0', 'invocation', 'EdDSA', 'c2VlZA==', '`+at+`', '`+at+`')`); err != nil {
			t.Fatalf("a retired key beside the current one: %v", err)
		}
	})
}
