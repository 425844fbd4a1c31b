package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/collbench/collbench/internal/tier"
)

// scripts/gpu-check.sh on the host backend (--host), with collbench under
// nccl-tests' names standing in for nccl-tests: every step of the GPU
// check runs, every collective with 2, 4 and 8 ranks passes its checks,
// the side-by-side table has both tools' medians at every size, and the
// archive is written. The ratios themselves are a GPU's business; on a
// shared machine they are noise, so they may fail here.
func TestGPUCheckScriptOnHost(t *testing.T) {
	tier.System(t, "a script")
	bin := builtBinary(t)
	out := filepath.Join(t.TempDir(), "gpu-check")
	cmd := exec.Command("bash", "../../scripts/gpu-check.sh", "--host", "--collbench", bin, "--out", out, "--deadline", "600")
	log, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		t.Fatalf("%v\n%s", err, log)
	}
	summary, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(summary)
	for _, g := range []string{"2", "4", "8"} {
		for _, c := range []string{"allreduce", "allgather", "reducescatter", "alltoall", "alltoallv", "broadcast", "reduce",
			"sendrecv", "gather", "scatter", "hypercube"} {
			if !strings.Contains(s, "PASS  shared-g"+g+"-"+c+"  (") {
				t.Errorf("no PASS for %s with %s ranks:\n%s", c, g, s)
			}
		}
	}
	ratio := regexp.MustCompile(`(?m)^#   (allreduce|broadcast) +\d+ +\d+\.\d\d +\d+\.\d\d +[-+]\d+\.\d\d +\d+\.\d{3}  (PASS|FAIL)$`)
	if n := len(ratio.FindAllString(s, -1)); n != 28 {
		t.Errorf("%d side-by-side rows, want 2 × 14 sizes (8 B to 64 KiB):\n%s", n, s)
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "FAIL") || strings.HasPrefix(line, "SKIP") {
			t.Errorf("a run did not pass: %s", line)
		}
	}
	if _, err := os.Stat(out + ".tgz"); err != nil {
		t.Errorf("no archive: %v", err)
	}
}

// scripts/gpu-tune.sh on the host backend (--host): the tuning, its
// proof and the sweep with the file loaded all pass, and the loaded
// sweep's own log shows the file's row taking effect at 1 KiB.
func TestGPUTuneScriptOnHost(t *testing.T) {
	tier.System(t, "a script")
	bin := builtBinary(t)
	out := filepath.Join(t.TempDir(), "gpu-tune")
	cmd := exec.Command("bash", "../../scripts/gpu-tune.sh", "--host", "--collbench", bin, "--out", out)
	if log, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	summary, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(summary)
	if !strings.Contains(s, "PASS  tune  (") || !strings.Contains(s, "PASS  loaded  (") ||
		!regexp.MustCompile(`log: +\d+ AllReduce: 1024 Bytes -> Algo DOUBLING`).MatchString(s) {
		t.Errorf("summary:\n%s", s)
	}
	if _, err := os.Stat(out + ".tgz"); err != nil {
		t.Errorf("no archive: %v", err)
	}
}

// scripts/gpu-power.sh on the host backend (--host): the host refuses a
// power window with its one line, and a profile without power exports
// AIConfigurator's table without the power columns.
func TestGPUPowerScriptOnHost(t *testing.T) {
	tier.System(t, "a script")
	bin := builtBinary(t)
	out := filepath.Join(t.TempDir(), "gpu-power")
	log, err := exec.Command("bash", "../../scripts/gpu-power.sh", "--host", "--collbench", bin, "--out", out).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	summary, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, check := range []string{"PASS  host-refuses-window  (exit 2, one line)", "PASS  host-no-power-column  ("} {
		if !strings.Contains(string(summary), check) {
			t.Errorf("no %q in:\n%s", check, summary)
		}
	}
	if _, err := os.Stat(out + ".tgz"); err != nil {
		t.Errorf("no archive: %v", err)
	}
}
