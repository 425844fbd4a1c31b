// Package machine takes stock of a host's GPU stack: the CUDA driver,
// NCCL, the GPUs and how they are connected (NVML). It backs `collbench
// doctor` and the metadata of saved runs and profiles.
package machine

import (
	"fmt"
	"os"

	"github.com/collbench/collbench/cuda"
	"github.com/collbench/collbench/nccl"
)

// Library is one shared library collbench loads, and what it reported.
type Library struct {
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
	Error   string `json:"error,omitempty"`
}

// GPU is one device as CUDA and NVML see it.
type GPU struct {
	Index       int    `json:"index"`
	Name        string `json:"name"`
	BusID       string `json:"bus_id"`
	MemoryBytes int64  `json:"memory_bytes"`
	SM          string `json:"compute_capability"`
	UUID        string `json:"uuid,omitempty"`
	NVLinks     int    `json:"nvlinks_active"`
	// PCIeGen and PCIeWidth are the GPU's PCIe link: the highest
	// generation it trains to (an idle link drops to a lower one) and its
	// current width (a link trained narrower is a fault worth seeing).
	PCIeGen   int `json:"pcie_gen,omitempty"`
	PCIeWidth int `json:"pcie_width,omitempty"`
}

// Report is everything doctor found.
type Report struct {
	Hostname string   `json:"hostname"`
	Driver   Library  `json:"cuda_driver"` // libcuda, Version = CUDA version the driver supports
	NVML     Library  `json:"nvml"`        // Version = driver release
	NCCL     Library  `json:"nccl"`
	GPUs     []GPU    `json:"gpus"`
	Links    [][]Link `json:"topology,omitempty"` // Links[i][j]: how GPU i reaches GPU j
}

// Options points at libraries explicitly.
type Options struct {
	NCCLLib, CUDALib string
}

// ErrNoGPU means the host has no usable NVIDIA GPU.
type ErrNoGPU struct{ Reason string }

func (e *ErrNoGPU) Error() string { return "no NVIDIA GPU found: " + e.Reason }

// Inspect probes the host. It returns *ErrNoGPU (with the partial report)
// when there is no driver or no GPU; a missing NCCL is reported in the
// report, not as an error.
func Inspect(o Options) (*Report, error) {
	r := &Report{GPUs: []GPU{}}
	r.Hostname, _ = os.Hostname()
	// NCCL loads without a driver, so its state is known either way.
	if p, err := nccl.Load(o.NCCLLib); err != nil {
		r.NCCL.Error = err.Error()
	} else {
		r.NCCL.Path, r.NCCL.Version = p, nccl.RuntimeVersion().String()
	}
	path, err := cuda.Load(o.CUDALib)
	r.Driver.Path = path
	if path != "" { // the driver loaded, even if it found no GPU
		if v, verr := cuda.DriverVersion(); verr == nil {
			r.Driver.Version = cuda.FormatVersion(v)
		}
	}
	if err != nil {
		r.Driver.Error = err.Error()
		return r, &ErrNoGPU{Reason: err.Error()}
	}
	n, err := cuda.DeviceCount()
	if err != nil {
		return r, &ErrNoGPU{Reason: err.Error()}
	}
	if n == 0 {
		return r, &ErrNoGPU{Reason: "the CUDA driver sees no device"}
	}
	for i := 0; i < n; i++ {
		g, err := cudaGPU(i)
		if err != nil {
			return r, fmt.Errorf("GPU %d: %w", i, err)
		}
		r.GPUs = append(r.GPUs, g)
	}
	inspectNVML(r)
	return r, nil
}

func cudaGPU(i int) (GPU, error) {
	d := cuda.Device(i)
	g := GPU{Index: i}
	var err error
	if g.Name, err = d.Name(); err != nil {
		return g, err
	}
	if g.BusID, err = d.PCIBusID(); err != nil {
		return g, err
	}
	if g.MemoryBytes, err = d.TotalMem(); err != nil {
		return g, err
	}
	major, minor, err := d.ComputeCapability()
	if err != nil {
		return g, err
	}
	g.SM = fmt.Sprintf("%d.%d", major, minor)
	return g, nil
}
