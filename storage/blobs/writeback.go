package blobs

import "os"

// writebackEvery is how many bytes a blob's temporary takes before their writeback to the disk
// is started (startWriteback).
const writebackEvery = 8 << 20

// writeback is a file that starts the writeback of each writebackEvery bytes written to it.
// It offers only Write, so that io.CopyBuffer sends the body through its buffer.
type writeback struct {
	f            *os.File
	off, started int64
}

func (w *writeback) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.off += int64(n)
	if w.off-w.started >= writebackEvery {
		startWriteback(w.f, w.started, w.off-w.started)
		w.started = w.off
	}
	return n, err
}
