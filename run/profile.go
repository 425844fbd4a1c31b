package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/gpu"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/export"
	"github.com/collbench/collbench/machine"
	"github.com/collbench/collbench/model/profiled"
)

// ProfileSpec is a calibration profile, as collbench profile runs it:
// every collective at every group size and layout, every size, then the
// overlap probes, under one time budget.
type ProfileSpec struct {
	Colls  []*bench.Collective
	Sweep  bench.Sweep
	Type   numeric.DataType
	RedOp  numeric.RedOp
	Groups []int    // group sizes; empty: the world and every power of two from 2 that divides it
	Layout []string // "consecutive", "strided" or both
	// Iters is the most timed iterations per size; the budget may trim
	// them down to MinIters.
	Iters, MinIters int
	Warmup, Check   int
	Budget          time.Duration // 0 = no limit
	// NoOverlap leaves the overlap probes out. OverlapGEMMs (m,n,k),
	// OverlapBytes and OverlapTarget choose them; zero values take the
	// backend's defaults (see Probes).
	NoOverlap     bool
	OverlapGEMMs  []string
	OverlapBytes  int64
	OverlapTarget time.Duration
	// PowerWindow, above zero, runs each size on for this long after its
	// timed loop while NVML reads the GPUs' power draw (GPU backends
	// only), which the samples record and AIConfigurator's table carries.
	PowerWindow time.Duration
	Args        []string // the command line, recorded in the document
	// Exports are the export targets the profile is for (export.Targets):
	// the curves they read are measured first, so that a budget that runs
	// short leaves out others.
	Exports []string
	// Partial accepts a profile the budget leaves curves out of: a budget
	// too small for every curve's promise is then not refused up front,
	// only one too small for what the exports read.
	Partial bool
}

// ProfileHooks hear of a profile: its record laid out (with the sizes
// planned, which the progress counts), each curve once measured and
// fitted, and the finished record.
type ProfileHooks = Hooks[*document.Profile, document.ProfileCurve]

// bufferBytes is what the buffers must hold for sizes up to size over
// every collective and group size: more than size only for an uneven
// all-to-all.
func (s *ProfileSpec) bufferBytes(size int64, groupSizes []int) int64 {
	need := size
	for _, c := range s.Colls {
		for _, n := range groupSizes {
			need = max(need, c.BufferBytes(size, s.Type.Size(), n))
		}
	}
	return need
}

// Plan is the suite a spec asks for on a job of world ranks: the message
// sizes, the group sizes (largest first) and every grouping measured.
type Plan struct {
	Sizes      []int64
	GroupSizes []int
	Groupings  []bench.Grouping
}

// Plan checks the spec against a job of world ranks and lays out its
// suite; isolated runs one group of each size at a time.
func (s *ProfileSpec) Plan(world int, isolated bool) (Plan, error) {
	var p Plan
	switch {
	case len(s.Colls) == 0:
		return p, Usagef("no collective given")
	case s.Sweep.Factor < 2:
		return p, Usagef("{StepFactor} must be at least 2 (got %d)", s.Sweep.Factor)
	case s.Iters < 1 || s.MinIters < 1 || s.MinIters > s.Iters:
		return p, Usagef("want 1 <= {MinIters} (%d) <= {Iters} (%d)", s.MinIters, s.Iters)
	case s.Warmup < 0 || s.Check < 0:
		return p, Usagef("{Warmup} and {Check} cannot be negative")
	case s.Budget < 0:
		return p, Usagef("{Budget} cannot be negative")
	case s.OverlapTarget < 0 || s.OverlapTarget > time.Hour:
		return p, Usagef("{OverlapTarget} must be between 0 and 3600 seconds")
	case s.PowerWindow < 0 || s.PowerWindow > maxPowerWindow || (s.PowerWindow > 0 && s.PowerWindow < minPowerWindow):
		return p, powerWindowError(s.PowerWindow.Seconds())
	}
	if err := s.Sweep.Validate(); err != nil {
		return p, UsageError{err}
	}
	p.Sizes = s.Sweep.Sizes()
	if world < 2 {
		return p, Usagef("a profile needs at least 2 ranks (got %d); use {RanksPerProc} or launch several processes", world)
	}
	if len(s.Groups) == 0 {
		// Every power of two that divides the world, and the world.
		p.GroupSizes = []int{world}
		for n := 2; n < world; n *= 2 {
			if world%n == 0 {
				p.GroupSizes = append(p.GroupSizes, n)
			}
		}
	} else {
		for _, n := range s.Groups {
			if n < 2 || n > world || world%n != 0 {
				return p, Usagef("{GroupSizes}: %d is not a group size of 2 or more that divides the %d ranks", n, world)
			}
			p.GroupSizes = append(p.GroupSizes, n)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(p.GroupSizes)))
	for _, l := range s.Layout {
		if l != "consecutive" && l != "strided" {
			return p, Usagef("{Layouts}: unknown layout %q (want consecutive, strided or both)", l)
		}
	}
	for _, n := range p.GroupSizes {
		for _, l := range s.Layout {
			if l == "strided" && n == world && len(s.Layout) > 1 {
				continue // one group of everybody: both layouts are the same
			}
			p.Groupings = append(p.Groupings, bench.Grouping{Size: n, Strided: l == "strided", Isolated: isolated})
		}
	}
	return p, nil
}

