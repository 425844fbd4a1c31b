package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/cluster"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/tier"
	"github.com/collbench/collbench/launch"
)

// asMain makes this test binary act as collbench when a test starts it as
// a rank (directly, through collbench launch or through mpirun).
const asMain = "COLLBENCH_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// selfEnv lets ranks started from this process run collbench's main.
func selfEnv(t *testing.T) {
	t.Setenv(asMain, "1")
}

// rankProc is one rank started by a test.
type rankProc struct {
	cmd      *exec.Cmd
	out, err syncBuffer
	done     chan struct{}
	code     int
}

// syncBuffer is a bytes.Buffer safe to read while a process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startRank runs this binary as rank of a torchrun-style job of size
// ranks; wrap, if given, prefixes the command (ip netns exec …).
func startRank(t *testing.T, rank, size int, env []string, wrap []string, args ...string) *rankProc {
	t.Helper()
	argv := append(append(append([]string{}, wrap...), os.Args[0]), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), asMain+"=1", fmt.Sprintf("RANK=%d", rank), fmt.Sprintf("WORLD_SIZE=%d", size),
		fmt.Sprintf("LOCAL_RANK=%d", rank), fmt.Sprintf("LOCAL_WORLD_SIZE=%d", size))
	cmd.Env = append(cmd.Env, env...)
	if len(wrap) == 0 {
		handOver(cmd, rank, env)
	}
	p := &rankProc{cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.out, &p.err
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		cmd.Wait()
		p.code = launch.ExitStatus(cmd, nil)
		close(p.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
	})
	return p
}

// jobEnv is a fresh rendezvous on loopback and a token.
// jobEnv is a job's rendezvous on loopback. The port stays bound by this
// process and is handed to rank 0 open when startRank starts it, as
// collbench launch does, so no other test can take it in between.
func jobEnv(t *testing.T) []string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.(*net.TCPListener).File()
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	heldMu.Lock()
	held[port] = f
	heldMu.Unlock()
	t.Cleanup(func() {
		heldMu.Lock()
		delete(held, port)
		heldMu.Unlock()
		f.Close()
	})
	return []string{"MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port, "COLLBENCH_TOKEN=test-" + t.Name()}
}

// held are the rendezvous listeners jobEnv keeps for rank 0, by port.
var (
	heldMu sync.Mutex
	held   = map[string]*os.File{}
)

// handOver gives rank 0 of a job from jobEnv its rendezvous listener.
func handOver(cmd *exec.Cmd, rank int, env []string) {
	if rank != 0 {
		return
	}
	for _, kv := range env {
		if port, ok := strings.CutPrefix(kv, "MASTER_PORT="); ok {
			heldMu.Lock()
			f := held[port]
			heldMu.Unlock()
			if f != nil {
				cmd.ExtraFiles = []*os.File{f}
				cmd.Env = append(cmd.Env, cluster.ListenerFDVar+"=3")
			}
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitAll waits for the ranks, failing the test past bound: nothing may
// hang.
func waitAll(t *testing.T, bound time.Duration, procs ...*rankProc) time.Duration {
	t.Helper()
	start := time.Now()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for i, p := range procs {
		select {
		case <-p.done:
		case <-timer.C:
			t.Fatalf("rank %d still running after %v\nstderr: %s", i, bound, p.err.String())
		}
	}
	return time.Since(start)
}

// checkTable asserts a table with rows, every row correct.
func checkTable(t *testing.T, what, out string) {
	t.Helper()
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			if !rowRE.MatchString(line) {
				t.Errorf("%s: row not in nccl-tests layout: %q", what, line)
			}
			rows++
		}
	}
	if rows == 0 || !strings.Contains(out, "# Out of bounds values : 0 OK") {
		t.Errorf("%s: no rows or wrong results:\n%s", what, out)
	}
}

// collbench launch -n 4 runs every collective across four processes with
// every result right; only rank 0 prints the table, with every rank in
// its device list.
func TestLaunchEveryCollective(t *testing.T) {
	tier.System(t, "every collective launched")
	selfEnv(t)
	for _, c := range bench.Collectives {
		code, out, errOut := runCLI("launch", "-n", "4", "--", c.Name, "-b", "8", "-e", "64K", "-f", "8", "-n", "2", "-r", "-1")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", c.Name, code, errOut)
		}
		checkTable(t, c.Name, out)
		for r := 0; r < 4; r++ {
			if !strings.Contains(out, fmt.Sprintf("#  Rank %2d Group  0", r)) {
				t.Errorf("%s: rank %d missing from the device list:\n%s", c.Name, r, out)
			}
		}
		if !strings.Contains(out, "# Spread across processes") || strings.Count(out, "# Collective test starting") != 1 {
			t.Errorf("%s: want one table with the spread block:\n%s", c.Name, out)
		}
	}
}

