package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// predict --charges prints, for every call of the plan, each exported
// planner's charge ÷ the measured time, flags the ones beyond 2 %, says
// why a planner cannot time a call, and gives the same in JSON.
func TestPredictCharges(t *testing.T) {
	const profile = "../../docs/measured/host-2026-11-26/profile-4ranks.json"
	dir := t.TempDir()
	if code, _, errOut := runCLI("export", "--to", "aiconfigurator,calculon,galvatron", profile, "-o", dir); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	plan := []string{"predict", "--profile", profile, "--model", "llama2-7b", "--tp", "2", "--pp", "2", "--sp", "--charges", dir}
	code, out, errOut := runCLI(plan...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"# what each planner charges per call ÷ what was measured (* beyond 2 %, - not timed)",
		"aiconfigurator  calculon  galvatron",
		"# step: each planner's charge for a step's calls ÷ what was measured for them, over the calls it times",
		"# - aiconfigurator: AIConfigurator's NCCL table has no sendrecv",
		" charge(s) beyond 2 %",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	code, out, errOut = runCLI(append(plan, "--format", "json")...)
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errOut)
	}
	var doc struct {
		Traffic []any `json:"traffic"`
		Charges []struct {
			Collective string  `json:"collective"`
			Us         float64 `json:"collbench_us"`
			Charges    []struct {
				Planner string  `json:"planner"`
				Ratio   float64 `json:"ratio"`
				Cannot  string  `json:"cannot"`
			} `json:"charges"`
		} `json:"planner_charges"`
		Steps []struct {
			Planner string  `json:"planner"`
			Ratio   float64 `json:"ratio"`
			Timed   int     `json:"kinds_timed"`
		} `json:"planner_steps"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Charges) != len(doc.Traffic) || len(doc.Charges) == 0 || len(doc.Charges[0].Charges) != 3 || len(doc.Steps) != 3 {
		t.Fatalf("charges %+v for %d calls", doc.Charges, len(doc.Traffic))
	}
	for _, row := range doc.Charges {
		for _, c := range row.Charges {
			if c.Planner == "aiconfigurator" && row.Collective != "sendrecv" && (c.Ratio < 0.9999 || c.Ratio > 1.0001) {
				t.Errorf("AIConfigurator charges %s %v of the curve it was written from", row.Collective, c.Ratio)
			}
		}
	}
	// Galvatron prices the all-gathers and reduce-scatters of sequence
	// parallelism from one table, 5.8 and 0.55 of each on this profile;
	// over the step they are what was measured, the pipeline's send at
	// 32 MiB's bandwidth leaving 0.02 %.
	for _, s := range doc.Steps {
		if s.Planner == "galvatron" && (s.Timed != 3 || s.Ratio < 0.999 || s.Ratio > 1.001) {
			t.Errorf("Galvatron's step: %+v", s)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(plan, "--rank-strategies"), "--charges compares one plan's calls; drop --rank-strategies"},
		{[]string{"predict", "--profile", profile, "--model", "llama2-7b", "--charges", t.TempDir()}, "holds no planner export"},
		{[]string{"predict", "--profile", profile, "--model", "llama2-7b", "--charges", "/nonexistent"}, "--charges: /nonexistent: no such file or directory"},
		{[]string{"predict", "--profile", profile, "--model", "llama2-7b", "--charges", profile}, "is not a folder"},
	} {
		code, _, errOut := runCLI(c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d, %q; want one line with %q", c.args, code, errOut, c.want)
		}
	}
}

// predict --astra-trace writes the plan's ASTRA-sim workload beside the
// network it was sized for, and charges the plan's calls by it.
func TestPredictAstraTrace(t *testing.T) {
	const profile = "../../docs/measured/host-2026-11-26/profile-4ranks.json"
	dir := t.TempDir()
	plan := []string{"predict", "--profile", profile, "--model", "llama2-7b", "--tp", "2", "--pp", "2", "--sp", "--astra-trace", dir}
	code, out, errOut := runCLI(plan...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"astra-sim", "TP      allgather      2  consecutive    16777216      9079.316     1.0000", "# 0 charge(s) beyond 2 %"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	for _, f := range []string{"workload.0.et", "workload.3.et", "comm_groups.json", "astra_trace.json", "astra_network.yml", "astra_system.json", "astra_remote_memory.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	// Another plan's calls are not the trace's.
	code, out, errOut = runCLI("predict", "--profile", profile, "--model", "llama2-7b", "--tp", "4", "--charges", dir)
	if code != 0 || !strings.Contains(out, "astra-sim: the ASTRA-sim workload here was written for another plan") {
		t.Errorf("another plan: exit %d: %s%s", code, out, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(plan, "--rank-strategies"), "--astra-trace writes one plan's step; drop --rank-strategies"},
		{append(plan, "--charges", t.TempDir()), "--astra-trace charges the plan from its own folder"},
		{[]string{"predict", "--profile", profile, "--model", "llama2-7b", "--astra-trace", filepath.Join(profile, "x")}, "--astra-trace: "},
	} {
		code, _, errOut := runCLI(c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d, %q; want one line with %q", c.args, code, errOut, c.want)
		}
	}
}

// Where Galvatron's latency-free bandwidths are off on a plan's
// data-parallel call, predict --charges names the size to export them
// at; exported so, Galvatron charges that call what was measured.
func TestPredictGalvatronPoint(t *testing.T) {
	followPointAdvice(t, "galvatron", []string{"--to", "galvatron"}, "--galvatron-bw", "galvatron")
}

// followPointAdvice exports the kept H100 profile for a planner (export
// flags exportArgs), asks predict --charges about gpt2-1.5b with 1 MiB
// buckets, takes the size the advice line "# name: … flag point:N to
// charge this plan's DP allreduce at its measured time" names, exports
// again with flag at it, and holds planner's charge for the bucket to
// its measured time.
func followPointAdvice(t *testing.T, name string, exportArgs []string, flag, planner string) {
	t.Helper()
	const profile = "../../docs/measured/h100-2026-11-26/profile-g2-float.json"
	plan := []string{"predict", "--profile", profile, "--model", "gpt2-1.5b", "--bucket", "1M"}
	first := t.TempDir()
	if code, _, errOut := runCLI(append(append([]string{"export"}, exportArgs...), profile, "-o", first)...); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	code, out, errOut := runCLI(append(plan, "--charges", first)...)
	m := regexp.MustCompile(`# ` + name + `: .* ` + flag + ` (point:\d+) to charge this plan's DP allreduce at its measured time`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("exit %d, no advice:\n%s%s", code, out, errOut)
	}
	advised := t.TempDir()
	if code, _, errOut := runCLI(append(append([]string{"export"}, exportArgs...), flag, m[1], profile, "-o", advised)...); code != 0 {
		t.Fatalf("export %s: exit %d: %s", m[1], code, errOut)
	}
	code, out, errOut = runCLI(append(plan, "--charges", advised, "--format", "json")...)
	var doc struct {
		Charges []struct {
			Charges []struct {
				Planner string  `json:"planner"`
				Ratio   float64 `json:"ratio"`
			} `json:"charges"`
		} `json:"planner_charges"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Charges) != 1 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	found := false
	for _, c := range doc.Charges[0].Charges {
		if c.Planner != planner {
			continue
		}
		found = true
		// 10⁻⁴: SimAI 1.1 truncates its times to whole ns, 1 in 36000.
		if c.Ratio < 0.9999 || c.Ratio > 1.0001 {
			t.Errorf("%s at %s charges the DP all-reduce %v of its time", planner, m[1], c.Ratio)
		}
	}
	if !found {
		t.Errorf("no %s charge in %s", planner, out)
	}
}

// A folder of --to simai's files gets both SimAI columns, and SimAI 1.1's
// is charged with the plan's GPUs (it tells a one-server job by them):
// the TP all-gather of sequence parallelism at the gather pair's value,
// SimAI 1.1's own binary's 50925.292 µs on this export.
func TestPredictChargesSimAI11(t *testing.T) {
	const profile = "../../docs/measured/host-2026-11-26/profile-4ranks.json"
	dir := t.TempDir()
	if code, _, errOut := runCLI("export", "--to", "simai", "--simai-tp", "2", "--simai-dp", "1", "--simai-pp", "2", profile, "-o", dir); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	code, out, errOut := runCLI("predict", "--profile", profile, "--model", "llama2-7b", "--tp", "2", "--pp", "2", "--sp", "--charges", dir, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Charges []struct {
			Dim        string `json:"dim"`
			Collective string `json:"collective"`
			Charges    []struct {
				Planner string  `json:"planner"`
				Us      float64 `json:"charge_us"`
				Cannot  string  `json:"cannot"`
			} `json:"charges"`
		} `json:"planner_charges"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, row := range doc.Charges {
		for _, c := range row.Charges {
			seen[c.Planner] = true
			if c.Planner == "simai-1.1" && row.Dim == "TP" && row.Collective == "allgather" && (c.Cannot != "" || c.Us < 50925.290 || c.Us > 50925.294) {
				t.Errorf("SimAI 1.1's TP all-gather: %+v", c)
			}
		}
	}
	if !seen["simai"] || !seen["simai-1.1"] {
		t.Errorf("planners %v, want simai and simai-1.1", seen)
	}
}

