package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/gpu"
	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/cuda"
	"github.com/collbench/collbench/judge"
	"github.com/collbench/collbench/libpath"
	"github.com/collbench/collbench/machine"
	"github.com/collbench/collbench/nccl"
	"github.com/collbench/collbench/setting"
)

// Session is a job with its communicators open.
type Session struct {
	Backend bench.Backend
	Comm    bench.Comm
	Devices []bench.Device // every rank's, in rank order
	Notes   []string       // preamble lines: backend, memory cap, job, groups
	// Sweep is the sizes the communicators were opened for: the one
	// asked for, its largest size lowered to what the devices hold.
	Sweep bench.Sweep
	// Judger, on rank 0 of a run asked to be judged, judges each row as
	// it is measured; it is set before the run's Start hook.
	Judger *judge.Judger
	local  []int // this process's devices
	job    *Job
	close  func()
}

// Open joins the job, picks the backend and opens the communicators of
// this process's ranks, split by the settings' grouping. sweep's largest
// size sizes the buffers; Session.Sweep says whether it was lowered to
// what the devices hold. check says whether results are verified (it
// costs a buffer); adjust, if set, adds the measurement's settings (the
// buffers it needs); tuning is the nccl backend's own, which the others
// do not take. The returned context ends when the job fails;
// Session.Close releases everything.
func (j *Job) Open(ctx context.Context, sweep bench.Sweep, check bool, adjust func(*bench.Setup), tuning gpu.Tuning) (context.Context, *Session, error) {
	// The backend is this process's choice, and what it refuses of this
	// process alone is refused before the job meets: by every process
	// alike, none left to report a peer that went away.
	backend, notes, err := j.Backend()
	if err != nil {
		return ctx, nil, err
	}
	if err := j.precheck(backend, sweep, adjust); err != nil {
		return ctx, nil, err
	}
	if err := j.connect(ctx); err != nil {
		return ctx, nil, err
	}
	if g, ok := backend.(gpu.Backend); ok {
		backend = g.Tuned(tuning)
	}
	if !OnGPU(backend) && j.Settings.Devices != "" {
		return ctx, nil, Usagef("{Devices} applies to the nccl backend only")
	}
	devs, err := deviceList(j.Settings.Devices, j.Settings.RanksPerProc, j.LocalRank, j.getenv)
	if err != nil {
		return ctx, nil, UsageError{err}
	}
	wctx, stop := j.watch(ctx)
	s := &Session{Backend: backend, Notes: notes, local: devs, job: j}
	groups := j.Settings.Grouping
	comm, allDevs, swept, limitNote, err := s.open(wctx, groups, sweep, check, adjust)
	if err != nil {
		stop()
		return ctx, nil, err
	}
	if limitNote != "" {
		s.Notes = append(s.Notes, limitNote)
	}
	s.Comm, s.Devices, s.Sweep = comm, allDevs, swept
	if n, ok := comm.(bench.Noter); ok {
		s.Notes = append(s.Notes, n.Notes()...)
	}
	s.Notes = append(s.Notes, j.notes(groups, j.World(), j.Settings.RanksPerProc)...)
	s.close = func() { comm.Close(); stop() }
	return wctx, s, nil
}

// Close closes the session's communicators and stops watching the job.
func (s *Session) Close() { s.close() }

// OnGPU says whether the session runs on the nccl backend.
func (s *Session) OnGPU() bool { return OnGPU(s.Backend) }

// OnGPU says whether b is the nccl backend.
func OnGPU(b bench.Backend) bool {
	_, ok := b.(gpu.Backend)
	return ok
}

// OpenGroups opens another set of communicators in the session's job,
// split by g, for messages of up to need bytes (collbench profile opens
// one set per grouping); bufferBytes, if set, enlarges the buffers as
// Setup.BufferBytes says. It returns them and the largest message they
// hold.
func (s *Session) OpenGroups(ctx context.Context, g bench.Grouping, sweep bench.Sweep, bufferBytes func(int64) int64) (bench.Comm, int64, error) {
	comm, _, swept, _, err := s.open(ctx, g, sweep, false, func(s *bench.Setup) { s.BufferBytes = bufferBytes })
	if err != nil {
		return nil, 0, err
	}
	return comm, swept.Max, nil
}

