package tuner

import (
	"bufio"
	"debug/elf"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// PluginVar names a built NCCL example tuner plugin
// (libnccl-tuner-example.so); scripts/tuner-plugin.sh builds one from an
// NCCL source tree, and .ci/run from Debian's source of NCCL.
const PluginVar = "COLLBENCH_TUNER_PLUGIN"

// The transcription held to the plugin's compiled code: every file of
// parseCases and 60 files of random lines (names known and not, numbers C
// reads oddly, empty fields, blanks, long lines, carriage returns), each
// loaded by the plugin for two communicators and asked about every
// collective at sizes on and around the rows' edges, with and without
// pipelined operations, registered buffers and pairs NCCL marks
// unusable: the plugin's answers (the pair made cheapest, the channels)
// and the number of rows it says it loaded equal Apply's and Parse's.
func TestAgainstThePlugin(t *testing.T) {
	plugin := os.Getenv(PluginVar)
	if plugin == "" {
		t.Skipf("%s is not set (scripts/tuner-plugin.sh builds the plugin; .ci/run sets it)", PluginVar)
	}
	harness, mode := buildHarness(t, plugin)
	files := map[string]string{}
	for _, c := range parseCases {
		files[c.name] = c.file
	}
	r := rand.New(rand.NewPCG(48, 48))
	for i := 0; i < 60; i++ {
		files[fmt.Sprintf("random %d", i)] = randomFile(r)
	}
	queries := queryGrid()
	for name, file := range files {
		path := filepath.Join(t.TempDir(), "tuner.conf")
		if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
		rows := Parse([]byte(file))
		for _, comm := range [][2]int{{8, 1}, {32, 4}} {
			got, loaded := runHarness(t, harness, mode, path, comm, queries)
			if loaded != len(rows) {
				t.Errorf("%s: the plugin loaded %d rows, Parse %d\n%q", name, loaded, len(rows), file)
			}
			for i, q := range queries {
				q.Ranks, q.Nodes = comm[0], comm[1]
				want := Apply(rows, q)
				w := fmt.Sprintf("%s %s %d", orDash(want.Algorithm), orDash(want.Protocol), want.Channels)
				if got[i] != w {
					t.Errorf("%s, %d ranks on %d nodes, %+v: the plugin says %q, Apply %q", name, comm[0], comm[1], q, got[i], w)
					break
				}
			}
		}
	}
}

// buildHarness compiles testdata/harness.c, and says how to pass NCCL's
// cost table to the plugin: as NCCL does where the plugin reads it so
// (it exports ncclTunerPlugin_v6: NCCL 2.30's source on), else as the
// plugin's own unit test does (NCCL 2.29's example plugin indexes the
// table as an array of pointers, and crashes when NCCL calls it:
// TestPluginBefore230CrashesUnderNCCL).
func buildHarness(t *testing.T, plugin string) (string, string) {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to build the harness")
	}
	bin := filepath.Join(t.TempDir(), "harness")
	if out, err := exec.Command(gcc, "-O1", "-Wall", "-Werror", "-o", bin, "testdata/harness.c", "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("building the harness: %v\n%s", err, out)
	}
	if exportsV6(t, plugin) {
		return bin, "nccl"
	}
	t.Logf("%s has no ncclTunerPlugin_v6 (NCCL before 2.30): its rows are read through pointer rows, as its own unit test reads them", plugin)
	return bin, "rows"
}