// Groups across processes: concurrent strided pairs report each group;
// an isolated consecutive group runs alone.
func TestLaunchGroups(t *testing.T) {
	selfEnv(t)
	for _, tc := range []struct {
		args   []string
		groups int
	}{
		{[]string{"--group-size", "2", "--layout", "strided"}, 2},
		{[]string{"--group-size", "2", "--isolated"}, 0},
		{[]string{"--group-size", "1"}, 4},
	} {
		args := append([]string{"launch", "-n", "4", "allreduce", "-b", "1K", "-e", "64K", "-f", "8", "-n", "2", "--format", "json"}, tc.args...)
		code, out, errOut := runCLI(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", tc.args, code, errOut)
		}
		var doc document.Run
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, out)
		}
		if !doc.OutOfBounds.Okay || len(doc.Results) == 0 {
			t.Fatalf("%v: wrong or no results: %+v", tc.args, doc.OutOfBounds)
		}
		r := doc.Results[0].OutOfPlace
		if len(r.Groups) != tc.groups || len(r.ProcTimes) != 4 {
			t.Errorf("%v: %d groups and %d process times; want %d and 4", tc.args, len(r.Groups), len(r.ProcTimes), tc.groups)
		}
		if tc.groups == 0 && (r.ProcTimes[2] != nil || r.ProcTimes[0] == nil) {
			t.Errorf("isolated: ranks 2 and 3 should sit out: %v", r.ProcTimes)
		}
		if doc.Config.NProcs != 4 {
			t.Errorf("config nprocs %d", doc.Config.NProcs)
		}
	}
}

// --transport picks how ranks of this host meet: two processes of two
// ranks each, so that links join ranks within a process and across
// processes; every result is right and every device line names the
// transport. An unknown transport is a usage error.
func TestLaunchTransports(t *testing.T) {
	selfEnv(t)
	for _, tc := range []struct{ transport, via string }{
		{"auto", "host CPU (shared memory)"}, {"shm", "host CPU (shared memory)"}, {"tcp", "host CPU (TCP loopback)"},
	} {
		code, out, errOut := runCLI("launch", "-n", "2", "allreduce", "-g", "2", "--transport", tc.transport, "-b", "1K", "-e", "1M", "-f", "32", "-n", "2")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", tc.transport, code, errOut)
		}
		checkTable(t, tc.transport, out)
		if n := strings.Count(out, tc.via); n != 4 {
			t.Errorf("%s: %d of 4 ranks say %q:\n%s", tc.transport, n, tc.via, out)
		}
	}
	code, _, errOut := runCLI("allreduce", "--transport", "udp", "-b", "8", "-e", "8")
	if code != exitUsage || !strings.Contains(errOut, "--transport: unknown transport \"udp\" (want auto, tcp or shm)") {
		t.Errorf("--transport udp: exit %d, %q", code, errOut)
	}
}

// Several ranks per process (-g 2) in several processes.
func TestLaunchSeveralRanksPerProcess(t *testing.T) {
	selfEnv(t)
	code, out, errOut := runCLI("launch", "-n", "2", "reducescatter", "-g", "2", "-b", "1K", "-e", "16K", "-f", "4", "-n", "2")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	checkTable(t, "-g 2", out)
	if !strings.Contains(out, "ranks 2-3") && !strings.Contains(out, "ranks 0-1") {
		t.Errorf("processes not named by their ranks:\n%s", out)
	}
}

