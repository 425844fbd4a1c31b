package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/cluster"
)

// deadlines are the watchdog's limits for one run.
type deadlines struct {
	bootstrap  time.Duration // ranks arriving, sharing ids, opening communicators
	collective time.Duration // one timed batch of calls (-T)
	stall      time.Duration // silence after which a process is given up on
}

// Defaults for jobs of several processes run without -T: generous enough
// for a staggered start on a cluster, yet nothing waits forever.
const (
	defaultBootstrap  = 120 * time.Second
	defaultCollective = 300 * time.Second
	maxStall          = 10 * time.Second
)

// deadlinesFor applies -T (0 = not given). A one-process run keeps
// nccl-tests' behaviour for its calls, no limit unless -T is given, but
// its start-up is bounded like any job's: nothing waits forever to begin.
func deadlinesFor(timeout time.Duration, multi bool) deadlines {
	switch {
	case timeout > 0:
		return deadlines{bootstrap: timeout, collective: timeout, stall: min(timeout, maxStall)}
	case multi:
		return deadlines{bootstrap: defaultBootstrap, collective: defaultCollective, stall: maxStall}
	}
	return deadlines{bootstrap: defaultBootstrap}
}

// job is this process's place in the run and, when there are several
// processes, its link to the others through the rendezvous.
type job struct {
	cluster.Job
	addr        string // rendezvous host:port
	tokenSource string
	limits      deadlines
	perProc     int            // ranks per process (-g), for naming processes
	store       *cluster.Store // rank 0 only
	client      *cluster.Client
}

// readJob reads the launcher's environment: this process's place in the
// job and the watchdog's deadlines. Nothing is contacted yet.
func readJob(f *jobFlags, getenv func(string) string) (*job, error) {
	cj, err := cluster.FromEnv(getenv)
	if err != nil {
		return nil, usagef("reading the launcher's environment: %v", err)
	}
	j := &job{Job: cj, perProc: f.ngpus}
	timeout, err := seconds("-T", f.timeout)
	if err != nil {
		return nil, err
	}
	j.limits = deadlinesFor(timeout, cj.Size > 1)
	// The address is resolved (and --rendezvous checked) even for a job
	// of one process, where it goes unused, so a typo is not ignored.
	if cj.Size > 1 || f.rendezvous != "" {
		if j.addr, err = cj.Rendezvous(f.rendezvous, getenv); err != nil {
			return nil, usageError{err}
		}
	}
	return j, nil
}

// connect joins the rendezvous in a job of several processes, hosting it
// on rank 0.
func (j *job) connect(ctx context.Context, getenv func(string) string, logf func(string, ...any)) error {
	if j.Size == 1 {
		return nil
	}
	var token string
	token, j.tokenSource = cluster.Token(getenv, j.addr)
	if j.Rank == 0 {
		ln, err := listenStore(j.addr, getenv)
		if err != nil {
			return err
		}
		j.store = cluster.Serve(ln, cluster.StoreConfig{Token: token, Size: j.Size,
			Join: j.limits.bootstrap, Stall: j.limits.stall, Logf: logf, PerProc: j.perProc})
	}
	// A little longer than the store's own deadline, so that the store's
	// report of who is missing arrives first.
	dctx, cancel := context.WithTimeout(ctx, j.limits.bootstrap+3*time.Second)
	defer cancel()
	var err error
	if j.client, err = cluster.Dial(dctx, j.addr, token, j.Rank, j.Size, j.limits.stall); err != nil {
		return fmt.Errorf("joining the job as rank %d of %d: %w", j.Rank, j.Size, err)
	}
	return nil
}

// listenStore opens the rendezvous port: the listener collbench launch
// opened and handed down, else on loopback when the address is local, else
// on every interface (the address may be a name that resolves elsewhere
// than where the listener should be).
func listenStore(addr string, getenv func(string) string) (net.Listener, error) {
	if v := getenv(cluster.ListenerFDVar); v != "" {
		fd, err := strconv.Atoi(v)
		if err != nil || fd < 3 {
			return nil, fmt.Errorf("%s=%q is not an inherited descriptor", cluster.ListenerFDVar, v)
		}
		f := os.NewFile(uintptr(fd), "rendezvous")
		defer f.Close()
		ln, err := net.FileListener(f)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: the inherited rendezvous listener: %w", cluster.ListenerFDVar, v, err)
		}
		return ln, nil
	}
	host, port, _ := net.SplitHostPort(addr)
	bind := addr
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		bind = net.JoinHostPort("", port)
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("rank 0 cannot host the rendezvous at %s: %w (pick another with --rendezvous or MASTER_PORT)", addr, err)
	}
	return ln, nil
}

