package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/cluster"
)

// launchFlags are the options of collbench launch.
type launchFlags struct {
	nprocs     int
	rendezvous string
	grace      float64
}

// runLaunch starts -n local ranks of a collbench subcommand with
// torchrun's environment, relays their output, forwards signals, and
// returns the first failing rank's exit code.
//
// It listens for SIGINT and SIGTERM itself, to forward them, so the
// signal context the other commands use is not needed here.
func runLaunch(args []string, stdout, stderr io.Writer) int {
	var lf launchFlags
	fs := pflag.NewFlagSet("launch", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(false) // everything after the subcommand is its own
	fs.IntVarP(&lf.nprocs, "nprocs", "n", 0, "ranks (processes) to start on this host")
	fs.StringVar(&lf.rendezvous, "rendezvous", "", "host:port for the job's rendezvous (default: a free loopback port)")
	fs.Float64Var(&lf.grace, "grace", 10, "seconds the other ranks get to finish after one fails, before they are stopped")
	if code, done := parseFlags(fs, args, "collbench launch -n N [flags] [--] <collective> [flags]", stdout, stderr); done {
		return code
	}
	sub := fs.Args()
	switch {
	case lf.nprocs < 1:
		fmt.Fprintf(stderr, "collbench launch: -n must be at least 1 (got %d)\n", lf.nprocs)
		return exitUsage
	case lf.nprocs > maxLaunched:
		fmt.Fprintf(stderr, "collbench launch: -n %d: launch starts at most %d processes on one host; use -g for more ranks per process, or a cluster launcher\n", lf.nprocs, maxLaunched)
		return exitUsage
	case len(sub) == 0:
		fmt.Fprintf(stderr, "collbench launch: no subcommand given (e.g. collbench launch -n 4 allreduce -b 8 -e 1M)\n")
		return exitUsage
	}
	if _, err := bench.LookupCollective(sub[0]); err != nil && sub[0] != "overlap" && sub[0] != "profile" {
		fmt.Fprintf(stderr, "collbench launch: %q is not a collective, overlap or profile; run 'collbench help' for the list\n", sub[0])
		return exitUsage
	}
	grace, err := seconds("--grace", lf.grace)
	if err != nil {
		fmt.Fprintf(stderr, "collbench launch: %v\n", err)
		return exitUsage
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "collbench launch: finding this program: %v\n", err)
		return exitFailure
	}
	env, ln, err := launchEnv(os.Environ(), lf.rendezvous)
	if err != nil {
		fmt.Fprintf(stderr, "collbench launch: %v\n", err)
		return exitUsage
	}
	l := &launcher{stdout: stdout, stderr: stderr, grace: grace, rendezvous: ln}
	return l.run(exe, sub, env, lf.nprocs)
}

// inheritedListenerEnv names the descriptor on which rank 0 finds the
// rendezvous listener its launcher opened for it.
const inheritedListenerEnv = "COLLBENCH_RENDEZVOUS_FD"

// maxLaunched bounds launch -n: one host's worth of processes, each with
// its pipes and its rank of the rendezvous.
const maxLaunched = 1024

// launchEnv is the ranks' shared environment: the caller's, without any
// other launcher's job variables, plus the rendezvous and a fresh token.
// Without --rendezvous it opens the rendezvous listener on a free loopback
// port itself and returns it, to be handed to rank 0 open: a port found
// free and closed again could be taken before rank 0 binds it.
func launchEnv(base []string, rendezvous string) ([]string, *os.File, error) {
	var ln *os.File
	if rendezvous == "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, fmt.Errorf("opening the rendezvous port: %w", err)
		}
		rendezvous = l.Addr().String()
		ln, err = l.(*net.TCPListener).File()
		l.Close() // the duplicate in ln stays open
		if err != nil {
			return nil, nil, fmt.Errorf("opening the rendezvous port: %w", err)
		}
	}
	host, port, err := net.SplitHostPort(rendezvous)
	if err != nil {
		return nil, nil, fmt.Errorf("--rendezvous %q: want host:port", rendezvous)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, nil, fmt.Errorf("--rendezvous %q: %q is not a TCP port", rendezvous, port)
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return nil, nil, err
	}
	drop := append(cluster.Vars(), inheritedListenerEnv)
	var env []string
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, name) {
			env = append(env, kv)
		}
	}
	return append(env, "MASTER_ADDR="+host, "MASTER_PORT="+port, "COLLBENCH_TOKEN="+hex.EncodeToString(secret)), ln, nil
}

// launcher runs the ranks and relays their output: rank 0's standard
// output unchanged (it carries the results), every other line on standard
// error prefixed with its rank.
type launcher struct {
	stdout, stderr io.Writer
	grace          time.Duration
	rendezvous     *os.File   // the listener rank 0 inherits; nil with --rendezvous
	mu             sync.Mutex // one line at a time
}

// exit is one rank's end.
type exit struct {
	rank, code int
}