// GalvatronProbe is Galvatron's overlap probe (profile_overlap.py): an
// fp32 Linear 4096→4096 on 1024 rows against a 64 MiB fp32 all-reduce of
// the whole world, the covering side four times longer, about a second
// measured.
var GalvatronProbe = struct {
	GEMM   string
	Type   string
	Size   int64
	Cover  float64
	Target float64 // seconds
}{"1024,4096,4096", "float", 64 << 20, 4, 1}

// probeCover is how many times longer the covering side of a profile's
// overlap probes runs, as in Galvatron.
const probeCover = 4

// Probes are the spec's overlap probes on a backend, and the time each
// overlapped phase runs. The defaults: on GPUs, Galvatron's probe plus a
// 4096³ GEMM in the profile's type (bfloat16 unless half or float) next
// to a 64 MiB all-reduce, half a second a phase; on the host, a float
// 256³ GEMM next to 1 MiB, 50 ms a phase.
func (s *ProfileSpec) Probes(onGPU bool) ([]bench.Probe, time.Duration, error) {
	if s.NoOverlap {
		return nil, 0, nil
	}
	target := s.OverlapTarget
	if target == 0 {
		target = map[bool]time.Duration{true: 500 * time.Millisecond, false: 50 * time.Millisecond}[onGPU]
	}
	allreduce, _ := bench.LookupCollective("allreduce")
	bytes := s.OverlapBytes
	if bytes == 0 {
		bytes = map[bool]int64{true: 64 << 20, false: 1 << 20}[onGPU]
	}
	var out []bench.Probe
	gemms := s.OverlapGEMMs
	if len(gemms) == 0 {
		if onGPU {
			w, err := bench.ParseGEMM(GalvatronProbe.GEMM, numeric.Float32)
			if err != nil {
				return nil, 0, err
			}
			out = append(out, bench.Probe{Name: "galvatron", Coll: allreduce, Type: numeric.Float32, RedOp: numeric.Sum,
				Size: GalvatronProbe.Size, Workload: w})
			gemms = []string{"4096,4096,4096"}
		} else {
			gemms = []string{"256,256,256"}
		}
	}
	gt := s.Type
	if !onGPU || (gt != numeric.Float16 && gt != numeric.Bfloat16 && gt != numeric.Float32) {
		gt = map[bool]numeric.DataType{true: numeric.Bfloat16, false: numeric.Float32}[onGPU]
	}
	for _, g := range gemms {
		w, err := bench.ParseGEMM(g, gt)
		if err != nil {
			return nil, 0, Usagef("{OverlapGEMMs}: %v", err)
		}
		out = append(out, bench.Probe{Name: w.String(), Coll: allreduce, Type: gt, RedOp: numeric.Sum, Size: bytes, Workload: w})
	}
	return out, target, nil
}