// SimAI's bandwidths hold no latency either: predict names the size to
// export them at, and SimAI 1.1 then charges that call its measured time.
// On the kept H100 profile, gpt2-1.5b's 1 MiB buckets are charged 0.10 of
// their time from the line's bandwidth.
func TestPredictSimAIPoint(t *testing.T) {
	followPointAdvice(t, "simai", []string{"--to", "simai", "--simai-tp", "1"}, "--simai-bw", "simai-1.1")
}

// A profile that an export would write over is refused before any target
// is written, as a usage error (exit 2), not a failed export (exit 3),
// and the profile is kept.
func TestExportOverItsInputRefused(t *testing.T) {
	const profile = "../../docs/measured/host-2026-11-26/profile-4ranks.json"
	data, err := os.ReadFile(profile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "calculon_networks.json")
	os.WriteFile(in, data, 0o644)
	code, out, errOut := runCLI("export", "--to", "galvatron,calculon", in, "-o", dir)
	if code != exitUsage || out != "" || !strings.Contains(errOut, "is a file the calculon export writes") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line", code, out, errOut)
	}
	if after, _ := os.ReadFile(in); !bytes.Equal(after, data) {
		t.Error("the profile was replaced")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "sp_time_*")); len(m) > 0 {
		t.Errorf("another target was written before the refusal: %v", m)
	}
}

