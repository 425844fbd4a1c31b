package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/fileio"
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

	// The slowdown is put into the samples of the real run: a 20 % shift
	// of the host's own per-iteration times can drown in its noise on a
	// busy machine, so both files get the same quiet wobble around each
	// size's median, and the slow one 1.2 times it.
	doc, err := loadRun(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	quiet := func(scale float64) string {
		for i := range doc.Results {
			r := &doc.Results[i]
			for _, it := range []*document.Stats{&r.OOPIter, &r.IPIter} {
				for j := range it.Times {
					it.Times[j] = it.P50 * scale * (1 + 0.01*math.Sin(float64(j)*1.7))
				}
			}
		}
		path := filepath.Join(dir, fmt.Sprintf("x%g.json", scale))
		if err := fileio.Write(context.Background(), path, doc.Encode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	base = quiet(1)
	slow := quiet(1.2)
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
	for _, args := range [][]string{{"compare", base}, {"compare", base, filepath.Join(dir, "none.json")}, {"compare", base, base, "--alpha", "2"},
		{"compare", base, base, "--min-busbw", "-1"}} {
		if code, _, errOut := runCLI(args...); code != exitUsage || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
}
