package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/fileio"
	"github.com/collbench/collbench/internal/schemacheck"
	"github.com/collbench/collbench/internal/tier"
)

// abRowRE matches one arm's line of the ab table: size, arm, median,
// interval, level, busbw, ratio, p, verdict.
var abRowRE = regexp.MustCompile(`^ *(\d+) +([A-Z]+) +[0-9.]+ +[0-9.]+–[0-9.]+ +\d+% +[0-9.]+ +([0-9.]+|-) +(\S+) +(base|same|faster|slower|no base)$`)

// abVerdicts maps each size to each arm's verdict in an ab table.
func abVerdicts(out string) map[string]map[string]string {
	v := map[string]map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if m := abRowRE.FindStringSubmatch(line); m != nil {
			if v[m[1]] == nil {
				v[m[1]] = map[string]string{}
			}
			v[m[1]][m[2]] = m[5]
		}
	}
	return v
}

// Two arms that differ by a setting known to change the time: one rank
// against four in each of two processes (2 against 8 ranks, which copy
// seven times the data on the same cores; 1-4 MiB, where the copies
// outweigh the scheduling of a loaded machine), started by collbench launch.
// ab says so with the right sign whichever arm comes first, also under
// the race detector and beside busy loops, where shared memory against
// TCP did not; exit 1 when the second arm is the slower one. The record
// has every round of both arms.
func TestABTellsArmsApart(t *testing.T) {
	tier.System(t, "ab rounds")
	selfEnv(t)
	shortRaceExit(t)
	dir := t.TempDir()
	sweep := []string{"--", "allreduce", "-b", "1M", "-e", "4M", "-f", "2", "-n", "5", "-w", "1"}
	if raceEnabled {
		// The race detector slows every copy, so that smaller sizes are
		// already ruled by them, at a sixteenth of the time.
		sweep = []string{"--", "allreduce", "-b", "64K", "-e", "256K", "-f", "2", "-n", "5", "-w", "1"}
	}
	for _, tc := range []struct {
		first, second, want string
		code                int
	}{
		{"-g 1", "-g 4", "slower", exitFailure},
		{"-g 4", "-g 1", "faster", exitOK},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.first, " ", "")+".json")
		args := append([]string{"launch", "-n", "2", "--", "ab", "-q", "--arm", tc.first, "--arm", tc.second,
			"--rounds", "10", "-J", path}, sweep...)
		code, out, errOut := runCLI(args...)
		verdicts := abVerdicts(out)
		if len(verdicts) != 3 {
			t.Fatalf("%s first: %d sizes judged, want 3 (exit %d)\n%s\n%s", tc.first, len(verdicts), code, out, errOut)
		}
		right := 0
		for size, v := range verdicts {
			switch {
			case v["A"] != "base":
				t.Errorf("%s first, %s B: arm A is %q", tc.first, size, v["A"])
			case v["B"] == tc.want:
				right++
			case v["B"] != "same":
				t.Errorf("%s first, %s B: %q, the wrong sign\n%s", tc.first, size, v["B"], out)
			}
		}
		if right < 2 {
			t.Errorf("%s first: %s at %d of 3 sizes, want at least 2\n%s", tc.first, tc.want, right, out)
		}
		if code != tc.code {
			t.Errorf("%s first: exit %d, want %d\n%s", tc.first, code, tc.code, errOut)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := schemacheck.Validate("../../docs/ab.schema.json", data); err != nil {
			t.Errorf("the record does not follow docs/ab.schema.json: %v", err)
		}
		var doc document.ABRun
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Schema != document.ABSchemaName || doc.Version != document.ABSchemaVersion || len(doc.Arms) != 2 ||
			len(doc.Arms[0].Rounds) != 10 || len(doc.Arms[1].Rounds) != 10 || len(doc.Rows) != 3 || doc.Arms[1].Args[1] != tc.second[3:] {
			t.Errorf("%s first: record %s", tc.first, data)
		}
	}
}

// shortRaceExit shortens the second a binary built with -race sleeps
// before it exits (GORACE's atexit_sleep_ms, for late reports) to a tenth:
// ab tests start hundreds of arm processes.
func shortRaceExit(t *testing.T) {
	t.Helper()
	t.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=100"))
}

