package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/schemacheck"
)

// alltoallv across four processes: generated patterns set by flag and by
// nccl-tests' variable, and a matrix file, every result right; with the
// summary asked for, each row is preceded by both placements' per-rank
// lines.
func TestLaunchAllToAllV(t *testing.T) {
	selfEnv(t)
	matrix, err := filepath.Abs("../../bench/testdata/traffic5.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string // in the output
	}{
		{"spread0", nil, []string{"--spread", "0", "-d", "all"}, "  uint64    none"},
		{"spread0.5 env", map[string]string{"NCCL_TESTS_ALLTOALLV_SPREAD": "0.5"}, nil, "float    none"},
		{"spread1", nil, []string{"--spread", "1", "-d", "half"}, "half    none"},
		{"matrix env", map[string]string{"NCCL_TESTS_ALLTOALLV_MATRIX_FILE": matrix, "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE": "2",
			"NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY": "1"}, []string{"-b", "8K", "-e", "8K"}, "mode=matrix nranks=4 matrix_dim=5 scale=2.000"},
		{"matrix flag", nil, []string{"--matrix", matrix, "-b", "8K", "-e", "8K", "--rank-summary", "-d", "double"},
			"#   rank=2 send_bytes=1616 recv_bytes=400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := append([]string{"launch", "-n", "4", "--", "alltoallv", "-b", "1K", "-e", "64K", "-f", "8", "-n", "2"}, tc.args...)
			code, out, errOut := runCLI(args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errOut)
			}
			checkTable(t, tc.name, out)
			if !strings.Contains(out, tc.want) {
				t.Errorf("%q missing:\n%s", tc.want, out)
			}
			if summaries := strings.Count(out, "# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY:"); strings.Contains(tc.want, "rank") != (summaries == 2) {
				t.Errorf("%d summaries:\n%s", summaries, out)
			}
		})
	}
}

// Patterns that cannot run are refused in one line, exit 2, as are
// hypercubes of a size that is not a power of two.
func TestTrafficRefusals(t *testing.T) {
	matrix := "../../bench/testdata/traffic5.txt"
	// Every rank of this matrix sends and receives 1.2e19 bytes, past
	// what a byte count holds: it used to wrap around and panic.
	overflow := filepath.Join(t.TempDir(), "overflow.txt")
	row := strings.Repeat("3000000000000000000 ", 4) + "\n"
	if err := os.WriteFile(overflow, []byte(strings.Repeat(row, 4)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"spread above 1", nil, []string{"alltoallv", "--spread", "2"}, "--spread must be between 0 and 1"},
		{"spread env", map[string]string{"NCCL_TESTS_ALLTOALLV_SPREAD": "wide"}, []string{"alltoallv"}, "is not a finite number"},
		{"summary env", map[string]string{"NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY": "yes"}, []string{"alltoallv"}, "is not an integer"},
		{"no file", nil, []string{"alltoallv", "--matrix", "/nonexistent/m.txt"}, "no such file"},
		{"sweep", nil, []string{"alltoallv", "--matrix", matrix, "-b", "1K", "-e", "8K"}, "give -b and -e the same value"},
		{"small -e", nil, []string{"alltoallv", "--matrix", matrix, "-b", "1K", "-e", "1K", "-g", "4"}, "-e must be at least 1616 bytes"},
		{"more ranks", nil, []string{"alltoallv", "--matrix", matrix, "-b", "64K", "-e", "64K", "-g", "6"}, "smaller than the 6 ranks"},
		{"negative scale", map[string]string{"NCCL_TESTS_ALLTOALLV_MATRIX_SCALE": "-1"}, []string{"alltoallv", "--matrix", matrix}, "scale must be"},
		{"overflow", nil, []string{"alltoallv", "--matrix", overflow, "-g", "4"}, "more bytes than can be counted"},
		{"hypercube", nil, []string{"hypercube", "-g", "6"}, "power-of-two number of ranks (got 6)"},
		{"spread elsewhere", nil, []string{"alltoall", "--spread", "0.5"}, "unknown flag: --spread"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, out, errOut := runCLI(append(tc.args, "-n", "1")...)
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if code != 2 || len(lines) != 1 || !strings.Contains(errOut, tc.want) || strings.Contains(out, "#  Rank") {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line with %q", code, errOut, tc.want)
			}
		})
	}
}

