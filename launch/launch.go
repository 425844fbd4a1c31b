// Package launch starts the processes of a job on one host, as torchrun
// does: each with its rank in torchrun's environment variables, rank 0
// with the rendezvous listener already open. It relays their output
// line by line, forwards signals, stops the others after the first
// failure and returns the exit code that failure calls for.
package launch

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

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/cluster"
	"github.com/collbench/collbench/setting"
)

// failed is the exit code of a launch that could not start its ranks.
const failed = 1

// Options describe one launch.
type Options struct {
	Procs  int      // processes (ranks) to start
	Exe    string   // the program each runs
	Args   []string // its arguments
	Stdout io.Writer
	Stderr io.Writer
	// Grace is how long the others get to finish after one fails, before
	// they are terminated.
	Grace time.Duration
	// Env is the ranks' shared environment (see Env); Listener, when not
	// nil, is the rendezvous listener handed to rank 0.
	Env      []string
	Listener *os.File
	// DistinctHosts gives each rank its own NCCL_HOSTID, so that NCCL
	// takes the ranks for separate hosts: before NCCL 2.30 that is the
	// only way several processes may share one GPU. They then talk over
	// NCCL's network transport, which proves the path, not the speed.
	DistinctHosts bool
}

// Run starts the ranks and waits for them all. It returns 0 when every
// rank succeeded, else the exit code of the first to fail.
func Run(o Options) int {
	l := &launcher{stdout: o.Stdout, stderr: o.Stderr, grace: o.Grace, rendezvous: o.Listener, distinctHosts: o.DistinctHosts}
	return l.run(o.Exe, o.Args, o.Env, o.Procs)
}

// MaxProcs bounds how many processes Run starts: one host's worth, each
// with its pipes and its rank of the rendezvous.
const MaxProcs = 1024

// Env is the ranks' shared environment: the caller's, without any
// other launcher's job variables, plus the rendezvous and a fresh token.
// Without --rendezvous it opens the rendezvous listener on a free loopback
// port itself and returns it, to be handed to rank 0 open: a port found
// free and closed again could be taken before rank 0 binds it.
func Env(base []string, rendezvous string) ([]string, *os.File, error) {
	var ln *os.File
	if rendezvous == "" {
		var port string
		var err error
		if ln, port, err = cluster.ListenFile("127.0.0.1:0"); err != nil {
			return nil, nil, err
		}
		rendezvous = net.JoinHostPort("127.0.0.1", port)
	}
	host, port, err := net.SplitHostPort(rendezvous)
	if err != nil {
		return nil, nil, setting.Errorf("{Rendezvous} %q: want host:port", rendezvous)
	}
	if _, err := cluster.Port(port); err != nil {
		return nil, nil, setting.Errorf("{Rendezvous} %q: %w", rendezvous, err)
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return nil, nil, err
	}
	drop := append(cluster.Vars(), cluster.ListenerFDVar, cluster.HeldVar, OutcomeVar)
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
	distinctHosts  bool       // a NCCL_HOSTID of its own for each rank
	mu             sync.Mutex // one line at a time
	// said is each line the ranks wrote to standard error, with the rank
	// that wrote it first: the same line from another rank (a usage error
	// every rank makes alike) is shown once; repeats counts those left out.
	said    map[string]int
	repeats map[int]bool // ranks a line of was left out as a repeat
	nrepeat int
	// outcomes are what each rank said its exit means (OutcomeVar).
	outcomes []string
}

// releaseRendezvous closes the launcher's copy of the rendezvous listener.
func (l *launcher) releaseRendezvous() {
	if l.rendezvous != nil {
		l.rendezvous.Close()
		l.rendezvous = nil
	}
}

// exit is one rank's end.
type exit struct {
	rank, code int
	at         time.Time // when the launcher learnt of it
}

// settle is how soon after the first failure another can still be its
// cause: the launcher learns of exits a little out of order, and the
// ranks that lose a peer follow it within milliseconds.
const settle = 200 * time.Millisecond

// Interrupted is the exit code of a launch stopped by SIGINT or SIGTERM:
// its ranks' own code for an interruption, whichever of the two it was.
const Interrupted = 130

