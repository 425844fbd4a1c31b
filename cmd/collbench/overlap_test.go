package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collbench/collbench/document"
)

// collbench overlap end to end on the host backend: JSON on stdout, the
// same in -J, and Galvatron's file with the largest overlap_coe of a GEMM
// (a copy's is left out).
func TestOverlapCommand(t *testing.T) {
	dir := t.TempDir()
	jsonFile, galv := filepath.Join(dir, "overlap.json"), filepath.Join(dir, "overlap_coefficient.json")
	code, out, errOut := runCLI("overlap", "-b", "256K", "-e", "1M", "-f", "4", "-g", "2", "--gemm", "96,96,96",
		"--copy", "16M", "--target", "0.02", "--format", "json", "-J", jsonFile, "--galvatron", galv)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc document.OverlapRun
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Results) != 4 || doc.Config.NRanks != 2 || doc.Backend != "host" {
		t.Fatalf("want 2 sizes × 2 workloads on 2 host ranks: %+v", doc)
	}
	most := 0.0
	for _, r := range doc.Results {
		// A slowdown is a ratio of two phases timed apart; on a busy
		// machine the phase alone can be the slower one (0.60 was seen
		// with two compilers running), so only its sign is certain.
		if !(r.CommSlowdown > 0) || !(r.ComputeSlowdown > 0) || math.IsInf(r.CommSlowdown+r.ComputeSlowdown, 0) ||
			r.OverlapCoe < 1 || r.CommAlone <= 0 || r.ComputeAlone <= 0 {
			t.Errorf("implausible: %+v", r)
		}
		if r.Kind == "gemm" {
			most = max(most, r.OverlapCoe)
		}
	}
	saved, err := os.ReadFile(jsonFile)
	if err != nil || strings.TrimSpace(string(saved)) != strings.TrimSpace(out) {
		t.Errorf("-J file differs from stdout (%v)", err)
	}
	var g map[string]float64
	b, err := os.ReadFile(galv)
	if err != nil || json.Unmarshal(b, &g) != nil || g["overlap_coe"] != most || len(g) != 1 {
		t.Errorf("galvatron file %s (%v), want overlap_coe %v", b, err, most)
	}
}

// Across processes through collbench launch, as a table.
func TestOverlapLaunched(t *testing.T) {
	selfEnv(t)
	code, out, errOut := runCLI("launch", "-n", "2", "overlap", "-b", "512K", "-e", "512K", "--gemm", "64,64,64", "--target", "0.02")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			rows++
		}
	}
	if rows != 1 || !strings.Contains(out, "in 2 process(es)") || !strings.Contains(out, "# Galvatron overlap_coe") {
		t.Errorf("want one row from a 2-process job:\n%s", out)
	}
}

func TestOverlapBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--gemm", "1,2"}, "want m,n,k"},
		{[]string{"--gemm", "0,2,2"}, "not a dimension"},
		{[]string{"--copy", "0"}, "positive size"},
		{[]string{"--preset", "megatron"}, "unknown --preset"},
		{[]string{"--preset", "galvatron", "--gemm", "8,8,8"}, "fixes --gemm"},
		{[]string{"--cover", "0.5"}, "--cover must be at least 1"},
		{[]string{"--target", "0"}, "--target must be"},
		{[]string{"--format", "csv"}, "unknown --format"},
		{[]string{"-d", "int8"}, "GEMMs run in"},
		{[]string{"--coll", "allshuffle"}, "allshuffle"},
		{[]string{"-b", "1M", "-e", "1K"}, "larger than maximum"},
		{[]string{"--comm-priority", "urgent"}, "unknown --comm-priority"},
		{[]string{"--comm-priority", "high", "--backend", "host", "-b", "1M", "-e", "1M"}, "nccl backend only"},
		{[]string{"--nccl-min-ctas", "8", "--nccl-max-ctas", "4"}, "above --nccl-max-ctas"},
		{[]string{"--copy", "1G", "--galvatron", "g.json"}, "--galvatron needs a --gemm"},
		{[]string{"-g", "3", "--group-size", "2"}, "does not divide"},
		{[]string{"stray"}, "unexpected argument"},
	} {
		code, out, errOut := runCLI(append([]string{"overlap"}, c.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one usage line with %q", c.args, code, out, errOut, c.want)
		}
	}
	// A GEMM type the host cannot run is a runtime refusal, one line.
	code, _, errOut := runCLI("overlap", "-d", "half", "-b", "1M", "-e", "1M", "--backend", "host")
	if code != exitFailure || !strings.Contains(errOut, "float32") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("-d half on host: exit %d, %q", code, errOut)
	}
}

// The preset fixes Galvatron's probe.
func TestOverlapPreset(t *testing.T) {
	f := newOverlapFlags()
	if err := parseMeasuring(f, []string{"--preset", "galvatron"}); err != nil {
		t.Fatal(err)
	}
	p, err := f.Spec(nil)
	if err != nil {
		t.Fatal(err)
	}
	workloads, err := p.Workloads(true)
	if err != nil {
		t.Fatal(err)
	}
	w := workloads[0]
	sizes := p.Sweep.Sizes()
	if len(sizes) != 1 || sizes[0] != 64<<20 || p.Coll.Name != "allreduce" || p.CommType.String() != "float" ||
		len(workloads) != 1 || w.M != 1024 || w.N != 4096 || w.K != 4096 || w.Type.String() != "float" ||
		f.Cover != 4 || f.Target != 1 {
		t.Errorf("preset resolved to %+v, cover %v, target %v", p, f.Cover, f.Target)
	}
}
