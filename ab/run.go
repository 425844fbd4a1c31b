package ab

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/collbench/collbench/cluster"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/fileio"
	"github.com/collbench/collbench/launch"
)

// Gatherer is the job of ab's own processes, one per rank of the sweep:
// every exchange between them is an all-gather in rank order.
type Gatherer interface {
	AllGather(ctx context.Context, data []byte) ([][]byte, error)
}

// Processes is what every measurement that runs its turns in processes
// of its own (ab, tune, audit) says of them, from one process's side: the
// program and the sweep they run, the environment they start from, this
// process's place among the measurement's own processes, where their
// output is kept, what a turn adds to the sweep, and the bound of a turn.
type Processes struct {
	Exe     string   // the collbench program each turn's processes run
	Command []string // the sweep: a collective and its flags
	Env     []string // the environment the turns start from
	// Rank and Size are this process's place among the measurement's
	// processes (0 and 1 without a launcher); Addr is their rendezvous,
	// whose host the turns' rendezvous shares; Group links them when
	// Size > 1.
	Rank, Size int
	Addr       string
	Group      Gatherer
	// LogDir, when set, keeps each turn's process output there, one file
	// per round, arm and rank.
	LogDir string
	// Place is what a turn adds to Command for its rendezvous and for
	// the path of its run document, each "" when not wanted. The caller
	// knows the program's flags; ab only passes them on.
	Place func(rendezvous, document string) []string
	// TurnLimit bounds every turn; 0 bounds each from the turns'
	// timings so far (turnClock).
	TurnLimit time.Duration
}

// Options describe an A/B run from one process's side.
type Options struct {
	Processes
	Arms   []Arm
	Rounds int
	// Emit hears each probe and round as it ends (on every process; only
	// rank 0's rounds carry the run).
	Emit func(Event)
	// Probe is the command line (after Exe) that prints, as JSON, which
	// NCCL a process loads given lib ("" for its default).
	Probe func(lib string) []string
	// Vet, when set, refuses an arm once its probe has said what it
	// loads and which backend it would run on (a setting that backend
	// does not take), before the first round.
	Vet func(arm int, probed ArmOutcome) error
}

// Event is a probe or a round that ended.
type Event struct {
	Round    int // 1-based; 0 for the probe before the rounds
	Position int // the arm's turn in its round, 1-based
	Arm      int
	Elapsed  time.Duration
	Failed   string // why the arm dropped out; empty when it ran
}

// Outcome is what every arm did.
type Outcome struct {
	Arms []ArmOutcome
	// Stopped says why the rounds ended before the last: fewer than two
	// arms were left to compare.
	Stopped string
}

// ArmOutcome is one arm's probe and rounds.
type ArmOutcome struct {
	Arm
	NCCLVersion string // the NCCL the arm loaded, as rank 0's probe found it
	NCCLPath    string
	NCCLError   string // why it found none
	Backend     string // the backend a measuring command would pick there ("host", "nccl")
	Failed      string // why the arm stopped; empty when every round ran
	FailedRound int    // the round it stopped in; 0 at the probe
	Runs        []*document.Run
	Seconds     []float64 // each round's wall time
}

// maxDocument bounds the run document an arm writes each round.
const maxDocument = 256 << 20

// Refused is an A/B run that cannot start: an arm that does not load, or
// two arms that nothing would tell apart. It is known before the first
// round, so nothing was measured.
type Refused struct{ Why string }

func (e *Refused) Error() string { return e.Why }

// Run probes every arm, refuses the run when an arm cannot start or two
// arms are the same, then runs the rounds: in each, every arm that has
// not failed runs the sweep once, in an order rotated by one each round.
// An arm that fails is reported and left out of the rounds after; the
// others go on while at least two are left. Only rank 0's outcome
// carries the runs; interrupted, the outcome holds the turns that ended.
func Run(ctx context.Context, o Options) (*Outcome, error) {
	r, err := NewRunner(o)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out := NewOutcome(o.Arms)
	if err := r.Probe(ctx, out); err != nil {
		return nil, err
	}
	for i, a := range out.Arms {
		if a.Failed != "" {
			return nil, &Refused{Why: fmt.Sprintf("arm %s (%s) %s", Letter(i), a.Label, a.Failed)}
		}
		if o.Vet != nil {
			if err := o.Vet(i, a); err != nil {
				return nil, &Refused{Why: fmt.Sprintf("arm %s (%s): %v", Letter(i), a.Label, err)}
			}
		}
	}
	if err := Distinct(out); err != nil {
		return nil, err
	}
	return out, r.Rounds(ctx, out, 1, o.Rounds)
}