// mpirunPath is OpenMPI's mpirun; the test fails without it in CI (which
// installs it) and is skipped elsewhere.
func mpirunPath(t *testing.T) string {
	t.Helper()
	tier.System(t, "OpenMPI's mpirun")
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("mpirun is missing; .ci/run installs openmpi-bin")
		}
		t.Skip("mpirun not installed (apt-get install openmpi-bin)")
	}
	return mpirun
}

// mpirunRanks is mpirun starting np ranks of this test binary as
// collbench with args, allowed to run as root and on more ranks than
// cores.
func mpirunRanks(ctx context.Context, mpirun string, np int, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, mpirun, append([]string{"--oversubscribe", "-np", strconv.Itoa(np), "-x", asMain + "=1", os.Args[0]}, args...)...)
	cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_btl_vader_single_copy_mechanism=none")
	return cmd
}

// mpirun (OpenMPI) starts the ranks: collbench reads OMPI_COMM_WORLD_* and
// needs no MPI library.
func TestMpirunEveryCollective(t *testing.T) {
	mpirun := mpirunPath(t)
	for _, c := range bench.Collectives {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := mpirunRanks(ctx, mpirun, 4, c.Name, "-b", "8", "-e", "64K", "-f", "8", "-n", "2", "-r", "-1")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.Name, err, errOut.String())
		}
		checkTable(t, "mpirun "+c.Name, out.String())
		if !strings.Contains(out.String(), "from openmpi") {
			t.Errorf("%s: job not read from OpenMPI's environment:\n%s", c.Name, out.String())
		}
	}
}

