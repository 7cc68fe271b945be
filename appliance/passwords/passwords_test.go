package passwords_test

import (
	"strings"
	"sync"
	"testing"

	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/appliance/passwords"
)

var _ identity.PasswordHasher = (*passwords.Hasher)(nil)

// cheap keeps the tests fast; TestOWASP runs the real parameters once.
var cheap = passwords.Params{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}

func TestHasher(t *testing.T) {
	h := passwords.New(cheap, 0)

	t.Run("verifies the right password and refuses a wrong one", func(t *testing.T) {
		hash, err := h.Hash("correct horse battery")
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := h.Verify(hash, "correct horse battery"); !ok || err != nil {
			t.Fatalf("right password: %v %v", ok, err)
		}
		if ok, err := h.Verify(hash, "correct horse battere"); ok || err != nil {
			t.Fatalf("wrong password: %v %v", ok, err)
		}
	})

	t.Run("salts every hash", func(t *testing.T) {
		a, _ := h.Hash("same password")
		b, _ := h.Hash("same password")
		if a == b {
			t.Fatal("two hashes of one password are equal")
		}
	})

	t.Run("writes the PHC string format", func(t *testing.T) {
		hash, _ := h.Hash("password1")
		parts := strings.Split(hash, "$")
		if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != "v=19" || parts[3] != "m=64,t=1,p=1" {
			t.Fatalf("hash %q", hash)
		}
		if strings.Contains(parts[4]+parts[5], "=") {
			t.Fatalf("padded base64 in %q", hash)
		}
	})

	t.Run("verifies a hash made with other parameters by the parameters in it", func(t *testing.T) {
		old := passwords.New(passwords.Params{Memory: 32, Time: 1, Threads: 2, SaltLen: 8, KeyLen: 16}, 1)
		hash, _ := old.Hash("an old password")
		if ok, err := h.Verify(hash, "an old password"); !ok || err != nil {
			t.Fatalf("%v %v", ok, err)
		}
	})

	t.Run("refuses malformed and tampered hashes", func(t *testing.T) {
		good, _ := h.Hash("password1")
		bad := []string{
			"",
			"plain",
			"$argon2i$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5",
			"$argon2id$v=16$m=64,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5",
			"$argon2id$v=19$m=64,t=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5",
			"$argon2id$v=19$m=64,t=1,p=1,x=2$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5",
			"$argon2id$v=19$m=0,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5",
			"$argon2id$v=19$m=99999999,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5",
			"$argon2id$v=19$m=64,t=1,p=1$!!!$a2V5a2V5a2V5a2V5a2V5",
			strings.Replace(good, "$argon2id$", "$argon2id$$", 1),
		}
		for _, b := range bad {
			if ok, err := h.Verify(b, "password1"); ok || err == nil {
				t.Errorf("%q: %v %v", b, ok, err)
			}
			if !h.NeedsRehash(b) {
				t.Errorf("%q does not need a rehash", b)
			}
		}
	})

	t.Run("asks for a rehash of weaker parameters only", func(t *testing.T) {
		strong := passwords.New(passwords.Params{Memory: 128, Time: 2, Threads: 1, SaltLen: 16, KeyLen: 32}, 0)
		cases := []struct {
			name string
			p    passwords.Params
			want bool
		}{
			{"the same parameters", passwords.Params{Memory: 128, Time: 2, Threads: 1, SaltLen: 16, KeyLen: 32}, false},
			{"stronger parameters", passwords.Params{Memory: 256, Time: 3, Threads: 1, SaltLen: 16, KeyLen: 32}, false},
			{"more threads", passwords.Params{Memory: 128, Time: 2, Threads: 2, SaltLen: 16, KeyLen: 32}, false},
			{"less memory", passwords.Params{Memory: 64, Time: 2, Threads: 1, SaltLen: 16, KeyLen: 32}, true},
			{"fewer passes", passwords.Params{Memory: 128, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}, true},
			{"a shorter salt", passwords.Params{Memory: 128, Time: 2, Threads: 1, SaltLen: 8, KeyLen: 32}, true},
			{"a shorter key", passwords.Params{Memory: 128, Time: 2, Threads: 1, SaltLen: 16, KeyLen: 16}, true},
		}
		for _, c := range cases {
			hash, _ := passwords.New(c.p, 0).Hash("password1")
			if got := strong.NeedsRehash(hash); got != c.want {
				t.Errorf("%s: NeedsRehash = %v", c.name, got)
			}
		}
	})

	t.Run("runs concurrent hashes safely within the bound", func(t *testing.T) {
		h := passwords.New(cheap, 2)
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				hash, err := h.Hash("parallel password")
				if err != nil {
					t.Error(err)
					return
				}
				if ok, _ := h.Verify(hash, "parallel password"); !ok {
					t.Error("does not verify")
				}
			}()
		}
		wg.Wait()
	})
}

func TestOWASP(t *testing.T) {
	t.Run("uses m=19 MiB, t=2, p=1", func(t *testing.T) {
		h := passwords.Default()
		hash, err := h.Hash("correct horse battery")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(hash, "$argon2id$v=19$m=19456,t=2,p=1$") {
			t.Fatalf("hash %q", hash)
		}
		if h.NeedsRehash(hash) {
			t.Fatal("a fresh hash needs a rehash")
		}
		weak, _ := passwords.New(cheap, 0).Hash("correct horse battery")
		if !h.NeedsRehash(weak) {
			t.Fatal("a weak hash needs no rehash")
		}
	})
}

func BenchmarkHashOWASP(b *testing.B) {
	h := passwords.Default()
	for b.Loop() {
		_, _ = h.Hash("correct horse battery")
	}
}
