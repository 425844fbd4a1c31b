package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collbench/collbench/bench/gpu"
)

// brokenGPUNodes makes this test's machine look like one with an NVIDIA
// GPU's device node (nvidia0 in the folder it returns) and no usable
// driver; skipped where the nccl backend does run.
func brokenGPUNodes(t *testing.T) string {
	t.Helper()
	if _, err := probeGPU(gpu.Backend{}); err == nil {
		t.Skip("the nccl backend runs here")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nvidia0"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	was := nvidiaNodes
	t.Cleanup(func() { nvidiaNodes = was })
	nvidiaNodes = filepath.Join(dir, "nvidia[0-9]*")
	return dir
}

// On a machine with NVIDIA GPU device nodes where the nccl backend cannot
// start (no usable driver), the diagnosis says the GPUs are there but
// unusable, why, and that the measuring commands refuse the CPU unless
// asked for the host backend, as they do; it does not promise the host
// backend.
func TestDiagnoseGPUPresentButUnusable(t *testing.T) {
	dir := brokenGPUNodes(t)
	d, err := Diagnose("")
	if err != nil {
		t.Fatal(err)
	}
	if d.Backend != "none" || !strings.Contains(d.Unusable, filepath.Join(dir, "nvidia0")) || len(d.Missing) == 0 {
		t.Errorf("backend %q, unusable %q, missing %v", d.Backend, d.Unusable, d.Missing)
	}
	var b strings.Builder
	d.WriteText(&b)
	text := b.String()
	for _, want := range []string{"backend:       none: NVIDIA GPUs are here (" + filepath.Join(dir, "nvidia0") + ") but the nccl backend cannot start",
		"measuring commands refuse to run on the CPU instead; pass {Backend} host"} {
		if !strings.Contains(text, want) {
			t.Errorf("the text does not say %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "{Backend} auto picks it here") {
		t.Errorf("the text promises a backend auto refuses:\n%s", text)
	}
}