// Faults: a rank killed, stopped, or never started. Every other rank
// exits non-zero within the deadline plus a few seconds, naming the rank,
// with the exit code of what found it (1 for a lost rank, 4 for a
// deadline), and rank 0's results file blames the same rank. -T bounds
// one short batch, so a loaded machine does not look like a hang.
func TestFaults(t *testing.T) {
	tier.System(t, "faults injected into launched jobs")
	const deadline = 3 // -T seconds
	sweep := []string{"allreduce", "-b", "64K", "-e", "1M", "-f", "2", "-n", "2", "-N", "0", "-T", fmt.Sprint(deadline)}
	cases := []struct {
		name  string
		fault func(t *testing.T, victim *rankProc)
		want  string
		code  int
	}{
		{"kill -9", func(t *testing.T, v *rankProc) { v.cmd.Process.Signal(syscall.SIGKILL) }, "rank 2 left the job", exitFailure},
		{"SIGSTOP", func(t *testing.T, v *rankProc) { v.cmd.Process.Signal(syscall.SIGSTOP) }, "rank 2 stopped responding", exitTimeout},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := jobEnv(t)
			results := filepath.Join(t.TempDir(), "r.json")
			var procs []*rankProc
			for r := 0; r < 4; r++ {
				args := sweep
				if r == 0 {
					args = append(append([]string{}, sweep...), "-J", results)
				}
				procs = append(procs, startRank(t, r, 4, env, nil, args...))
			}
			waitFirstRow(t, procs[0])
			c.fault(t, procs[2])
			defer procs[2].cmd.Process.Kill()
			others := []*rankProc{procs[0], procs[1], procs[3]}
			took := waitAll(t, (deadline+10)*time.Second, others...)
			for _, p := range others {
				if p.code != c.code || !strings.Contains(p.err.String(), c.want) {
					t.Errorf("exit %d, stderr %q; want exit %d naming %q", p.code, p.err.String(), c.code, c.want)
				}
			}
			if errs := resultErrors(t, results); !strings.Contains(errs, c.want) {
				t.Errorf("rank 0's results file blames %q; want %q as stderr does", errs, c.want)
			}
			t.Logf("the other ranks stopped %v after the fault", took.Round(time.Millisecond))
		})
	}
	t.Run("rank 0 stopped, then resumed", func(t *testing.T) {
		env := jobEnv(t)
		results := filepath.Join(t.TempDir(), "r.json")
		var procs []*rankProc
		for r := 0; r < 3; r++ {
			args := sweep
			if r == 0 {
				args = append(append([]string{}, sweep...), "-J", results)
			}
			procs = append(procs, startRank(t, r, 3, env, nil, args...))
		}
		waitFirstRow(t, procs[0])
		procs[0].cmd.Process.Signal(syscall.SIGSTOP)
		waitAll(t, (deadline+10)*time.Second, procs[1], procs[2])
		want := "rank 0 (hosting the rendezvous) stopped responding"
		for _, p := range procs[1:] {
			if p.code != exitTimeout || !strings.Contains(p.err.String(), want) {
				t.Errorf("exit %d, stderr %q; want exit %d naming %q", p.code, p.err.String(), exitTimeout, want)
			}
		}
		procs[0].cmd.Process.Signal(syscall.SIGCONT)
		waitAll(t, (deadline+10)*time.Second, procs[0])
		errs := resultErrors(t, results)
		if !strings.Contains(errs, want) || strings.Contains(errs, "finished while the others") {
			t.Errorf("rank 0, resumed, records %q; want the others' finding %q", errs, want)
		}
	})
	t.Run("several ranks per process", func(t *testing.T) {
		env := jobEnv(t)
		args := append(append([]string{}, sweep...), "-g", "2")
		var procs []*rankProc
		for r := 0; r < 3; r++ {
			procs = append(procs, startRank(t, r, 3, env, nil, args...))
		}
		waitFirstRow(t, procs[0])
		procs[1].cmd.Process.Signal(syscall.SIGKILL)
		waitAll(t, (deadline+10)*time.Second, procs[0], procs[2])
		for _, p := range []*rankProc{procs[0], procs[2]} {
			if !strings.Contains(p.err.String(), "process 1 (ranks 2-3) left the job") {
				t.Errorf("stderr %q; want the process named with its ranks", p.err.String())
			}
		}
		if !strings.Contains(procs[2].err.String(), "collbench allreduce: process 2 (ranks 4-5): ") {
			t.Errorf("process 2 does not name itself with its ranks: %q", procs[2].err.String())
		}
	})
	t.Run("rank 0 never arrives", func(t *testing.T) {
		env := []string{"MASTER_ADDR=127.0.0.1", fmt.Sprintf("MASTER_PORT=%d", freePort(t)), "COLLBENCH_TOKEN=test-" + t.Name()}
		p := startRank(t, 1, 2, env, nil, sweep...)
		waitAll(t, (deadline+10)*time.Second, p)
		// A start-up past its deadline is a timeout (exit 4), as README says.
		if p.code != exitTimeout || !strings.Contains(p.err.String(), "unreachable until the start-up deadline (rank 0 hosts it") {
			t.Errorf("exit %d, want %d; stderr %q", p.code, exitTimeout, p.err.String())
		}
	})
	t.Run("never arrives", func(t *testing.T) {
		env := jobEnv(t)
		var procs []*rankProc
		for r := 0; r < 3; r++ {
			procs = append(procs, startRank(t, r, 4, env, nil, sweep...))
		}
		waitAll(t, (deadline+10)*time.Second, procs...)
		for _, p := range procs {
			if p.code != exitTimeout || !strings.Contains(p.err.String(), "rank 3 never joined") {
				t.Errorf("exit %d, stderr %q; want exit %d naming rank 3", p.code, p.err.String(), exitTimeout)
			}
		}
	})
}

