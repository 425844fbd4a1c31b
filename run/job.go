package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/cluster"
	"github.com/collbench/collbench/setting"
)

// Deadlines are the watchdog's limits for one run.
type Deadlines struct {
	Bootstrap  time.Duration // ranks arriving, sharing ids, opening communicators
	Collective time.Duration // one timed batch of calls (-T)
	Stall      time.Duration // silence after which a process is given up on
	// Watchdog is the floor of the engine's stall watchdog, which bounds
	// every wait on a backend that can stall silently (GPUs) by what the
	// run has measured; without -T it is on, -T replaces it.
	Watchdog time.Duration
}

// Defaults for jobs of several processes run without -T: generous enough
// for a staggered start on a cluster, yet nothing waits forever.
const (
	defaultBootstrap  = 120 * time.Second
	defaultCollective = 300 * time.Second
	maxStall          = 10 * time.Second
)

// DeadlinesFor applies -T (0 = not given). A one-process run keeps
// nccl-tests' behaviour for its calls, no fixed limit unless -T is given,
// but its start-up is bounded like any job's: nothing waits forever to
// begin; and where calls can stall silently (GPUs) the stall watchdog
// bounds them by what the run measures unless -T is given.
func DeadlinesFor(timeout time.Duration, multi bool) Deadlines {
	switch {
	case timeout > 0:
		return Deadlines{Bootstrap: timeout, Collective: timeout, Stall: min(timeout, maxStall)}
	case multi:
		return Deadlines{Bootstrap: defaultBootstrap, Collective: defaultCollective, Stall: maxStall, Watchdog: bench.DefaultStallFloor}
	}
	return Deadlines{Bootstrap: defaultBootstrap, Watchdog: bench.DefaultStallFloor}
}

// Settings are what every measuring command shares: how many ranks a
// process runs, on which backend and devices, how the job is formed and
// split, and its deadlines.
type Settings struct {
	RanksPerProc int            // ranks (GPUs) in each process (-g)
	Timeout      time.Duration  // -T; 0 keeps the defaults of DeadlinesFor
	Backend      string         // auto, nccl or host
	NCCLLib      string         // libnccl file or folder; empty searches
	Transport    host.Transport // how the host backend joins ranks of one host
	Devices      string         // GPU of each local rank, comma-separated; empty: NCCL_TESTS_DEVICE+i or 0..g-1
	Rendezvous   string         // host:port; empty: the launcher's
	Grouping     bench.Grouping
	OTLPEndpoint string // telemetry collector; empty: the OTEL_* environment
	Version      string // collbench's, recorded in documents and telemetry
	// Agreed are what every process of the job must have been started
	// with alike (the front end's names and values): compared with rank
	// 0's at the rendezvous, where a difference ends the job in one line
	// (cluster.ErrSettingsDiffer) instead of ranks waiting in different
	// calls for ever.
	Agreed []cluster.Setting
}

// WorldRanks is the ranks of a job of nprocs processes.
func (s Settings) WorldRanks(nprocs int) int { return nprocs * s.RanksPerProc }

// Job is this process's place in the run and, when there are several
// processes, its link to the others through the rendezvous.
type Job struct {
	cluster.Job
	Addr     string // rendezvous host:port
	Limits   Deadlines
	Settings Settings
	Began    time.Time // when the job was read: a profile's budget counts from here
	// Progress, when set, hears how far each measurement has come (rank
	// 0 only).
	Progress    Progress
	tokenSource string
	getenv      func(string) string
	logf        func(string, ...any)
	// chosenCPU: the automatic choice took the host backend; saidCPU:
	// sayOnTheCPU has said so.
	chosenCPU, saidCPU bool
	store              *cluster.Store // rank 0 only
	picked             *pickedBackend // the backend, once chosen
	client             *cluster.Client
}