// Profile measures the suite and gathers it into a profile document,
// which Write receives (on rank 0) even when the suite failed part way,
// with the error inside. It returns the document and an error: Write's if
// it failed, else the measurement's.
func (j *Job) Profile(ctx context.Context, spec ProfileSpec, h ProfileHooks) (*document.Profile, error) {
	return Drive(ctx, j, &profileRun{base: base[ProfileSpec]{j, spec}}, h)
}

// profileRun is a profile as Drive runs it.
type profileRun struct {
	base[ProfileSpec]
	plan   Plan
	start  time.Time
	suite  bench.Suite
	doc    *document.Profile
	points int                               // planned
	out    *Recording[document.ProfileCurve] // while measuring
	// estimated says the budget's estimate ran before the session opened
	// (estimateFirst), so begin need not time it again.
	estimated bool
	meter     *powerMeter // with a power window, this process's GPUs
}

func (m *profileRun) Check(_ context.Context, j *Job) error {
	var err error
	m.plan, err = m.spec.Plan(j.World(), j.Settings.Grouping.Isolated)
	return err
}

func (m *profileRun) Opening(ctx context.Context, j *Job) (Opening, error) {
	spec, p, world := m.spec, m.plan, j.World()
	// A budget that cannot hold the overlap probes is refused before the
	// buffers are allocated (a gigabyte each by default, seconds to make).
	backend, _, err := j.Backend()
	if err != nil {
		return Opening{}, err
	}
	if spec.PowerWindow > 0 && !OnGPU(backend) {
		return Opening{}, Usagef("{PowerWindow} reads the GPUs' power draw from NVML; the %s backend drives no GPU", backend.Name())
	}
	pp, err := m.probeBudget(OnGPU(backend))
	if err != nil {
		return Opening{}, err
	}
	// Routed traffic is drawn here, where an interruption can stop it,
	// not when the buffers are sized (for the whole job) or the curves run.
	sizes := append([]int{world}, p.GroupSizes...)
	for _, c := range spec.Colls {
		for _, n := range sizes {
			if err := c.Traffic.CheckDraws(n); err != nil {
				return Opening{}, Usagef("{MoE}: %v", err)
			}
		}
	}
	for _, c := range spec.Colls {
		for _, n := range sizes {
			if err := c.Traffic.Prepare(ctx, n); err != nil {
				return Opening{}, err
			}
		}
	}
	m.start = time.Now()
	if m.estimated, err = m.estimateFirst(ctx, pp.budget); err != nil {
		return Opening{}, err
	}
	sizing := bench.Sweep{Min: p.Sizes[0], Max: p.Sizes[len(p.Sizes)-1], Factor: spec.Sweep.Factor}
	return Opening{Sweep: sizing, Adjust: func(s *bench.Setup) {
		s.BufferBytes = func(size int64) int64 { return spec.bufferBytes(size, []int{world}) }
	}, Command: "profile", Span: "suite"}, nil
}

// log prints a line of progress: a curve done, a probe measured.
func (m *profileRun) log(format string, a ...any) {
	m.j.progress().Print(fmt.Sprintf(format, a...))
}

// probePlan is the overlap probes a profile runs and the budget that
// keeps their time back.
type probePlan struct {
	probes  []bench.Probe
	overlap bench.OverlapOptions
	budget  bench.Budget
}

// probeBudget lays out the overlap probes and refuses a budget that cannot
// hold them: it needs no measurement, only the backend's probe sizes.
func (m *profileRun) probeBudget(gpu bool) (probePlan, error) {
	j, spec := m.j, m.spec
	probes, target, err := spec.Probes(gpu)
	if err != nil {
		return probePlan{}, err
	}
	overlap := bench.OverlapOptions{Target: target, Cover: probeCover, Timeout: j.Limits.Collective, StallFloor: j.Limits.Watchdog}
	budget := bench.Budget{Limit: spec.Budget, MinIters: spec.MinIters, MaxIters: spec.Iters, Since: j.Began,
		Reserve: time.Duration(len(probes)) * overlap.Duration(), PerPoint: spec.PowerWindow}
	if !budget.Holds(budget.Reserve) {
		return probePlan{}, Usagef("{Budget} %s cannot hold the overlap probe(s): %d × %s at {OverlapTarget} %s; raise it, lower {OverlapTarget} or pass {NoOverlap}",
			spec.Budget, len(probes), overlap.Duration().Round(time.Millisecond), target)
	}
	return probePlan{probes, overlap, budget}, nil
}

