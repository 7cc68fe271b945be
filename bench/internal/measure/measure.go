// Package measure holds what every bothy benchmark shares: reading a process's resident memory,
// percentiles of latencies, and the one-line result format that bench/run collects. It is for
// benchmarks only.
package measure

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RSS returns the resident set size of process pid (0: this process) from /proc, in bytes.
func RSS(pid int) (int64, error) {
	p := "/proc/self/status"
	if pid > 0 {
		p = fmt.Sprintf("/proc/%d/status", pid)
	}
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("measure: VmRSS %q: %w", rest, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("measure: no VmRSS in %s", p)
}

// Percentile returns the p-th percentile (0 < p ≤ 100, nearest rank) of sorted.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(float64(len(sorted))*p/100)) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

// Latencies summarises a set of latencies.
type Latencies struct {
	N             int
	P50, P99, Max time.Duration
}

// Summarise sorts ds in place and summarises them.
func Summarise(ds []time.Duration) Latencies {
	slices.Sort(ds)
	if len(ds) == 0 {
		return Latencies{}
	}
	return Latencies{N: len(ds), P50: Percentile(ds, 50), P99: Percentile(ds, 99), Max: ds[len(ds)-1]}
}

// Result writes one measurement in the format bench/run reads: "RESULT<TAB>name<TAB>value<TAB>unit".
func Result(w io.Writer, name string, value float64, unit string) {
	fmt.Fprintf(w, "RESULT\t%s\t%s\t%s\n", name, strconv.FormatFloat(value, 'f', -1, 64), unit)
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// MiB is b bytes in mebibytes.
func MiB(b int64) float64 { return float64(b) / (1 << 20) }

// CPUTime returns the user and system CPU time this process has used so far. On a shared
// machine it is steadier than wall time: time stolen by neighbours is not in it.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat: 100 on every Linux
// architecture Go supports (sysconf(_SC_CLK_TCK) would need cgo).
const clockTicks = 100

// ProcCPU returns the user and system CPU time process pid has used so far, all its threads
// together, from /proc/<pid>/stat (a resolution of 10 ms). It reads another process, such as a
// server under load, where CPUTime reads this one.
func ProcCPU(pid int) (time.Duration, error) {
	st, err := readStat(pid)
	if err != nil {
		return 0, err
	}
	return st.own, nil
}

// procStat is what the benchmarks read of /proc/<pid>/stat.
type procStat struct {
	ppid int
	// own is utime + stime; children is cutime + cstime, the CPU time of the children the
	// process has waited for (they have exited).
	own, children time.Duration
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: count from the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("measure: /proc/%d/stat without a command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), f[1] field 4 (ppid); utime, stime, cutime, cstime are fields
	// 14 to 17.
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("measure: /proc/%d/stat has %d fields", pid, len(f)+2)
	}
	var n [5]int64
	for k, s := range []string{f[1], f[11], f[12], f[13], f[14]} {
		if n[k], err = strconv.ParseInt(s, 10, 64); err != nil {
			return procStat{}, fmt.Errorf("measure: /proc/%d/stat: %w", pid, err)
		}
	}
	tick := func(t int64) time.Duration { return time.Duration(t) * time.Second / clockTicks }
	return procStat{ppid: int(n[0]), own: tick(n[1] + n[2]), children: tick(n[3] + n[4])}, nil
}

// ProcTreeCPU returns the CPU time used so far by process root and its children, such as a
// PostgreSQL postmaster and its backends and auxiliary processes: root's own, its live
// children's own and their waited-for children's, and the children root has waited for (so a
// backend that exits between two readings moves from one term to another and is not lost).
// Grandchildren that are still alive are not counted. Resolution 10 ms per process.
func ProcTreeCPU(root int) (time.Duration, error) {
	st, err := readStat(root)
	if err != nil {
		return 0, err
	}
	total := st.own + st.children
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == root {
			continue
		}
		c, err := readStat(pid)
		if err != nil || c.ppid != root { // gone meanwhile, or another process's
			continue
		}
		total += c.own + c.children
	}
	return total, nil
}

// ParentPid returns the parent of process pid.
func ParentPid(pid int) (int, error) {
	st, err := readStat(pid)
	return st.ppid, err
}

// Run is what a throughput measurement saw: operations done, wall time, CPU time of the process
// and, when the run had a database server of its own (PostgreSQL), that server's CPU time.
type Run struct {
	Ops     int64
	Elapsed time.Duration
	CPU     time.Duration
	// DBCPU is the database server's CPU time over the same window, when DBRead; see
	// pgcluster.Cluster.CPU.
	DBCPU  time.Duration
	DBRead bool
}

// DBCPUPerOp is the database server's CPU time per operation, in microseconds.
func (r Run) DBCPUPerOp() float64 {
	if r.Ops == 0 {
		return 0
	}
	return float64(r.DBCPU) / float64(r.Ops) / float64(time.Microsecond)
}

// PerSecond is operations per second of wall time.
func (r Run) PerSecond() float64 { return float64(r.Ops) / r.Elapsed.Seconds() }

// CPUPerOp is the process's CPU time per operation, in microseconds.
func (r Run) CPUPerOp() float64 {
	if r.Ops == 0 {
		return 0
	}
	return float64(r.CPU) / float64(r.Ops) / float64(time.Microsecond)
}
