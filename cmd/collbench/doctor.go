package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/machine"
)

// doctorReport is what doctor prints: the GPU stack as found, and the
// backend the measuring commands will use here with --backend auto.
type doctorReport struct {
	*machine.Report
	Backend string      `json:"backend"`           // "nccl" or "host"
	Missing []string    `json:"missing,omitempty"` // what the nccl backend lacks here
	Host    hostSummary `json:"host"`
}

// hostSummary is what the host backend has to run on.
type hostSummary struct {
	CPUs           int   `json:"cpus"`
	AvailableBytes int64 `json:"available_memory_bytes"`
}

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
	rep, err := machine.Inspect(machine.Options{NCCLLib: *ncclLib})
	var noGPU *machine.ErrNoGPU
	if err != nil && !errors.As(err, &noGPU) {
		fmt.Fprintf(stderr, "collbench doctor: %v\n", err)
		return exitFailure
	}
	if ctx.Err() != nil {
		return exitCode(ctx.Err())
	}
	d := doctorReport{Report: rep, Backend: "nccl"}
	d.Host.CPUs, d.Host.AvailableBytes = host.Resources()
	if noGPU != nil {
		d.Missing = append(d.Missing, noGPU.Error())
	}
	if rep.NCCL.Error != "" {
		d.Missing = append(d.Missing, "NCCL: "+rep.NCCL.Error)
	}
	if len(d.Missing) > 0 {
		d.Backend = "host"
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			fmt.Fprintf(stderr, "collbench doctor: %v\n", err)
			return exitFailure
		}
	} else {
		d.writeText(stdout)
	}
	if len(d.Missing) > 0 {
		fmt.Fprintf(stderr, "collbench doctor: %s; measuring commands will run on the host backend\n", d.Missing[0])
		return exitFailure
	}
	return exitOK
}

func (d *doctorReport) writeText(w io.Writer) {
	d.Report.WriteText(w)
	if d.Backend == "nccl" {
		fmt.Fprintf(w, "%-15s%s\n", "backend:", "nccl (--backend auto picks it here)")
		return
	}
	fmt.Fprintf(w, "%-15s%s\n", "backend:", fmt.Sprintf("host: CPU memory over TCP, %d CPU(s), %.1f GiB available (--backend auto picks it here; the nccl backend needs the NVIDIA driver, a GPU and NCCL)",
		d.Host.CPUs, float64(d.Host.AvailableBytes)/(1<<30)))
}
