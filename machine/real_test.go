package machine

import (
	"strings"
	"testing"

	"github.com/collbench/collbench/internal/cprobe"
)

// With the real libnvidia-ml on the loader's path and no GPU (scripts/
// real-libs.sh sets COLLBENCH_REAL_NVML and the path), NVML's own
// "Driver Not Loaded" is reported, and nothing else in NVML is called.
func TestRealNVMLWithoutGPU(t *testing.T) {
	cprobe.Env(t, "COLLBENCH_REAL_NVML", false)
	r := &Report{}
	inspectNVML(r)
	if !strings.Contains(r.NVML.Error, "Driver Not Loaded") || r.NVML.Version != "" {
		t.Errorf("NVML without a GPU: %+v", r.NVML)
	}
	t.Logf("NVML: %s", r.NVML.Error)
}