// NewOutcome is the outcome of arms that have not run yet.
func NewOutcome(arms []Arm) *Outcome {
	out := &Outcome{}
	for _, a := range arms {
		out.Arms = append(out.Arms, ArmOutcome{Arm: a})
	}
	return out
}

// Runner runs arms' turns, each in processes of its own: the probe of
// which NCCL each loads, single turns, and rounds of every arm in turn.
// ab and tune both measure through it.
type Runner struct {
	o     Options
	tmp   string
	clock *turnClock
}

// NewRunner makes the folder the arms' run documents go to; Close
// removes it.
func NewRunner(o Options) (*Runner, error) {
	if o.Emit == nil {
		o.Emit = func(Event) {}
	}
	tmp, err := fileio.MkdirOwned("collbench-ab")
	if err != nil {
		return nil, fmt.Errorf("a folder for the arms' results: %w", err)
	}
	return &Runner{o: o, tmp: tmp, clock: &turnClock{fixed: o.TurnLimit}}, nil
}

// WithEmit is the runner with its rounds' events heard by emit instead;
// it shares the folder.
func (r *Runner) WithEmit(emit func(Event)) *Runner {
	c := *r
	c.o.Emit = emit
	return &c
}

// Close removes the runner's folder.
func (r *Runner) Close() { os.RemoveAll(r.tmp) }

// Dir is the runner's own folder, removed by Close: a place for files the
// arms read (a tuner file under proof) or write.
func (r *Runner) Dir() string { return r.tmp }

// Rounds runs rounds first to last of every arm that has not failed, in an
// order rotated by one each round. It stops early, saying why in
// out.Stopped, when fewer than two arms are left to compare, or when ctx
// ends (with its cause; the turns that ended stay in out).
func (r *Runner) Rounds(ctx context.Context, out *Outcome, first, last int) error {
	for round := first; round <= last; round++ {
		live := r.live(out)
		if len(live) < 2 {
			out.Stopped = stoppedLine(out, round)
			return nil
		}
		for pos := range live {
			a := live[(pos+round-1)%len(live)]
			start := time.Now()
			doc, failed, err := r.Turn(ctx, out.Arms[a].Arm, a, round)
			if err != nil {
				if ctx.Err() != nil {
					out.Stopped = fmt.Sprintf("interrupted in round %d", round)
				}
				return err
			}
			ev := Event{Round: round, Position: pos + 1, Arm: a, Elapsed: time.Since(start), Failed: failed}
			ao := &out.Arms[a]
			if failed != "" {
				ao.Failed, ao.FailedRound = failed, round
			} else {
				ao.Runs = append(ao.Runs, doc)
				ao.Seconds = append(ao.Seconds, ev.Elapsed.Seconds())
			}
			r.o.Emit(ev)
		}
	}
	return nil
}

// stoppedLine says why the rounds stopped before round.
func stoppedLine(out *Outcome, round int) string {
	left := len(out.Arms)
	for _, a := range out.Arms {
		if a.Failed != "" {
			left--
		}
	}
	return fmt.Sprintf("stopped before round %d: %d arm(s) left, and a comparison needs two", round, left)
}

func (r *Runner) live(out *Outcome) []int {
	var live []int
	for i, a := range out.Arms {
		if a.Failed == "" {
			live = append(live, i)
		}
	}
	return live
}

// Distinct refuses two arms that load the same file (as their probes
// found it) with the same settings: nothing would tell them apart, and a
// table would compare a library with itself. A label alone is no
// difference.
func Distinct(out *Outcome) error {
	seen := map[string]int{}
	for i, a := range out.Arms {
		key := a.identity()
		if j, ok := seen[key]; ok {
			if a.identityOn("nccl") != out.Arms[j].identityOn("nccl") { // alike only once NCCL's settings are left out
				return &Refused{Why: fmt.Sprintf("arms %s (%s) and %s (%s) differ only in NCCL settings, and they run on the host backend here, which reads none: nothing tells them apart",
					Letter(j), out.Arms[j].Label, Letter(i), a.Label)}
			}
			file := "the same NCCL"
			if p := out.Arms[i].NCCLPath; p != "" {
				file = p
			}
			return &Refused{Why: fmt.Sprintf("arms %s (%s) and %s (%s) load %s with the same settings: nothing tells them apart",
				Letter(j), out.Arms[j].Label, Letter(i), a.Label, file)}
		}
		seen[key] = i
	}
	return nil
}