// alltoallv --moe across four processes: dispatch and combine, every
// result right, a Zipf-routed layer more imbalanced than a uniform one,
// the per-process spread printed, and the JSON document complete.
func TestLaunchMoE(t *testing.T) {
	selfEnv(t)
	imbalance := map[string]float64{}
	for _, routing := range []string{"uniform", "zipf:1.5"} {
		code, out, errOut := runCLI("launch", "-n", "4", "--", "alltoallv", "--moe", "8,2", "--tokens", "256", "--hidden", "64",
			"--routing", routing, "-d", "bfloat16", "-n", "4", "--format", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", routing, code, errOut)
		}
		var doc document.MoERun
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%s: %v\n%s", routing, err, out)
		}
		if doc.Schema != document.MoESchemaName || len(doc.Phases) != 2 || doc.Config.NProcs != 4 || doc.Config.Draws != 4 {
			t.Fatalf("%s: %+v", routing, doc)
		}
		for _, p := range doc.Phases {
			r := p.Result.OutOfPlace
			if r.NWrong == nil || *r.NWrong != 0 || r.Time <= 0 || len(r.ProcTimes) != 4 || p.MeanBytes != 256*2*64*2 {
				t.Errorf("%s %s: %+v", routing, p.Name, p)
			}
		}
		imbalance[routing] = doc.Phases[0].Imbalance
	}
	if !(imbalance["zipf:1.5"] > 1.5*imbalance["uniform"]) {
		t.Errorf("imbalance: uniform %.3f, zipf:1.5 %.3f", imbalance["uniform"], imbalance["zipf:1.5"])
	}
	code, out, errOut := runCLI("launch", "-n", "4", "--", "alltoallv", "--moe", "8,2", "--tokens", "64", "--hidden", "16", "-n", "2")
	if code != 0 {
		t.Fatalf("table: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"# MoE layer: 8 experts (2 per rank), top-2, 64 tokens per rank, hidden 16, float, routing uniform, seed 1, 2 draws",
		"  dispatch  ", "   combine  ", "# Out of bounds values : 0 OK", "# Spread across processes"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing:\n%s", want, out)
		}
	}
}

func TestMoERefusals(t *testing.T) {
	hist := filepath.Join(t.TempDir(), "hist.txt")
	if err := os.WriteFile(hist, []byte("5 1 1 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--moe", "8"}, "want EXPERTS,TOPK"},
		{[]string{"--moe", "8,2", "-b", "1M"}, "--minbytes does not apply with --moe"},
		{[]string{"--moe", "8,2", "--spread", "0"}, "--spread does not apply"},
		{[]string{"--moe", "8,2", "-d", "all"}, "one data type"},
		{[]string{"--moe", "8,2", "--routing", "zipf:-1"}, "skew S ≥ 0"},
		{[]string{"--moe", "8,2", "--routing", hist}, "has 4 experts; --moe says 8"},
		{[]string{"--moe", "6,2", "-g", "4"}, "6 experts do not split evenly over 4 ranks"},
		{[]string{"--moe", "8,9", "-g", "4"}, "top-k 9 is more than the 8 experts"},
		{[]string{"--moe", "8,2", "--format", "csv"}, "csv is not available"},
		{[]string{"--moe=-4,2"}, "experts and top-k must be at least 1"},
		{[]string{"--moe", "2000000000,1"}, "at most 65536 experts"},
		{[]string{"--moe", "8,2", "--hidden", "2305843009213693952", "--tokens", "4"}, "more bytes than can be counted"},
		{[]string{"--moe", "8,2", "--tokens", "1000000000000"}, "--tokens must be between 1 and 16777216"},
		{[]string{"--moe", "8,2", "--draws", "1000000000"}, "--draws must be between 1 and 65536"},
		{[]string{"--moe", "8,2", "--draws", "-3"}, "--draws must be between"},
		{[]string{"--moe", "1024,1023", "-g", "2", "--draws", "1000"}, "token picks, more than"},
		{[]string{"--moe", "1024,2", "-g", "1024", "--draws", "2000", "--tokens", "1"}, "GiB of tables"},
	} {
		code, out, errOut := runCLI(append([]string{"alltoallv", "-n", "1"}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(errOut, tc.want) || strings.Contains(out, "#  Rank") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, errOut, tc.want)
		}
	}
}