func (m *profileRun) Begin(ctx context.Context, sess *Session) (*document.Profile, int, error) {
	j, spec, p, world := m.j, m.spec, m.plan, m.j.World()
	pp, err := m.probeBudget(sess.OnGPU())
	if err != nil {
		return nil, 0, err
	}
	probes, overlap, budget := pp.probes, pp.overlap, pp.budget
	doc := &document.Profile{Schema: document.ProfileSchemaName, Version: document.ProfileSchemaVersion, Collbench: j.Settings.Version,
		Created: m.start.UTC().Format(time.RFC3339), Args: spec.Args, Backend: sess.Backend.Name(), Units: document.SIUnits,
		Curves: []document.ProfileCurve{}, Overlap: []document.ProfileOverlap{}, Errors: []string{}}
	devs := document.DeviceRecords(sess.Devices)
	if doc.Meta, err = j.profileMeta(ctx, sess.OnGPU(), devs); err != nil {
		return nil, 0, err
	}
	needs := export.Needs(spec.Exports, world, doc.Meta.RanksPerNode)
	if why := exportsUnmet(spec.Exports, needs, spec, p, world); why != "" {
		return nil, 0, Usagef("%s", why)
	}
	doc.Suite = document.SuiteConfig{Type: spec.Type.String(), RedOp: spec.RedOp.String(), GroupSizes: p.GroupSizes, Layouts: spec.Layout,
		Concurrent: !j.Settings.Grouping.Isolated, Warmup: spec.Warmup, Iters: spec.Iters, MinIters: spec.MinIters, Check: spec.Check,
		BudgetS: spec.Budget.Seconds(), Sizes: p.Sizes, PowerWindowS: spec.PowerWindow.Seconds()}
	for _, c := range spec.Colls {
		doc.Suite.Collectives = append(doc.Suite.Collectives, c.Name)
	}
	m.suite = m.curveSuite(needs, budget)
	m.suite.Probes, m.suite.Overlap, m.suite.Log = probes, overlap, m.log
	m.suite.Progress = func(done, _ int, what string) { m.out.Step(done, what) }
	m.suite.Open = func(ctx context.Context, g bench.Grouping, need int64) (bench.Comm, int64, func(), error) {
		if g.Of(world) == world && !g.Strided && need <= sess.Sweep.Max {
			return sess.Comm, sess.Sweep.Max, func() {}, nil // the session's own
		}
		comm, maxBytes, err := sess.OpenGroups(ctx, g, bench.Sweep{Min: min(need, p.Sizes[0]), Max: need, Factor: spec.Sweep.Factor},
			func(size int64) int64 { return spec.bufferBytes(size, []int{g.Of(world)}) })
		if err != nil {
			return nil, 0, nil, err
		}
		return comm, maxBytes, func() { comm.Close() }, nil
	}
	if m.estimates() && !m.estimated {
		if err := budgetHolds(ctx, &m.suite, sess.Comm, spec, j.Began, j.Peers(), 0); err != nil {
			return nil, 0, err
		}
	}
	if spec.PowerWindow > 0 {
		if m.meter, err = openMeter(ctx, sess); err != nil {
			return nil, 0, err
		}
		m.suite.Power, m.suite.PowerWindow = m.meter, spec.PowerWindow
	}
	m.doc = doc
	m.points = len(spec.Colls) * len(p.Groupings) * len(p.Sizes)
	for _, n := range sess.Notes {
		m.log("%s", strings.TrimPrefix(n, "# "))
	}
	m.log("%d curves × %d sizes on %d ranks, then %d overlap probe(s)", len(spec.Colls)*len(p.Groupings), len(p.Sizes), world, len(probes))
	return doc, m.points, nil // every size of every curve
}