// Regroup makes the communicators of grouping g for messages of up to
// bytes: split from the session's own where the backend can
// (bench.Regrouper), they are job-wide and their buffers hold such
// messages, else opened as OpenGroups does. Every process decides alike:
// the session's sizes were agreed across the job. The caller closes them
// before the session.
func (s *Session) Regroup(ctx context.Context, g bench.Grouping, bytes int64) (bench.Comm, error) {
	jobWide := s.job.Settings.Grouping.JobWide(s.job.World())
	if r, ok := s.Comm.(bench.Regrouper); ok && jobWide && bytes <= s.Sweep.Max {
		return r.Regroup(g)
	}
	comm, _, err := s.OpenGroups(ctx, g, bench.Sweep{Min: bytes, Max: bytes, Factor: 2}, nil)
	return comm, err
}

func (s *Session) open(ctx context.Context, g bench.Grouping, sweep bench.Sweep, check bool, adjust func(*bench.Setup)) (bench.Comm, []bench.Device, bench.Sweep, string, error) {
	j := s.job
	setup := j.setup(g, s.local, adjust)
	setup.Exchange, setup.Addr = j.exchange(), j.Advertise()
	return openComm(ctx, s.Backend, setup, sweep, check, j)
}

// setup is this process's part of the job over groups g, before the
// backend's memory cap and without the job's exchange.
func (j *Job) setup(g bench.Grouping, devices []int, adjust func(*bench.Setup)) bench.Setup {
	per := j.Settings.RanksPerProc
	setup := bench.Setup{JobRanks: j.World(), FirstRank: j.Rank * per, LocalRanks: per, HostProcs: j.LocalSize, Devices: devices, Groups: g}
	if adjust != nil {
		adjust(&setup)
	}
	return setup
}

// checkCollective has the job's backend refuse, before anything runs, a
// collective its settings cannot run over groups of n ranks
// (bench.CollectiveChecker). A backend that cannot be chosen is left to
// Open to report.
func (j *Job) checkCollective(coll *bench.Collective, n int) error {
	b, _, err := j.Backend()
	if err != nil {
		return nil
	}
	if cc, ok := b.(bench.CollectiveChecker); ok {
		if err := cc.CheckCollective(coll, n); err != nil {
			return UsageError{err}
		}
	}
	return nil
}

// precheck runs the backend's own refusals of this process's setup
// (bench.Prechecker), where it has any and sets no memory cap the
// processes agree on first. A buffer too large is a usage error.
func (j *Job) precheck(backend bench.Backend, sweep bench.Sweep, adjust func(*bench.Setup)) error {
	pc, ok := backend.(bench.Prechecker)
	if _, capped := backend.(bench.MemoryLimiter); !ok || capped {
		return nil
	}
	setup := j.setup(j.Settings.Grouping, nil, adjust)
	setup.BufBytes = bufBytes(setup, sweep.Max)
	if err := pc.Precheck(setup); err != nil {
		if errors.Is(err, bench.ErrTooLarge) {
			return UsageError{err}
		}
		return err
	}
	return nil
}

// bufBytes is each buffer's size for a sweep up to maxBytes: the largest
// call, or what the measurement asks for it (Setup.BufferBytes) if more.
func bufBytes(setup bench.Setup, maxBytes int64) int64 {
	if setup.BufferBytes != nil {
		return max(maxBytes, setup.BufferBytes(maxBytes))
	}
	return maxBytes
}

// openComm applies the backend's memory cap (agreed across processes) to
// the sweep, opens the communicators within the bootstrap deadline and
// gathers every process's devices. The note says when -e was lowered.
func openComm(ctx context.Context, backend bench.Backend, setup bench.Setup, sweep bench.Sweep, check bool, j *Job) (bench.Comm, []bench.Device, bench.Sweep, string, error) {
	note := ""
	fail := func(err error) (bench.Comm, []bench.Device, bench.Sweep, string, error) {
		return nil, nil, sweep, "", err
	}
	if lim, ok := backend.(bench.MemoryLimiter); ok {
		limit, err := lim.MaxBytes(setup, check)
		if err != nil {
			return fail(err)
		}
		if j.Multi() {
			if limit, err = j.agreeMin(ctx, limit); err != nil {
				return fail(err)
			}
		}
		if sweep.Max > limit {
			sweep.Max = max(limit, 0)
			sweep.Min = min(sweep.Min, sweep.Max)
			note = fmt.Sprintf("Reducing maxBytes to %d due to memory limitation", sweep.Max)
		}
	}
	setup.BufBytes = bufBytes(setup, sweep.Max)
	octx := ctx
	if j.Limits.Bootstrap > 0 {
		var cancel context.CancelFunc
		octx, cancel = context.WithTimeout(ctx, j.Limits.Bootstrap)
		defer cancel()
	}
	comm, err := backend.Open(octx, setup)
	if err != nil {
		if errors.Is(err, bench.ErrTooLarge) {
			return fail(UsageError{err})
		}
		if errors.Is(octx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return fail(&StartTimeout{What: "opening the " + backend.Name() + " backend", After: j.Limits.Bootstrap, Err: err})
		}
		if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%v)", cause, err)
		}
		return fail(fmt.Errorf("opening the %s backend: %w", backend.Name(), err))
	}
	devs, err := j.allDevices(octx, comm.Devices())
	if err != nil {
		comm.Close()
		return fail(err)
	}
	return comm, devs, sweep, note, nil
}

