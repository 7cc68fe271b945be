package measure

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(100-i) * time.Millisecond
	}
	l := Summarise(ds)
	if l.P50 != 50*time.Millisecond || l.P99 != 99*time.Millisecond || l.Max != 100*time.Millisecond || l.N != 100 {
		t.Fatalf("got %+v", l)
	}
	if got := Percentile([]time.Duration{7}, 99); got != 7 {
		t.Fatalf("one sample: p99 = %v", got)
	}
}

func TestRSS(t *testing.T) {
	b, err := RSS(0)
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	if b < 1<<20 {
		t.Fatalf("RSS of a Go test binary = %d bytes, implausibly small", b)
	}
}