func exportsV6(t *testing.T, plugin string) bool {
	t.Helper()
	f, err := elf.Open(plugin)
	if err != nil {
		t.Fatalf("%s: %v", plugin, err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatalf("%s: %v", plugin, err)
	}
	return slices.ContainsFunc(syms, func(s elf.Symbol) bool { return s.Name == "ncclTunerPlugin_v6" })
}

var loadedRE = regexp.MustCompile(`Loaded (\d+) tuning configurations`)

// runHarness asks the plugin loaded with the file at path about every
// query, for a communicator of comm[0] ranks on comm[1] nodes; it returns
// the answers and the rows the plugin says it loaded.
func runHarness(t *testing.T, harness, mode, path string, comm [2]int, queries []Query) ([]string, int) {
	t.Helper()
	var in strings.Builder
	for _, q := range queries {
		fmt.Fprintf(&in, "%d %d %d %d %s\n", slices.Index(Plugin.Collectives, q.Collective), q.Bytes, q.PipeOps, q.RegBuff, ignoredPairs(q))
	}
	cmd := exec.Command(harness, os.Getenv(PluginVar), mode, strconv.Itoa(comm[0]), strconv.Itoa(comm[1]))
	cmd.Env = append(os.Environ(), "NCCL_TUNER_CONFIG_FILE="+path)
	cmd.Stdin = strings.NewReader(in.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the harness: %v\n%s", err, stderr.String())
	}
	var answers []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		answers = append(answers, sc.Text())
	}
	if len(answers) != len(queries) {
		t.Fatalf("%d answers to %d queries\n%s", len(answers), len(queries), stderr.String())
	}
	loaded := 0
	if m := loadedRE.FindStringSubmatch(stderr.String()); m != nil {
		loaded, _ = strconv.Atoi(m[1])
	}
	return answers, loaded
}

// The unusable pairs the queries mark, by index into Plugin's lists.
var ignoreSets = []string{"-", "0/2", "1/1,1/2,0/2"}

func ignoredPairs(q Query) string {
	if q.Ignored == nil {
		return "-"
	}
	var pairs []string
	for a, algo := range Plugin.Algorithms {
		for p, proto := range Plugin.Protocols {
			if q.Ignored(algo, proto) {
				pairs = append(pairs, fmt.Sprintf("%d/%d", a, p))
			}
		}
	}
	return strings.Join(pairs, ",")
}