// A layer far larger than any device (16M tokens a rank) is
// drawn before it is sized; an interruption ends the draw and the
// command at once, with the interruption's exit code.
func TestMoEDrawInterrupted(t *testing.T) {
	for _, args := range [][]string{
		{"alltoallv", "-g", "2", "--moe", "8,2", "--tokens", "16777216"},
		{"profile", "-g", "2", "--colls", "alltoallv", "--moe", "8,2", "--tokens", "16777216", "--no-overlap", "-b", "1M", "-e", "2M"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		var errOut bytes.Buffer
		go func() { done <- cli(ctx, append([]string{"collbench"}, args...), io.Discard, &errOut) }()
		time.Sleep(300 * time.Millisecond)
		cancel()
		select {
		case code := <-done:
			if code != exitSignal {
				t.Errorf("%s: exit %d, want %d; stderr %q", args[0], code, exitSignal, errOut.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the draw went on after the interruption", args[0])
		}
	}
}

// collbench profile --moe measures alltoallv with the layer's routed
// traffic at every size, says so in the curve, models the curve against
// each rank's mean bytes, and predict times expert parallelism on it.
func TestProfileRoutedAllToAllV(t *testing.T) {
	p, _, out := profileRun(t, "-g", "4", "--colls", "allreduce,alltoallv", "--moe", "8,2", "--routing", "zipf:1.2",
		"--group-sizes", "4", "--layouts", "consecutive", "-b", "64K", "-e", "1M", "-f", "4", "-n", "3", "--no-overlap", "-q")
	seen := false
	for _, c := range p.Curves {
		if c.Op != "alltoallv" {
			continue
		}
		seen = true
		if !strings.HasPrefix(c.Traffic, "moe 8 experts top-2, routing zipf:1.2") || len(c.Samples) != 3 {
			t.Fatalf("curve: traffic %q, %d samples, note %q", c.Traffic, len(c.Samples), c.Note)
		}
		for _, s := range c.Samples {
			if mean := s.Count * 4 * 2; s.Bytes <= mean {
				t.Errorf("sample of %d bytes per rank: the busiest rank moves %d", mean, s.Bytes)
			}
		}
	}
	if !seen {
		t.Fatal("no alltoallv curve")
	}
	code, pred, errOut := runCLI("predict", "--profile", out, "--model", "mixtral-8x7b", "--dp", "4", "--ep", "4", "--tflops", "100")
	if code != 0 || !regexp.MustCompile(`(?m)^\s+EP\s+alltoallv\s+4\s`).MatchString(pred) {
		t.Errorf("predict: exit %d, %s\n%s", code, errOut, pred)
	}
	code, _, errOut = runCLI("profile", "-g", "4", "--moe", "8,2", "-o", out)
	if code != 2 || !strings.Contains(errOut, "add alltoallv to --colls") {
		t.Errorf("--moe without alltoallv: exit %d, %q", code, errOut)
	}
}

// -t threads of -g GPUs each make t·g ranks per process, as in
// nccl-tests; -u and -S are honoured and shown.
func TestThreadsUnalignTimestamps(t *testing.T) {
	selfEnv(t)
	code, out, errOut := runCLI("allgather", "-t", "2", "-g", "2", "-u", "5", "-S", "1", "-b", "1K", "-e", "4K", "-f", "2", "-n", "2", "-d", "all")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"# nThread 2 nGpus 2 ", " unalign: 5\n", "#  Rank  3 Group  0", "#wrong           timestamp\n",
		"# Out of bounds values : 0 OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing:\n%s", want, out)
		}
	}
	stamped := regexp.MustCompile(`(?m)^ {0,11}\d+ .*  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`)
	if n := len(stamped.FindAllString(out, -1)); n != 3*12 {
		t.Errorf("%d stamped rows, want 36:\n%s", n, out)
	}
	code, out, errOut = runCLI("launch", "-n", "2", "--", "reducescatter", "-t", "2", "-b", "1K", "-e", "4K", "-f", "4", "-n", "2", "--format", "json")
	if code != 0 || !strings.Contains(out, `"nthreads": 2`) || !strings.Contains(out, `"nranks": 4`) {
		t.Errorf("launch -n 2 with -t 2: exit %d %s\n%s", code, errOut, out)
	}
}

// NCCL_TESTS_MIN_BW judges every collective's average bus bandwidth as
// nccl-tests does: below 90% of it the footer says FAILED and the exit
// code is 7; above, OK and 0.
func TestMinBusBandwidthEveryCollective(t *testing.T) {
	for _, c := range bench.Collectives {
		for _, tc := range []struct {
			floor, verdict string
			code           int
		}{{"1e6", "FAILED", 7}, {"1e-9", "OK", 0}} {
			t.Setenv("NCCL_TESTS_MIN_BW", tc.floor)
			code, out, errOut := runCLI(c.Name, "-g", "4", "-b", "1K", "-e", "4K", "-f", "4", "-n", "2")
			if code != tc.code || !regexp.MustCompile(`(?m)^# Avg bus bandwidth    : \S+ `+tc.verdict+`$`).MatchString(out) {
				t.Errorf("%s with NCCL_TESTS_MIN_BW=%s: exit %d %s\n%s", c.Name, tc.floor, code, errOut, out)
			}
		}
	}
}