// Arms that change nothing the run reads (a variable of their own) are
// called the same: at p < 0.01 on one size, at least 19 repetitions of
// 20; ten rounds each, so that a loaded machine's drift is spread over
// both arms.
func TestABIdenticalArmsAgree(t *testing.T) {
	tier.System(t, "ab rounds")
	selfEnv(t)
	shortRaceExit(t)
	differ := 0
	for i := 0; i < 20; i++ {
		code, out, errOut := runCLI("ab", "-q", "--arm", "AB_ARM=1 -g 2", "--arm", "AB_ARM=2 -g 2", "--rounds", "10", "--",
			"allreduce", "-b", "4K", "-e", "4K", "-n", "10", "-w", "1")
		v := abVerdicts(out)
		if len(v) != 1 {
			t.Fatalf("repetition %d: exit %d\n%s\n%s", i, code, out, errOut)
		}
		if v["4096"]["B"] != "same" {
			differ++
			t.Logf("repetition %d: %q\n%s", i, v["4096"]["B"], out)
		}
	}
	if differ > 1 {
		t.Errorf("identical arms told apart in %d of 20 repetitions", differ)
	}
}

// Many arms that change nothing the run reads: with the table's tests
// adjusted for each other (Holm, the default), none is called faster or
// slower, and the rounds were raised to what the table's tests need.
// (compare's TestManyIdenticalArmsAgree repeats this for 100 arms.)
func TestABManyArmsNoFalseVerdict(t *testing.T) {
	tier.System(t, "ab rounds")
	selfEnv(t)
	shortRaceExit(t)
	args := []string{"ab", "-q", "--alpha", "0.001"}
	for i := 0; i < 8; i++ {
		args = append(args, "--arm", fmt.Sprintf("AB_ARM=%d -g 2", i))
	}
	args = append(args, "--", "allreduce", "-b", "4K", "-e", "4K", "-n", "10", "-w", "1")
	code, out, errOut := runCLI(args...)
	v := abVerdicts(out)
	if code != exitOK || len(v["4096"]) != 8 {
		t.Fatalf("exit %d, %d arms judged\n%s\n%s", code, len(v["4096"]), out, errOut)
	}
	for arm, verdict := range v["4096"] {
		if verdict != "same" && verdict != "base" {
			t.Errorf("arm %s: %s\n%s", arm, verdict, out)
		}
	}
	// 7 tests at 0.001: 2/C(18, 9) × 7 < 0.001 takes 9 rounds.
	if !strings.Contains(out, "9 rounds") || !strings.Contains(out, "Holm-adjusted over the table's 7 tests (family-wise error)") {
		t.Errorf("the header does not give the rounds or the correction:\n%s", out)
	}
}

// An arm whose library does not load is known before the first round:
// one line, exit 2, nothing measured. An arm the backend refuses fails in
// its round, in one line of its own; the other arms finish and are
// judged. With one arm left, the rounds stop and the table says so.
func TestABArmsThatFail(t *testing.T) {
	tier.System(t, "ab rounds")
	selfEnv(t)
	dir := t.TempDir()
	fifo, notELF := filepath.Join(dir, "fifo"), filepath.Join(dir, "libnccl.so.2")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notELF, []byte("not a library\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for lib, why := range map[string]string{"/nonexistent/libnccl.so.2": "No such file", t.TempDir(): "No such file",
		fifo: "a named pipe (FIFO), not a library", "/dev/zero": "a device, not a library", notELF: "file too short"} {
		code, out, errOut := runCLI("ab", "-q", "--arm", "-g 2", "--arm", "lib="+lib+" -g 2", "--",
			"allreduce", "-b", "1K", "-e", "4K", "-f", "4", "-n", "5")
		if code != exitUsage || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || out != "" ||
			!strings.Contains(errOut, "arm B (lib="+lib+" -g 2) does not start: NCCL from "+lib+": ") || !strings.Contains(errOut, why) {
			t.Errorf("%s: exit %d, want %d, one line saying %q and no table\n%s\n%s", lib, code, exitUsage, why, out, errOut)
		}
	}

	code, out, errOut := runCLI("ab", "-q", "--arm", "-g 2", "--arm", "name=gpu --backend nccl -g 2", "--arm", "name=again AB_ARM=2 -g 2",
		"--rounds", "6", "--", "allreduce", "-b", "1K", "-e", "4K", "-f", "4", "-n", "5")
	if code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "arm B (gpu) failed in round 1 (exit 1): collbench allreduce: the nccl backend is not available") {
		t.Errorf("stderr, want one line for the failed arm:\n%s", errOut)
	}
	v := abVerdicts(out)
	for _, size := range []string{"1024", "4096"} {
		if v[size]["A"] != "base" || v[size]["C"] == "" || v[size]["B"] != "" {
			t.Errorf("%s: verdicts %v, want A and C only\n%s", size, v[size], out)
		}
	}
	if !strings.Contains(out, "# arm B failed in round 1") || strings.Contains(out, "stopped") {
		t.Errorf("the table does not say which arm failed:\n%s", out)
	}

	code, out, _ = runCLI("ab", "-q", "--arm", "name=gpu --backend nccl -g 2", "--arm", "-g 2", "--", "allreduce", "-b", "1K", "-e", "1K", "-n", "5")
	if code != exitFailure || !strings.Contains(out, "# stopped before round 2: 1 arm(s) left, and a comparison needs two") ||
		strings.Contains(out, "same") {
		t.Errorf("one arm left: exit %d, want %d and the table saying why it stopped, with no verdict\n%s", code, exitFailure, out)
	}
}

