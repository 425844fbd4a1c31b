package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/gpu"
	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/cuda"
	"github.com/collbench/collbench/libpath"
	"github.com/collbench/collbench/nccl"
)

// pickBackend resolves --backend. auto takes the nccl backend when the
// CUDA driver, at least one GPU and NCCL are all present, and says in a
// preamble note why it chose what it chose.
func pickBackend(f *jobFlags) (bench.Backend, []string, error) {
	g := gpu.Backend{NCCLLib: f.ncclLib}
	switch f.backend {
	case "host":
		return host.Backend{}, nil, nil
	case "nccl":
		note, err := probeGPU(g)
		if err != nil {
			return nil, nil, fmt.Errorf("the nccl backend is not available: %w", withLibFlag(err))
		}
		return g, []string{note}, nil
	}
	note, err := probeGPU(g)
	if err != nil {
		why := err.Error()
		if errors.Is(err, cuda.ErrNoDriver) && os.Getenv(libpath.CUDA.EnvVar) == "" {
			if _, statErr := os.Stat("/dev/nvidiactl"); statErr != nil {
				why = "no NVIDIA GPU driver found"
			}
		}
		return host.Backend{}, []string{"Backend: host (auto: " + why + ")"}, nil
	}
	return g, []string{"Backend: nccl (auto)", note}, nil
}

// withLibFlag adds the command line's way of naming NCCL to an error
// that says it was not found.
func withLibFlag(err error) error {
	if errors.Is(err, nccl.ErrNotFound) {
		return fmt.Errorf("%w (or pass --nccl-lib with its path)", err)
	}
	return err
}

// probeGPU loads the driver and NCCL and checks for a GPU. It returns a
// preamble note naming the libraries in use, as nccl-tests' first line
// names its NCCL, or why the nccl backend cannot run here.
func probeGPU(g gpu.Backend) (string, error) {
	cudaPath, err := cuda.Load(g.CUDALib)
	if err != nil {
		return "", err
	}
	if n, err := cuda.DeviceCount(); err != nil || n == 0 {
		return "", fmt.Errorf("the CUDA driver sees no GPU")
	}
	ncclPath, err := g.Load()
	if err != nil {
		return "", err
	}
	drv, _ := cuda.DriverVersion()
	return fmt.Sprintf("NCCL %s (%s), CUDA driver %s (%s)", nccl.RuntimeVersion(), ncclPath, cuda.FormatVersion(drv), cudaPath), nil
}

// deviceList resolves the GPU of each local rank: --devices, else
// NCCL_TESTS_DEVICE as the first of -g consecutive GPUs, else 0..g-1.
func deviceList(spec string, ngpus, localRank int) ([]int, error) {
	if spec != "" {
		var devs []int
		for _, s := range strings.Split(spec, ",") {
			d, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || d < 0 {
				return nil, fmt.Errorf("--devices %q: %q is not a GPU number", spec, s)
			}
			devs = append(devs, d)
		}
		if len(devs) != ngpus {
			return nil, fmt.Errorf("--devices lists %d GPU(s) but -g is %d", len(devs), ngpus)
		}
		return devs, nil
	}
	first := 0
	if v := os.Getenv("NCCL_TESTS_DEVICE"); v != "" {
		d, err := strconv.Atoi(v)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("NCCL_TESTS_DEVICE=%q is not a GPU number", v)
		}
		first = d
	}
	devs := make([]int, ngpus)
	for i := range devs {
		devs[i] = first + localRank*ngpus + i
	}
	return devs, nil
}

// filterSupport drops the types and ops the backend cannot run when the
// user asked for "all", as nccl-tests drops fp8 on older GPUs, and refuses
// them when named.
func filterSupport(opts *bench.Options, caps bench.Capabilities, allTypes, allOps bool) error {
	var err error
	if opts.Types, err = supported(opts.Types, caps.Type, allTypes); err != nil {
		return err
	}
	if opts.Coll.Reduces {
		opts.Ops, err = supported(opts.Ops, caps.Op, allOps)
	}
	return err
}

// supported keeps the items check accepts; a refused item is an error
// unless it came from "all".
func supported[T any](items []T, check func(T) error, fromAll bool) ([]T, error) {
	if check == nil {
		return items, nil
	}
	var keep []T
	for _, it := range items {
		if err := check(it); err != nil {
			if !fromAll {
				return nil, usageError{err}
			}
			continue
		}
		keep = append(keep, it)
	}
	return keep, nil
}
