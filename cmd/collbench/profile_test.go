package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/schemacheck"
	"github.com/collbench/collbench/internal/tier"
)

// collbench profile across 4 processes: a profile that matches its
// schema, every curve fitted, the exports written; then export and
// predict read it back.
func TestProfileLaunched(t *testing.T) {
	tier.System(t, "a profile of 21 curves over 4 launched processes")
	selfEnv(t)
	dir := t.TempDir()
	file, exports := filepath.Join(dir, "profile.json"), filepath.Join(dir, "exports")
	// Sizes 16× apart, 256× from first to last: on a loaded machine a
	// median of the smallest can take longer than one of a size 8× larger
	// (scheduling, not the network; seen beside a race-detector run), but
	// the fit over a span of 256× still finds every export's bandwidth
	// term.
	code, out, errOut := runCLI("launch", "-n", "4", "profile", "-b", "64K", "-e", "16M", "-f", "16", "-d", "float", "-n", "3", "-w", "1",
		"-c", "1", "--overlap-gemm", "64,64,64", "--overlap-bytes", "64K", "--overlap-target", "0.02", "-o", file, "--export", "calculon,astra-sim,simai", "--export-dir", exports)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "allreduce      4  consecutive") || !strings.Contains(errOut, "[21/21] ") || !strings.Contains(errOut, "pipeline over groups of 2 (strided, 2 at once)") {
		t.Errorf("no fit table or progress:\n%s\n%s", out, errOut)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemacheck.Validate("../../docs/profile.schema.json", data); err != nil {
		t.Fatalf("the profile does not match docs/profile.schema.json: %v", err)
	}
	p, err := loadProfile(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	m := p.Meta
	if m.WorldSize != 4 || m.NumNodes != 1 || m.RanksPerNode != 4 || m.NProcs != 4 || len(m.Devices) != 4 || len(m.Hosts) != 1 {
		t.Errorf("meta: %+v", m)
	}
	if len(p.Curves) != 21 || len(p.Overlap) != 1 || len(p.Errors) != 0 {
		t.Fatalf("%d curves, %d overlap probes, errors %v", len(p.Curves), len(p.Overlap), p.Errors)
	}
	for _, c := range p.Curves {
		if len(c.Samples) != 3 || c.Fit == nil || c.Fit.Points != 3 {
			t.Errorf("%s: %d samples, fit %+v", c.Key(), len(c.Samples), c.Fit)
		}
		for _, s := range c.Samples {
			if s.Iters != 3 || s.Stats.N != 3 || len(s.ProcessUs) != 4 || s.TimeUs <= 0 {
				t.Errorf("%s %d B: %+v", c.Key(), s.Bytes, s)
			}
		}
	}
	for _, f := range []string{"calculon_networks.json", "astra_network.yml", "astra_network.json", "busbw.yaml"} {
		if _, err := os.Stat(filepath.Join(exports, f)); err != nil {
			t.Errorf("export: %v", err)
		}
	}

	again := filepath.Join(dir, "again")
	if code, out, errOut := runCLI("export", "--to", "simai", file, "-o", again); code != 0 || !strings.Contains(out, "busbw.yaml") {
		t.Errorf("export: exit %d: %s%s", code, out, errOut)
	}
	// Galvatron wants 8 whole-MiB sizes per curve; this profile has none.
	// The other targets do not depend on it: they are written, and the
	// exit code says an export failed.
	all := filepath.Join(dir, "all")
	code, out, errOut = runCLI("export", "--to", "all", file, "-o", all)
	if code != exitExport || !strings.Contains(errOut, "galvatron export:") || !strings.Contains(errOut, "at least 8") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("all targets from a short profile: exit %d: %s", code, errOut)
	}
	for _, f := range []string{"calculon_networks.json", "astra_network.yml", "busbw.yaml"} {
		if !strings.Contains(out, f) {
			t.Errorf("%s not written beside the failed galvatron export: %s", f, out)
		}
	}
	if code, _, errOut := runCLI("export", "--to", "alpa", file, "-o", all); code != exitUsage || !strings.Contains(errOut, "dropped") {
		t.Errorf("alpa: exit %d: %s", code, errOut)
	}

	code, out, errOut = runCLI("predict", "--profile", file, "--model", "llama2-7b", "--seq", "1024", "--tp", "2")
	if code != 0 || !strings.Contains(out, "strategy dp=2 tp=2 pp=1") || !strings.Contains(out, "allreduce") || !strings.Contains(out, "memory per GPU") {
		t.Errorf("predict: exit %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI("predict", "--profile", file, "--layers", "4", "--hidden", "256", "--heads", "8", "--rank-strategies", "--format", "json")
	var ranked struct {
		Ranked  []json.RawMessage
		Skipped map[string]string
	}
	if code != 0 || json.Unmarshal([]byte(out), &ranked) != nil || len(ranked.Ranked)+len(ranked.Skipped) != 6 {
		t.Errorf("rank-strategies: exit %d: %s%s", code, out, errOut)
	}
}

// Galvatron's four files from a one-process profile of two ranks, 1 MiB
// to 128 MiB (the 8 sizes its loader asks for), of the collectives they
// are made from.
func TestProfileGalvatron(t *testing.T) {
	tier.System(t, "moves 128 MiB messages")
	dir := t.TempDir()
	code, _, errOut := runCLI("profile", "-g", "2", "-b", "1M", "-e", "128M", "-d", "double", "-n", "1", "--min-iters", "1", "-w", "0",
		"--colls", "allreduce,allgather,reducescatter,alltoall,sendrecv", "--overlap-gemm", "64,64,64", "--overlap-bytes", "64K", "--overlap-target", "0.02", "-q", "-o", filepath.Join(dir, "p.json"),
		"--export", "galvatron", "--export-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var ar map[string]float64
	b, err := os.ReadFile(filepath.Join(dir, "allreduce_bandwidth_1nodes_2gpus_per_node.json"))
	if err != nil || json.Unmarshal(b, &ar) != nil || len(ar) != 1 || ar["allreduce_size_2_consec_1"] <= 0 {
		t.Fatalf("allreduce file: %s %v", b, err)
	}
	for _, f := range []string{"p2p_bandwidth_1nodes_2gpus_per_node.json", "sp_time_1nodes_2gpus_per_node.json", "overlap_coefficient.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestProfileUsageErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema":"collbench.profile","version":1,"meta":{`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"profile", "-g", "2", "--group-size", "2"}, "use --group-sizes"},
		{[]string{"profile", "-g", "2", "--colls", "allreduce,shout"}, "shout"},
		{[]string{"profile", "-g", "2", "-f", "1"}, "-f must be at least 2"},
		{[]string{"profile", "-g", "4", "--group-sizes", "3"}, "that divides the 4 ranks"},
		{[]string{"profile", "-g", "2", "--layouts", "diagonal"}, "unknown layout"},
		{[]string{"profile", "-g", "2", "--export", "megatron"}, "unknown export target"},
		{[]string{"profile", "-g", "2", "--galvatron-bw", "point:x"}, "--galvatron-bw"},
		{[]string{"profile", "-g", "2", "--export", "simai", "--simai-bw", "point:0"}, "--simai-bw: bandwidth reference \"point:0\": want point:SIZE with a positive size"},
		{[]string{"export", "--to", "simai", "--simai-bw", "median", bad}, "--simai-bw: unknown bandwidth reference \"median\""},
		{[]string{"profile", "-g", "1", "-b", "1K", "-e", "1K"}, "at least 2 ranks"},
		{[]string{"profile", "-g", "2", "-b", "1K", "-e", "1K", "--budget", "1s"}, "--budget 1s cannot hold the overlap probe"},
		// Refused before the buffers are sized, let alone allocated: 64 GiB
		// would not fit, and that was what the refusal used to say.
		{[]string{"profile", "-g", "2", "-e", "64G", "--budget", "1s"}, "--budget 1s cannot hold the overlap probe"},
		{[]string{"profile", "-g", "2", "-b", "1K", "-e", "1K", "--colls", "allreduce", "--no-overlap", "--export", "calculon"},
			"the calculon export reads the overlap probe, which this profile leaves out"},
		{[]string{"profile", "-g", "2", "-b", "1M", "-e", "128M", "--colls", "allreduce,allgather,reducescatter,sendrecv", "--export", "galvatron"},
			"the galvatron export reads alltoall over groups of 2 (consecutive), which this profile does not measure"},
		{[]string{"profile", "-g", "2", "-b", "1M", "-e", "64M", "--colls", "allreduce,alltoall,sendrecv", "--export", "galvatron"},
			"the galvatron export reads 8 whole-MiB sizes of allreduce over groups of 2 (consecutive), and the sizes asked for hold fewer"},
		{[]string{"profile", "-g", "2", "-b", "1M", "-e", "128M", "-d", "float", "--colls", "allreduce", "--no-overlap", "--budget", "500ms", "--export", "astra-sim"},
			"a time budget of 500ms cannot hold the 1 curve(s) the profile promises (at least 8 sizes each), of which the 1 over the whole job alone need at least about"},
		{[]string{"profile", "-g", "2", "-b", "1M", "-e", "128M", "-d", "float", "--colls", "allreduce,allgather", "--no-overlap", "--budget", "500ms", "--export", "astra-sim", "--partial"},
			"a time budget of 500ms cannot hold what the astra-sim export(s) read: 1 curve(s), of which the 1 over the whole job alone need at least about"},
		// The curves' estimate runs on communicators sized for its one
		// all-reduce (128 MiB), before the session's 64 GiB are sized, let
		// alone allocated.
		{[]string{"profile", "-g", "2", "-e", "64G", "-d", "float", "--no-overlap", "--budget", "1s"},
			"a time budget of 1s cannot hold the 7 curve(s) the profile promises (at least 8 sizes each), of which the 7 over the whole job alone need at least about"},
		{[]string{"export", "--to", "galvatron"}, "want one profile file"},
		{[]string{"export", "--to", "galvatron", bad}, "ends early"},
		{[]string{"export", "--to", "hetu", bad}, "unknown export target"},
		{[]string{"export", "--to", "simai", "--simai-ep", "-3", bad}, "SimAI EP group size cannot be negative"},
		{[]string{"profile", "-g", "2", "--export", "simai", "--simai-tp", "-1"}, "SimAI TP group size cannot be negative"},
		{[]string{"profile", "-g", "2", "--export", "simai", "--simai-tp", "99999999999"}, "a SimAI TP group size of 99999999999 is more ranks than any job has"},
		{[]string{"profile", "-g", "2", "--export", "simai", "--simai-name", "x\nNVLS: 1"}, `--simai-name "x\nNVLS: 1" holds a control character`},
		{[]string{"predict", "--model", "gpt2-1.5b"}, "--profile is required"},
		{[]string{"predict", "--profile", bad, "--model", "gpt2-1.5b"}, "ends early"},
		{[]string{"predict", "--profile", "/nonexistent/p.json", "--model", "gpt2-1.5b"}, "no such file"},
		{[]string{"predict", "--profile", bad, "--model", "gpt5"}, "unknown --model"},
		{[]string{"predict", "--profile", bad}, "--layers and --hidden"},
	}
	for _, c := range cases {
		code, _, errOut := runCLI(c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line with %q", c.args, code, errOut, c.want)
		}
	}
}

// A strategy that needs a group size the profile did not measure is
// refused, naming the curve.
func TestPredictMissingCurve(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.json")
	code, _, errOut := runCLI("profile", "-g", "4", "--group-sizes", "4", "-b", "64K", "-e", "128K", "-d", "float", "-n", "2", "--min-iters", "1", "-w", "0",
		"--colls", "allreduce", "--no-overlap", "-q", "-o", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, _, errOut = runCLI("predict", "--profile", file, "--layers", "2", "--hidden", "64", "--tp", "2")
	if code != exitUsage || !strings.Contains(errOut, "the profile has no allreduce curve over 2 ranks") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	var doc document.Profile
	b, _ := os.ReadFile(file)
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Overlap) != 0 {
		t.Errorf("--no-overlap profile: %v %d probes", err, len(doc.Overlap))
	}
}

func TestProfilePlan(t *testing.T) {
	cases := []struct {
		world     int
		args      []string
		sizes     string
		groupings int
	}{
		{8, nil, "[8 4 2]", 5}, // the strided world is the consecutive one
		{6, nil, "[6 2]", 3},
		{2, nil, "[2]", 1},
		{8, []string{"--group-sizes", "2,8"}, "[8 2]", 3},
		{8, []string{"--layouts", "strided"}, "[8 4 2]", 3},
	}
	for _, c := range cases {
		f := newProfileFlags()
		if err := parseMeasuring(f, c.args); err != nil {
			t.Fatal(err)
		}
		spec, err := f.Spec(nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := spec.Plan(c.world, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(p.GroupSizes); got != c.sizes || len(p.Groupings) != c.groupings || len(p.Sizes) != 11 || len(spec.Colls) != 7 {
			t.Errorf("world %d %v: sizes %s, %d groupings, %d message sizes, %d collectives", c.world, c.args, got, len(p.Groupings), len(p.Sizes), len(spec.Colls))
		}
	}
}

// Wrong results from a checked profile exit as a checked sweep's do (7);
// a timeout stays 4.
func TestProfileExitCodes(t *testing.T) {
	wrong := fmt.Errorf("allreduce over groups of 2 (consecutive): %w", fmt.Errorf("%w: 3 wrong elements at 1M", bench.ErrWrongResults))
	if got := exitCode(wrong); got != exitWrong {
		t.Errorf("wrong results: exit %d, want %d", got, exitWrong)
	}
	if got := exitCode(&bench.TimeoutError{Coll: "allreduce"}); got != exitTimeout {
		t.Errorf("timeout: exit %d", got)
	}
}

// An export that cannot be made does not cost the measured profile or the
// other exports: both are on disk, the failure is one line, exit 3. (SimAI
// cannot take a TP group of 3 out of 2 ranks.) The sizes span 512×, so
// that even on a loaded machine the largest takes longer than the
// smallest and ASTRA-sim's export has its bandwidth.
func TestProfileExportFailureKeepsTheRest(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.json")
	code, _, errOut := runCLI("profile", "-g", "2", "-b", "16K", "-e", "8M", "-f", "8", "-n", "3", "-w", "0", "--colls", "allreduce", "--no-overlap", "-q",
		"-o", file, "--export", "simai,astra-sim", "--simai-tp", "3", "--export-dir", dir)
	if code != exitExport || strings.Count(errOut, "simai export:") != 1 {
		t.Fatalf("exit %d, want %d: %s", code, exitExport, errOut)
	}
	for _, f := range []string{file, filepath.Join(dir, "astra_network.yml")} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
}

// A profile written to stdout still writes the exports asked for.
func TestProfileToStdoutWritesExports(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI("profile", "-g", "2", "-b", "16K", "-e", "8M", "-f", "8", "-n", "3", "-w", "0", "--colls", "allreduce", "--no-overlap", "-q",
		"--export", "astra-sim", "--export-dir", dir)
	if code != 0 || !strings.HasPrefix(out, "{") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "astra_network.yml")); err != nil {
		t.Errorf("the export was not written: %v\n%s", err, errOut)
	}
}

// A profile its budget left curves out of is written, says how much it
// lacks in one line and exits 4, unless --partial accepts it (exit 0).
// Its curves are over pairs of a 4-rank job: the budget's estimate times
// only curves of the whole job, so none refuses this budget up front.
func TestProfilePartial(t *testing.T) {
	dir := t.TempDir()
	args := []string{"profile", "--backend", "host", "-g", "4", "--group-sizes", "2", "--layouts", "consecutive", "-b", "1K", "-e", "4K",
		"--colls", "allreduce,allgather", "--no-overlap", "--budget", "1ms"}
	for _, c := range []struct {
		extra []string
		code  int
		line  string
	}{
		{nil, exitTimeout, "collbench profile: 2 of 2 curve(s) and 0 overlap probe(s) left out (the profile's notes say why), and the profile written without them; raise --budget, or pass --partial to accept a partial profile\n"},
		{[]string{"--partial"}, exitOK, ""},
	} {
		out := filepath.Join(dir, fmt.Sprintf("p%d.json", c.code))
		code, _, errOut := runCLI(append(append(slices.Clone(args), c.extra...), "-q", "-o", out)...)
		if code != c.code || errOut != c.line {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.extra, code, errOut, c.code, c.line)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("%v: the profile was not written: %v", c.extra, err)
		}
		d, err := document.DecodeProfile(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if curves, _ := d.LeftOut(); len(curves) != 2 {
			t.Errorf("%v: the profile lists %d curve(s) left out, want 2: %v", c.extra, len(curves), curves)
		}
	}
}