// pickedBackend is a job's backend and the preamble notes of its choice.
type pickedBackend struct {
	backend bench.Backend
	notes   []string
}

// UseBackend makes the job run on b, a backend the caller built (a Go
// program's own, or a test's), instead of one its settings choose. It
// comes before the first measurement.
func (j *Job) UseBackend(b bench.Backend) { j.picked = &pickedBackend{backend: b} }

// Backend chooses the job's backend once (probing the GPU stack for auto
// and nccl), so a measurement that must know it before opening its
// communicators (collbench health's default sizes) does not probe twice.
func (j *Job) Backend() (bench.Backend, []string, error) {
	if j.picked == nil {
		b, notes, err := pickBackend(j.Settings.Backend, j.Settings.NCCLLib, j.Settings.Transport, j.getenv)
		if err != nil {
			return nil, nil, err
		}
		_, onCPU := b.(host.Backend)
		j.chosenCPU = onCPU && j.Settings.Backend != "host"
		j.picked = &pickedBackend{b, notes}
	}
	return j.picked.backend, slices.Clone(j.picked.notes), nil // callers append to their notes
}

// sayOnTheCPU says, once and on rank 0, that the automatic choice runs
// on the CPU for want of a GPU: chosen, not asked for, it is said where a
// script's log shows it, once the run's settings have passed their checks
// (a usage error stays one line).
func (j *Job) sayOnTheCPU() {
	if j.chosenCPU && j.Rank == 0 && !j.saidCPU {
		j.saidCPU = true
		j.logf("no NVIDIA GPU here: running on the CPU (the host backend); pass {Backend} host to ask for it")
	}
}

// pickBackend resolves --backend. auto takes the nccl backend when the
// CUDA driver, at least one GPU and NCCL are all present, and says in a
// preamble note why it chose what it chose.
func pickBackend(name, ncclLib string, transport host.Transport, getenv func(string) string) (bench.Backend, []string, error) {
	tuning, tuneErr := hostTuning(getenv)
	if name == "host" {
		return host.Backend{Transport: transport, Tuning: tuning}, nil, tuneErr
	}
	g := gpu.Backend{NCCLLib: ncclLib}
	if name == "nccl" {
		note, err := probeGPU(g)
		if err != nil {
			return nil, nil, fmt.Errorf("the nccl backend is not available: %w", err)
		}
		return g, []string{note}, nil
	}
	note, err := probeGPU(g)
	if err != nil && (ncclLib != "" || getenv(libpath.NCCL.EnvVar) != "") {
		// An NCCL named by the caller is a request for the nccl backend:
		// a run on the CPU instead would be a number of another kind.
		named := "{NCCLLib} " + ncclLib
		if ncclLib == "" {
			named = libpath.NCCL.EnvVar + "=" + getenv(libpath.NCCL.EnvVar)
		}
		return nil, nil, UsageError{setting.Errorf("the nccl backend is not available, and %s asks for it: %w (to run on the CPU anyway, pass {Backend} host)", named, err)}
	}
	if err != nil {
		if where, ok := gpusPresent(); ok {
			// A GPU machine whose driver or NCCL is broken: a run on
			// the CPU would put a number of another kind in its log.
			return nil, nil, UsageError{setting.Errorf("this machine has NVIDIA GPUs (%s), but the nccl backend cannot start: %w (collbench doctor says what is missing; to run on the CPU anyway, pass {Backend} host)", where, err)}
		}
		why := err.Error()
		if errors.Is(err, cuda.ErrNoDriver) && getenv(libpath.CUDA.EnvVar) == "" {
			if _, statErr := os.Stat("/dev/nvidiactl"); statErr != nil {
				why = "no NVIDIA GPU driver found"
			}
		}
		return host.Backend{Transport: transport, Tuning: tuning}, []string{"Backend: host (auto: " + why + ")"}, tuneErr
	}
	return g, []string{"Backend: nccl (auto)", note}, nil
}

