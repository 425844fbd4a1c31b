package main

import (
	"context"
	"io"

	"github.com/collbench/collbench/fileio"
)

// checkFiles is a hook that fails early, before anything is measured,
// when a file the user asked for cannot be written; empty names are
// skipped, and "-" is standard output, which always can be.
func checkFiles(paths ...string) func() error {
	return func() error {
		for _, p := range paths {
			if p == "" || p == fileio.Stdout {
				continue
			}
			if err := fileio.Check(p); err != nil {
				return usageError{Err: err}
			}
		}
		return nil
	}
}

// saveFile writes a file the user asked for (see fileio.Save).
func saveFile(ctx context.Context, path string, stdout io.Writer, write func(io.Writer) error) error {
	return fileio.Save(ctx, path, stdout, write)
}