func (m *profileRun) Measure(ctx context.Context, out *Recording[document.ProfileCurve]) error {
	m.out = out
	doc, spec, world := m.doc, m.spec, m.j.World()
	devs := doc.Meta.Devices
	return m.suite.Run(ctx, func(r bench.CurveResult) {
		out.Phase(fmt.Sprintf("curve %s n=%d %s", r.Coll.Name, r.GroupSize, r.Grouping.Layout()),
			attribute.String("collbench.collective", r.Coll.Name), attribute.Int("collbench.group.size", r.GroupSize),
			attribute.String("collbench.layout", r.Grouping.Layout()), attribute.Int("collbench.sizes", len(r.Rows)))
		for _, row := range r.Rows {
			out.rec.Measured(out.ctx, r.Coll.Name, r.GroupSize, document.MakeResult(row))
		}
		c := document.NewProfileCurve(r, spec.Type.String(), spec.RedOp.String(), world, devs)
		c.Fit = profiled.Fit(&c)
		doc.Curves = append(doc.Curves, c)
		out.Hand(c, "")
	}, func(r bench.ProbeResult) {
		if r.LeftOut != "" {
			doc.Suite.ProbesLeftOut = append(doc.Suite.ProbesLeftOut, r.Probe.Name+": "+r.LeftOut)
			return
		}
		out.Phase("overlap "+r.Probe.Name, attribute.String("collbench.workload", r.Probe.Workload.String()))
		res := document.MakeOverlapResult(r.Probe.Size, r.Probe.Workload, r.Figures)
		out.rec.Overlap(out.ctx, r.Probe.Name, r.Probe.Coll.Name, res)
		doc.Overlap = append(doc.Overlap, document.ProfileOverlap{Name: r.Probe.Name, Collective: r.Probe.Coll.Name,
			Type: r.Probe.Type.String(), GroupSize: r.GroupSize, OverlapResult: res})
	})
}

func (m *profileRun) Finish(_ context.Context, _ *Recording[document.ProfileCurve], runErr error) error {
	if m.meter != nil {
		m.meter.Close()
	}
	suiteOrder(m.doc.Curves, m.suite)
	m.doc.Finished = time.Now().UTC().Format(time.RFC3339)
	m.doc.Suite.ElapsedS = time.Since(m.start).Seconds()
	noteErr(&m.doc.Errors, runErr)
	return nil
}

// profileMeta gathers the job's hosts, their inventory (on GPUs) and the
// NCCL environment.
func (j *Job) profileMeta(ctx context.Context, onGPU bool, devs []document.DeviceRecord) (document.ProfileMeta, error) {
	m := document.ProfileMeta{WorldSize: len(devs), NProcs: j.Size, Hosts: document.Hosts(devs), Devices: devs, Env: map[string]string{}}
	m.NumNodes = len(m.Hosts)
	if m.RanksPerNode = perNode(m.WorldSize, m.NumNodes); m.RanksPerNode == 0 {
		return m, fmt.Errorf("the ranks are spread unevenly over %d hosts; profiles need the same number of ranks on every host", m.NumNodes)
	}
	addNCCLEnv(m.Env)
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		m.Env["CUDA_VISIBLE_DEVICES"] = v
	}
	var mine []byte
	if onGPU && j.LocalRank == 0 {
		inv, _ := machine.Inspect(machine.Options{NCCLLib: j.Settings.NCCLLib})
		mine, _ = json.Marshal(struct {
			Host string
			Inv  *machine.Report
		}{inv.Hostname, inv})
	}
	parts := [][]byte{mine}
	if j.Multi() {
		var err error
		if parts, err = j.client.AllGather(ctx, mine); err != nil {
			return m, err
		}
	}
	for _, part := range parts {
		var got struct {
			Host string
			Inv  *machine.Report
		}
		if len(part) == 0 || json.Unmarshal(part, &got) != nil || got.Inv == nil {
			continue
		}
		for i := range m.Hosts {
			if m.Hosts[i].Hostname == got.Host && m.Hosts[i].Inventory == nil {
				m.Hosts[i].Inventory = got.Inv
			}
		}
		if m.NCCLVersion == "" {
			m.NCCLVersion, m.CUDADriver, m.Driver = got.Inv.NCCL.Version, got.Inv.Driver.Version, got.Inv.NVML.Version
		}
	}
	return m, nil
}

