package identity

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
)

func TestFailureLimiter(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	t.Run("allows the limit within the window and then says how long to wait", func(t *testing.T) {
		clock := kernel.NewManualClock(start)
		l := NewFailureLimiter(clock, 10*time.Minute, 1000)
		k := LimitKey{Key: "ip:1.2.3.4", Limit: 3}
		for i := 0; i < 3; i++ {
			if _, ok := l.Take(k); !ok {
				t.Fatalf("attempt %d refused", i+1)
			}
			clock.Advance(time.Minute)
		}
		wait, ok := l.Take(k)
		if ok || wait != 7*time.Minute {
			t.Fatalf("4th attempt: %v %v", wait, ok)
		}
		clock.Advance(7*time.Minute - time.Second)
		if _, ok := l.Take(k); ok {
			t.Fatal("allowed a second early")
		}
		clock.Advance(time.Second)
		if _, ok := l.Take(k); !ok {
			t.Fatal("refused after the oldest failure left the window")
		}
	})

	t.Run("a refused attempt does not extend the block", func(t *testing.T) {
		clock := kernel.NewManualClock(start)
		l := NewFailureLimiter(clock, time.Minute, 1000)
		k := LimitKey{Key: "k", Limit: 1}
		l.Take(k)
		for i := 0; i < 10; i++ {
			clock.Advance(5 * time.Second)
			l.Take(k)
		}
		clock.Advance(10 * time.Second)
		if _, ok := l.Take(k); !ok {
			t.Fatal("still blocked after the window")
		}
	})

	t.Run("takes from every key or from none", func(t *testing.T) {
		clock := kernel.NewManualClock(start)
		l := NewFailureLimiter(clock, time.Minute, 1000)
		full := LimitKey{Key: "handle:x", Limit: 1}
		other := LimitKey{Key: "ip:y", Limit: 2}
		l.Take(full)
		if _, ok := l.Take(other, full); ok {
			t.Fatal("allowed with one key full")
		}
		if _, ok := l.Take(other); !ok {
			t.Fatal("the refused attempt counted against the other key")
		}
		if _, ok := l.Take(other); !ok {
			t.Fatal("the refused attempt counted against the other key")
		}
		if _, ok := l.Take(other); ok {
			t.Fatal("other key allows more than its limit")
		}
	})

	t.Run("a released attempt gives its slot back", func(t *testing.T) {
		clock := kernel.NewManualClock(start)
		l := NewFailureLimiter(clock, time.Minute, 1000)
		k := LimitKey{Key: "k", Limit: 1}
		for i := 0; i < 5; i++ {
			if _, ok := l.Take(k); !ok {
				t.Fatalf("attempt %d refused", i)
			}
			l.Release(k.Key)
		}
	})

	t.Run("a key without a positive limit is not counted", func(t *testing.T) {
		l := NewFailureLimiter(kernel.NewManualClock(start), time.Minute, 1000)
		for i := 0; i < 100; i++ {
			if _, ok := l.Take(LimitKey{Key: "off", Limit: -1}); !ok {
				t.Fatal("refused")
			}
		}
		if l.tracked() != 0 {
			t.Fatal("tracked a key without a limit")
		}
	})

	t.Run("tracks a bounded number of keys", func(t *testing.T) {
		clock := kernel.NewManualClock(start)
		l := NewFailureLimiter(clock, time.Minute, 100)
		for i := 0; i < 1000; i++ {
			l.Take(LimitKey{Key: "ip:" + string(rune('a'+i%26)) + strings.Repeat("x", i/26), Limit: 5})
			if i == 500 {
				clock.Advance(2 * time.Minute)
			}
		}
		if n := l.tracked(); n > 100 {
			t.Fatalf("%d keys tracked", n)
		}
	})
}

