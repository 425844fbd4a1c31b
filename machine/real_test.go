package machine

import (
	"os"
	"strings"
	"testing"
)

// With the real libnvidia-ml on the loader's path and no GPU (scripts/
// real-libs.sh sets COLLBENCH_REAL_NVML and the path), NVML's own
// "Driver Not Loaded" is reported, and nothing else in NVML is called.
func TestRealNVMLWithoutGPU(t *testing.T) {
	if os.Getenv("COLLBENCH_REAL_NVML") == "" {
		t.Skip("COLLBENCH_REAL_NVML is not set (scripts/real-libs.sh sets it)")
	}
	r := &Report{}
	inspectNVML(r)
	if !strings.Contains(r.NVML.Error, "Driver Not Loaded") || r.NVML.Version != "" {
		t.Errorf("NVML without a GPU: %+v", r.NVML)
	}
	t.Logf("NVML: %s", r.NVML.Error)
}