func (l *launcher) run(exe string, sub, env []string, n int) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	if l.rendezvous != nil {
		defer l.rendezvous.Close() // rank 0 holds its own copy once started
	}
	procs := make([]*exec.Cmd, 0, n)
	exits := make(chan exit, n)
	var relays sync.WaitGroup
	for r := 0; r < n; r++ {
		cmd := exec.Command(exe, sub...)
		cmd.Env = append(slices.Clip(env), "RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n),
			"LOCAL_RANK="+strconv.Itoa(r), "LOCAL_WORLD_SIZE="+strconv.Itoa(n))
		if r == 0 && l.rendezvous != nil {
			cmd.ExtraFiles = []*os.File{l.rendezvous} // descriptor 3
			cmd.Env = append(cmd.Env, inheritedListenerEnv+"=3")
		}
		// A rank must not outlive its launcher.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		// Pipes of our own, read to their end, so no output is lost to
		// Wait closing them early.
		outR, outW, err1 := os.Pipe()
		errR, errW, err2 := os.Pipe()
		if err := errors.Join(err1, err2); err != nil {
			l.line(l.stderr, "collbench launch: %v", err)
			l.kill(procs)
			return exitFailure
		}
		cmd.Stdout, cmd.Stderr = outW, errW
		err := cmd.Start()
		outW.Close()
		errW.Close()
		if err != nil {
			outR.Close()
			errR.Close()
			l.line(l.stderr, "collbench launch: starting rank %d: %v", r, err)
			l.kill(procs)
			return exitFailure
		}
		procs = append(procs, cmd)
		prefix := fmt.Sprintf("[rank %d] ", r)
		outTo, outPrefix := l.stderr, prefix
		if r == 0 {
			outTo, outPrefix = l.stdout, ""
		}
		relays.Add(2)
		go func() { defer relays.Done(); l.relay(outR, outTo, outPrefix) }()
		go func() { defer relays.Done(); l.relay(errR, l.stderr, prefix) }()
		go func() {
			err := cmd.Wait()
			exits <- exit{rank: r, code: exitStatus(cmd, err)}
		}()
	}
	return l.wait(procs, exits, sigs, &relays)
}

// wait collects the ranks' ends. After the first failure the others get
// the grace period to stop by themselves (their watchdog sees the lost
// rank); then they are terminated, and killed if they still linger.
func (l *launcher) wait(procs []*exec.Cmd, exits chan exit, sigs chan os.Signal, relays *sync.WaitGroup) int {
	n := len(procs)
	codes := make([]int, n)
	done := make([]bool, n)
	left := n
	first := -1
	var stopped []int // ranks found stopped when the first one failed
	var deadline <-chan time.Time
	terminated := false
	for left > 0 {
		select {
		case e := <-exits:
			left--
			codes[e.rank], done[e.rank] = e.code, true
			if e.code != 0 && first < 0 {
				first = e.rank
				deadline = time.After(l.grace)
				// A stopped rank fails nobody by exiting: the others
				// give up on it first. Look before the grace period
				// resumes it.
				stopped = stoppedRanks(procs, done)
			}
		case s := <-sigs:
			for r, p := range procs {
				if !done[r] {
					p.Process.Signal(s)
				}
			}
			if deadline == nil {
				deadline = time.After(l.grace)
			}
		case <-deadline:
			if !terminated {
				terminated = true
				l.signalAlive(procs, done, syscall.SIGTERM)
				l.signalAlive(procs, done, syscall.SIGCONT) // a stopped rank must run to see it
				deadline = time.After(5 * time.Second)
			} else {
				l.signalAlive(procs, done, syscall.SIGKILL)
				deadline = nil
			}
		}
	}
	relays.Wait()
	if first < 0 {
		return exitOK
	}
	var failed []string
	for r, c := range codes {
		if c != 0 {
			failed = append(failed, fmt.Sprintf("%d (exit %d)", r, c))
		}
	}
	what := fmt.Sprintf("rank %d failed first", first)
	if len(stopped) > 0 {
		var names []string
		for _, r := range stopped {
			names = append(names, strconv.Itoa(r))
		}
		what = fmt.Sprintf("rank %s was stopped (SIGSTOP or a debugger) when rank %d failed", strings.Join(names, ", "), first)
	}
	l.line(l.stderr, "collbench launch: %s; ranks with a non-zero exit: %s", what, strings.Join(failed, ", "))
	return codes[first]
}

// stoppedRanks lists the ranks still running whose process is stopped
// (state T or t in /proc), in rank order.
func stoppedRanks(procs []*exec.Cmd, done []bool) []int {
	var out []int
	for r, p := range procs {
		if done[r] || p.Process == nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Process.Pid))
		if err != nil {
			continue
		}
		// pid (comm) state …: the state follows the last ')'.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'T' || stat[i+2] == 't') {
			out = append(out, r)
		}
	}
	return out
}

// signalAlive sends sig to the ranks that have not exited.
func (l *launcher) signalAlive(procs []*exec.Cmd, done []bool, sig syscall.Signal) {
	for r, p := range procs {
		if !done[r] {
			p.Process.Signal(sig)
		}
	}
}

// kill stops the ranks already started when the launch cannot go on.
func (l *launcher) kill(procs []*exec.Cmd) {
	for _, p := range procs {
		p.Process.Kill()
	}
}

// relay copies r to w line by line, each line whole and prefixed.
func (l *launcher) relay(r io.ReadCloser, w io.Writer, prefix string) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		l.mu.Lock()
		fmt.Fprintf(w, "%s%s\n", prefix, sc.Bytes())
		l.mu.Unlock()
	}
	io.Copy(io.Discard, r) // a line too long for the scanner: drain the rest
}

func (l *launcher) line(w io.Writer, format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(w, format+"\n", a...)
}

// exitStatus is a finished rank's exit code; a rank killed by a signal
// counts as 128 plus the signal, as shells report it.
func exitStatus(cmd *exec.Cmd, err error) int {
	st := cmd.ProcessState
	if st == nil {
		return exitFailure
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if code := st.ExitCode(); code >= 0 {
		return code
	}
	return exitFailure
}