// Two arms that load one file (named by its path, its folder and a link
// to it) with the same settings are refused before the first round: a
// table would compare a library with itself. The arms' lines name the
// file each really loaded.
func TestABSameLibraryTwice(t *testing.T) {
	selfEnv(t)
	lib := fakeNCCLLib(t)
	link := filepath.Join(t.TempDir(), "libnccl.so.2")
	if err := os.Symlink(lib, link); err != nil {
		t.Fatal(err)
	}
	for _, second := range []string{"lib=" + filepath.Dir(lib), "lib=" + link, "name=other lib=" + lib} {
		code, out, errOut := runCLI("ab", "-q", "--arm", "lib="+lib+" -g 2", "--arm", second+" -g 2", "--",
			"allreduce", "-b", "1K", "-e", "1K", "-n", "2")
		if code != exitUsage || !strings.Contains(errOut, "load "+lib+" with the same settings: nothing tells them apart") || out != "" {
			t.Errorf("%s: exit %d, want %d and one line naming %s\n%s%s", second, code, exitUsage, lib, out, errOut)
		}
	}
}

// fakeNCCLLib builds a library that loads as NCCL 2.22.3 (its version
// and an init entry point, nothing more), or skips without gcc.
func fakeNCCLLib(t *testing.T) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to build a library")
	}
	dir := t.TempDir()
	src, lib := filepath.Join(dir, "fake.c"), filepath.Join(dir, "libnccl.so.2")
	code := "int ncclGetVersion(int* v) { *v = 22203; return 0; }\nint ncclCommInitRank(void) { return 1; }\n"
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("building the library: %v\n%s", err, out)
	}
	return lib
}

