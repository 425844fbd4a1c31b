package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/collbench/collbench/run"
	"github.com/spf13/pflag"
)

// runDoctor prints what collbench finds of the GPU stack: driver, CUDA,
// NCCL, GPUs and their topology, and which backend the measuring commands
// will use. Without a GPU it still prints the report (the host backend is
// what runs), says why on stderr in one line, and exits 1.
func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) int {
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
	d, err := run.Diagnose(*ncclLib)
	if err != nil {
		fmt.Fprintf(stderr, "collbench doctor: %v\n", err)
		return exitFailure
	}
	if ctx.Err() != nil {
		return exitCode(ctx.Err())
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			fmt.Fprintf(stderr, "collbench doctor: %v\n", err)
			return exitFailure
		}
	} else {
		writeDiagnosis(stdout, d)
	}
	if len(d.Missing) > 0 {
		fmt.Fprintf(stderr, "collbench doctor: %s; measuring commands will run on the host backend\n", d.Missing[0])
		return exitFailure
	}
	return exitOK
}

// writeDiagnosis prints the inventory and the backend that runs here.
func writeDiagnosis(w io.Writer, d *run.Diagnosis) {
	d.Report.WriteText(w)
	if d.Backend == "nccl" {
		fmt.Fprintf(w, "%-15s%s\n", "backend:", "nccl (--backend auto picks it here)")
		return
	}
	fmt.Fprintf(w, "%-15s%s\n", "backend:", fmt.Sprintf("host: CPU memory over TCP, %d CPU(s), %.1f GiB available (--backend auto picks it here; the nccl backend needs the NVIDIA driver, a GPU and NCCL)",
		d.Host.CPUs, float64(d.Host.AvailableBytes)/(1<<30)))
}
