package main

import (
	"context"
	"io"
	"time"

	"github.com/collbench/collbench/fileio"
)

// stdoutName is the file name that means standard output (-J -).
const stdoutName = "-"

// checkFile fails early, before anything is measured, when a file the user
// asked for cannot be written; "-" is standard output and always can.
func checkFile(path string) error {
	if path == stdoutName {
		return nil
	}
	if err := fileio.Check(path); err != nil {
		return usageError{Err: err}
	}
	return nil
}

// lateWrite bounds how long the results of an interrupted run may wait
// for a FIFO's reader: they are still written, but nothing waits forever.
const lateWrite = 10 * time.Second

// saveFile writes a file the user asked for through fileio (atomic for
// files, written through for devices and FIFOs), or to stdout for "-".
// The results of a run that was interrupted are written all the same.
func saveFile(ctx context.Context, path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == stdoutName {
		return write(stdout)
	}
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), lateWrite)
		defer cancel()
	}
	return fileio.Write(ctx, path, write)
}
