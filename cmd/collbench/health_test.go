package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/schemacheck"
	"github.com/collbench/collbench/internal/tier"
)

// fabric is hosts as network namespaces, each joined to a bridge in a
// "switch" namespace by a veth pair: host i is 10.78.<n>.<i+1>, its end
// h<i>, the switch's end s<i>.
type fabric struct {
	t      *testing.T
	hosts  []string // namespace names
	sw     string
	subnet int
	cpu    map[int]string // host: the CPU cgroup its processes start in
}

func newFabric(t *testing.T, hosts int) *fabric {
	t.Helper()
	newNetnsPair(t) // the same preconditions (root, iproute2); its pair goes unused
	pid := os.Getpid()
	f := &fabric{t: t, sw: fmt.Sprintf("cbSw%d", pid), subnet: pid%200 + 1}
	ip(t, "netns", "add", f.sw)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", f.sw).Run() })
	ip(t, "-n", f.sw, "link", "add", "br0", "type", "bridge")
	ip(t, "-n", f.sw, "link", "set", "br0", "up")
	for i := 0; i < hosts; i++ {
		ns := fmt.Sprintf("cbH%d_%d", i, pid)
		ip(t, "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
		h, s := fmt.Sprintf("h%d", i), fmt.Sprintf("s%d", i)
		ip(t, "link", "add", h, "netns", ns, "type", "veth", "peer", "name", s, "netns", f.sw)
		ip(t, "-n", f.sw, "link", "set", s, "master", "br0")
		ip(t, "-n", f.sw, "link", "set", s, "up")
		ip(t, "-n", ns, "addr", "add", f.addr(i)+"/24", "dev", h)
		ip(t, "-n", ns, "link", "set", h, "up")
		ip(t, "-n", ns, "link", "set", "lo", "up")
		f.hosts = append(f.hosts, ns)
	}
	return f
}

func (f *fabric) addr(host int) string { return fmt.Sprintf("10.78.%d.%d", f.subnet, host+1) }

// slowHost limits everything host sends and receives with tbf.
func (f *fabric) slowHost(host int, rate string) {
	for _, side := range []struct{ ns, dev string }{{f.hosts[host], fmt.Sprintf("h%d", host)}, {f.sw, fmt.Sprintf("s%d", host)}} {
		if !tc(f.t, side.ns, "qdisc", "add", "dev", side.dev, "root", "tbf", "rate", rate, "burst", "64kb", "latency", "2s") {
			f.t.Skip("this kernel has no tbf")
		}
	}
}

// slowLink limits only the traffic between hosts a and b: on each side,
// an htb class that a u32 filter sends the other's address to, with a
// tbf under it; other traffic passes untouched.
func (f *fabric) slowLink(a, b int, rate string) {
	for _, end := range [][2]int{{a, b}, {b, a}} {
		ns, dev := f.hosts[end[0]], fmt.Sprintf("h%d", end[0])
		for _, args := range [][]string{
			{"qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "20"},
			{"class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb", "rate", "10gbit"},
			{"class", "add", "dev", dev, "parent", "1:", "classid", "1:20", "htb", "rate", "10gbit"},
			{"qdisc", "add", "dev", dev, "parent", "1:10", "handle", "10:", "tbf", "rate", rate, "burst", "64kb", "latency", "2s"},
			{"filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32", "match", "ip", "dst", f.addr(end[1]) + "/32", "flowid", "1:10"},
		} {
			if !tc(f.t, ns, args...) {
				f.t.Skip("this kernel lacks htb or tbf")
			}
		}
	}
}

// slowCPU starts host's processes in a CPU cgroup (v2, or v1's cpu
// hierarchy) allowed share of one CPU, or skips where this process may not
// make one. Periods of 20 ms, so that a call's millisecond of compute is
// slowed every time rather than run at full speed until a long period's
// quota is spent (the kernel's smallest quota is 1 ms: 5 % of 20 ms); v1
// takes the period before the quota, which its file names sort before.
func (f *fabric) slowCPU(host int, share float64) {
	quota := fmt.Sprint(int(share * 20000))
	dir := makeCgroup(f.t, fmt.Sprintf("collbench-cpu-%d-%d", os.Getpid(), host), "cpu", []cgroupLimit{
		{"/sys/fs/cgroup", map[string]string{"cpu.max": quota + " 20000"}},                                 // v2
		{"/sys/fs/cgroup/cpu", map[string]string{"cpu.cfs_period_us": "20000", "cpu.cfs_quota_us": quota}}, // v1
	})
	if f.cpu == nil {
		f.cpu = map[int]string{}
	}
	f.cpu[host] = dir
}

// health runs collbench health with per processes on every host, rank 0
// on host 0 hosting the rendezvous, and returns rank 0's exit code, its
// output and the record it wrote.
func (f *fabric) health(per int, args ...string) (int, string, *document.Health) {
	t := f.t
	t.Helper()
	dir := t.TempDir()
	rec := filepath.Join(dir, "health.json")
	env := []string{"MASTER_ADDR=" + f.addr(0), "MASTER_PORT=" + strconv.Itoa(29700+f.subnet), "COLLBENCH_TOKEN=fabric"}
	size := per * len(f.hosts)
	var procs []*rankProc
	for r := 0; r < size; r++ {
		argv := append([]string{"health", "-q"}, args...)
		if r == 0 {
			argv = append(argv, "-J", rec)
		}
		wrap := []string{"ip", "netns", "exec", f.hosts[r/per]}
		if cg, ok := f.cpu[r/per]; ok {
			wrap = append([]string{"sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cg}, wrap...)
		}
		procs = append(procs, startRank(t, r, size, env, wrap, argv...))
	}
	waitAll(t, 180*time.Second, procs...)
	for r, p := range procs[1:] {
		if p.code != procs[0].code {
			t.Fatalf("rank %d exited %d, rank 0 %d: %s", r+1, p.code, procs[0].code, p.err.String())
		}
	}
	return procs[0].code, procs[0].out.String() + procs[0].err.String(), readHealth(t, rec)
}

// readHealth reads a health record, held to docs/health.schema.json.
func readHealth(t *testing.T, path string) *document.Health {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no record: %v", err)
	}
	if err := schemacheck.Validate("../../docs/health.schema.json", data); err != nil {
		t.Fatalf("the record does not follow docs/health.schema.json: %v", err)
	}
	d, err := document.DecodeHealth(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	return d
}

// against counts the findings judged against ref (peers, expect, baseline).
func against(d *document.Health, ref string) int {
	n := 0
	for _, f := range d.Findings {
		if f.Against == ref {
			n++
		}
	}
	return n
}

// kinds lists the findings' kinds and nodes, e.g. "node[2]".
func kinds(d *document.Health) []string {
	var out []string
	for _, f := range d.Findings {
		out = append(out, fmt.Sprintf("%s%v", f.Kind, f.Nodes))
	}
	return out
}

// collbench health on four "hosts" joined through a bridge: a healthy
// fabric flags nothing, run after run; a host whose link is rate-limited
// is named as a node (not as its three links); one slow path between two
// hosts is named as that link and neither host.
//
// The hosts share two cores with the rest of the test run, and a process's
// share of them holds for a whole check, so a healthy pair can sit well
// below its peers in every pass. With the race detector's build and two
// busy loops beside it, the slowest healthy node pair lay 14 % below its
// peers' median in the median check and 42 % at worst (200 checks); the
// default criteria flagged none of 100 there, but have flagged one in CI.
// So a healthy fabric is judged at --min-drop 0.5, and the faults at 0.3:
// they take 96-98 % off the slow pairs and 59-79 % off the bisection's
// slow half, whose healthy other half is bound by the cores, not the
// links.
func TestHealthFabric(t *testing.T) {
	f := newFabric(t, 4)
	small := []string{"--pair-size", "1M", "--allreduce-size", "1M", "-n", "10", "-w", "2"}
	healthy, faulty := slices.Concat(small, []string{"--min-drop", "0.5"}), slices.Concat(small, []string{"--min-drop", "0.3"})
	t.Run("healthy", func(t *testing.T) {
		runs := 10
		if testing.Short() {
			runs = 2
		}
		for i := 0; i < runs; i++ {
			code, out, d := f.health(1, healthy...)
			if code != 0 || !d.Healthy || len(d.Inter) != 6 || d.Job == nil {
				t.Fatalf("run %d of %d: exit %d, findings %v, %d node pairs:\n%s", i+1, runs, code, kinds(d), len(d.Inter), out)
			}
		}
	})
	t.Run("slow host", func(t *testing.T) {
		f.slowHost(2, "50mbit")
		defer func() {
			tc(t, f.hosts[2], "qdisc", "del", "dev", "h2", "root")
			tc(t, f.sw, "qdisc", "del", "dev", "s2", "root")
		}()
		code, out, d := f.health(2, append(faulty, "--bisect")...)
		got := kinds(d)
		if code != 1 || !slices.Contains(got, "node[2]") || slices.ContainsFunc(got, func(k string) bool {
			return k != "node[2]" && k != "block[2 3]"
		}) {
			t.Fatalf("exit %d, findings %v; want exit 1, node[2] and at most the bisection's block[2 3]:\n%s", code, got, out)
		}
		if !slices.Contains(got, "block[2 3]") {
			t.Errorf("the bisection did not narrow the slowness to the half holding host 2: %v\n%s", got, out)
		}
		if len(d.Intra) != 4 || len(d.NodeAR) != 4 {
			t.Errorf("with 2 ranks per host: %d GPU pairs, %d node all-reduces; want 4 and 4", len(d.Intra), len(d.NodeAR))
		}
		t.Logf("\n%s", out)
	})
	t.Run("slow link", func(t *testing.T) {
		f.slowLink(0, 3, "50mbit")
		defer func() {
			tc(t, f.hosts[0], "qdisc", "del", "dev", "h0", "root")
			tc(t, f.hosts[3], "qdisc", "del", "dev", "h3", "root")
		}()
		code, out, d := f.health(1, faulty...)
		if got := kinds(d); code != 1 || !slices.Equal(got, []string{"link[0 3]"}) {
			t.Fatalf("exit %d, findings %v; want exit 1 and link[0 3] only:\n%s", code, got, out)
		}
		t.Logf("\n%s", out)
	})
}

// Under collbench launch, a check that flags something ends with exit 1
// worded as a finding, not as a rank that failed; a mistake every rank
// makes alike is printed once.
func TestHealthFindingUnderLaunch(t *testing.T) {
	selfEnv(t)
	code, out, errOut := runCLI("launch", "-n", "2", "health", "-q", "--pair-size", "64K", "--allreduce-size", "64K", "-n", "3", "-w", "1",
		"--expect", "intra=100000")
	if code != exitFailure || !strings.Contains(out, "Unhealthy") || strings.Contains(errOut, "failed first") ||
		!strings.Contains(errOut, "collbench launch: ranks 0-1 flagged something (exit 1), as printed above; nothing failed") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
	code, _, errOut = runCLI("launch", "-n", "4", "health", "--expect", "foo")
	if code != exitUsage || strings.Count(errOut, `--expect "foo": want level=GB/s`) != 1 ||
		!strings.Contains(errOut, "collbench launch: ranks 0-3 refused their arguments (exit 2), as printed above") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}

// collbench health on one host: the GPU-pair matrix of its 4 ranks, its
// all-reduce, the record, the heat map, and the record read back by
// report and plot.
func TestHealthLaunched(t *testing.T) {
	selfEnv(t)
	dir := t.TempDir()
	rec, heat := filepath.Join(dir, "h.json"), filepath.Join(dir, "h.svg")
	code, out, errOut := runCLI("launch", "-n", "4", "health", "-q", "--pair-size", "256K", "--allreduce-size", "256K", "-n", "5", "-w", "1",
		"-J", rec, "--heatmap", heat)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	for _, want := range []string{"# GPU pairs inside each node", "r0       r1       r2       r3", "# All-reduce inside each node", "Healthy: nothing flagged"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	d := readHealth(t, rec)
	if len(d.Nodes) != 1 || len(d.Intra) != 6 || len(d.NodeAR) != 1 || len(d.Inter) != 0 || d.Job != nil || !d.Healthy {
		t.Errorf("record: %d nodes, %d GPU pairs, %d node all-reduces, %d node pairs, job %v, healthy %v; want 1, 6, 1, 0, none, true",
			len(d.Nodes), len(d.Intra), len(d.NodeAR), len(d.Inter), d.Job, d.Healthy)
	}
	for _, p := range d.Intra {
		if len(p.Passes) != 2 || p.BusBW <= 0 || p.BusBW != slices.Max(p.Passes) {
			t.Errorf("pair %d-%d: busbw %g from passes %v; want the best of 2", p.A, p.B, p.BusBW, p.Passes)
		}
	}
	if svg, err := os.ReadFile(heat); err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("heat map: %v", err)
	}
	page := filepath.Join(dir, "r.html")
	if code, _, errOut := runCLI("report", rec, "-o", page); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	if html, _ := os.ReadFile(page); !bytes.Contains(html, []byte("health of 1 node(s), 4 rank(s)")) || !bytes.Contains(html, []byte("<svg")) {
		t.Errorf("the report page lacks the health section or its heat map")
	}
	if code, _, errOut := runCLI("plot", rec, "-o", filepath.Join(dir, "p.png")); code != 0 {
		t.Errorf("plot of a health record: exit %d: %s", code, errOut)
	}
}

func TestHealthBadInput(t *testing.T) {
	badRacks := filepath.Join(t.TempDir(), "racks")
	if err := os.WriteFile(badRacks, []byte("node01 r1 r2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--expect", "inter"}, "want level=GB/s"},
		{[]string{"--expect", "spine=4"}, "unknown level"},
		{[]string{"--expect", "inter=-1"}, "positive GB/s"},
		{[]string{"--expect", "intra=10", "--expect", "intra=12"}, "--expect gives intra twice (10 and 12 GB/s); give one"},
		{[]string{"--min-drop", "1.5"}, "--min-drop must be between 0 and 1"},
		{[]string{"--z", "0"}, "--z must be positive"},
		{[]string{"--passes", "0"}, "--passes must be at least 1"},
		{[]string{"-n", "0"}, "-n must be at least 1"},
		{[]string{"--pair-size", "-1"}, "sizes cannot be negative"},
		{[]string{"--format", "csv"}, "unknown --format"},
		{[]string{"--heatmap", "x.bmp"}, "cannot tell the image format"},
		{[]string{"--baseline", "/nonexistent/base.json"}, "/nonexistent/base.json"},
		{[]string{"--pair-size", "2"}, "--pair-size 2 is less than one float element (4 bytes)"},
		{[]string{"--allreduce-size", "1", "-d", "double"}, "--allreduce-size 1 is less than one double element (8 bytes)"},
		{[]string{"--z", "-1"}, "--z must be positive (got -1)"},
		{[]string{"-d", "complex"}, "-d"},
		{[]string{}, "needs two or more"},
		{[]string{"-g", "2", "--group-size", "2"}, "forms its own groups"},
		{[]string{"stray"}, "unexpected argument"},
		{[]string{"--racks", "/nonexistent/racks"}, "racks file: "},
		{[]string{"--racks", badRacks}, "racks file " + badRacks + ": line 1: want HOST RACK, got 3 word(s)"},
		{[]string{"--rack-pattern", "^r[0-9]+"}, "rack pattern: \"^r[0-9]+\" has 0 groups; want one"},
		{[]string{"--rack-pattern", "(r"}, "rack pattern: error parsing regexp"},
		{[]string{"--screen-seed", "seven"}, `--screen-seed "seven": want a whole number from 0 to 18446744073709551615`},
		{[]string{"--screen-seed", "-1"}, `--screen-seed "-1": want a whole number`},
		{[]string{"--screen-seed", "18446744073709551616"}, `--screen-seed "18446744073709551616": want a whole number`},
		{[]string{"--all-pairs", "--screen-seed", "3"}, "--all-pairs measures every pair: there is no screening for --screen-seed to draw"},
	} {
		code, out, errOut := runCLI(append([]string{"health", "--backend", "host"}, c.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one usage line with %q", c.args, code, out, errOut, c.want)
		}
	}
}

// A budget is a promise: iterations shrink to fit it, and what no longer
// fits is left out, said, and makes the check incomplete (exit 4), never
// healthy. Expectations and a baseline judge figures that have no peers.
func TestHealthBudgetAndExpectations(t *testing.T) {
	selfEnv(t)
	dir := t.TempDir()
	rec := filepath.Join(dir, "h.json")
	base := []string{"launch", "-n", "3", "health", "-q", "--pair-size", "256K", "--allreduce-size", "256K", "-w", "1", "-J", rec}
	read := func() *document.Health { return readHealth(t, rec) }
	// Spent before the first wave: nothing measured, exit 4.
	code, out, errOut := runCLI(append(base, "--budget", "1ms")...)
	if d := read(); code != exitTimeout || d.Healthy || d.Complete || len(d.Skipped) == 0 || !strings.Contains(out, "Incomplete") {
		t.Fatalf("--budget 1ms: exit %d, healthy %v, complete %v, skipped %q:\n%s%s", code, d.Healthy, d.Complete, d.Skipped, out, errOut)
	}
	// 100,000 iterations per pass would take minutes; 3 s of budget
	// trims them and the check completes.
	start := time.Now()
	code, out, errOut = runCLI(append(base, "--budget", "3s", "-n", "100000")...)
	took := time.Since(start)
	d := read()
	t.Logf("--budget 3s with -n 100000: %v, exit %d, skipped %q", took.Round(time.Millisecond), code, d.Skipped)
	// Exit 1 is a figure flagged on a busy machine (three processes on
	// two cores), which wins over an incomplete check: the check's job;
	// what is tested is that it ends.
	if code != 0 && code != exitTimeout && code != exitFailure || took > time.Minute || d.Healthy && !d.Complete {
		t.Fatalf("--budget 3s: exit %d after %v:\n%s%s", code, took, out, errOut)
	}
	// Expectations far above what a CPU does flag every figure against
	// them; a baseline does the same through its medians.
	code, out, _ = runCLI(append(base, "--expect", "intra=1000,node=1000")...)
	// Three processes on two busy cores may also differ among themselves
	// (a finding against the peers); each figure must be flagged against
	// the expectation.
	if d := read(); code != 1 || against(d, "expect") != len(d.Intra)+len(d.NodeAR) {
		t.Fatalf("--expect: exit %d, findings %v:\n%s", code, kinds(d), out)
	}
	d = read()
	for i := range d.Intra {
		d.Intra[i].BusBW *= 100
	}
	for i := range d.NodeAR {
		d.NodeAR[i].BusBW *= 100
	}
	var b bytes.Buffer
	if err := d.Encode(&b); err != nil {
		t.Fatal(err)
	}
	basePath := filepath.Join(dir, "base.json")
	if err := os.WriteFile(basePath, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(append(base, "--baseline", basePath)...)
	if d := read(); code != 1 || against(d, "baseline") != len(d.Intra)+len(d.NodeAR) || d.Config.Baseline != basePath {
		t.Fatalf("--baseline: exit %d, findings %v:\n%s", code, kinds(d), out)
	}
}

// Ranks that share a process are timed together, so their pairs are
// measured one at a time; pairs across processes still share a wave.
func TestHealthRanksPerProcess(t *testing.T) {
	selfEnv(t)
	rec := filepath.Join(t.TempDir(), "h.json")
	code, out, errOut := runCLI("launch", "-n", "2", "health", "-g", "2", "-q", "--pair-size", "256K", "--allreduce-size", "256K",
		"-n", "3", "-w", "1", "--passes", "1", "-J", rec)
	// Three calls of one pass are too few to judge by (exit 1 is a
	// figure flagged); what is tested is which pairs were measured.
	if code != 0 && code != exitFailure {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	d := readHealth(t, rec)
	if len(d.Nodes) != 1 || len(d.Nodes[0].Ranks) != 4 || len(d.Intra) != 6 || len(d.NodeAR) != 1 {
		t.Errorf("%d nodes, ranks %v, %d GPU pairs, %d node all-reduces; want 1 node of 4 ranks, 6 pairs, 1", len(d.Nodes), d.Nodes[0].Ranks, len(d.Intra), len(d.NodeAR))
	}
}

// mpirun (OpenMPI) starts collbench health as it starts a sweep: the
// ranks learn their place from OMPI_COMM_WORLD_*, and rank 0 prints the
// check of the one node they share.
func TestHealthUnderMpirun(t *testing.T) {
	mpirun := mpirunPath(t)
	rec := filepath.Join(t.TempDir(), "h.json")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := mpirunRanks(ctx, mpirun, 4, "health", "-q", "--pair-size", "256K", "--allreduce-size", "256K", "-n", "5", "-w", "1", "-J", rec)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// Exit 1 is a figure flagged on a busy machine: the check's job, not
	// a failure to run under mpirun.
	if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("mpirun health: %v\n%s%s", err, out.String(), errOut.String())
	}
	d := readHealth(t, rec)
	if len(d.Nodes) != 1 || len(d.Intra) != 6 || strings.Count(out.String(), "# Health:") != 1 {
		t.Errorf("%d nodes, %d GPU pairs, summaries printed %d; want 1, 6, 1:\n%s", len(d.Nodes), len(d.Intra),
			strings.Count(out.String(), "# Health:"), out.String())
	}
}

// A baseline measured at other settings is no expectation: a link's
// bandwidth at 4 KiB is not its bandwidth at 64 KiB. It is refused in one
// line naming both, before anything is measured; the same settings are
// taken.
func TestHealthBaselineSettings(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.json")
	if code, _, errOut := runCLI("health", "-g", "2", "--pair-size", "64K", "--allreduce-size", "64K", "--budget", "5s", "-J", base); code > 1 {
		t.Fatalf("baseline: exit %d: %s", code, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-g", "2", "--pair-size", "4K", "--allreduce-size", "64K"}, "pair messages of 65536 bytes; this check uses 4096"},
		{[]string{"-g", "2", "--pair-size", "64K", "--allreduce-size", "4K"}, "all-reduces of 65536 bytes; this check uses 4096"},
		{[]string{"-g", "2", "--pair-size", "64K", "--allreduce-size", "64K", "-d", "half"}, "float; this check uses half"},
		{[]string{"-g", "4", "--pair-size", "64K", "--allreduce-size", "64K"}, "ranks of 2; this check uses 4"},
		{[]string{"-g", "2", "--pair-size", "64K", "--allreduce-size", "64K", "--transport", "tcp"}, "the host backend's transport of auto; this check uses tcp"},
	} {
		code, _, errOut := runCLI(append([]string{"health", "--baseline", base}, c.args...)...)
		if code != exitUsage || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, %q; want one usage line with %q", c.args, code, errOut, c.want)
		}
	}
	if code, _, errOut := runCLI("health", "-g", "2", "--pair-size", "64K", "--allreduce-size", "64K", "--budget", "5s", "--baseline", base); code > 1 {
		t.Errorf("the same settings: exit %d: %s", code, errOut)
	}
}

// screenPerHost is the processes TestHealthScreening starts on each host:
// two, so that every host has GPU pairs and an all-reduce of its own, and
// its node pairs are two pairs of ranks at once; one under the race
// detector, whose sixteen instrumented processes on two cores would take
// minutes for what one a host checks as well.
var screenPerHost = map[bool]int{false: 2, true: 1}[raceEnabled]

// Screening on eight "hosts": three rounds of random partners (12 of the
// 28 node pairs) name nobody on a healthy fabric, a rate-limited host as
// that node, and a shaped path between two hosts the screening pairs as
// that link.
func TestHealthScreening(t *testing.T) {
	f := newFabric(t, 8)
	// One seed for every check, so that the link shaped below is one the
	// screening meets.
	args := []string{"--pair-size", "1M", "--allreduce-size", "1M", "-n", "10", "-w", "2", "--screen-rounds", "3", "--screen-seed", "7"}
	healthy, faulty := slices.Concat(args, []string{"--min-drop", "0.5"}), slices.Concat(args, []string{"--min-drop", "0.3"})
	code, out, d := f.health(screenPerHost, healthy...)
	if code != 0 || !d.Healthy || len(d.Inter) != 12 || d.Config.ScreenRounds != 3 {
		t.Fatalf("healthy: exit %d, findings %v, %d node pairs, screen_rounds %d:\n%s", code, kinds(d), len(d.Inter), d.Config.ScreenRounds, out)
	}
	if !strings.Contains(out, "screened: 3 rounds of random partners, seed 7, 12 of the 28 pairs (43 %; - not measured)\n#  a link outside them is not judged; checks with fresh seeds meet >99 % of links after 10, 100 % after 100") ||
		d.Config.ScreenSeed == nil || *d.Config.ScreenSeed != 7 {
		t.Errorf("the summary does not say the pairs were screened:\n%s", out)
	}
	link := d.Inter[len(d.Inter)-1] // a pair the screening measures
	t.Run("slow host", func(t *testing.T) {
		// An eighth of the healthy pairs' rate: slow beyond the scatter
		// of a loaded machine's healthy pairs (a race build beside two
		// busy loops spread them over 3.6×), and mostly not so slow that
		// its pairs stop after their first call (ten times their peers').
		var bws []float64
		for _, p := range d.Inter {
			bws = append(bws, p.BusBW)
		}
		slices.Sort(bws)
		f.slowHost(5, fmt.Sprintf("%dmbit", max(int(bws[len(bws)/2]*8000/8), 1)))
		defer func() {
			tc(t, f.hosts[5], "qdisc", "del", "dev", "h5", "root")
			tc(t, f.sw, "qdisc", "del", "dev", "s5", "root")
		}()
		code, out, d := f.health(screenPerHost, faulty...)
		if got := kinds(d); code != 1 || !slices.Equal(got, []string{"node[5]"}) {
			t.Fatalf("exit %d, findings %v; want exit 1 and node[5] only:\n%s", code, got, out)
		}
		// Confirmed with fresh partners before it was named (eight where
		// the fleet has them, here every other node), unless two of its
		// pairs were already far below their peers' and it was set aside.
		fresh := 0
		for _, p := range d.Confirmation {
			if p.A == 5 || p.B == 5 {
				fresh++
			}
		}
		setAside := slices.ContainsFunc(d.CutShort, func(c string) bool { return strings.Contains(c, "of "+d.Nodes[5].Name+": the rest left out") })
		if !setAside && (fresh != 7 || !strings.Contains(out, "suspects measured again (nodes with fresh partners")) {
			t.Errorf("node 5 measured again with %d partners (want 7), and not set aside:\n%s", fresh, out)
		}
	})
	t.Run("slow link", func(t *testing.T) {
		f.slowLink(link.A, link.B, "50mbit")
		defer func() {
			tc(t, f.hosts[link.A], "qdisc", "del", "dev", fmt.Sprintf("h%d", link.A), "root")
			tc(t, f.hosts[link.B], "qdisc", "del", "dev", fmt.Sprintf("h%d", link.B), "root")
		}()
		code, out, d := f.health(screenPerHost, faulty...)
		if got, want := kinds(d), fmt.Sprintf("link[%d %d]", link.A, link.B); code != 1 || !slices.Equal(got, []string{want}) {
			t.Fatalf("exit %d, findings %v; want exit 1 and %s only:\n%s", code, got, want, out)
		}
	})
}

// On eight single-rank hosts, a host whose link is a hundred times slower
// than the others' is named, and the check ends within twice the healthy
// check's time plus a minute: each of its pairs stops after its first call
// (far below its peers), the job's all-reduce through it gets one call,
// and the record says what was cut short. Without the cut, every pair
// through the host ran all its warm-up and timed calls of both passes at
// its speed, and the job's all-reduce too: more than six minutes where
// the healthy check took about six seconds.
func TestHealthSickHost(t *testing.T) {
	f := newFabric(t, 8)
	began := time.Now()
	code, out, d := f.health(1, "--min-drop", "0.5")
	healthy := time.Since(began)
	if code != 0 || !d.Healthy || len(d.CutShort) != 0 {
		t.Fatalf("healthy: exit %d, findings %v, cut short %v:\n%s", code, kinds(d), d.CutShort, out)
	}
	var bws []float64
	for _, p := range d.Inter {
		bws = append(bws, p.BusBW)
	}
	slices.Sort(bws)
	// send/recv's bus bandwidth is its rate each way, which tbf limits.
	rate := max(int(bws[len(bws)/2]*8000/100), 1)
	f.slowHost(5, fmt.Sprintf("%dmbit", rate))
	began = time.Now()
	code, out, d = f.health(1, "--min-drop", "0.5")
	took := time.Since(began)
	bound := 2*healthy + time.Minute
	t.Logf("healthy check %s (pairs at %.3f GB/s median); host 5 limited to %d Mbit/s: %s, bound %s\n%s",
		healthy.Round(time.Millisecond), bws[len(bws)/2], rate, took.Round(time.Millisecond), bound.Round(time.Second), out)
	if got := kinds(d); code != 1 || !slices.Contains(got, "node[5]") || slices.ContainsFunc(got, func(k string) bool { return k != "node[5]" }) {
		t.Errorf("exit %d, findings %v; want exit 1 and node[5] only", code, got)
	}
	if took > bound {
		t.Errorf("the check took %s with one host a hundred times slower; want at most twice the healthy %s plus a minute", took, healthy)
	}
	cutPairs, cutJob := 0, false
	for _, c := range d.CutShort {
		switch {
		case strings.HasPrefix(c, "node pairs ") && strings.Contains(c, d.Nodes[5].Name):
			cutPairs++
		case strings.HasPrefix(c, "job all-reduce") && strings.Contains(c, d.Nodes[5].Name):
			cutJob = true
		}
	}
	if cutPairs == 0 || !cutJob || !strings.Contains(out, "# cut short: node pairs") {
		t.Errorf("the record says it cut short %d of host 5's pairs and the job's all-reduce %v; want some and true: %q", cutPairs, cutJob, d.CutShort)
	}
}

// The arrival run on four hosts: every process's share of the job's
// all-reduce is recorded, nobody is named on a healthy fabric, and a host
// whose processes get a twentieth of a CPU reaches the calls last, call after
// call, and is named a straggler. Its slow CPU may slow its links too, so
// other findings may name it or a link of it, but none leaves it out.
func TestHealthStraggler(t *testing.T) {
	tier.System(t, "a straggler process")
	f := newFabric(t, 4)
	args := []string{"--pair-size", "256K", "--allreduce-size", "256K", "-n", "5", "-w", "1", "--min-drop", "0.5"}
	code, out, d := f.health(1, args...)
	if code != 0 || !d.Healthy || d.Arrivals == nil || len(d.Arrivals.Procs) != 4 || d.Arrivals.Calls != 20 {
		t.Fatalf("healthy: exit %d, findings %v, arrivals %+v:\n%s", code, kinds(d), d.Arrivals, out)
	}
	last := 0
	for _, p := range d.Arrivals.Procs {
		last += p.Last
		if p.WorkUs <= 0 || p.Node != p.Proc {
			t.Errorf("process %+v", p)
		}
	}
	if last != 20 || len(d.Setup) == 0 {
		t.Errorf("%d last arrivals over 20 calls; communicator set-up %+v", last, d.Setup)
	}
	// A twentieth of a CPU: under the race detector, whose processes need
	// several times the CPU, the run took about as long as waitAll's bound
	// (3 minutes), so there the host gets a fifth, still late every call.
	share := 0.05
	if raceEnabled {
		share = 0.2
	}
	f.slowCPU(2, share)
	code, out, d = f.health(1, args...)
	named := false
	for _, x := range d.Findings {
		named = named || x.Kind == "straggler" && slices.Equal(x.Nodes, []int{2})
		if !slices.Contains(x.Nodes, 2) || x.Kind == "straggler" && len(x.Nodes) != 1 {
			t.Errorf("a finding that is not about host 2: %+v", x)
		}
	}
	if code != 1 || !named {
		t.Fatalf("exit %d, findings %v; want a straggler on node 2:\n%s", code, kinds(d), out)
	}
	t.Logf("%s", out[strings.Index(out, "FLAGGED"):])
}

// slowUplink limits what hosts send to every host outside them, as a
// rack's slow uplink would: an htb class with a tbf under it that a u32
// filter sends each outside address to; traffic among hosts passes.
func (f *fabric) slowUplink(hosts []int, rate string) {
	for _, h := range hosts {
		ns, dev := f.hosts[h], fmt.Sprintf("h%d", h)
		cmds := [][]string{
			{"qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "20"},
			{"class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb", "rate", "10gbit"},
			{"class", "add", "dev", dev, "parent", "1:", "classid", "1:20", "htb", "rate", "10gbit"},
			{"qdisc", "add", "dev", dev, "parent", "1:10", "handle", "10:", "tbf", "rate", rate, "burst", "64kb", "latency", "2s"},
		}
		for o := range f.hosts {
			if !slices.Contains(hosts, o) {
				cmds = append(cmds, []string{"filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32", "match", "ip", "dst", f.addr(o) + "/32", "flowid", "1:10"})
			}
		}
		for _, args := range cmds {
			if !tc(f.t, ns, args...) {
				f.t.Skip("this kernel lacks htb or tbf")
			}
		}
	}
}

// Eight hosts in four racks of two (a --racks file): the screening meets
// partners inside and across racks in turn and names nobody on a healthy
// fabric; when one rack's traffic to the other racks is limited (its
// uplink), that rack is named, and neither its hosts nor their links.
func TestHealthRackUplink(t *testing.T) {
	f := newFabric(t, 8)
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	var labels strings.Builder
	for i := range f.hosts {
		fmt.Fprintf(&labels, "%s@%s r%d\n", host, f.addr(i), i/2)
	}
	racks := filepath.Join(t.TempDir(), "racks")
	if err := os.WriteFile(racks, []byte(labels.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--pair-size", "1M", "--allreduce-size", "1M", "-n", "10", "-w", "2", "--screen-rounds", "6", "--racks", racks}
	code, out, d := f.health(1, append(args, "--min-drop", "0.5")...)
	if code != 0 || !d.Healthy || d.Config.Racks != 4 || d.Nodes[7].Rack != "r3" {
		t.Fatalf("healthy: exit %d, findings %v, racks %d:\n%s", code, kinds(d), d.Config.Racks, out)
	}
	if !strings.Contains(out, "inside and across 4 racks in turn") || !strings.Contains(out, "rack r3") {
		t.Errorf("the summary does not give the racks:\n%s", out)
	}
	f.slowUplink([]int{6, 7}, "50mbit")
	code, out, d = f.health(1, append(args, "--min-drop", "0.3")...)
	if got := kinds(d); code != 1 || !slices.Equal(got, []string{"rack[6 7]"}) {
		t.Fatalf("exit %d, findings %v; want exit 1 and rack[6 7] only:\n%s", code, got, out)
	}
	t.Logf("%s", out[strings.Index(out, "FLAGGED"):])
}

// SIGTERM while the check waits for a FIFO racks file's writer is an
// interruption (exit 130), not a bad racks file.
func TestHealthInterruptedReadingRacks(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "racks")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	p := startRank(t, 0, 1, nil, nil, "health", "-g", "2", "--racks", fifo)
	waitBlockedOn(t, p, "wait_for_partner") // in the wait for the FIFO's writer
	p.cmd.Process.Signal(syscall.SIGTERM)
	waitAll(t, 10*time.Second, p)
	if p.code != exitSignal {
		t.Errorf("exit %d, want %d; stderr %q", p.code, exitSignal, p.err.String())
	}
}

// A racks file that names no rack for a node turns rack judgement off,
// and the check says so, naming the node, in its table and its record.
func TestHealthRacksMissingANode(t *testing.T) {
	dir := t.TempDir()
	racks, record := filepath.Join(dir, "racks"), filepath.Join(dir, "health.json")
	if err := os.WriteFile(racks, []byte("some-other-host r1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI("health", "-g", "2", "--pair-size", "64K", "--allreduce-size", "64K", "-n", "3", "-w", "1",
		"--racks", racks, "-J", record)
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	want := "racks not judged: no rack is known for 1 of 1 nodes (" + host + "), and racks are judged only when every node has one"
	if code != 0 || !strings.Contains(out, "# note: "+want) {
		t.Errorf("exit %d, want 0 and the note %q\n%s\n%s", code, want, out, errOut)
	}
	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemacheck.Validate("../../docs/health.schema.json", data); err != nil || !strings.Contains(string(data), want) {
		t.Errorf("the record: %v\n%s", err, data)
	}
}

// A check cut short by a lost rank still writes its record, and the
// record says why it ended in its errors.
func TestHealthRecordOfALostRank(t *testing.T) {
	selfEnv(t)
	record := filepath.Join(t.TempDir(), "health.json")
	mark := fmt.Sprintf("HEALTH_LOST=%d", os.Getpid())
	t.Setenv("HEALTH_LOST", strconv.Itoa(os.Getpid()))
	signalWhenFound(t, 100*time.Millisecond, 100, syscall.SIGKILL, "health", mark, "RANK=2")                                               // a second of CPU: into the measurement, however loaded the machine
	code, _, errOut := runCLI("launch", "-n", "3", "--", "health", "--pair-size", "4M", "--allreduce-size", "4M", "-n", "3000", "-w", "1", // seconds a figure: killed well before its end
		"-J", record)
	data, err := os.ReadFile(record)
	if code == 0 || err != nil {
		t.Fatalf("exit %d, record %v\n%s", code, err, errOut)
	}
	var d document.Health
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Errors) != 1 || !strings.Contains(d.Errors[0], "rank 2") || d.Healthy {
		t.Errorf("errors %q, healthy %v; want the lost rank named", d.Errors, d.Healthy)
	}
	if err := schemacheck.Validate("../../docs/health.schema.json", data); err != nil {
		t.Errorf("the record does not follow docs/health.schema.json: %v", err)
	}
}