// identity is what makes an arm's runs what they are: the file it
// loads (as found, else as named), its environment (the last of a name
// wins, order aside; on the host backend, with no NCCL named, less
// NCCL's own settings, which it never reads) and its flags.
func (a ArmOutcome) identity() string { return a.identityOn(a.Backend) }

// identityOn is the arm's identity were it to run on backend.
func (a ArmOutcome) identityOn(backend string) string {
	lib := a.NCCLPath
	if lib == "" {
		lib = a.Lib
	}
	env := a.Arm.Env
	if backend == "host" && a.Lib == "" {
		env = slices.DeleteFunc(slices.Clone(env), ncclSetting)
	}
	return Arm{Lib: lib, Env: env, Args: a.Args}.identity()
}

// ncclSetting says NAME=VALUE is one of NCCL's own settings, read by the
// library only (nccl-tests' NCCL_TESTS_* are read by the benchmark).
func ncclSetting(kv string) bool {
	return strings.HasPrefix(kv, "NCCL_") && !strings.HasPrefix(kv, "NCCL_TESTS_")
}

// identity is the arm's library as named, environment (the last of a
// name wins, order aside) and flags.
func (a Arm) identity() string {
	lib := a.Lib
	last := map[string]string{}
	for _, kv := range a.Env {
		name, _, _ := strings.Cut(kv, "=")
		last[name] = kv
	}
	env := make([]string, 0, len(last))
	for _, kv := range last {
		env = append(env, kv)
	}
	slices.Sort(env)
	return strings.Join([]string{lib, strings.Join(env, "\x00"), strings.Join(a.Args, "\x00")}, "\x01")
}

