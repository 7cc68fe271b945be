package measure

import (
	"os"
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

func TestProcCPU(t *testing.T) {
	before, err := ProcCPU(os.Getpid())
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	// Burn a little more than one tick of CPU, then /proc must show it.
	for end := CPUTime() + 30*time.Millisecond; CPUTime() < end; {
	}
	after, err := ProcCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 10*time.Millisecond || after > CPUTime()+20*time.Millisecond {
		t.Fatalf("ProcCPU went from %v to %v; getrusage says %v", before, after, CPUTime())
	}
}