// NCCL_TESTS_SPLIT and NCCL_TESTS_SPLIT_MASK split the processes by
// colour as nccl-tests does, onto consecutive or strided groups; a split
// into groups collbench cannot form is refused in one line.
func TestSplitEnvironment(t *testing.T) {
	selfEnv(t)
	for _, tc := range []struct {
		env, value, want string
		code             int
	}{
		{"NCCL_TESTS_SPLIT", "DIV 2", "# Groups: 2 of 2 ranks, consecutive, all at once", 0},
		{"NCCL_TESTS_SPLIT", "% 2", "# Groups: 2 of 2 ranks, strided, all at once", 0},
		{"NCCL_TESTS_SPLIT_MASK", "0x2", "# Groups: 2 of 2 ranks, consecutive, all at once", 0},
		{"NCCL_TESTS_SPLIT", "MOD 3", "splits the 4 processes into [0 3] [1] [2]", 2},
	} {
		t.Run(tc.value, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			code, out, errOut := runCLI("launch", "-n", "4", "--", "allgather", "-b", "1K", "-e", "4K", "-f", "4", "-n", "2")
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d, want %d and %q\n%s%s", code, tc.code, tc.want, out, errOut)
			}
			if code == 0 {
				checkTable(t, tc.value, out)
			}
		})
	}
	t.Setenv("NCCL_TESTS_SPLIT", "DIV 2")
	if code, _, errOut := runCLI("allreduce", "-g", "2", "--group-size", "2"); code != 2 || !strings.Contains(errOut, "give one") {
		t.Errorf("split and --group-size: exit %d, %q", code, errOut)
	}
}

// A profile of a hypercube on 6 ranks keeps the power-of-two groups and
// leaves the others out with a note, rather than failing; the document
// stays valid.
func TestProfileLeavesOutHypercubeGroups(t *testing.T) {
	p, data, _ := profileRun(t, "-g", "6", "--colls", "hypercube", "-b", "64K", "-e", "256K", "-f", "4", "-n", "3", "--no-overlap", "-q")
	if err := schemacheck.Validate("../../docs/profile.schema.json", data); err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Curves {
		power := c.Group.Size&(c.Group.Size-1) == 0
		if power != (len(c.Samples) == 2) || power == strings.Contains(c.Note, "power-of-two") {
			t.Errorf("%s: %d samples, note %q", c.Key(), len(c.Samples), c.Note)
		}
	}
	if code, _, errOut := runCLI("overlap", "-g", "6", "--coll", "hypercube"); code != 2 || !strings.Contains(errOut, "power-of-two") {
		t.Errorf("overlap: exit %d, %q", code, errOut)
	}
}

// A routed layer whose experts do not split over the whole job is left
// out at that group size, with a note, and measured where they split: it
// used to panic while the buffers were sized for the whole job.
func TestProfileLeavesOutRoutedGroups(t *testing.T) {
	p, _, _ := profileRun(t, "-g", "4", "--colls", "alltoallv", "--moe", "2,1", "-b", "64K", "-e", "256K", "-f", "4", "-n", "3", "--no-overlap", "-q")
	measured := 0
	for _, c := range p.Curves {
		fits := 2%c.Group.Size == 0
		if fits != (len(c.Samples) == 2) || fits == strings.Contains(c.Note, "split evenly") {
			t.Errorf("%s: %d samples, note %q", c.Key(), len(c.Samples), c.Note)
		}
		if fits {
			measured++
		}
	}
	if measured == 0 {
		t.Errorf("no curve measured: %+v", p.Curves)
	}
}

// profileRun runs collbench profile with args, writing to a file, and
// returns the profile, its bytes and its path; it stops the test when
// the command fails.
func profileRun(t *testing.T, args ...string) (document.Profile, []byte, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "profile.json")
	if code, _, errOut := runCLI(append(append([]string{"profile"}, args...), "-o", out)...); code != 0 {
		t.Fatalf("profile: exit %d\n%s", code, errOut)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var p document.Profile
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	return p, data, out
}
