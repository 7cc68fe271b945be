//go:build linux && (amd64 || arm64)

package blobs

import (
	"os"
	"syscall"
)

// startWriteback asks the kernel to begin writing the n bytes at off of f to the disk now,
// without waiting for them (sync_file_range with SYNC_FILE_RANGE_WRITE). A large blob then
// streams to the disk while it is still arriving, and the fsync that makes it durable at the
// end waits only for its last few megabytes instead of all of it. It changes no guarantee:
// the fsync still decides durability; an error here is ignored for that reason. Only on 64-bit
// CPUs: on 32-bit ARM the call takes its arguments in another order (sync_file_range2), and
// there, as on other systems, the final fsync writes all (writeback_other.go).
func startWriteback(f *os.File, off, n int64) {
	const syncFileRangeWrite = 2
	_, _, _ = syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, f.Fd(), uintptr(off), uintptr(n), syncFileRangeWrite, 0, 0)
}