// A launched rank that is stopped is named by the launcher as what held
// the job up, not the first rank that gave up on it.
func TestLaunchNamesStoppedRank(t *testing.T) {
	selfEnv(t)
	cmd := exec.Command(os.Args[0], "launch", "-n", "3", "--grace", "1", "--", "allreduce", "-b", "64K", "-e", "1M", "-n", "2", "-N", "0", "-T", "3")
	cmd.Env = append(os.Environ(), asMain+"=1")
	var out, errOut syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	deadline := time.Now().Add(30 * time.Second)
	for !rowRE.MatchString(lastRow(out.String())) {
		if time.Now().After(deadline) {
			t.Fatalf("no row: %s", errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	victim := launchedRank(t, cmd.Process.Pid, 2)
	syscall.Kill(victim, syscall.SIGSTOP)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		syscall.Kill(victim, syscall.SIGKILL)
		t.Fatalf("launch did not end: %s", errOut.String())
	}
	if !strings.Contains(errOut.String(), "collbench launch: rank 2 was stopped") {
		t.Errorf("launch does not name the stopped rank:\n%s", errOut.String())
	}
}

// lastRow is the last line of text that looks like a table row, or "".
func lastRow(text string) string {
	last := ""
	for _, line := range strings.Split(text, "\n") {
		if rowRE.MatchString(line) {
			last = line
		}
	}
	return last
}

// launchedRank finds the pid of the child of launcher that runs rank.
func launchedRank(t *testing.T, launcher, rank int) int {
	t.Helper()
	// Each thread lists the children it started.
	lists, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", launcher))
	var kids []string
	for _, l := range lists {
		b, _ := os.ReadFile(l)
		kids = append(kids, strings.Fields(string(b))...)
	}
	if len(kids) == 0 {
		t.Skip("cannot list the launcher's children")
	}
	for _, f := range kids {
		pid, _ := strconv.Atoi(f)
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv == fmt.Sprintf("RANK=%d", rank) {
				return pid
			}
		}
	}
	t.Fatalf("no child of %d runs rank %d", launcher, rank)
	return 0
}

// resultErrors reads the errors a results file recorded.
func resultErrors(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no results file: %v", err)
	}
	var doc struct {
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return strings.Join(doc.Errors, " | ")
}

// waitFirstRow waits until rank 0 has printed a result row, so a fault
// lands mid-sweep.
func waitFirstRow(t *testing.T, p *rankProc) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(p.out.String(), "\n") {
			if rowRE.MatchString(line) {
				return
			}
		}
		select {
		case <-p.done:
			t.Fatalf("rank 0 ended early (exit %d): %s", p.code, p.err.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatal("no result row within 30s")
}

// Strangers at the rendezvous port — garbage bytes and a wrong token —
// are refused, logged by rank 0, and the run completes.
func TestRendezvousStranger(t *testing.T) {
	env := jobEnv(t)
	port := strings.TrimPrefix(env[1], "MASTER_PORT=")
	var procs []*rankProc
	procs = append(procs, startRank(t, 0, 3, env, nil, "allgather", "-b", "8", "-e", "1M", "-f", "4", "-n", "5"))
	addr := net.JoinHostPort("127.0.0.1", port)
	var conn net.Conn
	for i := 0; i < 200 && conn == nil; i++ {
		conn, _ = net.Dial("tcp", addr)
		time.Sleep(10 * time.Millisecond)
	}
	if conn == nil {
		t.Fatal("rank 0 never opened the rendezvous")
	}
	conn.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	defer conn.Close()
	wrong := append([]string{}, env...)
	wrong[2] = "COLLBENCH_TOKEN=guess"
	intruder := startRank(t, 1, 3, wrong, nil, "allgather", "-b", "8", "-e", "8")
	waitAll(t, 30*time.Second, intruder)
	for r := 1; r < 3; r++ {
		procs = append(procs, startRank(t, r, 3, env, nil, "allgather", "-b", "8", "-e", "1M", "-f", "4", "-n", "5"))
	}
	waitAll(t, 60*time.Second, procs...)
	for r, p := range procs {
		if p.code != 0 {
			t.Errorf("rank %d: exit %d: %s", r, p.code, p.err.String())
		}
	}
	checkTable(t, "after strangers", procs[0].out.String())
	if intruder.code == 0 || !strings.Contains(intruder.err.String(), "refused") {
		t.Errorf("intruder: exit %d, %q", intruder.code, intruder.err.String())
	}
	log := procs[0].err.String()
	for _, want := range []string{"wrong job token", "malformed"} {
		if !strings.Contains(log, want) {
			t.Errorf("rank 0's log lacks %q: %q", want, log)
		}
	}
}

// scripts/mpirun.sh runs as documented, with a hostfile of this host.
func TestMpirunScript(t *testing.T) {
	if _, err := exec.LookPath("mpirun"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("mpirun is missing; .ci/run installs openmpi-bin")
		}
		t.Skip("mpirun not installed")
	}
	hostfile := t.TempDir() + "/hosts"
	if err := os.WriteFile(hostfile, []byte("# test\nlocalhost slots=4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "../../scripts/mpirun.sh", hostfile, "4", "alltoall", "-b", "1K", "-e", "64K", "-f", "8")
	cmd.Env = append(os.Environ(), "COLLBENCH="+os.Args[0], "MPIRUN_ARGS=--oversubscribe -x "+asMain+"=1",
		fmt.Sprintf("MASTER_PORT=%d", freePort(t)), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	// Variables the script passes on that are not set here: mpirun
	// warned of each.
	for _, v := range []string{"LD_LIBRARY_PATH", "NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA"} {
		cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, v+"=") })
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut.String())
	}
	if strings.Contains(errOut.String(), "Warning") {
		t.Errorf("mpirun warned:\n%s", errOut.String())
	}
	checkTable(t, "scripts/mpirun.sh", string(out))
	if !strings.Contains(string(out), "4 processes × 1 rank(s) from openmpi, rendezvous localhost:") {
		t.Errorf("unexpected job line:\n%s", out)
	}
}

