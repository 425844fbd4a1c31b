package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collbench/collbench/report"
)

// collbench compare on real runs: a run against itself is all "~"; the
// same run slowed by 20 % is a regression (exit 1); a bandwidth floor
// above the run fails it.
func TestCompareCommand(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.json")
	if code, _, errOut := runCLI("allreduce", "-g", "2", "-b", "64K", "-e", "256K", "-f", "4", "-n", "30", "-J", base); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, out, errOut := runCLI("compare", base, base)
	if code != 0 || strings.Count(out, "  ~\n") != 4 || !strings.Contains(out, "0 regression(s)") {
		t.Errorf("self-compare: exit %d\n%s%s", code, out, errOut)
	}

	f, err := os.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := report.DecodeRun(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for i := range doc.Results {
		r := &doc.Results[i]
		for _, it := range []*[]float64{&r.OOPIter.Times, &r.IPIter.Times} {
			for j := range *it {
				(*it)[j] *= 1.2
			}
		}
	}
	slow := filepath.Join(dir, "slow.json")
	if err := report.WriteFileAtomic(slow, doc.Encode); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI("compare", base, slow)
	if code != exitFailure || strings.Count(out, "REGRESSION") != 4 {
		t.Errorf("20%% slower: exit %d\n%s", code, out)
	}
	if code, out, _ := runCLI("compare", base, base, "--min-busbw", "1e6"); code != exitFailure || !strings.Contains(out, "below the floor") {
		t.Errorf("floor: exit %d\n%s", code, out)
	}
	t.Setenv("NCCL_TESTS_MIN_BW", "1e6")
	if code, _, _ := runCLI("compare", base, base); code != exitFailure {
		t.Errorf("NCCL_TESTS_MIN_BW ignored: exit %d", code)
	}
	for _, args := range [][]string{{"compare", base}, {"compare", base, filepath.Join(dir, "none.json")}, {"compare", base, base, "--alpha", "2"}} {
		if code, _, errOut := runCLI(args...); code != exitUsage || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
}