func (j *job) multi() bool { return j.client != nil }

func (j *job) close() {
	if j.client != nil {
		j.client.Close()
	}
	if j.store != nil {
		j.store.Drain(2 * time.Second)
		j.store.Close()
	}
}

// explain puts the job's failure in front of a local error: when a rank
// is lost, the local symptom (a reset connection, an aborted call) comes
// a moment before the rendezvous says which rank it was. An interruption
// (ctx, the process's signal context) wins over both: a Ctrl-C sent to
// every rank may reach this one just after its peers reacted to theirs.
//
// It is applied before a failure is recorded in a results file, so the
// file blames what stderr blames, and applying it again changes nothing.
func (j *job) explain(ctx context.Context, err error) error {
	var ue usageError
	var done *jobError
	var seen explained
	if err == nil || !j.multi() || errors.As(err, &ue) || errors.As(err, &done) || errors.As(err, &seen) || errors.Is(err, context.Canceled) {
		return err
	}
	interrupted := func() error { return &jobError{cause: context.Cause(ctx), local: err} }
	select {
	case <-ctx.Done():
		return interrupted()
	case <-j.client.Failed():
		select {
		case <-ctx.Done():
			return interrupted()
		case <-time.After(200 * time.Millisecond):
		}
		if errors.Is(err, cluster.ErrPeerLost) {
			return explained{err}
		}
		return &jobError{cause: j.client.Err(), local: err}
	case <-time.After(2 * time.Second):
		return explained{err}
	}
}

// explained is a failure explain found nothing to add to; it reads as the
// failure itself, and explain does not wait for the job again.
type explained struct{ error }

func (e explained) Unwrap() error { return e.error }

// startTimeout is a start-up step that did not finish within the job's
// start-up deadline (-T, or the default); it exits like any timeout.
type startTimeout struct {
	what  string
	after time.Duration
	err   error
}

func (e *startTimeout) Error() string {
	return fmt.Sprintf("%s did not finish within the start-up deadline of %v (-T sets it): %v", e.what, e.after, e.err)
}
func (e *startTimeout) Unwrap() error { return e.err }

// jobError is a local failure explained by the job's.
type jobError struct{ cause, local error }

func (e *jobError) Error() string   { return fmt.Sprintf("%v; here: %v", e.cause, e.local) }
func (e *jobError) Unwrap() []error { return []error{e.cause, e.local} }

// peers is the engine's view of the other processes.
func (j *job) peers() bench.Peers {
	if !j.multi() {
		return bench.Solo{}
	}
	return cluster.Peers{C: j.client}
}

// exchange is the backends' all-gather across processes; nil alone.
func (j *job) exchange() func(ctx context.Context, mine []byte) ([][]byte, error) {
	if !j.multi() {
		return nil
	}
	return j.client.AllGather
}

// advertise is the address other hosts reach this process at: the local
// end of its connection to the rendezvous, which is on the interface that
// routes to the job.
func (j *job) advertise() string {
	if !j.multi() {
		return ""
	}
	host, _, err := net.SplitHostPort(j.client.LocalAddr().String())
	if err != nil {
		return ""
	}
	return host
}

// watch cancels ctx with the job's failure as its cause, so a process
// blocked inside a collective aborts as soon as another rank is lost.
func (j *job) watch(ctx context.Context) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancelCause(ctx)
	if j.multi() {
		j.client.OnFail(func(err error) { cancel(err) })
	}
	return cctx, func() { cancel(context.Canceled) }
}

// agreeMin returns the smallest v over the processes, so that every
// process sweeps the same sizes.
func (j *job) agreeMin(ctx context.Context, v int64) (int64, error) {
	got, err := j.peers().AllReduce(ctx, []float64{float64(v)}, bench.ReduceMin)
	if err != nil {
		return 0, err
	}
	return int64(got[0]), nil
}

// allDevices gathers every process's devices in rank order, for the
// preamble that rank 0 prints.
func (j *job) allDevices(ctx context.Context, mine []bench.Device) ([]bench.Device, error) {
	if !j.multi() {
		return mine, nil
	}
	blob, err := json.Marshal(mine)
	if err != nil {
		return nil, err
	}
	parts, err := j.client.AllGather(ctx, blob)
	if err != nil {
		return nil, err
	}
	var all []bench.Device
	for proc, part := range parts {
		var devs []bench.Device
		if err := json.Unmarshal(part, &devs); err != nil {
			return nil, fmt.Errorf("process %d sent an unreadable device list: %w", proc, err)
		}
		all = append(all, devs...)
	}
	return all, nil
}