// Ctrl-C or SIGTERM to collbench launch reaches every rank: all stop
// cleanly, and launch exits 130, as its ranks do, whichever signal it was.
func TestLaunchInterrupt(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		p := startRank(t, 0, 1, nil, nil, "launch", "-n", "3", "allreduce", "-b", "64K", "-e", "8M", "-f", "2", "-N", "0")
		waitFirstRow(t, p)
		p.cmd.Process.Signal(sig)
		waitAll(t, 15*time.Second, p)
		if p.code != exitSignal {
			t.Errorf("%v: launch exit %d, want %d; stderr %q", sig, p.code, exitSignal, p.err.String())
		}
		if n := strings.Count(p.err.String(), "(exit 130)"); n != 3 {
			t.Errorf("%v: want all 3 ranks to exit 130: %q", sig, p.err.String())
		}
		// The operator stopped it: no rank is blamed.
		if !strings.Contains(p.err.String(), "collbench launch: stopped by "+sig.String()) || strings.Contains(p.err.String(), "failed first") {
			t.Errorf("%v: launch blames a rank for an interrupt: %q", sig, p.err.String())
		}
	}
}

// When rank 0 ends before it serves the rendezvous, the other ranks of a
// launch end too, promptly, by themselves, and say why: a refused output
// (rank 0 exits at once; launch keeps no copy of the listener that would
// queue the others unanswered), or a rendezvous port another program holds
// and never answers on (the launcher's SIGTERM interrupts the wait). No
// rank is left for SIGKILL (exit 137).
func TestLaunchRendezvousGone(t *testing.T) {
	t.Run("rank 0 refuses its output", func(t *testing.T) {
		p := startRank(t, 0, 1, nil, nil, "launch", "-n", "4", "--grace", "20", "--", "allreduce", "-b", "8", "-e", "8",
			"-J", "/nonexistent/x.json")
		took := waitAll(t, 15*time.Second, p)
		errs := p.err.String()
		if p.code != exitUsage || !strings.Contains(errs, "[rank 0] collbench allreduce: cannot write /nonexistent/x.json") ||
			strings.Contains(errs, "exit 137") || took > 10*time.Second {
			t.Errorf("exit %d after %v, stderr:\n%s", p.code, took, errs)
		}
		for r := 1; r < 4; r++ {
			if !strings.Contains(errs, fmt.Sprintf("[rank %d] collbench allreduce: ", r)) || !strings.Contains(errs, "rank 0, which hosts it, has exited") {
				t.Errorf("rank %d does not say rank 0 has gone:\n%s", r, errs)
			}
		}
	})
	t.Run("port held by another program", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close() // connections queue; nothing answers
		p := startRank(t, 0, 1, nil, nil, "launch", "-n", "3", "--grace", "1", "--rendezvous", ln.Addr().String(), "--",
			"allreduce", "-b", "8", "-e", "8")
		took := waitAll(t, 20*time.Second, p)
		errs := p.err.String()
		if p.code == 0 || strings.Contains(errs, "exit 137") || !strings.Contains(errs, "interrupted while waiting for the rendezvous") {
			t.Errorf("exit %d after %v, stderr:\n%s", p.code, took, errs)
		}
	})
}

