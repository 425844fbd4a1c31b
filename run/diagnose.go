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
	Backend string        `json:"backend"`           // "nccl" or "host"
	Missing []string      `json:"missing,omitempty"` // what the nccl backend lacks here
	Host    HostResources `json:"host"`
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
	}
	return d, nil
}

// WriteText renders the inventory and the backend that runs here.
func (d *Diagnosis) WriteText(w io.Writer) {
	d.Report.WriteText(w)
	if d.Backend == "nccl" {
		fmt.Fprintf(w, "%-15s%s\n", "backend:", "nccl ({Backend} auto picks it here)")
		return
	}
	fmt.Fprintf(w, "%-15s%s\n", "backend:", fmt.Sprintf("host: CPU memory, shared memory between the ranks of one host and TCP between hosts, %d CPU(s), %.1f GiB available ({Backend} auto picks it here; the nccl backend needs the NVIDIA driver, a GPU and NCCL)",
		d.Host.CPUs, float64(d.Host.AvailableBytes)/(1<<30)))
}