func TestValidation(t *testing.T) {
	t.Run("accepts handles of 1 to 32 characters from the allowed set", func(t *testing.T) {
		for _, h := range []string{"a", "alice", "Alice.B-c_9", strings.Repeat("x", 32)} {
			if err := ValidateHandle(h); err != nil {
				t.Errorf("%q: %v", h, err)
			}
		}
	})
	t.Run("refuses other handles naming the field", func(t *testing.T) {
		for _, h := range []string{"", strings.Repeat("x", 33), "al ice", "alice@home", "ålice", "a/b"} {
			err := ValidateHandle(h)
			if e, ok := err.(*kernel.Error); !ok || e.Code != kernel.CodeValidation || e.Field != "handle" {
				t.Errorf("%q: %v", h, err)
			}
		}
	})
	t.Run("folds the handle key to lower case", func(t *testing.T) {
		if HandleKey("Alice.B") != "alice.b" {
			t.Fatal(HandleKey("Alice.B"))
		}
	})
	t.Run("accepts display names of 1 to 64 characters and trims them", func(t *testing.T) {
		for in, want := range map[string]string{"Alice": "Alice", "  Zoë Ünal ": "Zoë Ünal", strings.Repeat("ü", 64): strings.Repeat("ü", 64), "🦊 fox": "🦊 fox"} {
			got, err := ValidateDisplayName(in)
			if err != nil || got != want {
				t.Errorf("%q: %q %v", in, got, err)
			}
		}
	})
	t.Run("refuses empty, long, control-laden and invalid display names", func(t *testing.T) {
		for _, n := range []string{"", "   ", strings.Repeat("ü", 65), "a\nb", "a\x00b", "tab\there", "bad\xffutf8", "line\u2028sep"} {
			_, err := ValidateDisplayName(n)
			if e, ok := err.(*kernel.Error); !ok || e.Field != "display_name" {
				t.Errorf("%q: %v", n, err)
			}
		}
	})
	t.Run("refuses bidirectional and invisible characters in display names", func(t *testing.T) {
		for _, n := range []string{"Mallory\u202e", "a\u202ab", "\u2066Admin\u2069", "a\u2068b", "Ad\u200bmin", "a\u200db", "\ufeffAda", "a\u00adb"} {
			if _, err := ValidateDisplayName(n); fieldOf(err) != "display_name" {
				t.Errorf("%+q: %v", n, err)
			}
		}
	})
	t.Run("keeps display names in NFC", func(t *testing.T) {
		if got, err := ValidateDisplayName("Zoe\u0308"); err != nil || got != "Zo\u00eb" {
			t.Fatalf("%+q %v", got, err)
		}
	})
	t.Run("bounds passwords to 8 to 1024 bytes", func(t *testing.T) {
		for p, ok := range map[string]bool{"1234567": false, "12345678": true, strings.Repeat("p", 1024): true, strings.Repeat("p", 1025): false} {
			if err := ValidatePassword(p); (err == nil) != ok {
				t.Errorf("len %d: %v", len(p), err)
			}
		}
	})
}

func TestCreateTokenName(t *testing.T) {
	e := newPeopleEnv(t)
	e.az.Fn = nil
	alice := kernel.Actor{ID: e.alice.ID, Kind: kernel.KindPerson, Handle: "alice"}
	for _, n := range []string{"ci\u202e", "\u2067ci\u2069", "c\u200bi", "", "   ", strings.Repeat("t", MaxTokenNameLen+1)} {
		t.Run(fmt.Sprintf("refuses the name %+q", n), func(t *testing.T) {
			if _, _, err := e.svc.CreateToken(context.Background(), alice, n); fieldOf(err) != "name" {
				t.Fatalf("err %v", err)
			}
		})
	}
}

func TestConfigProblems(t *testing.T) {
	if p := DefaultConfig().problems(); len(p) != 0 {
		t.Fatalf("the defaults have problems: %q", p)
	}
	for name, tune := range map[string]func(*Config){
		"no session lifetime":    func(c *Config) { c.SessionTTL = 0 },
		"a negative login limit": func(c *Config) { c.LoginFailuresPerIP = -1 },
		"no failure window":      func(c *Config) { c.LoginFailureWindow = 0 },
		"no limiter keys":        func(c *Config) { c.RateLimitMaxKeys = 0 },
		"no token touch":         func(c *Config) { c.TokenTouchInterval = 0 },
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			c := DefaultConfig()
			tune(&c)
			if p := c.problems(); len(p) != 1 {
				t.Fatalf("problems %q, want one", p)
			}
		})
	}
	t.Run("takes zero login limits: they are off", func(t *testing.T) {
		c := DefaultConfig()
		c.LoginFailuresPerIP, c.LoginFailuresPerHandle = 0, 0
		if p := c.problems(); len(p) != 0 {
			t.Fatalf("problems %q", p)
		}
	})
}