// queryGrid is every collective at sizes on and around the edges the
// files use, with one and four operations to a group, registered buffers
// or not, and three sets of unusable pairs.
func queryGrid() []Query {
	sizes := []uint64{0, 1, 2, 10, 1023, 1024, 1025, 2048, 32768, 65536, 65537, 1 << 20, 4294967295, 4294967296, 1 << 63, 18446744073709551615}
	var qs []Query
	for _, coll := range Plugin.Collectives {
		for _, b := range sizes {
			for _, pipe := range []int{1, 4} {
				for _, reg := range []int{0, 1} {
					for _, ig := range ignoreSets {
						q := Query{Collective: coll, Bytes: b, PipeOps: pipe, RegBuff: reg}
						if ig != "-" {
							set := ig
							q.Ignored = func(a, p string) bool {
								pair := fmt.Sprintf("%d/%d", slices.Index(Plugin.Algorithms, a), slices.Index(Plugin.Protocols, p))
								return slices.Contains(strings.Split(set, ","), pair)
							}
						}
						qs = append(qs, q)
					}
				}
			}
		}
	}
	return qs
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// randomFile is twenty lines of what a tuner file may hold, written well
// or not.
func randomFile(r *rand.Rand) string {
	pick := func(words ...string) string { return words[r.IntN(len(words))] }
	var b strings.Builder
	for i := 0; i < 20; i++ {
		switch r.IntN(10) {
		case 0:
			b.WriteString(pick("# a comment", "", "   ", "#"+strings.Repeat("x", 300)) + "\n")
			continue
		case 1:
			b.WriteString(strings.Repeat(" ", 200+r.IntN(80)))
		}
		fields := []string{
			pick("allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "AllReduce", ""),
			pick("0", "1", "1024", "1025", " 65536 ", "-1", "abc", "+7", "99999999999999999999", "4294967295"),
			pick("0", "1024", "2048", "65536", "4294967295", "18446744073709551615", "-1", "1e6", "65536x"),
			pick("ring", "tree", "nvls", "pat", "collnet_direct", "Tree", "", "  "),
			pick("ll", "ll128", "simple", "LL", "", "\t"),
			pick("1", "2", "8", "-1", "0", "x", "2147483648", "99999999999999999999"),
			pick("1", "4", "-1", "0", "2"),
			pick("8", "32", "-1", "16", "0"),
			pick("1", "4", "-1", "0"),
			pick("0", "1", "-1", "2"),
			pick("1", "x"),
		}
		n := 7 + r.IntN(5)
		line := strings.Join(fields[:n], ",")
		if r.IntN(8) == 0 {
			line = strings.Replace(line, ",", ",,", 1)
		}
		if r.IntN(10) == 0 {
			line += "\r"
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// NCCL 2.29's example plugin reads NCCL's cost table as an array of
// pointers, where NCCL passes a float[7][3] (src/enqueue.cc): called as
// NCCL calls it, it dies on the first row that matches. Its own unit test
// passes pointer rows and passes. So a plugin for NCCL is built from
// NCCL 2.30's source on (scripts/tuner-plugin.sh refuses older ones).
func TestPluginBefore230CrashesUnderNCCL(t *testing.T) {
	plugin := os.Getenv(PluginVar)
	if plugin == "" {
		t.Skipf("%s is not set (scripts/tuner-plugin.sh builds the plugin; .ci/run sets it)", PluginVar)
	}
	harness, mode := buildHarness(t, plugin)
	path := filepath.Join(t.TempDir(), "tuner.conf")
	if err := os.WriteFile(path, []byte("allreduce,0,65536,tree,simple,8,-1,-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(harness, plugin, "nccl", "8", "1")
	cmd.Env = append(os.Environ(), "NCCL_TUNER_CONFIG_FILE="+path)
	cmd.Stdin = strings.NewReader("4 1024 1 0 -\n")
	out, err := cmd.Output()
	if mode == "nccl" {
		if err != nil || string(out) != "tree simple 8\n" {
			t.Errorf("a plugin of NCCL 2.30 on, called as NCCL calls it: %q, %v; want tree simple 8", out, err)
		}
		return
	}
	if err == nil {
		t.Errorf("a plugin without ncclTunerPlugin_v6 survived NCCL's cost table: %q", out)
	} else {
		t.Logf("as NCCL calls it, the plugin died: %v", err)
	}
}

// A file that is no tuner plugin is refused, and so is NCCL's example
// plugin from a source older than 2.30 (where the plugin is built).
func TestCheckPlugin(t *testing.T) {
	for _, path := range []string{"/nonexistent.so", t.TempDir(), "testdata/harness.c", "/bin/sh"} {
		if err := CheckPlugin(path); err == nil {
			t.Errorf("%s accepted as a tuner plugin", path)
		}
	}
	plugin := os.Getenv(PluginVar)
	if plugin == "" {
		t.Skipf("%s is not set (scripts/tuner-plugin.sh builds the plugin; .ci/run sets it)", PluginVar)
	}
	err := CheckPlugin(plugin)
	if exportsV6(t, plugin) != (err == nil) {
		t.Errorf("%s: %v", plugin, err)
	}
}

// The measured rows collbench tune writes are read by NCCL's own
// optimize_config.py (plugins/tuner/example/scripts): it picks, per size,
// the setting with the lowest latency, and writes the rows a file holds.
func TestMeasuredReadByOptimizeConfig(t *testing.T) {
	script := os.Getenv("COLLBENCH_OPTIMIZE_CONFIG")
	if script == "" {
		t.Skip("COLLBENCH_OPTIMIZE_CONFIG is not set (scripts/tuner-plugin.sh links optimize_config.py beside the plugin; .ci/run sets it)")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	rows := []Measured{
		{"allreduce", 1024, Choice{"ring", "simple", 4}, 1, 8, 1, 0.1, 20},
		{"allreduce", 1024, Choice{"ring", "ll", 2}, 1, 8, 0.5, 0.2, 10},
		{"allreduce", 1 << 20, Choice{"ring", "simple", 8}, 1, 8, 1, 100, 50},
		{"allreduce", 1 << 20, Choice{"tree", "simple", 8}, 1, 8, 1.2, 80, 60},
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "measured.csv"), filepath.Join(dir, "tuner.conf")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteMeasured(f, rows); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if log, err := exec.Command(python, script, in, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := Parse(data)
	want := []Row{{"allreduce", 0, 524800, "ring", "ll", 2, 1, 8, -1, -1, ""}, {"allreduce", 524801, 1 << 20, "ring", "simple", 8, 1, 8, -1, -1, ""}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("optimize_config.py wrote\n%s\nread as %+v, want %+v", data, got, want)
	}
}