// nvidiaNodes matches the device nodes of NVIDIA GPUs (/dev/nvidia0 …,
// not nvidiactl or nvidia-uvm).
var nvidiaNodes = "/dev/nvidia[0-9]*"

// gpusPresent says whether this machine has NVIDIA GPUs, by their device
// nodes or by NVML, and what says so.
func gpusPresent() (string, bool) {
	if nodes, _ := filepath.Glob(nvidiaNodes); len(nodes) > 0 {
		return strings.Join(nodes, ", "), true
	}
	if n := machine.NVMLDeviceCount(); n > 0 {
		return fmt.Sprintf("NVML sees %d", n), true
	}
	return "", false
}

// probeGPU loads the driver and NCCL and checks for a GPU. It returns a
// preamble note naming the libraries in use, as nccl-tests' first line
// names its NCCL, or why the nccl backend cannot run here.
func probeGPU(g gpu.Backend) (string, error) {
	cudaPath, err := cuda.Load(g.CUDALib)
	if err != nil {
		return "", err
	}
	if n, err := cuda.DeviceCount(); err != nil || n == 0 {
		return "", fmt.Errorf("the CUDA driver sees no GPU")
	}
	ncclPath, err := g.Load()
	if err != nil {
		return "", err
	}
	drv, _ := cuda.DriverVersion()
	return fmt.Sprintf("NCCL %s (%s), CUDA driver %s (%s)", nccl.RuntimeVersion(), ncclPath, cuda.FormatVersion(drv), cudaPath), nil
}

// deviceList resolves the GPU of each local rank: --devices, else
// NCCL_TESTS_DEVICE as the first of -g consecutive GPUs, else 0..g-1.
func deviceList(spec string, ngpus, localRank int, getenv func(string) string) ([]int, error) {
	if spec != "" {
		var devs []int
		for _, s := range strings.Split(spec, ",") {
			d, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || d < 0 {
				return nil, setting.Errorf("{Devices} %q: %q is not a GPU number", spec, s)
			}
			devs = append(devs, d)
		}
		if len(devs) != ngpus {
			return nil, setting.Errorf("{Devices} lists %d GPU(s) but {RanksPerProc} is %d", len(devs), ngpus)
		}
		return devs, nil
	}
	first := 0
	if v := getenv("NCCL_TESTS_DEVICE"); v != "" {
		d, err := strconv.Atoi(v)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("NCCL_TESTS_DEVICE=%q is not a GPU number", v)
		}
		first = d
	}
	devs := make([]int, ngpus)
	for i := range devs {
		devs[i] = first + localRank*ngpus + i
	}
	return devs, nil
}

// filterSupport drops the types and ops the backend cannot run when the
// user asked for "all", as nccl-tests drops fp8 on older GPUs, and refuses
// them when named.
func filterSupport(opts bench.Options, caps bench.Capabilities, allTypes, allOps bool) (bench.Options, error) {
	var err error
	if opts.Types, err = supported(opts.Types, caps.Type, allTypes); err != nil {
		return opts, err
	}
	if !opts.Coll.Reduces {
		return opts, nil
	}
	if opts.Ops, err = supported(opts.Ops, caps.Op, allOps); err != nil || caps.Pair == nil {
		return opts, err
	}
	opts.Skip = nil
	for _, t := range opts.Types {
		for _, op := range opts.Ops {
			if err := caps.Pair(t, op); err != nil {
				if !allTypes && !allOps {
					return opts, UsageError{err}
				}
				opts.Skip = append(opts.Skip, bench.TypeOp{Type: t, Op: op})
			}
		}
	}
	return opts, nil
}

// supported keeps the items check accepts; a refused item is an error
// unless it came from "all".
func supported[T any](items []T, check func(T) error, fromAll bool) ([]T, error) {
	if check == nil {
		return items, nil
	}
	var keep []T
	for _, it := range items {
		if err := check(it); err != nil {
			if !fromAll {
				return nil, UsageError{err}
			}
			continue
		}
		keep = append(keep, it)
	}
	return keep, nil
}