func TestABBadInput(t *testing.T) {
	selfEnv(t) // should a case slip through, its arms run collbench, not the tests
	two := []string{"ab", "--arm", "-g 2", "--arm", "-g 2"}
	sweep := []string{"--", "allreduce", "-b", "8", "-e", "8"}
	cases := []struct {
		args []string
		want string
	}{
		{two, "no sweep given"},
		{append([]string{"ab", "--arm", "-g 2"}, sweep...), "ab wants at least two arms"},
		{append([]string{"ab", "--arm", "NCCL_PROTO", "--arm", ""}, sweep...), `"NCCL_PROTO" is neither name=, lib=, NAME=VALUE nor a flag`},
		{append([]string{"ab", "--arms-matrix", "NCCL_PROTO"}, sweep...), "want NAME=VALUE1,VALUE2"},
		{append(append(two, "--rounds", "4"), sweep...), "--rounds 4 cannot show a difference at p < 0.01"},
		{append(append(two, "--alpha", "1"), sweep...), "--alpha must be from 1e-06 up to 1 (got 1)"},
		{append(append(two, "--alpha", "1e-320"), sweep...), "--alpha must be from 1e-06 up to 1 (got 1e-320)"},
		{append(two, "--", "profile"), `"profile" is not a collective`},
		{append([]string{"ab", "--arm", "--bogus", "--arm", ""}, sweep...), "arm A (--bogus): unknown flag: --bogus"},
		{append(two, "--", "allreduce", "-J", "x.json"), "--output_file is ab's to set"},
		{append(two, "--", "allreduce", "--rendezvous", "h:1"), "--rendezvous is ab's to set"},
		{append([]string{"ab", "--arm", "-N 0", "--arm", ""}, sweep...), "-N 0: each round runs the sweep once"},
		{append(two, "--", "allreduce", "-b", "1M", "-e", "8"), "arm A (-g 2): minimum size 1048576 is larger than maximum size 8"},
		{append(two, "--", "broadcast", "-r", "2", "-b", "8", "-e", "8"), "arm A (-g 2): root 2 is out of range for 2 ranks"},
		{append(append(two, "-J", "/nonexistent/ab.json"), sweep...), "cannot write /nonexistent/ab.json"},
		{append(append(two, "--rounds", "9223372036854775807"), sweep...), "--rounds must be between 1 and 1000"},
		{append(append(two, "--correction", "sidak"), sweep...), `--correction: unknown correction "sidak" (holm, bh or none)`},
		{append(append(two, "--rounds", "7", "--arms-matrix", "X=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20"), sweep...),
			"--rounds 7 cannot show a difference among 21 tests at p < 0.01: 7 rounds a side give p ≥ 0.000583 at best, 0.0122 once adjusted (holm); use at least 8"},
		{append(append(two, "-J", "same", "--logs", "same"), sweep...), "-J same and --logs same are one path"},
		{append(append([]string{"ab"}, "--arms-matrix", "A=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20", "--arms-matrix", "B=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20",
			"--arms-matrix", "C=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20"), sweep...), "more than 512 arms (--arm and --arms-matrix)"},
	}
	dir := t.TempDir()
	matrix, site := filepath.Join(dir, "m.txt"), filepath.Join(dir, "site.json")
	if err := os.WriteFile(matrix, []byte("0 8\n8 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(site, []byte(`{"version": 1, "entries": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, []struct {
		args []string
		want string
	}{
		{append([]string{"ab", "--arm", "-g 0", "--arm", ""}, sweep...), "arm A (-g 0): -g must be at least 1 (got 0)"},
		{append([]string{"ab", "--arm", "RANK=3", "--arm", ""}, sweep...), `arm "RANK=3": RANK is the job's`},
		{append([]string{"ab", "--arm", "COLLBENCH_TOKEN=x", "--arm", ""}, sweep...), "COLLBENCH_TOKEN is the job's"},
		{append([]string{"ab", "--arms-matrix", "MASTER_PORT=1,2"}, sweep...), "MASTER_PORT is the job's"},
		{append([]string{"ab", "--arm", "--references /nonexistent.json", "--arm", ""}, sweep...), "/nonexistent.json: no such file or directory"},
		{append(append(two, "--arm-timeout", "-1"), sweep...), "--arm-timeout must be 0 (automatic) or between 0.001 and 604800 seconds (got -1)"},
		{append(append(two, "--arm-timeout", "NaN"), sweep...), "--arm-timeout must be a finite number (got NaN)"},
		{append([]string{"ab", "--arm", "", "--arm", "--nccl-max-ctas 4 -R 1"}, sweep...),
			"arm B (--nccl-max-ctas 4 -R 1): --local_register, --nccl-max-ctas apply to the nccl backend only, and the arm runs on the host backend here"},
		{append(two, "--", "allreduce", "--group-size", "3", "-b", "8", "-e", "8"), "arm A (-g 2): --group-size 3 is larger than the job's 2 ranks"},
		// An arm's host backend settings are checked before round 1.
		{append([]string{"ab", "--arm", "-g 2", "--arm", "COLLBENCH_HOST_SEGMENT=100 -g 2"}, sweep...), "arm B (COLLBENCH_HOST_SEGMENT=100 -g 2): COLLBENCH_HOST_SEGMENT=100: a segment of 100 bytes"},
		{append([]string{"ab", "--arm", "-g 2", "--arm", "COLLBENCH_HOST_ALGO=spiral -g 2"}, sweep...), `COLLBENCH_HOST_ALGO=spiral: the host backend has no algorithm "spiral"`},
		{append([]string{"ab", "--arm", "-g 3 --backend host", "--arm", "COLLBENCH_HOST_ALGO=doubling -g 3 --backend host"}, sweep...), "recursive doubling needs a power-of-two group, and allreduce runs on 3 ranks"},
		{append(two, "--", "alltoallv", "--moe", "8,2", "-g", "2"), "arm A (-g 2): --moe times a layer's calls, not a sweep's sizes, and ab compares sweeps"},
		{append(append(two, "-J", matrix), "--", "alltoallv", "--matrix", matrix, "-n", "2"), "the output " + matrix + " is the input " + matrix},
		{append([]string{"ab", "-J", site, "--arm", "--references " + site, "--arm", ""}, sweep...), "the output " + site + " is the input " + site},
	}...)
	for _, c := range cases {
		t.Run(strings.Join(c.args[1:], " "), func(t *testing.T) { expectUsageError(t, c.args, c.want) })
	}
}