// Ranks started with different settings under the env launcher (a
// per-node wrapper, another version) end at the rendezvous, every one of
// them, exit 2, in one line that names the rank and the setting, within
// seconds; nothing waits for ever.
func TestRanksWithOtherSettingsRefused(t *testing.T) {
	dir := t.TempDir()
	racksA, racksB := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	os.WriteFile(racksA, []byte("r0 h0\n"), 0o644)
	os.WriteFile(racksB, []byte("r0 h0\nr1 h1\n"), 0o644)
	tunerA, tunerB := filepath.Join(dir, "a.conf"), filepath.Join(dir, "b.conf")
	os.WriteFile(tunerA, []byte("allreduce,0,65536,ring,64K,-1,-1,-1\n"), 0o644)
	os.WriteFile(tunerB, []byte("allreduce,0,65536,doubling,64K,-1,-1,-1\n"), 0o644)
	sweep := []string{"-b", "1K", "-e", "4K", "-n", "2"}
	ar := append([]string{"allreduce"}, sweep...)
	for _, tc := range []struct {
		name           string
		one, two       []string
		oneEnv, twoEnv []string
		want           string
	}{
		{"sizes", append([]string{"allreduce"}, sweep...), []string{"allreduce", "-b", "2K", "-e", "4K", "-n", "2"},
			nil, nil, "rank 1 was started with -b 2K, rank 0 with 1K"},
		{"iterations", append([]string{"allreduce"}, sweep...), []string{"allreduce", "-b", "1K", "-e", "4K", "-n", "3"},
			nil, nil, "rank 1 was started with -n 3, rank 0 with 2"},
		{"collective", append([]string{"allreduce"}, sweep...), append([]string{"allgather"}, sweep...),
			nil, nil, "rank 1 was started with the command allgather, rank 0 with allreduce"},
		{"health", []string{"health", "--pair-size", "1M"}, []string{"health", "--pair-size", "2M"},
			nil, nil, "rank 1 was started with --pair-size"},
		{"the contents of a file", []string{"health", "--racks", racksA}, []string{"health", "--racks", racksB},
			nil, nil, "rank 1 was started with the contents of --racks"},
		// The host backend's settings change what runs as much as a flag.
		{"a host algorithm on one rank", ar, ar, nil, []string{"COLLBENCH_HOST_ALGO=ring"},
			"rank 1 was started with COLLBENCH_HOST_ALGO ring, which rank 0 has not"},
		{"host segments", ar, ar, []string{"COLLBENCH_HOST_SEGMENT=64K"}, []string{"COLLBENCH_HOST_SEGMENT=128K"},
			"rank 1 was started with COLLBENCH_HOST_SEGMENT 128K, rank 0 with 64K"},
		{"the contents of a host tuner file", ar, ar, []string{"COLLBENCH_HOST_TUNER_FILE=" + tunerA}, []string{"COLLBENCH_HOST_TUNER_FILE=" + tunerB},
			"rank 1 was started with the contents of COLLBENCH_HOST_TUNER_FILE"},
		{"NCCL's protocol", ar, ar, []string{"NCCL_PROTO=LL"}, nil,
			"rank 1 was started without NCCL_PROTO, which rank 0 has as LL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := jobEnv(t)
			p0 := startRank(t, 0, 2, append(slices.Clone(env), tc.oneEnv...), nil, tc.one...)
			p1 := startRank(t, 1, 2, append(slices.Clone(env), tc.twoEnv...), nil, tc.two...)
			waitAll(t, 30*time.Second, p0, p1)
			for i, p := range []*rankProc{p0, p1} {
				lines := strings.Split(strings.TrimSpace(p.err.String()), "\n")
				if p.code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
					t.Errorf("rank %d: exit %d, want %d and one line saying %q\n%s", i, p.code, exitUsage, tc.want, p.err.String())
				}
			}
		})
	}
}