// output is where this process writes results: rank 0 speaks for the job.
func (j *job) output(stdout io.Writer) io.Writer {
	if j.Rank != 0 {
		return io.Discard
	}
	return stdout
}

// notes are the preamble lines that describe the job and its groups.
func (j *job) notes(g bench.Grouping, nranks, ngpus int) []string {
	var out []string
	if j.multi() {
		out = append(out, fmt.Sprintf("Job: %d processes × %d rank(s) from %s, rendezvous %s, token from %s",
			j.Size, ngpus, j.Launcher, j.addr, j.tokenSource))
	}
	if g.Of(nranks) != nranks {
		mode := "all at once"
		if g.Isolated {
			mode = "isolated: only group 0 runs"
		}
		out = append(out, fmt.Sprintf("Groups: %d of %d ranks, %s, %s", nranks/g.Of(nranks), g.Of(nranks), g.Layout(), mode))
	}
	return out
}

// session is a job with its communicators open.
type session struct {
	backend bench.Backend
	comm    bench.Comm
	devices []bench.Device // every rank's, in rank order
	notes   []string       // preamble lines: backend, memory cap, job, groups
	local   []int          // this process's devices
}

// open joins the job, picks the backend and opens the communicators of
// this process's ranks (opts.Sweep.Max sizes the buffers and may be
// lowered to what the devices hold; adjust, if set, adds command-specific
// settings such as -R). The returned context ends when the job fails;
// close releases everything.
func (j *job) open(ctx context.Context, jf *jobFlags, logf func(string, ...any), opts *bench.Options, adjust func(*bench.Setup)) (context.Context, *session, func(), error) {
	fail := func(err error) (context.Context, *session, func(), error) { return ctx, nil, nil, err }
	if err := j.connect(ctx, os.Getenv, logf); err != nil {
		return fail(err)
	}
	backend, notes, err := pickBackend(jf)
	if err != nil {
		return fail(err)
	}
	if backend.Name() != "nccl" && jf.devices != "" {
		return fail(usagef("--devices applies to the nccl backend only"))
	}
	devs, err := deviceList(jf.devices, jf.ngpus, j.LocalRank)
	if err != nil {
		return fail(usageError{err})
	}
	wctx, stop := j.watch(ctx)
	s := &session{backend: backend, notes: notes, local: devs}
	groups := jf.grouping()
	comm, allDevs, limitNote, err := s.openGroups(wctx, j, jf, groups, opts, adjust)
	if err != nil {
		stop()
		return fail(err)
	}
	if limitNote != "" {
		s.notes = append(s.notes, limitNote)
	}
	s.comm, s.devices = comm, allDevs
	s.notes = append(s.notes, j.notes(groups, j.Size*jf.ngpus, jf.ngpus)...)
	return wctx, s, func() { comm.Close(); stop() }, nil
}

// openGroups opens another set of communicators in the session's job,
// split by g (collbench profile opens one set per grouping).
func (s *session) openGroups(ctx context.Context, j *job, jf *jobFlags, g bench.Grouping, opts *bench.Options, adjust func(*bench.Setup)) (bench.Comm, []bench.Device, string, error) {
	setup := bench.Setup{JobRanks: j.Size * jf.ngpus, FirstRank: j.Rank * jf.ngpus, LocalRanks: jf.ngpus, Devices: s.local,
		Groups: g, Exchange: j.exchange(), Addr: j.advertise()}
	if adjust != nil {
		adjust(&setup)
	}
	return openComm(ctx, s.backend, setup, opts, j)
}

// runJob reads this process's place in the job from the environment, runs
// body in it and turns the outcome into the exit code. Errors go to stderr
// as one line naming the command and, in a job of several processes, this
// process's ranks, after explain has put the job's failure first.
func runJob(ctx context.Context, cmd string, jf *jobFlags, stderr io.Writer, body func(j *job, logf func(string, ...any)) (wrong bool, err error)) int {
	j, err := readJob(jf, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "collbench %s: %v\n", cmd, err)
		return exitCode(err)
	}
	defer j.close()
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "collbench %s: %s\n", cmd, fmt.Sprintf(format, a...))
	}
	wrong, err := body(j, logf)
	if err = j.explain(ctx, err); err != nil {
		who := ""
		if j.multi() {
			who = cluster.ProcName(j.Rank, jf.ngpus) + ": "
		}
		fmt.Fprintf(stderr, "collbench %s: %s%v\n", cmd, who, err)
		return exitCode(err)
	}
	if wrong {
		return exitWrong
	}
	return exitOK
}
