//go:build linux && (amd64 || arm64)

package sqlite

import (
	"os"
	"syscall"
)

// startWriteback asks the kernel to begin writing the n bytes at off of f to the disk now,
// without waiting (sync_file_range with SYNC_FILE_RANGE_WRITE), as storage/blobs does for a
// large upload. Only on 64-bit CPUs (on 32-bit ARM the call takes its arguments in another
// order); an error changes nothing, the final fsync decides durability.
func startWriteback(f *os.File, off, n int64) {
	const syncFileRangeWrite = 2
	_, _, _ = syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, f.Fd(), uintptr(off), uintptr(n), syncFileRangeWrite, 0, 0)
}
