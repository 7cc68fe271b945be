package kernel

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestIDs(t *testing.T) {
	t.Run("new ids are valid UUIDv7 and strictly increasing", func(t *testing.T) {
		prev := NewID()
		for i := 0; i < 10000; i++ {
			id := NewID()
			if _, err := ParseID(string(id)); err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			if id <= prev {
				t.Fatalf("%s after %s", id, prev)
			}
			prev = id
		}
	})
	t.Run("ids made in the same millisecond still increase", func(t *testing.T) {
		now := time.Now()
		a, b := newIDAt(now), newIDAt(now)
		if b <= a {
			t.Fatalf("%s after %s", b, a)
		}
	})
	for _, bad := range []string{"", "x", "01900000-0000-4000-8000-000000000001", "01900000-0000-7000-c000-000000000001",
		"01900000-0000-7000-8000-00000000000G", "01900000-0000-7000-8000-00000000000A", "01900000000070008000000000000001xxxx"} {
		t.Run("refuses "+bad, func(t *testing.T) {
			if _, err := ParseID(bad); !IsCode(err, CodeValidation) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

type posted struct{ n int }

func TestTxBus(t *testing.T) {
	t.Run("delivers in registration order and stops at a veto", func(t *testing.T) {
		b := NewTxBus()
		var got []string
		Subscribe(b, "first", func(ctx context.Context, ev posted) error { got = append(got, "first"); return nil })
		Subscribe(b, "second", func(ctx context.Context, ev posted) error {
			got = append(got, "second")
			if ev.n < 0 {
				return errors.New("veto")
			}
			return nil
		})
		Subscribe(b, "third", func(ctx context.Context, ev posted) error { got = append(got, "third"); return nil })
		b.Seal()
		if err := Publish(context.Background(), b, posted{1}); err != nil {
			t.Fatal(err)
		}
		got = nil
		err := Publish(context.Background(), b, posted{-1})
		if err == nil || err.Error() != "second: veto" || len(got) != 2 {
			t.Fatalf("err = %v, got = %v", err, got)
		}
	})
	t.Run("refuses a subscriber after seal", func(t *testing.T) {
		b := NewTxBus()
		b.Seal()
		defer func() {
			if recover() == nil {
				t.Fatal("no panic")
			}
		}()
		Subscribe(b, "late", func(ctx context.Context, ev posted) error { return nil })
	})
}

func TestCheckLog(t *testing.T) {
	const post, remove Action = "message.create", "message.delete"
	ctx, log := WithCheckLog(context.Background())
	if log.Checked(post) {
		t.Fatal("checked before any check")
	}
	RecordCheck(ctx, post)
	if !log.Checked(post) || log.Checked(remove) {
		t.Fatal("the log does not hold exactly the recorded action")
	}
}

func TestEmptyAsNull(t *testing.T) {
	type text string
	for _, v := range []text{"", "abc"} {
		b, err := MarshalEmptyAsNull(v)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[text]string{"": "null", "abc": `"abc"`}[v]; string(b) != want {
			t.Errorf("%q encodes as %s, want %s", v, b, want)
		}
		got := text("stale")
		if err := UnmarshalNullAsEmpty(b, &got); err != nil || got != v {
			t.Errorf("%s decodes as %q (%v), want %q", b, got, err, v)
		}
	}
	var got text
	if err := UnmarshalNullAsEmpty([]byte(`12`), &got); err == nil {
		t.Error("a number decodes as a text")
	}
}