// report is what one process says of an arm's turn.
type report struct {
	Code int    `json:"code"`
	Line string `json:"line,omitempty"`
	// Stall says the process outlived its deadline: stallRunning, or
	// stallStopped when it was stopped then, which makes it the culprit.
	Stall   int    `json:"stall,omitempty"`
	Version string `json:"version,omitempty"`
	Path    string `json:"path,omitempty"`
	Backend string `json:"backend,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Probe asks each arm's environment which NCCL it loads (collbench
// doctor, in a process of its own), on every process. An arm whose lib=
// does not load on some rank fails here.
func (r *Runner) Probe(ctx context.Context, out *Outcome) error {
	for i := range out.Arms {
		a := &out.Arms[i]
		start := time.Now()
		args := r.o.Probe(a.Lib)
		var rep report
		limit := r.clock.probe()
		pctx, cancel := context.WithTimeoutCause(ctx, limit, errStalled)
		cmd := r.command(pctx, args, r.env(a.Arm, nil))
		stall := watchStall(ctx, cmd)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		runErr := cmd.Run()
		cancel()
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		var d struct {
			NCCL    struct{ Path, Version, Error string } `json:"nccl"`
			Backend string                                `json:"backend"`
		}
		if st := stall(); st != nil {
			rep.Code, rep.Line = launch.ExitStatus(cmd, runErr), "collbench doctor: "+st.line(limit, "the probe")
		} else if err := json.Unmarshal(stdout.Bytes(), &d); err != nil {
			rep.Code, rep.Line = 1, fmt.Sprintf("collbench doctor: %v", firstLine(runErr, stderr.Bytes()))
		} else {
			rep.Version, rep.Path, rep.Error, rep.Backend = d.NCCL.Version, d.NCCL.Path, d.NCCL.Error, d.Backend
		}
		reps, err := r.gather(ctx, rep)
		if err != nil {
			return err
		}
		a.NCCLVersion, a.NCCLPath, a.NCCLError, a.Backend = reps[0].Version, reps[0].Path, reps[0].Error, reps[0].Backend
		for rank, p := range reps {
			why := ""
			switch {
			case p.Code != 0:
				why = p.Line
			case a.Lib != "" && p.Error != "":
				why = "NCCL from " + a.Lib + ": " + p.Error
			}
			if why != "" {
				a.Failed = r.onRank(rank, "does not start: "+why)
				break
			}
		}
		r.o.Emit(Event{Arm: i, Elapsed: time.Since(start), Failed: a.Failed})
	}
	return nil
}

// onRank names the rank a failure came from when there are several.
func (r *Runner) onRank(rank int, why string) string {
	if r.o.Size > 1 {
		return fmt.Sprintf("rank %d: %s", rank, why)
	}
	return why
}

// Turn runs one arm's turn on this process and agrees with the others
// on how it went: failed is the one line that says why it did not (the
// culprit's, when several processes failed), and doc is rank 0's run.
// round names the turn in file names and messages (0: a trial before the
// rounds).
func (r *Runner) Turn(ctx context.Context, a Arm, idx, round int) (doc *document.Run, failed string, err error) {
	rv, err := r.rendezvous(ctx)
	if err != nil {
		return nil, "", err
	}
	jsonPath, addr := "", ""
	if r.o.Size > 1 {
		addr = rv.addr
	}
	if r.o.Rank == 0 {
		jsonPath = filepath.Join(r.tmp, fmt.Sprintf("round%d-arm%d.json", round, idx+1))
	}
	args := slices.Concat(r.o.Command, a.Args, r.o.Place(addr, jsonPath))
	limit := r.clock.limit(a.Changes())
	tctx, cancel := context.WithTimeoutCause(ctx, limit, errStalled)
	defer cancel()
	cmd := r.command(tctx, args, r.env(a, rv))
	stall := watchStall(ctx, cmd)
	if rv.listener != nil {
		cmd.ExtraFiles = []*os.File{rv.listener} // descriptor 3
	}
	// Both streams in one log, in the order written; stderr also alone,
	// for the line that says why the arm failed.
	var output, stderr tail
	cmd.Stdout, cmd.Stderr = &output, multi{&output, &stderr}
	start := time.Now()
	runErr := cmd.Start()
	if rv.listener != nil {
		rv.listener.Close() // the arm's rank 0 holds it now
	}
	if runErr == nil {
		runErr = cmd.Wait()
	}
	took := time.Since(start)
	if ctx.Err() != nil {
		return nil, "", context.Cause(ctx)
	}
	if r.o.LogDir != "" {
		name := fmt.Sprintf("round%d-arm%d-rank%d.log", round, idx+1, r.o.Rank)
		if err := fileio.ReplaceEntry(filepath.Join(r.o.LogDir, name), output.Bytes()); err != nil {
			return nil, "", fmt.Errorf("keeping the arm's output: %w", err)
		}
	}
	rep := report{}
	when := fmt.Sprintf("round %d", round)
	if round == 0 {
		when = "its trial"
	}
	if st := stall(); st != nil {
		rep.Code, rep.Line, rep.Stall = launch.ExitStatus(cmd, runErr), st.line(limit, when), st.kind()
		if said := stderr.lastLine(); len(said) > 0 {
			rep.Line += "; it said last: " + string(said)
		}
	} else if runErr != nil {
		rep.Code, rep.Line = launch.ExitStatus(cmd, runErr), firstLine(runErr, stderr.lastLine())
	} else if jsonPath != "" {
		if doc, err = document.Load(ctx, jsonPath, maxDocument, document.DecodeRun); err != nil {
			rep.Code, rep.Line = 1, "reading its results: "+err.Error()
		}
	}
	reps, err := r.gather(ctx, rep)
	if err != nil {
		return nil, "", err
	}
	if rank, p, ok := culprit(reps); ok {
		if p.Stall != 0 {
			return nil, r.onRank(rank, p.Line), nil
		}
		return nil, r.onRank(rank, fmt.Sprintf("failed in %s (exit %d): %s", when, p.Code, p.Line)), nil
	}
	r.clock.observe(a.Changes(), took)
	return doc, "", nil
}

// RefusedTurn says whether a turn's failure (Turn's failed) is the arm's
// process refusing its arguments (exit 2): a usage error of what the turn
// was asked to run, where any other failure is the machine's (a full
// disk, a lost rank) and no fault of the request.
func RefusedTurn(failed string) bool {
	return strings.Contains(failed, fmt.Sprintf("(exit %d): ", usageExit))
}

// usageExit is the exit code of a collbench process that refused its
// arguments.
const usageExit = 2

// culprit picks the failure to report: a process found stopped at its
// deadline (what held the others), else the first rank whose exit is its
// own (not a launch.Consequence of a peer's failure, nor a process ended
// at its deadline while it waited), else the first that failed.
func culprit(reps []report) (int, report, bool) {
	best, bestScore := -1, 0
	for i, p := range reps {
		score := 0
		switch {
		case p.Code == 0 && p.Stall == 0:
			continue
		case p.Stall == stallStopped:
			score = 4
		case p.Stall == 0 && !launch.Consequence(p.Code):
			score = 3
		case p.Stall != 0:
			score = 2
		default:
			score = 1
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		return 0, report{}, false
	}
	return best, reps[best], true
}

func (r *Runner) gather(ctx context.Context, rep report) ([]report, error) {
	if r.o.Size <= 1 {
		return []report{rep}, nil
	}
	data, err := json.Marshal(rep)
	if err != nil {
		return nil, err
	}
	parts, err := r.o.Group.AllGather(ctx, data)
	if err != nil {
		return nil, fmt.Errorf("agreeing with the other processes: %w", err)
	}
	reps := make([]report, len(parts))
	for i, p := range parts {
		if err := json.Unmarshal(p, &reps[i]); err != nil {
			return nil, fmt.Errorf("rank %d's report: %w", i, err)
		}
	}
	return reps, nil
}

// armRendezvous is where one turn's processes meet: rank 0 of ab opens
// a fresh listener for every turn and hands it to its arm process.
type armRendezvous struct {
	addr, token string
	listener    *os.File // rank 0 only
}

func (r *Runner) rendezvous(ctx context.Context) (*armRendezvous, error) {
	if r.o.Size <= 1 {
		return &armRendezvous{}, nil
	}
	rv := &armRendezvous{}
	var mine []byte
	if r.o.Rank == 0 {
		host, _, err := net.SplitHostPort(r.o.Addr)
		if err != nil {
			return nil, fmt.Errorf("the rendezvous %q: %w", r.o.Addr, err)
		}
		f, port, err := cluster.ListenFile(cluster.Bind(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("the arms' rendezvous: %w", err)
		}
		secret := make([]byte, 16)
		if _, err := rand.Read(secret); err != nil {
			f.Close()
			return nil, err
		}
		rv.listener = f
		mine = []byte(net.JoinHostPort(host, port) + " " + hex.EncodeToString(secret))
	}
	parts, err := r.o.Group.AllGather(ctx, mine)
	if err != nil {
		if rv.listener != nil {
			rv.listener.Close()
		}
		return nil, fmt.Errorf("agreeing on the arms' rendezvous: %w", err)
	}
	rv.addr, rv.token, _ = strings.Cut(string(parts[0]), " ")
	return rv, nil
}

// env is the arm's environment: ab's own less what ab's launcher handed
// it alone, with the arm's library and settings, and the turn's
// rendezvous.
func (r *Runner) env(a Arm, rv *armRendezvous) []string {
	drop := []string{cluster.ListenerFDVar, cluster.HeldVar}
	var env []string
	for _, kv := range r.o.Env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, name) {
			env = append(env, kv)
		}
	}
	if a.Lib != "" {
		env = append(env, "COLLBENCH_NCCL_LIB="+a.Lib)
	}
	env = append(env, a.Env...) // the last of a name wins
	if rv != nil && rv.addr != "" {
		env = append(env, "COLLBENCH_TOKEN="+rv.token, cluster.HeldVar+"=1")
		if rv.listener != nil {
			env = append(env, cluster.ListenerFDVar+"=3")
		}
	}
	return env
}

func (r *Runner) command(ctx context.Context, args, env []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, r.o.Exe, args...)
	cmd.Env = env
	// Interrupted, an arm's processes get SIGINT, as from a terminal,
	// and a moment to abort their communicators; and none outlives ab.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// firstLine is what a failed process said last, else how it ended.
func firstLine(err error, said []byte) string {
	if l := strings.TrimSpace(string(said)); l != "" {
		if i := strings.LastIndexByte(l, '\n'); i >= 0 {
			l = l[i+1:]
		}
		return l
	}
	if err != nil {
		return err.Error()
	}
	return "no output"
}

// tail keeps the last 64 KiB written to it; the two streams of a process
// write from goroutines of their own.
type tail struct {
	mu sync.Mutex
	b  []byte
}

const tailSize = 64 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*tailSize {
		t.b = append([]byte(nil), t.b[len(t.b)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.b) > tailSize {
		return t.b[len(t.b)-tailSize:]
	}
	return t.b
}

// lastLine is the line that says why the process ended: a Go panic's or
// fatal error's own line (a crash ends in stack frames, which say
// nothing), else the last line that says something.
func (t *tail) lastLine() []byte {
	s := strings.TrimRight(string(t.Bytes()), "\n ")
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return []byte(l)
		}
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return []byte(s)
}

type multi []*tail

func (m multi) Write(p []byte) (int, error) {
	for _, t := range m {
		t.Write(p)
	}
	return len(p), nil
}
