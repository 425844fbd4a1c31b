package run

import (
	"errors"
	"fmt"
	"io"

	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/machine"
)

// Diagnosis is the GPU stack as found here, and the backend the measuring
// commands use with the automatic choice.
type Diagnosis struct {
	*machine.Report
	Backend string   `json:"backend"`           // "nccl", "host", or "none" where GPUs are here but unusable
	Missing []string `json:"missing,omitempty"` // what the nccl backend lacks here
	// Unusable says, on a machine with NVIDIA GPUs whose nccl backend
	// cannot start (a broken driver, no NCCL), which GPUs and why: the
	// automatic choice refuses such a machine rather than measure the CPU.
	Unusable string        `json:"unusable,omitempty"`
	Host     HostResources `json:"host"`
}

// HostResources is what the host backend has to run on.
type HostResources struct {
	CPUs           int   `json:"cpus"`
	AvailableBytes int64 `json:"available_memory_bytes"`
}

// Diagnose takes the inventory (ncclLib: a libnccl file or folder, empty
// to search) and says which backend runs here and, when it is the host
// one, what the nccl backend lacks. A missing GPU is a finding, not an
// error.
func Diagnose(ncclLib string) (*Diagnosis, error) {
	rep, err := machine.Inspect(machine.Options{NCCLLib: ncclLib})
	var noGPU *machine.ErrNoGPU
	if err != nil && !errors.As(err, &noGPU) {
		return nil, err
	}
	d := &Diagnosis{Report: rep, Backend: "nccl"}
	d.Host.CPUs, d.Host.AvailableBytes = host.Resources()
	if noGPU != nil {
		d.Missing = append(d.Missing, noGPU.Error())
	}
	if rep.NCCL.Error != "" {
		d.Missing = append(d.Missing, "NCCL: "+rep.NCCL.Error)
	}
	if len(d.Missing) > 0 {
		d.Backend = "host"
		if where, ok := gpusPresent(); ok {
			d.Backend = "none"
			d.Unusable = fmt.Sprintf("NVIDIA GPUs are here (%s) but the nccl backend cannot start: %s", where, d.Missing[0])
		}
	}
	return d, nil
}

// WriteText renders the inventory and the backend that runs here.
func (d *Diagnosis) WriteText(w io.Writer) {
	d.Report.WriteText(w)
	switch d.Backend {
	case "nccl":
		fmt.Fprintf(w, "%-15s%s\n", "backend:", "nccl ({Backend} auto picks it here)")
		return
	case "none":
		fmt.Fprintf(w, "%-15s%s\n", "backend:", "none: "+d.Unusable+"; the measuring commands refuse to run on the CPU instead; pass {Backend} host to measure the CPU")
		return
	}
	fmt.Fprintf(w, "%-15s%s\n", "backend:", fmt.Sprintf("host: CPU memory, shared memory between the ranks of one host and TCP between hosts, %d CPU(s), %.1f GiB available ({Backend} auto picks it here; the nccl backend needs the NVIDIA driver, a GPU and NCCL)",
		d.Host.CPUs, float64(d.Host.AvailableBytes)/(1<<30)))
}