// NewJob reads the launcher's environment through getenv: this process's
// place in the job and the watchdog's deadlines. Nothing is contacted
// yet. logf hears what the rendezvous has to say (who is missing).
func NewJob(s Settings, getenv func(string) string, logf func(string, ...any)) (*Job, error) {
	cj, err := cluster.FromEnv(getenv)
	if err != nil {
		return nil, Usagef("reading the launcher's environment: %v", err)
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	j := &Job{Job: cj, Settings: s, Began: time.Now(), getenv: getenv, logf: logf}
	j.Limits = DeadlinesFor(s.Timeout, cj.Size > 1)
	// The address is resolved (and --rendezvous checked) even for a job
	// of one process, where it goes unused, so a typo is not ignored.
	if cj.Size > 1 || s.Rendezvous != "" {
		if j.Addr, err = cj.Rendezvous(s.Rendezvous, getenv); err != nil {
			return nil, UsageError{err}
		}
	}
	if cj.Size == 1 && s.Rendezvous != "" {
		// Nothing else would look at it: a host that does not resolve
		// is a typo to say now.
		host, _, _ := net.SplitHostPort(j.Addr)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err := net.DefaultResolver.LookupHost(ctx, host); err != nil {
			return nil, Usagef("{Rendezvous} %q: %v", s.Rendezvous, err)
		}
	}
	return j, nil
}

// World is the number of ranks in the job.
func (j *Job) World() int { return j.Settings.WorldRanks(j.Size) }

// connect joins the rendezvous in a job of several processes, hosting it
// on rank 0.
func (j *Job) connect(ctx context.Context) error {
	if j.Size == 1 || j.client != nil {
		return nil
	}
	var token string
	token, j.tokenSource = cluster.Token(j.getenv, j.Addr)
	if j.Rank == 0 {
		ln, err := listenStore(j.Addr, j.getenv)
		if err != nil {
			return err
		}
		j.store = cluster.Serve(ln, cluster.StoreConfig{Token: token, Size: j.Size,
			Join: j.Limits.Bootstrap, Stall: j.Limits.Stall, Logf: j.logf, PerProc: j.Settings.RanksPerProc, Settings: j.Settings.Agreed})
	}
	// A little longer than the store's own deadline, so that the store's
	// report of who is missing arrives first.
	dctx, cancel := context.WithTimeout(ctx, j.Limits.Bootstrap+3*time.Second)
	defer cancel()
	var err error
	cfg := cluster.DialConfig{Token: token, Rank: j.Rank, Size: j.Size, Stall: j.Limits.Stall, Held: j.getenv(cluster.HeldVar) == "1",
		Settings: j.Settings.Agreed}
	if j.client, err = cluster.Dial(dctx, j.Addr, cfg); err != nil {
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
		// The launcher opened the rendezvous where it told the ranks to
		// meet; an address given to this process besides would send the
		// others elsewhere, to whatever listens there.
		_, want, _ := net.SplitHostPort(addr)
		if _, got, _ := net.SplitHostPort(ln.Addr().String()); want != got {
			ln.Close()
			return nil, Usagef("{Rendezvous} %s: the launcher already opened this job's rendezvous on port %s; leave {Rendezvous} out, or give it to the launcher", addr, got)
		}
		return ln, nil
	}
	host, port, _ := net.SplitHostPort(addr)
	ln, err := net.Listen("tcp", cluster.Bind(host, port))
	if err != nil {
		return nil, setting.Errorf("rank 0 cannot host the rendezvous at %s: %w (pick another with {Rendezvous} or MASTER_PORT)", addr, err)
	}
	return ln, nil
}

// Join connects this process to the job's others, rank 0 hosting the
// rendezvous, without choosing a backend or opening a communicator: for
// a command whose processes coordinate programs of their own (ab).
func (j *Job) Join(ctx context.Context) error { return j.connect(ctx) }

// AllGather exchanges data with every process of a joined job and
// returns their contributions in rank order; a job of one process gets
// its own back.
func (j *Job) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	if j.client == nil {
		return [][]byte{data}, nil
	}
	return j.client.AllGather(ctx, data)
}

