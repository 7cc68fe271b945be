package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"

	filesbench "bothy.dev/bothy/bench/files"
	httpbench "bothy.dev/bothy/bench/http"
	"bothy.dev/bothy/bench/internal/measure"
)

// The scenario of bench/files: one large file up and down through a real bothy serve.

func filesTransfer(fs *flag.FlagSet) runFunc {
	size := fs.Int64("size", 1<<30, "bytes of the file")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		ns, err := r.startFirst(ctx, 1, []string{"--set", "files.max_upload_bytes=" + strconv.FormatInt(*size, 10)}, 4)
		if err != nil {
			return err
		}
		s := ns.servers[0]
		t, err := httpbench.Prepare(ctx, ns.client, s.Public, s.SetupCode, 1, 1)
		if err != nil {
			return fmt.Errorf("prepare: %w\n%s", err, s.Logs())
		}
		res, err := filesbench.Transfer(ctx, s.Public, t.Tokens[0], *size, s.Pid())
		if err != nil {
			return fmt.Errorf("%w\n%s", err, s.Logs())
		}
		name := fmt.Sprintf("files/%s%dMiB", r.prefix(), *size>>20)
		measure.Result(out, name+"/upload", filesbench.MBps(res.Size, res.Upload), "MB/s")
		measure.Result(out, name+"/download", filesbench.MBps(res.Size, res.Download), "MB/s")
		measure.Result(out, name+"/upload-rss-growth", measure.MiB(res.UploadGrowth), "MiB")
		measure.Result(out, name+"/download-rss-growth", measure.MiB(res.DownloadGrowth), "MiB")
		return nil
	}
}