// Consequence says a rank's exit code is what ranks report when a peer
// fails them: 1 (the job lost a rank) or 4 (a rank stopped answering). A
// signal, a usage error, wrong results or a failed export are a rank's
// own.
func Consequence(code int) bool { return code == 1 || code == 4 }

// culprit picks, from the failures in the order the launcher learnt of
// them, the one that most likely caused the others: the first, unless it
// looks like a consequence and another rank refused its arguments (exit
// 2, whenever the launcher heard of it: a refusal comes before the job
// meets, so it causes a lost peer and is never caused by one), or a
// failure of a rank's own came within settle of it.
func culprit(failures []exit) exit {
	first := failures[0]
	if !Consequence(first.code) {
		return first
	}
	for _, f := range failures[1:] {
		if f.code == usageCode {
			return f
		}
	}
	for _, f := range failures[1:] {
		if f.at.Sub(first.at) <= settle && !Consequence(f.code) {
			return f
		}
	}
	return first
}

func (l *launcher) run(exe string, sub, env []string, n int) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	held := l.rendezvous != nil
	if held {
		// Once rank 0 holds its copy, the launcher's goes: a listener
		// kept open here would queue the other ranks' connections
		// after rank 0 has gone, and they would wait on it unanswered.
		defer l.releaseRendezvous()
	}
	procs := make([]*exec.Cmd, 0, n)
	exits := make(chan exit, n)
	l.said, l.repeats, l.outcomes = map[string]int{}, map[int]bool{}, make([]string, n)
	var relays sync.WaitGroup
	for r := 0; r < n; r++ {
		cmd := exec.Command(exe, sub...)
		cmd.Env = append(slices.Clip(env), "RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n),
			"LOCAL_RANK="+strconv.Itoa(r), "LOCAL_WORLD_SIZE="+strconv.Itoa(n), cluster.LaunchedVar+"=1")
		if l.distinctHosts {
			// The last NCCL_HOSTID wins over one the caller set.
			cmd.Env = append(cmd.Env, fmt.Sprintf("NCCL_HOSTID=collbench-%d-rank%d", os.Getpid(), r))
		}
		if held {
			cmd.Env = append(cmd.Env, cluster.HeldVar+"=1")
			if r == 0 {
				cmd.ExtraFiles = []*os.File{l.rendezvous} // descriptor 3
				cmd.Env = append(cmd.Env, cluster.ListenerFDVar+"=3")
			}
		}
		outcomeR, outcomeW, err := os.Pipe()
		if err != nil {
			l.line(l.stderr, "collbench launch: %v", err)
			l.kill(procs)
			return failed
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, outcomeW)
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", OutcomeVar, 2+len(cmd.ExtraFiles)))
		// A rank must not outlive its launcher.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		// Pipes of our own, read to their end, so no output is lost to
		// Wait closing them early.
		outR, outW, err1 := os.Pipe()
		errR, errW, err2 := os.Pipe()
		if err := errors.Join(err1, err2); err != nil {
			l.line(l.stderr, "collbench launch: %v", err)
			l.kill(procs)
			return failed
		}
		cmd.Stdout, cmd.Stderr = outW, errW
		err = cmd.Start()
		outW.Close()
		errW.Close()
		outcomeW.Close()
		if err != nil {
			outR.Close()
			errR.Close()
			outcomeR.Close()
			l.line(l.stderr, "collbench launch: starting rank %d: %v", r, err)
			l.kill(procs)
			return failed
		}
		procs = append(procs, cmd)
		if r == 0 {
			l.releaseRendezvous()
		}
		prefix := fmt.Sprintf("[rank %d] ", r)
		outTo, outPrefix := l.stderr, prefix
		if r == 0 {
			outTo, outPrefix = l.stdout, ""
		}
		relays.Add(3)
		go func() { defer relays.Done(); l.relay(outR, outTo, outPrefix, -1) }()
		go func() { defer relays.Done(); l.relay(errR, l.stderr, prefix, r) }()
		go func() { defer relays.Done(); l.readOutcome(outcomeR, r) }()
		go func() {
			err := cmd.Wait()
			exits <- exit{rank: r, code: ExitStatus(cmd, err), at: time.Now()}
		}()
	}
	return l.wait(procs, exits, sigs, &relays)
}