// An interrupt stops the arm's process and ab promptly, exit 130, with
// no arm process left behind; -J keeps the turns that ended, saying where
// the run was cut.
func TestABInterrupt(t *testing.T) {
	tier.System(t, "ab rounds")
	path := filepath.Join(t.TempDir(), "ab.json")
	p := startRank(t, 0, 1, nil, nil, "ab", "--arm", "-g 2", "--arm", "AB_ARM=2 -g 2", "--rounds", "7", "-J", path, "--",
		"allreduce", "-b", "64K", "-e", "8M", "-f", "2", "-n", "200")
	// Interrupted once a turn has ended (which takes long under the race
	// detector on a loaded machine), so that the record has one to keep.
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(p.err.String(), "round 1/7") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(p.err.String(), "round 1/7") {
		t.Fatalf("no turn ended in 3 minutes: %q", p.err.String())
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	waitAll(t, 15*time.Second, p)
	if p.code != exitSignal {
		t.Errorf("exit %d, want %d; stderr %q", p.code, exitSignal, p.err.String())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the finished rounds were not kept: %v", err)
	}
	if err := schemacheck.Validate("../../docs/ab.schema.json", data); err != nil {
		t.Errorf("the record does not follow docs/ab.schema.json: %v", err)
	}
	var doc document.ABRun
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Arms) != 2 || len(doc.Arms[0].Rounds) < 1 || !strings.HasPrefix(doc.Stopped, "interrupted in round ") {
		t.Errorf("record of an interrupted run: %s", data)
	}
}

// The folder an ab keeps its arms' results in cannot outlive the job: a
// folder left by an ab that was killed (SIGKILL runs no clean-up) goes at
// the next start, one whose creator still runs stays, and a SIGKILL now
// leaves one that the next start removes.
func TestABFoldersDoNotPileUp(t *testing.T) {
	tier.System(t, "ab rounds")
	selfEnv(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(tmp, fmt.Sprintf("collbench-ab-%d-1-0123", dead.Process.Pid))
	old := filepath.Join(tmp, "collbench-ab-123456789") // an earlier release's name: kept, its creator is unknown
	live := filepath.Join(tmp, fmt.Sprintf("collbench-ab-%d-%s-4567", os.Getpid(), fileio.ProcStart(os.Getpid())))
	for _, d := range []string{stale, old, live} {
		if err := os.MkdirAll(filepath.Join(d, "x"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	p := startRank(t, 0, 1, nil, nil, "ab", "--arm", "-g 2", "--arm", "AB_ARM=2 -g 2", "--rounds", "50", "-q", "--",
		"allreduce", "-b", "64K", "-e", "8M", "-f", "2", "-n", "50")
	deadline := time.Now().Add(30 * time.Second)
	planted := []string{stale, old, live}
	for mine(tmp, planted) == "" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a dead ab's folder is still there: %v", err)
	}
	for _, d := range []string{old, live} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v; a folder whose creator may live must stay", d, err)
		}
	}
	killed := mine(tmp, planted)
	p.cmd.Process.Kill()
	waitAll(t, 15*time.Second, p)
	if killed == "" {
		t.Fatal("the ab made no folder of its own")
	}
	if code, _, errOut := runCLI("ab", "--arm", "-g 1", "--arm", "-g 2", "--rounds", "5", "-q", "--", "allreduce", "-b", "1K", "-e", "1K", "-n", "2"); code > 1 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("the killed ab's folder %s outlived the next start: %v", killed, err)
	}
}

