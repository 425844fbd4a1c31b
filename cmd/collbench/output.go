package main

import (
	"context"
	"io"
	"slices"
	"strings"

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

// emitJSON prints a document on stdout under --format json, and saves it
// to file (-J) when one is named, through fileio.Save.
func emitJSON(ctx context.Context, format, file string, stdout io.Writer, encode func(io.Writer) error) error {
	if format == "json" {
		if err := encode(stdout); err != nil {
			return err
		}
	}
	if file == "" {
		return nil
	}
	return fileio.Save(ctx, file, stdout, encode)
}

// checkFormat refuses a --format outside allowed.
func checkFormat(format string, allowed ...string) error {
	if slices.Contains(allowed, format) {
		return nil
	}
	last := len(allowed) - 1
	return usagef("unknown --format %q (want %s or %s)", format, strings.Join(allowed[:last], ", "), allowed[last])
}