// wantedBy is the curves the export targets read, for the suite to
// measure first, and how many of sizes each must keep; nil without
// targets.
func wantedBy(needs []export.Need, world int, sizes []int64) func(coll string, n int, layout string) (bool, int) {
	if len(needs) == 0 {
		return nil
	}
	return func(coll string, n int, layout string) (bool, int) {
		if n == world {
			layout = "consecutive" // one group of everybody, whatever its layout
		}
		return export.Wanted(needs, coll, n, layout, sizes)
	}
}

// exportsUnmet is why the profile as planned cannot give the targets what
// they read, "" when it can.
func exportsUnmet(targets []string, needs []export.Need, spec ProfileSpec, p Plan, world int) string {
	var colls []string
	for _, c := range spec.Colls {
		colls = append(colls, c.Name)
	}
	has := func(n int, layout string) bool {
		return slices.ContainsFunc(p.Groupings, func(g bench.Grouping) bool {
			return g.Of(world) == n && (n == world || g.Layout() == layout)
		})
	}
	return export.Unmet(targets, needs, colls, has, p.Sizes, !spec.NoOverlap)
}

// estimates says whether the budget is checked against an estimate of
// the curves before they run: under a budget, for every curve the profile
// promises, or, for a partial one, for what its exports read.
func (m *profileRun) estimates() bool {
	return m.spec.Budget > 0 && !(m.spec.Partial && len(m.spec.Exports) == 0)
}

// curveSuite is the profile's curves as planned, under budget, the
// exports' needs measured first: what the budget's estimate reads, and
// the start of the suite begin runs.
func (m *profileRun) curveSuite(needs []export.Need, budget bench.Budget) bench.Suite {
	j, spec, p, world := m.j, m.spec, m.plan, m.j.World()
	return bench.Suite{Colls: spec.Colls, Groupings: p.Groupings, Sizes: p.Sizes, Type: spec.Type, RedOp: spec.RedOp, World: world,
		Warmup: spec.Warmup, Check: spec.Check, Timeout: j.Limits.Collective, StallFloor: j.Limits.Watchdog, Peers: j.Peers(),
		Budget: budget, Wanted: wantedBy(needs, world, p.Sizes)}
}

// estimateRatio is how much larger than the estimate's the session's
// buffers must be for the estimate to run first on communicators of its
// own: below it, the session's own allocation costs little more than a
// second opening would.
const estimateRatio = 4

// estimateFirst refuses a budget too small for the curves before the
// session's buffers exist (a gigabyte each by default, seconds to fill):
// it opens communicators sized for the estimate's one all-reduce alone,
// times it, and closes them. It says whether it ran; when the session
// would be hardly larger it leaves the estimate to begin.
func (m *profileRun) estimateFirst(ctx context.Context, budget bench.Budget) (bool, error) {
	j, spec, p, world := m.j, m.spec, m.plan, m.j.World()
	if !m.estimates() {
		return false, nil
	}
	// How many sizes a curve of the whole job keeps does not depend on
	// the hosts (only Galvatron's whole-MiB tables raise it), so the
	// largest the estimate can time is known before any host is.
	bound := m.curveSuite(export.Needs(spec.Exports, world, 0), budget)
	size := bound.EstimateSize(false)
	bytes := func(size int64) int64 { return spec.bufferBytes(size, []int{world}) }
	if size == 0 || bytes(size)*estimateRatio > bytes(p.Sizes[len(p.Sizes)-1]) {
		return false, nil
	}
	opened := time.Now()
	ctx, sess, err := j.Open(ctx, bench.Sweep{Min: min(p.Sizes[0], size), Max: size, Factor: spec.Sweep.Factor}, false,
		func(s *bench.Setup) { s.BufferBytes = bytes }, gpu.Tuning{})
	if err != nil {
		return false, err
	}
	defer sess.Close()
	suite := m.curveSuite(export.Needs(spec.Exports, world, ranksPerNode(sess.Devices)), budget)
	return true, budgetHolds(ctx, &suite, sess.Comm, spec, j.Began, j.Peers(), time.Since(opened))
}

