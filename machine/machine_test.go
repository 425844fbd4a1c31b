package machine

import (
	"bytes"
	"errors"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/collbench/collbench/internal/golden"
)

func TestPathLabels(t *testing.T) {
	for lvl, want := range map[nvml.GpuTopologyLevel]string{nvml.TOPOLOGY_INTERNAL: "X", nvml.TOPOLOGY_SINGLE: "PIX",
		nvml.TOPOLOGY_MULTIPLE: "PXB", nvml.TOPOLOGY_HOSTBRIDGE: "PHB", nvml.TOPOLOGY_NODE: "NODE", nvml.TOPOLOGY_SYSTEM: "SYS"} {
		if got := pathLabel(lvl); got != want {
			t.Errorf("level %d: got %s, want %s", lvl, got, want)
		}
	}
}

func TestBusKey(t *testing.T) {
	if busKey("00000000:18:00.0") != busKey("0000:18:00.0") || busKey("0000:18:00.0") != "0000:18:00.0" {
		t.Errorf("NVML's and CUDA's spellings of one bus id must match")
	}
	if busKey("0000:18:00.0") == busKey("0000:19:00.0") {
		t.Errorf("different buses compare equal")
	}
}

// TestWriteText renders a two-GPU report against a golden file.
func TestWriteText(t *testing.T) {
	r := &Report{Hostname: "node1",
		Driver: Library{Path: "/usr/lib/x86_64-linux-gnu/libcuda.so.1", Version: "12.8"},
		NVML:   Library{Path: "libnvidia-ml.so.1", Version: "570.124.06"},
		NCCL:   Library{Path: "/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2", Version: "2.30.7"},
		GPUs: []GPU{{Index: 0, Name: "NVIDIA H100 80GB HBM3", BusID: "0000:18:00.0", MemoryBytes: 85045231616, SM: "9.0", NVLinks: 18},
			{Index: 1, Name: "NVIDIA H100 80GB HBM3", BusID: "0000:2a:00.0", MemoryBytes: 85045231616, SM: "9.0", NVLinks: 18}},
		Links: [][]Link{{{Path: "X"}, {NVLinks: 18, Path: "NV18"}}, {{NVLinks: 18, Path: "NV18"}, {Path: "X"}}},
	}
	var b bytes.Buffer
	r.WriteText(&b)
	golden.Check(t, "doctor.golden", b.Bytes())
}

// TestInspectWithoutDriver runs the real probe on a machine without a
// usable GPU (no driver, or a driver that finds no device): it reports
// ErrNoGPU with the driver's error. Whether the machine has a GPU is
// decided by what the probe can load, not by a device file, which a
// driver run as root creates even where there is no GPU.
func TestInspectWithoutDriver(t *testing.T) {
	r, err := Inspect(Options{})
	if err == nil {
		t.Skipf("this machine has %d usable GPU(s)", len(r.GPUs))
	}
	var noGPU *ErrNoGPU
	if !errors.As(err, &noGPU) {
		t.Fatalf("got %v, want ErrNoGPU", err)
	}
	if r == nil || r.Driver.Error == "" || len(r.GPUs) != 0 {
		t.Errorf("report %+v should carry the driver error and no GPU", r)
	}
}