// predict --charges holds each planner's export to the profile it is
// given: exports the folder records as made from another profile are
// refused (exit 2) naming them; the same profile reformatted is the same
// profile; a folder without the record is charged with a line saying so.
func TestPredictChargesFromAnotherProfile(t *testing.T) {
	const profile = "../../docs/measured/host-2026-11-26/profile-4ranks.json"
	dir := t.TempDir()
	if code, _, errOut := runCLI("export", "--to", "aiconfigurator,calculon", profile, "-o", dir); code != 0 {
		t.Fatalf("export: exit %d, %s", code, errOut)
	}
	data, err := os.ReadFile(profile)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.Unmarshal(data, &doc)
	reformatted := filepath.Join(t.TempDir(), "same.json")
	compact, _ := json.Marshal(doc)
	os.WriteFile(reformatted, compact, 0o644)
	doc["meta"].(map[string]any)["env"] = map[string]any{"NCCL_ALGO": "Ring"}
	other := filepath.Join(t.TempDir(), "other.json")
	edited, _ := json.Marshal(doc)
	os.WriteFile(other, edited, 0o644)
	plan := func(p string) []string {
		return []string{"predict", "--profile", p, "--model", "llama2-7b", "--dp", "4", "--charges", dir}
	}
	code, out, errOut := runCLI(plan(other)...)
	if code != exitUsage || out != "" || !strings.Contains(errOut, "holds exports made from another profile than this one") ||
		!strings.Contains(errOut, "aiconfigurator (sha256:") || !strings.Contains(errOut, "calculon (sha256:") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("another profile: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runCLI(plan(reformatted)...); code != exitOK || errOut != "" {
		t.Errorf("the same profile reformatted: exit %d, stderr %q", code, errOut)
	}
	os.Remove(filepath.Join(dir, "collbench_exports.json"))
	code, _, errOut = runCLI(plan(other)...)
	if code != exitOK || !strings.Contains(errOut, "keeps no record of the profile its aiconfigurator, calculon export(s) came from") {
		t.Errorf("no record: exit %d, stderr %q", code, errOut)
	}
}
