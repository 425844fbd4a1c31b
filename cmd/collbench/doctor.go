package main

import (
	"context"
	"fmt"
	"io"

	"github.com/collbench/collbench/run"
)

// runDoctor prints what collbench finds of the GPU stack: driver, CUDA,
// NCCL, GPUs and their topology, and which backend the measuring commands
// will use. Without a GPU it still prints the report (the host backend is
// what runs), says why on stderr in one line, and exits 1.
func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("doctor")
	ncclLib := fs.String("nccl-lib", "", "libnccl.so.2 to load, or its folder (also COLLBENCH_NCCL_LIB)")
	asJSON := fs.Bool("json", false, "print the findings as JSON")
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "collbench doctor: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	debugToStderr()
	d, err := run.Diagnose(*ncclLib)
	if err != nil {
		fmt.Fprintf(stderr, "collbench doctor: %s\n", errText(err))
		return exitFailure
	}
	if ctx.Err() != nil {
		return exitCode(ctx.Err())
	}
	if *asJSON {
		if err := encodeJSON(stdout, d); err != nil {
			fmt.Fprintf(stderr, "collbench doctor: %s\n", errText(err))
			return exitFailure
		}
	} else {
		d.WriteText(spelling{w: stdout})
	}
	switch {
	case d.Unusable != "":
		fmt.Fprintf(stderr, "collbench doctor: %s; measuring commands refuse to run; pass --backend host to run on the CPU\n", d.Unusable)
		return exitFailure
	case len(d.Missing) > 0:
		fmt.Fprintf(stderr, "collbench doctor: %s; measuring commands will run on the host backend\n", d.Missing[0])
		return exitFailure
	}
	return exitOK
}
