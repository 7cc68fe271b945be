package measure

import (
	"os"
	"os/exec"
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

func TestProcTreeCPU(t *testing.T) {
	self, err := ProcCPU(os.Getpid())
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	// A child that burns CPU and exits: waited for, its time is in the parent's tree.
	before, err := ProcTreeCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if before < self {
		t.Fatalf("tree %v < own %v", before, self)
	}
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done")
	if err := cmd.Run(); err != nil {
		t.Skip("no sh here:", err)
	}
	after, err := ProcTreeCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	child := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if after-before < child-20*time.Millisecond {
		t.Fatalf("tree went from %v to %v; the child used %v", before, after, child)
	}
	if pp, err := ParentPid(os.Getpid()); err != nil || pp != os.Getppid() {
		t.Fatalf("ParentPid = %d, %v; want %d", pp, err, os.Getppid())
	}
}