// ranksPerNode is how many of devs each host holds, 0 when uneven.
func ranksPerNode(devs []bench.Device) int {
	recs := document.DeviceRecords(devs)
	return perNode(len(recs), len(document.Hosts(recs)))
}

// perNode is how many of ranks each of nodes holds, 0 when uneven.
func perNode(ranks, nodes int) int {
	if nodes == 0 || ranks%nodes != 0 {
		return 0
	}
	return ranks / nodes
}

// budgetHolds refuses, before any curve is measured, a budget that cannot
// hold the curves at their promised sizes (every curve's, or for a
// partial profile those the exports read) and the overlap probes, from
// one all-reduce of the whole job timed now (bench.Suite.Estimate). The
// time already spent is the slowest process's, so that every process
// decides alike; ahead is what opening the session still takes.
func budgetHolds(ctx context.Context, suite *bench.Suite, comm bench.Comm, spec ProfileSpec, began time.Time, peers bench.Peers, ahead time.Duration) error {
	wantedOnly := spec.Partial
	e, err := suite.Estimate(ctx, comm, wantedOnly)
	if err != nil || e.Curves == 0 {
		return err
	}
	slowest, err := peers.AllReduce(ctx, []float64{time.Since(began).Seconds()}, bench.ReduceMax)
	if err != nil {
		return err
	}
	spent := time.Duration(slowest[0]*float64(time.Second)) + ahead
	need := spent + e.Least + suite.Budget.Reserve
	if suite.Budget.Holds(need) {
		return nil
	}
	// The budget to suggest: the estimate is a floor (the curves over
	// smaller groups are not in it, nor the warm-up's spread), so it gets
	// as much again for them as the whole job's take.
	suggest := need + time.Duration(float64(e.Least)*float64(e.Promised-e.Curves)/float64(max(e.Curves, 1)))
	what := fmt.Sprintf("the %d curve(s) the profile promises (at least %d sizes each)", e.Promised, min(bench.MinCurveSizes, len(suite.Sizes)))
	instead := "measure less or accept a partial profile ({Partial})"
	if wantedOnly {
		what = fmt.Sprintf("what the %s export(s) read: %d curve(s)", strings.Join(spec.Exports, ", "), e.Promised)
		instead = "ask for fewer exports"
	}
	return Usagef("a time budget of %s cannot hold %s, of which the %d over the whole job alone need at least about %s "+
		"(one all-reduce of %s took %s), the overlap probes %s and the start %s; give it %s or more, or %s",
		spec.Budget, what, e.Curves, e.Least.Round(100*time.Millisecond), bench.FormatSize(e.Size),
		e.PerCall.Round(time.Millisecond), suite.Budget.Reserve.Round(100*time.Millisecond), spent.Round(100*time.Millisecond),
		(bench.LimitFor(suggest) + time.Second).Round(time.Second), instead)
}

// suiteOrder puts the curves in the suite's order, grouping by grouping
// and collective by collective, however they were measured (the curves
// exports read come first under a budget): the file and the fit table
// read the same for every run.
func suiteOrder(curves []document.ProfileCurve, s bench.Suite) {
	rank := map[string]int{}
	for gi, g := range s.Groupings {
		for ci, c := range s.Colls {
			rank[fmt.Sprintf("%s/%d/%s", c.Name, g.Of(s.World), g.Layout())] = gi*len(s.Colls) + ci
		}
	}
	slices.SortStableFunc(curves, func(a, b document.ProfileCurve) int {
		return rank[fmt.Sprintf("%s/%d/%s", a.Op, a.Group.Size, a.Group.Layout)] - rank[fmt.Sprintf("%s/%d/%s", b.Op, b.Group.Size, b.Group.Layout)]
	})
}