// Under collbench launch, which opens the job's rendezvous itself, a
// rank's own --rendezvous elsewhere is refused by rank 0 in one line
// naming both, and launch blames rank 0, rather than the ranks meeting
// whatever listens there.
func TestLaunchRendezvousOverridden(t *testing.T) {
	selfEnv(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	code, _, errOut := runCLI("launch", "-n", "2", "--grace", "2", "--", "allreduce", "-b", "8", "-e", "8", "--rendezvous", addr)
	want := "[rank 0] collbench allreduce: --rendezvous " + addr + ": the launcher already opened this job's rendezvous on port "
	if code != exitUsage || !strings.Contains(errOut, want) || !strings.Contains(errOut, "rank 0 refused its arguments (exit 2)") {
		t.Errorf("exit %d, want %d and %q\n%s", code, exitUsage, want, errOut)
	}
}

// Ctrl-C during a sweep, or during a mixture-of-experts layer's routing
// draws, ends the command with exit 130 and one line that says it was
// interrupted, not Go's "context canceled".
func TestInterruptSaysSo(t *testing.T) {
	for _, args := range [][]string{
		{"allreduce", "-g", "2", "-b", "1M", "-e", "64M", "-n", "200", "--backend", "host"},
		{"alltoallv", "-g", "2", "--moe", "64,8", "--tokens", "100000", "--draws", "2000", "-n", "5", "--backend", "host"},
	} {
		p := startRank(t, 0, 1, nil, nil, args...)
		waitBusy(t, p, 50) // half a second of CPU: well into the sweep or the draws, however loaded the machine
		p.cmd.Process.Signal(syscall.SIGINT)
		waitAll(t, 15*time.Second, p)
		if want := "collbench " + args[0] + ": interrupted\n"; p.code != exitSignal || p.err.String() != want {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", args[0], p.code, p.err.String(), exitSignal, want)
		}
	}
}

// waitBusy waits until p has used ticks clock ticks (1/100 s) of CPU.
func waitBusy(t *testing.T, p *rankProc, ticks int) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		used, err := cpuTicks(p.cmd.Process.Pid)
		if err != nil {
			t.Fatalf("the process ended early: %v; stderr %q", err, p.err.String())
		}
		if used >= ticks {
			return
		}
	}
	t.Fatal("the process used no CPU for a minute")
}

// cpuTicks is the CPU a process has used, in clock ticks (1/100 s), from
// /proc: a measure of how far it has come that a loaded machine does not
// stretch, as it stretches wall-clock time.
func cpuTicks(pid int) (int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return utime + stime, nil
}

// waitBlockedOn waits until one of p's threads sleeps in the kernel
// function wchan (/proc/PID/task/*/wchan): "wait_for_partner" is a FIFO's
// open waiting for its writer. Then the command is where the test means to
// interrupt it, past its start-up (a Go program catches SIGTERM from its
// first instruction, but ends by it until its own handler is installed),
// however loaded the machine.
func waitBlockedOn(t *testing.T, p *rankProc, wchan string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", p.cmd.Process.Pid))
		if err != nil || len(tasks) == 0 {
			t.Fatalf("the process ended early; stderr %q", p.err.String())
		}
		for _, task := range tasks {
			if data, _ := os.ReadFile(task); string(data) == wchan {
				return
			}
		}
	}
	t.Fatalf("no thread of the process waited in %s within 2 minutes; stderr %q", wchan, p.err.String())
}