// wait collects the ranks' ends. After the first failure the others get
// the grace period to stop by themselves (their watchdog sees the lost
// rank); then they are terminated, and killed if they still linger. A
// signal to the launcher goes to every rank, and the launch then ends as
// that signal's.
func (l *launcher) wait(procs []*exec.Cmd, exits chan exit, sigs chan os.Signal, relays *sync.WaitGroup) int {
	n := len(procs)
	codes := make([]int, n)
	done := make([]bool, n)
	left := n
	var failures []exit
	var stopped []int   // ranks found stopped when the first one failed
	var lingering []int // ranks still running when the grace period ended
	var deadline <-chan time.Time
	var signalled os.Signal
	terminated := false
	for left > 0 {
		select {
		case e := <-exits:
			left--
			codes[e.rank], done[e.rank] = e.code, true
			if e.code == 0 {
				continue
			}
			failures = append(failures, e)
			if len(failures) == 1 && signalled == nil {
				deadline = time.After(l.grace)
				// A stopped rank fails nobody by exiting: the others
				// give up on it first. Look before the grace period
				// resumes it.
				stopped = stoppedRanks(procs, done)
			}
		case s := <-sigs:
			if signalled == nil {
				signalled = s
			}
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
				lingering = aliveRanks(done)
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
	if len(failures) == 0 {
		return 0
	}
	var failed []string
	for r, c := range codes {
		if c != 0 {
			failed = append(failed, fmt.Sprintf("%d (exit %d)", r, c))
		}
	}
	if sig, ok := signalled.(syscall.Signal); ok {
		l.line(l.stderr, "collbench launch: stopped by %v, passed on to every rank; ranks with a non-zero exit: %s", sig, strings.Join(failed, ", "))
		return Interrupted
	}
	if l.nrepeat > 0 {
		var ranks []int
		for r := range l.repeats {
			ranks = append(ranks, r)
		}
		slices.Sort(ranks)
		l.line(l.stderr, "collbench launch: %s wrote %d line(s) another rank had written; each is shown once", bench.RankNames(ranks), l.nrepeat)
	}
	first := culprit(failures)
	what := fmt.Sprintf("rank %d failed first", first.rank)
	if first.code == usageCode {
		what = fmt.Sprintf("rank %d refused its arguments (exit %d), as printed above, and the others could not run without it", first.rank, usageCode)
	}
	var failing []int
	for _, f := range failures {
		failing = append(failing, f.rank)
	}
	slices.Sort(failing)
	switch {
	case l.allSaid(failures, Finding):
		l.line(l.stderr, "collbench launch: %s flagged something (exit %d), as printed above; nothing failed", bench.RankNames(failing), first.code)
		return first.code
	case l.allSaid(failures, Incomplete):
		l.line(l.stderr, "collbench launch: %s ran out of budget before the end (exit %d), as printed above; nothing failed", bench.RankNames(failing), first.code)
		return first.code
	case allCode(failures, usageCode):
		l.line(l.stderr, "collbench launch: %s refused %s arguments (exit %d), as printed above", bench.RankNames(failing), theirOrIts(failing), usageCode)
		return usageCode
	case len(stopped) > 0:
		what = fmt.Sprintf("%s %s stopped (SIGSTOP or a debugger) when rank %d failed", bench.RankNames(stopped), wasOrWere(stopped), failures[0].rank)
	case Consequence(first.code) && len(lingering) > 0:
		// Every failure says a peer failed it, and some ranks outlived
		// the grace period: they never came (hung before the rendezvous,
		// or stalled), and the others gave up on them.
		what = fmt.Sprintf("%s %s still running when rank %d gave up on a peer, and ended after %v", bench.RankNames(lingering), wasOrWere(lingering), first.rank, l.grace)
	}
	l.line(l.stderr, "collbench launch: %s; ranks with a non-zero exit: %s", what, strings.Join(failed, ", "))
	return first.code
}

// usageCode is the exit code of a usage error (collbench's, nccl-tests').
const usageCode = 2

// allSaid says whether every failed rank told its outcome as word.
func (l *launcher) allSaid(failures []exit, word string) bool {
	for _, f := range failures {
		if l.outcomes[f.rank] != word {
			return false
		}
	}
	return true
}

// allCode says whether every failed rank exited with code.
func allCode(failures []exit, code int) bool {
	for _, f := range failures {
		if f.code != code {
			return false
		}
	}
	return true
}

// theirOrIts words whose arguments: several ranks' ("their") or one's.
func theirOrIts(ranks []int) string {
	if len(ranks) == 1 {
		return "its"
	}
	return "their"
}

// aliveRanks lists the ranks that have not exited, in rank order.
func aliveRanks(done []bool) []int {
	var out []int
	for r, d := range done {
		if !d {
			out = append(out, r)
		}
	}
	return out
}

func wasOrWere(ranks []int) string {
	if len(ranks) == 1 {
		return "was"
	}
	return "were"
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
func (l *launcher) relay(r io.ReadCloser, w io.Writer, prefix string, rank int) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	own := fmt.Sprintf("rank %d: ", rank)
	for sc.Scan() {
		line, lead := sc.Text(), prefix
		l.mu.Lock()
		if rank >= 0 {
			// A rank's standard error: a line another rank wrote already
			// (the same but for the rank each names itself by) is not
			// written again, and a line that names its rank needs no
			// prefix.
			key := strings.Replace(line, own, "", 1)
			if first, ok := l.said[key]; ok && first != rank {
				l.repeats[rank] = true
				l.nrepeat++
				l.mu.Unlock()
				continue
			}
			if len(l.said) < maxSaid {
				l.said[key] = rank
			}
			if strings.Contains(line, own) {
				lead = ""
			}
		}
		fmt.Fprintf(w, "%s%s\n", lead, line)
		l.mu.Unlock()
	}
	io.Copy(io.Discard, r) // a line too long for the scanner: drain the rest
}

// maxSaid bounds the lines remembered to tell a repeat: a job's warnings
// are few, a debug log's lines many and distinct.
const maxSaid = 4096

// OutcomeVar names the descriptor a rank may write one word to before it
// exits, saying what its exit code means where the code alone cannot:
// "finding" (exit 1: the check ran and flagged something, nothing failed)
// or "incomplete" (exit 4: a budget cut the check short, no rank went
// silent). See OutcomeFile.
const OutcomeVar = "COLLBENCH_LAUNCH_OUTCOME_FD"

// Outcomes a rank may tell its launcher.
const (
	Finding    = "finding"
	Incomplete = "incomplete"
)

// OutcomeFile takes the descriptor the launcher that started this
// process gave it (OutcomeVar), for this process alone: the variable is
// dropped and the descriptor closed on exec, so that no process this one
// starts (ab's arms) writes to it. nil without a launcher.
func OutcomeFile() *os.File {
	v, ok := os.LookupEnv(OutcomeVar)
	if !ok {
		return nil
	}
	os.Unsetenv(OutcomeVar)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil
	}
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return nil // not the pipe a launcher hands over
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "launch outcome")
}

// readOutcome keeps the word rank wrote to its outcome descriptor.
func (l *launcher) readOutcome(r io.ReadCloser, rank int) {
	defer r.Close()
	data, _ := io.ReadAll(io.LimitReader(r, 64))
	io.Copy(io.Discard, r)
	l.mu.Lock()
	l.outcomes[rank] = strings.TrimSpace(string(data))
	l.mu.Unlock()
}

func (l *launcher) line(w io.Writer, format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(w, format+"\n", a...)
}

// ExitStatus is a finished rank's exit code; a rank killed by a signal
// counts as 128 plus the signal, as shells report it.
func ExitStatus(cmd *exec.Cmd, err error) int {
	st := cmd.ProcessState
	if st == nil {
		return failed
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if code := st.ExitCode(); code >= 0 {
		return code
	}
	return failed
}
