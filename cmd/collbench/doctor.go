package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/machine"
)

// runDoctor prints what collbench finds of the GPU stack: driver, CUDA,
// NCCL, GPUs and their topology. Without a GPU it says so in one line and
// exits 1.
func runDoctor(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("doctor", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ncclLib := fs.String("nccl-lib", "", "libnccl.so.2 to load, or its folder (also COLLBENCH_NCCL_LIB)")
	asJSON := fs.Bool("json", false, "print the findings as JSON")
	if code, done := parseFlags(fs, args, "collbench doctor [flags]", stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "collbench doctor: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	rep, err := machine.Inspect(machine.Options{NCCLLib: *ncclLib})
	var noGPU *machine.ErrNoGPU
	if errors.As(err, &noGPU) {
		fmt.Fprintf(stderr, "collbench doctor: %v\n", err)
		return exitFailure
	}
	if err != nil {
		fmt.Fprintf(stderr, "collbench doctor: %v\n", err)
		return exitFailure
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "collbench doctor: %v\n", err)
			return exitFailure
		}
	} else {
		rep.WriteText(stdout)
	}
	if rep.NCCL.Error != "" {
		return exitFailure
	}
	return exitOK
}