// mine is an ab folder in dir that is none of planted, "" none.
func mine(dir string, planted []string) string {
	all, _ := filepath.Glob(filepath.Join(dir, "collbench-ab-*"))
	for _, d := range all {
		if !slices.Contains(planted, d) {
			return d
		}
	}
	return ""
}

// An arm process that hangs ends at its turn's deadline, named: one
// stopped by SIGSTOP under launch -n 4 (its peers give up on it and wait
// no more than ab does). The arm fails in one line, the rounds stop with
// one arm left, exit 1, within the deadline plus 10 s. An input that would
// hang an arm (a FIFO, read again every turn, whether named by a flag or
// by nccl-tests' variable) is refused before anything runs.
func TestABStalledArm(t *testing.T) {
	tier.System(t, "ab rounds")
	selfEnv(t)
	shortRaceExit(t)
	mark := fmt.Sprintf("AB_STALL=%d", os.Getpid())
	// Rank 2's process of arm B is stopped once its sweep has started.
	stopped := signalWhenFound(t, 5*time.Millisecond, 0, syscall.SIGSTOP, "allreduce", mark, "RANK=2")
	start := time.Now()
	code, out, errOut := runCLI("launch", "-n", "4", "--", "ab", "-q", "--arm-timeout", "15", "--arm", "name=a -n 5",
		"--arm", "name=b "+mark+" -n 100000 -w 0", "--rounds", "5", "--", "allreduce", "-b", "1K", "-e", "1K")
	took := time.Since(start)
	var pid int
	select {
	case pid = <-stopped:
	default:
		t.Fatalf("no arm process was stopped; exit %d\n%s\n%s", code, out, errOut)
	}
	want := fmt.Sprintf("collbench ab: arm B (b) rank 2: stalled in round 1: no end within 15s (process %d stopped by a signal); killed it", pid)
	if code != exitFailure || !strings.Contains(errOut, want) || !strings.Contains(out, "stopped before round 2") {
		t.Errorf("exit %d, want %d and the line %q\n%s\n%s", code, exitFailure, want, out, errOut)
	}
	if took > 15*time.Second+10*time.Second+5*time.Second { // arm A's turn takes about a second
		t.Errorf("ab took %v, past its deadline of 15 s plus 10 s", took)
	}

	fifo := filepath.Join(t.TempDir(), "matrix")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, arm := range []string{"name=b --matrix " + fifo, "name=b NCCL_TESTS_ALLTOALLV_MATRIX_FILE=" + fifo} {
		start = time.Now()
		code, out, errOut = runCLI("ab", "-q", "--arm", "name=a", "--arm", arm, "--", "alltoallv", "-b", "1K", "-e", "1K", "-g", "2", "-n", "5")
		want := "collbench ab: arm B (b): " + fifo + " is not a regular file: every turn reads it again\n"
		if code != exitUsage || errOut != want || out != "" || time.Since(start) > 10*time.Second {
			t.Errorf("%s: exit %d in %v, want %d at once and %q\n%s\n%s", arm, code, time.Since(start), exitUsage, want, out, errOut)
		}
	}
}

// signalWhenFound sends sig, once it has used busy clock ticks of CPU (0:
// at once), to the first process findProcess finds (polled every poll
// until the test ends) and hands its pid on. CPU, not wall-clock time,
// says how far a process has come on a loaded machine.
func signalWhenFound(t *testing.T, poll time.Duration, busy int, sig syscall.Signal, word string, vars ...string) <-chan int {
	found := make(chan int, 1)
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(poll):
			}
			if pid := findProcess(word, vars...); pid > 0 {
				for {
					used, err := cpuTicks(pid)
					if err != nil || used >= busy {
						break
					}
					select {
					case <-done:
						return
					case <-time.After(poll):
					}
				}
				syscall.Kill(pid, sig)
				found <- pid
				return
			}
		}
	}()
	return found
}

// findProcess is the pid of a process whose command line holds word and
// whose environment holds every one of vars (NAME=VALUE), 0 when none.
func findProcess(word string, vars ...string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if !slices.Contains(strings.Split(string(cmdline), "\x00"), word) {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		env := strings.Split(string(data), "\x00")
		all := true
		for _, v := range vars {
			all = all && slices.Contains(env, v)
		}
		if all {
			return pid
		}
	}
	return 0
}
