// Package filesbench measures the transfer of one large file through a real bothy serve: the upload
// as the raw body of POST /api/v1/files and the download of GET /api/v1/files/{id}/content over
// loopback, their rates, and how much the server's memory grows while it streams them (a file
// must never be held whole: the target is at most 16 MiB of growth for a 1 GiB file).
package filesbench

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"bothy.dev/bothy/bench/internal/measure"
)

// Result is one transfer each way.
type Result struct {
	Size int64
	// Upload and Download are the wall time of each request, from its first byte sent to the
	// last byte of its answer read.
	Upload, Download time.Duration
	// UploadGrowth and DownloadGrowth are the largest resident set the server reached during
	// each transfer, less its resident set just before it.
	UploadGrowth, DownloadGrowth int64
}

// MBps is size bytes in d, in megabytes (10^6 bytes) a second.
func MBps(size int64, d time.Duration) float64 { return float64(size) / 1e6 / d.Seconds() }

// Transfer uploads size bytes (a random block of 1 MiB repeated, generated as it is sent) to
// base with token, downloads them again, and watches the resident set of the process pid every
// 10 ms while each transfer runs.
func Transfer(ctx context.Context, base, token string, size int64, pid int) (Result, error) {
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 2}}
	block := make([]byte, 1<<20)
	if _, err := rand.Read(block); err != nil {
		return Result{}, err
	}
	res := Result{Size: size}

	before, err := measure.RSS(pid)
	if err != nil {
		return Result{}, err
	}
	stop := watch(pid)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/files?name=bench.bin", io.LimitReader(&repeat{b: block}, size))
	if err != nil {
		return Result{}, err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		stop()
		return Result{}, fmt.Errorf("upload: %w", err)
	}
	var f struct {
		ID   string `json:"id"`
		Size int64  `json:"size"`
	}
	err = json.NewDecoder(resp.Body).Decode(&f)
	resp.Body.Close()
	res.Upload = time.Since(start)
	res.UploadGrowth = stop() - before
	if err != nil || resp.StatusCode != http.StatusCreated || f.Size != size {
		return Result{}, fmt.Errorf("upload: status %d, size %d of %d: %v", resp.StatusCode, f.Size, size, err)
	}

	if before, err = measure.RSS(pid); err != nil {
		return Result{}, err
	}
	stop = watch(pid)
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/files/"+f.ID+"/content", nil)
	if err != nil {
		return Result{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	start = time.Now()
	resp, err = client.Do(req)
	if err != nil {
		stop()
		return Result{}, fmt.Errorf("download: %w", err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	res.Download = time.Since(start)
	res.DownloadGrowth = stop() - before
	if err != nil || resp.StatusCode != http.StatusOK || n != size {
		return Result{}, fmt.Errorf("download: status %d, %d of %d bytes: %v", resp.StatusCode, n, size, err)
	}
	return res, nil
}

// watch samples the resident set of pid until the returned function is called, which answers
// the largest sample.
func watch(pid int) func() int64 {
	var peak atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if rss, err := measure.RSS(pid); err == nil && rss > peak.Load() {
				peak.Store(rss)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		wg.Wait()
		if rss, err := measure.RSS(pid); err == nil && rss > peak.Load() {
			peak.Store(rss)
		}
		return peak.Load()
	}
}

// repeat reads b over and over.
type repeat struct {
	b   []byte
	off int
}

func (r *repeat) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.b[r.off:])
		n += c
		r.off = (r.off + c) % len(r.b)
	}
	return n, nil
}