// Multi says whether the job has other processes.
func (j *Job) Multi() bool { return j.client != nil }

// Close leaves the job; rank 0 gives the others a moment to finish
// with the rendezvous first.
func (j *Job) Close() {
	if j.client != nil {
		j.client.Close()
	}
	if j.store != nil {
		j.store.Drain(2 * time.Second)
		j.store.Close()
	}
}

// Explain puts the job's failure in front of a local error: when a rank
// is lost, the local symptom (a reset connection, an aborted call) comes
// a moment before the rendezvous says which rank it was. An interruption
// (ctx, the process's signal context) wins over both: a Ctrl-C sent to
// every rank may reach this one just after its peers reacted to theirs.
//
// It is applied before a failure is recorded in a results file, so the
// file blames what stderr blames, and applying it again changes nothing.
func (j *Job) Explain(ctx context.Context, err error) error {
	var ue UsageError
	var done *jobError
	var seen explained
	if err == nil || !j.Multi() || errors.As(err, &ue) || errors.As(err, &done) || errors.As(err, &seen) || errors.Is(err, context.Canceled) {
		return err
	}
	// Interrupted, this rank stopped by its own signal: the peers it lost
	// meanwhile stopped by theirs (a Ctrl-C reaches every rank), and a
	// local error that already says it was interrupted needs nothing more.
	interrupted := func() error {
		cause := context.Cause(ctx)
		switch {
		case errors.Is(err, cluster.ErrPeerLost):
			return explained{cause}
		case errors.Is(err, cause):
			return explained{err}
		}
		return &jobError{cause: cause, local: err}
	}
	select {
	case <-ctx.Done():
		return interrupted()
	case <-j.client.Failed():
		if cause := j.client.Err(); errors.Is(cause, cluster.ErrSettingsDiffer) {
			return explained{cause} // what this rank was doing then is beside the point
		}
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

// Peers is the engine's view of the other processes.
func (j *Job) Peers() bench.Peers {
	if !j.Multi() {
		return bench.Solo{}
	}
	return cluster.Peers{C: j.client}
}

// exchange is the backends' all-gather across processes; nil alone.
func (j *Job) exchange() func(ctx context.Context, mine []byte) ([][]byte, error) {
	if !j.Multi() {
		return nil
	}
	return j.client.AllGather
}

// Advertise is the address other hosts reach this process at: the local
// end of its connection to the rendezvous, which is on the interface that
// routes to the job.
func (j *Job) Advertise() string {
	if !j.Multi() {
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
func (j *Job) watch(ctx context.Context) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancelCause(ctx)
	if j.Multi() {
		j.client.OnFail(func(err error) { cancel(err) })
	}
	return cctx, func() { cancel(context.Canceled) }
}

// agreeMin returns the smallest v over the processes, so that every
// process sweeps the same sizes.
func (j *Job) agreeMin(ctx context.Context, v int64) (int64, error) {
	got, err := j.Peers().AllReduce(ctx, []float64{float64(v)}, bench.ReduceMin)
	if err != nil {
		return 0, err
	}
	return int64(got[0]), nil
}

// allDevices gathers every process's devices in rank order, for the
// preamble that rank 0 prints.
func (j *Job) allDevices(ctx context.Context, mine []bench.Device) ([]bench.Device, error) {
	if !j.Multi() {
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

// notes are the preamble lines that describe the job and its groups.
func (j *Job) notes(g bench.Grouping, nranks, ngpus int) []string {
	var out []string
	if j.Multi() {
		addr := j.Addr
		if j.AgentStore && j.Settings.Rendezvous == "" {
			addr += " (MASTER_PORT+1: torchrun's agent holds MASTER_PORT)"
		}
		out = append(out, fmt.Sprintf("Job: %d processes × %d rank(s) from %s, rendezvous %s, token from %s",
			j.Size, ngpus, j.Launcher, addr, j.tokenSource))
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
