package run

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/health"
	"github.com/collbench/collbench/nccl"
	"github.com/collbench/collbench/telemetry"
)

// HealthSpec is a health check as collbench health runs it.
type HealthSpec struct {
	PairBytes int64 // send/recv size between pairs; 0: the backend's default
	ARBytes   int64 // all-reduce size within nodes, blocks and the job; 0: the backend's default
	Type      numeric.DataType
	Warmup    int
	Iters     int // timed iterations per pass, the most the budget may give
	Passes    int // each figure is the best of this many passes
	// Budget bounds the whole check (0: none): iterations shrink to fit
	// and parts that no longer fit are left out, and say so.
	Budget   time.Duration
	Criteria health.Criteria
	// Expect is GB/s per level (intra, node, inter, job); a figure that
	// far below it is flagged whatever its peers say.
	Expect   map[string]float64
	Baseline string // the file Expect's missing levels came from, for the record
	Bisect   bool   // bisect on four nodes or more even when the job's all-reduce is not slow
	Args     []string
	// Judge, when set, also judges the figures against the wire and the
	// published figures (levelJudgers).
	Judge *JudgeSpec
	// ScreenRounds and AllPairs choose how node pairs are met (see
	// screenRounds).
	ScreenRounds int
	AllPairs     bool
	// ScreenSeed draws the screening (nil: rank 0 draws one afresh for
	// each check and the record keeps it).
	ScreenSeed *uint64
	// Racks says which rack each node sits in, for rack-aware screening
	// and the racks' uplinks (see healthracks.go).
	Racks health.RackOf

	base *document.Health // the baseline record, whose settings must be this check's
	// fromBaseline are the levels whose expectation the baseline gave
	// (the others' came from Expect as given).
	fromBaseline map[string]bool
}

// sameSettings refuses a baseline measured at other settings than this
// check's (sizes, data type, backend, ranks, the host backend's
// transport): bandwidth depends on all of them, so its medians would be no
// expectation here. transport is "" off the host backend.
func (s HealthSpec) sameSettings(backend string, ranks int, transport string) error {
	if s.base == nil {
		return nil
	}
	b := s.base.Config
	differ := func(what string, was, is any) error {
		return Usagef("{Baseline} %s was measured with %s of %v; this check uses %v: bandwidth depends on it, so the baseline's medians are no expectation here (measure one with the same settings, or give {Expect})",
			s.Baseline, what, was, is)
	}
	switch {
	case b.PairBytes != s.PairBytes:
		return differ("pair messages", fmt.Sprintf("%d bytes", b.PairBytes), s.PairBytes)
	case b.ARBytes != s.ARBytes:
		return differ("all-reduces", fmt.Sprintf("%d bytes", b.ARBytes), s.ARBytes)
	case b.Type != s.Type.String():
		return differ("data type", b.Type, s.Type)
	case s.base.Backend != "" && s.base.Backend != backend:
		return differ("backend", s.base.Backend, backend)
	case b.NRanks != ranks:
		return differ("ranks", b.NRanks, ranks)
	case b.Transport != "" && transport != "" && b.Transport != transport:
		return differ("the host backend's transport", b.Transport, transport)
	}
	return nil
}

// transportName is the host backend's transport setting as a record
// keeps it; "" on another backend.
func (j *Job) transportName(backend string) string {
	if backend != "host" {
		return ""
	}
	return j.Settings.Transport.String()
}

// HealthBytes is the default message size: large enough that a pair's
// time is its bandwidth, not its latency (NVLink and InfiniBand reach
// their bus bandwidth from about 64 MiB; TCP between hosts from about
// 1 MiB), small enough that a round of pairs takes milliseconds.
func HealthBytes(onGPU bool) int64 {
	if onGPU {
		return 128 << 20
	}
	return 4 << 20
}

// HealthExpectations reads a previous health record as expectations: the
// median figure of each level it measured.
func HealthExpectations(base *document.Health) map[string]float64 {
	out := map[string]float64{}
	level := func(name string, vals []float64) {
		if len(vals) > 0 {
			m, _ := health.MedianMAD(vals)
			out[name] = m
		}
	}
	var intra, node, inter []float64
	for _, p := range base.Intra {
		intra = append(intra, p.BusBW)
	}
	for _, f := range base.NodeAR {
		node = append(node, f.BusBW)
	}
	for _, p := range base.Inter {
		inter = append(inter, p.BusBW)
	}
	level("intra", intra)
	level("node", node)
	level("inter", inter)
	if base.Job != nil {
		level("job", []float64{base.Job.BusBW})
	}
	return out
}

// HealthLevels are the levels an expectation may name.
var HealthLevels = []string{"intra", "node", "inter", "job"}

// check refuses settings the check cannot run with.
func (s *HealthSpec) check() error {
	switch {
	case s.PairBytes < 0 || s.ARBytes < 0:
		return Usagef("sizes cannot be negative (got {PairBytes} %d, {ARBytes} %d)", s.PairBytes, s.ARBytes)
	case s.Iters < 1:
		return Usagef("{Iters} must be at least 1 (got %d)", s.Iters)
	case s.Warmup < 0:
		return Usagef("{Warmup} cannot be negative (got %d)", s.Warmup)
	case s.Passes < 1:
		return Usagef("{Passes} must be at least 1 (got %d)", s.Passes)
	case s.Budget < 0:
		return Usagef("{Budget} cannot be negative")
	case s.Criteria.MinDrop <= 0 || s.Criteria.MinDrop >= 1:
		return Usagef("{MinDrop} must be between 0 and 1 (got %g)", s.Criteria.MinDrop)
	case s.Criteria.Z <= 0:
		return Usagef("{Z} must be positive (got %g)", s.Criteria.Z)
	case s.ScreenRounds < 0 || s.ScreenRounds > health.MaxScreenRounds:
		return Usagef("{ScreenRounds} must be between 1 and %d (got %d)", health.MaxScreenRounds, s.ScreenRounds)
	case s.AllPairs && s.ScreenRounds > 0:
		return Usagef("{AllPairs} and {ScreenRounds} ask for different things; give one")
	case s.AllPairs && s.ScreenSeed != nil:
		return Usagef("{AllPairs} measures every pair: there is no screening for {ScreenSeed} to draw")
	}
	for _, b := range []struct {
		name string
		n    int64
	}{{"{PairBytes}", s.PairBytes}, {"{ARBytes}", s.ARBytes}} {
		if b.n > 0 && b.n < int64(s.Type.Size()) {
			return Usagef("%s %d is less than one %s element (%d bytes)", b.name, b.n, s.Type, s.Type.Size())
		}
	}
	for k, v := range s.Expect {
		if !slices.Contains(HealthLevels, k) {
			return Usagef("{Expect} %s: unknown level (want intra, node, inter or job)", k)
		}
		if !(v > 0) {
			return Usagef("{Expect} %s=%g: want a positive GB/s", k, v)
		}
	}
	return nil
}

// HealthHooks hear of a health check: its record laid out (with the
// waves of every pass and the arrival run planned), each step's name as
// it ends (a wave's figures are judged only once every pass is in, so
// the step is all there is to hand over), and the finished record.
type HealthHooks = Hooks[*document.Health, string]

// healthCheck is one check in progress.
type healthCheck struct {
	base[HealthSpec]
	sess   *Session
	doc    *document.Health
	budget bench.Budget
	done   int
	spent  bool // the budget ran out: the rest is left out
	// perCall is the last time per call of each collective, to tell
	// whether another wave still fits the budget.
	perCall map[string]time.Duration
	// overhead is what the waves so far took beyond their timed calls
	// (communicators, warm-up, agreement), and left the waves to come,
	// so that the budget keeps back as much for each of them.
	overhead time.Duration
	measured int
	left     int
	byRank   []int // node of each global rank
	rec      *telemetry.Recorder
	steps    *phases // a span per phase measured
	// stragglers are the processes the arrival run found last call after
	// call (health.Arrivals).
	stragglers []int
	setup      map[string]int // phase: index into doc.Setup
	// idle are the communicators of waves measured and not closed yet:
	// they close together, up to idleWaves at a time (closeIdle).
	idle     []bench.Comm
	schedule healthPlan // what begin laid out
	// firstCalls are each phase's units' first calls so far, which a
	// wave's are held against (health.FarBelow); farNodes are the nodes
	// of the units found far below, whose block all-reduces get one call.
	firstCalls map[string][]time.Duration
	farUnits   [][]int     // the nodes of each unit found far below
	farCount   map[int]int // node: the distinct units found far below it is in
	setAside   map[int]bool
	cutNoted   map[string]bool // what CutShort already says
	seed       uint64          // the screening's (screenSeed)
	// suspected is what the screening asks to measure again, read once
	// (confirm) and judged with its fresh figures (interVerdict).
	suspected *health.Suspects
	out       *recording[string]
}

// Health measures the job's GPUs, nodes and links and judges them. It
// returns the record (nil when nothing ran) and an error: Write's if it
// failed, else the measurement's. A check that ran and flagged something
// is not an error: the record's Healthy says so.
func (j *Job) Health(ctx context.Context, spec HealthSpec, h HealthHooks) (*document.Health, error) {
	c := &healthCheck{base: base[HealthSpec]{j, spec}, perCall: map[string]time.Duration{},
		firstCalls: map[string][]time.Duration{}, farCount: map[int]int{}, setAside: map[int]bool{}, cutNoted: map[string]bool{}}
	return drive(ctx, j, c, h)
}

func (c *healthCheck) check(_ context.Context, j *Job) error {
	if err := c.spec.check(); err != nil {
		return err
	}
	if j.World() < 2 {
		return Usagef("collbench health compares ranks with each other and needs two or more (got one: start it with collbench launch, mpirun, srun or torchrun, or give {RanksPerProc})")
	}
	if g := j.Settings.Grouping; g.Size != 0 || g.Isolated {
		return Usagef("collbench health forms its own groups; drop {GroupSize} and {Isolated}")
	}
	return nil
}

func (c *healthCheck) opening(_ context.Context, j *Job) (opening, error) {
	backend, _, err := j.backend()
	if err != nil {
		return opening{}, err
	}
	spec := &c.spec
	def := HealthBytes(onGPU(backend))
	if spec.PairBytes == 0 {
		spec.PairBytes = def
	}
	if spec.ARBytes == 0 {
		spec.ARBytes = def
	}
	if err := spec.sameSettings(backend.Name(), c.j.World(), c.j.transportName(backend.Name())); err != nil {
		return opening{}, err
	}
	big := max(spec.PairBytes, spec.ARBytes)
	return opening{sweep: bench.Sweep{Min: big, Max: big, Factor: 2}, command: "health", span: "check"}, nil
}

func (c *healthCheck) begin(ctx context.Context, sess *Session) (*document.Health, int, error) {
	j, spec := c.j, &c.spec
	c.sess = sess
	if big := max(spec.PairBytes, spec.ARBytes); sess.Sweep.Max < big {
		// The devices hold less: measure at what they hold.
		spec.PairBytes, spec.ARBytes = min(spec.PairBytes, sess.Sweep.Max), min(spec.ARBytes, sess.Sweep.Max)
		if err := spec.sameSettings(sess.Backend.Name(), j.World(), j.transportName(sess.Backend.Name())); err != nil {
			return nil, 0, err
		}
	}
	nodes, unracked, err := j.healthNodes(ctx, spec.Racks)
	if err != nil {
		return nil, 0, err
	}
	c.budget = bench.Budget{Limit: spec.Budget, MinIters: min(3, spec.Iters), MaxIters: spec.Iters, Since: j.Began}
	c.doc = &document.Health{Stamp: document.NewStamp(document.HealthSchemaName, document.HealthSchemaVersion, j.Settings.Version,
		sess.Backend.Name(), spec.Args), Nodes: nodes,
		Devices: document.DeviceRecords(sess.Devices),
		Config: document.HealthConfig{NRanks: j.World(), NProcs: j.Size, PairBytes: spec.PairBytes, ARBytes: spec.ARBytes,
			Type: spec.Type.String(), Warmup: spec.Warmup, Iters: spec.Iters, Passes: spec.Passes, BudgetS: spec.Budget.Seconds(),
			MinDrop: spec.Criteria.MinDrop, Z: spec.Criteria.Z, Expect: spec.Expect, Baseline: spec.Baseline,
			ScreenRounds: spec.screenRounds(len(nodes)), Racks: len(rackIndex(nodes)), Transport: j.transportName(sess.Backend.Name())}}
	if len(unracked) > 0 {
		c.doc.Notes = append(c.doc.Notes, fmt.Sprintf("racks not judged: no rack is known for %d of %d nodes (%s), and racks are judged only when every node has one",
			len(unracked), len(nodes), strings.Join(unracked, ", ")))
	}
	if sess.OnGPU() {
		c.doc.NCCLVersion = nccl.RuntimeVersion().String()
	}
	c.byRank = make([]int, j.World())
	for n, node := range nodes {
		for _, r := range node.Ranks {
			c.byRank[r] = n
		}
	}
	if c.doc.Config.ScreenRounds > 0 {
		if c.seed, err = c.screenSeed(ctx); err != nil {
			return nil, 0, err
		}
		seed := c.seed
		c.doc.Config.ScreenSeed = &seed
	}
	c.schedule = c.plan()
	c.left = c.schedule.points() * spec.Passes
	if c.schedule.job {
		c.left++ // the arrival run
	}
	c.budget.Start(c.left)
	return c.doc, c.left, nil // the waves of every pass and the arrival run
}

func (c *healthCheck) measure(ctx context.Context, out *recording[string]) error {
	c.rec, c.steps, c.out = out.rec, out.steps, out
	return c.measurePlan(ctx, c.schedule)
}

func (c *healthCheck) finish(ctx context.Context, out *recording[string], runErr error) error {
	c.doc.Finish()
	noteErr(&c.doc.Errors, runErr)
	if runErr == nil {
		c.judge()
		if c.spec.Judge != nil && c.j.Rank == 0 {
			c.judgePublished(levelJudgers(c.sess.topology(c.j.Settings.NCCLLib), c.spec.Judge.Tables))
		}
	}
	recordHealth(ctx, out.rec, c.doc) // the recorder is rank 0's alone
	return nil
}

// healthPlan is what a check measures, as lists of groups of global
// ranks, each list measured at once.
type healthPlan struct {
	intra  [][]unit // waves of GPU pairs
	nodeAR [][]unit // waves of node all-reduces
	inter  [][]unit // waves of node pairs
	job    bool
}

// unit is one figure: its groups (one per pair of ranks, or one block)
// and what it stands for.
type unit struct {
	groups [][]int
	pair   health.Pair // GPU ranks or node indexes
	node   int         // the node of a GPU pair or a node all-reduce; the block of a bisection
	span   []int       // the nodes of a block all-reduce (the job's, a bisection's)
}

func (p healthPlan) points() int {
	n := len(p.intra) + len(p.nodeAR) + len(p.inter)
	if p.job {
		n++
	}
	return n
}

// plan lays out the rounds: every pair of GPUs inside each node, every
// pair of nodes (each local rank with its peer on the other node), in
// rounds of disjoint pairs split into waves a process can time apart.
func (c *healthCheck) plan() healthPlan {
	var p healthPlan
	nodes := c.doc.Nodes
	// Intra-node: round r of every node's own tournament at once.
	var rounds [][]unit
	for n, node := range nodes {
		for r, round := range health.Rounds(len(node.Ranks)) {
			for len(rounds) <= r {
				rounds = append(rounds, nil)
			}
			for _, pr := range round {
				a, b := node.Ranks[pr.A], node.Ranks[pr.B]
				rounds[r] = append(rounds[r], unit{groups: [][]int{{a, b}}, pair: health.Pair{A: a, B: b}, node: n})
			}
		}
	}
	for _, round := range rounds {
		p.intra = append(p.intra, c.wavesOf(round)...)
	}
	// Each node's all-reduce.
	var ars []unit
	for n, node := range nodes {
		if len(node.Ranks) >= 2 {
			ars = append(ars, unit{groups: [][]int{node.Ranks}, node: n})
		}
	}
	p.nodeAR = c.blockWaves(ars)
	// Inter-node: local rank i of one node with local rank i of the other,
	// every pair or a screening's.
	p.inter = c.nodePairWaves(c.nodeRounds(len(nodes)))
	p.job = len(nodes) > 1
	return p
}

// nodePairWaves lays out rounds of node pairs as waves: local rank i of
// one node with local rank i of the other, every such pair of a node
// pair at once.
func (c *healthCheck) nodePairWaves(rounds [][]health.Pair) [][]unit {
	nodes := c.doc.Nodes
	var waves [][]unit
	for _, round := range rounds {
		var units []unit
		for _, pr := range round {
			a, b := nodes[pr.A].Ranks, nodes[pr.B].Ranks
			u := unit{pair: pr, node: -1}
			for i := 0; i < min(len(a), len(b)); i++ {
				u.groups = append(u.groups, []int{min(a[i], b[i]), max(a[i], b[i])})
			}
			units = append(units, u)
		}
		waves = append(waves, c.wavesOf(units)...)
	}
	return waves
}

// wavesOf splits units into the waves health.Waves allows.
func (c *healthCheck) wavesOf(units []unit) [][]unit {
	per := c.j.Settings.RanksPerProc
	groups := make([][][]int, len(units))
	for i, u := range units {
		groups[i] = u.groups
	}
	var out [][]unit
	for _, w := range health.Waves(groups, func(r int) int { return r / per }) {
		wave := make([]unit, len(w))
		for i, u := range w {
			wave[i] = units[u]
		}
		out = append(out, wave)
	}
	return out
}

// blockWaves lays out all-reduces over blocks of ranks (one group each):
// blocks of one size at once, as one communicator split holds groups of
// one size, each size in the order it first appears.
func (c *healthCheck) blockWaves(units []unit) [][]unit {
	bySize := map[int][]unit{}
	var sizes []int
	for _, u := range units {
		k := len(u.groups[0])
		if bySize[k] == nil {
			sizes = append(sizes, k)
		}
		bySize[k] = append(bySize[k], u)
	}
	var out [][]unit
	for _, k := range sizes {
		out = append(out, c.wavesOf(bySize[k])...)
	}
	return out
}

// measure runs the plan, the bisection when it is called for, and records
// every figure in the document.
func (c *healthCheck) measurePlan(ctx context.Context, p healthPlan) error {
	sendrecv, _ := bench.LookupCollective("sendrecv")
	allreduce, _ := bench.LookupCollective("allreduce")
	units, figs, err := c.phase(ctx, p.intra, sendrecv, c.spec.PairBytes, "GPU pairs")
	for i, u := range units {
		c.doc.Intra = append(c.doc.Intra, document.PairFigure{Node: u.node, A: u.pair.A, B: u.pair.B, BusBW: best(figs[i]), Passes: figs[i]})
	}
	if err != nil || c.spent {
		return err
	}
	units, figs, err = c.phase(ctx, p.nodeAR, allreduce, c.spec.ARBytes, "node all-reduce")
	for i, u := range units {
		c.doc.NodeAR = append(c.doc.NodeAR, document.NodeFigure{Node: u.node, BusBW: best(figs[i]), Passes: figs[i]})
	}
	if err != nil || c.spent {
		return err
	}
	units, figs, err = c.phase(ctx, p.inter, sendrecv, c.spec.PairBytes, "node pairs")
	for i, u := range units {
		c.doc.Inter = append(c.doc.Inter, document.PairFigure{Node: -1, A: u.pair.A, B: u.pair.B, BusBW: best(figs[i]), Passes: figs[i]})
	}
	if err != nil || c.spent {
		return err
	}
	if err := c.confirm(ctx, sendrecv); err != nil || c.spent || !p.job {
		return err
	}
	all := make([]int, len(c.doc.Nodes))
	for i := range all {
		all[i] = i
	}
	job, err := c.blocks(ctx, 0, [][]int{all}, allreduce)
	if err != nil || len(job) == 0 {
		return err
	}
	c.doc.Job = &job[0]
	if err := c.arrivals(ctx, allreduce); err != nil || c.spent {
		return err
	}
	if c.spec.Bisect || c.jobSlow() {
		return c.bisect(ctx, all, allreduce)
	}
	return nil
}

// phase measures waves of units, pass after pass (each pass runs every
// wave, so that what differs between passes is time, as it is between
// waves), and returns the units measured and each one's figure per pass.
// When the budget runs out it returns what was measured.
func (c *healthCheck) phase(ctx context.Context, waves [][]unit, coll *bench.Collective, bytes int64, what string) (_ []unit, _ [][]float64, err error) {
	// The waves' communicators still open close with the phase, their
	// time counted as the waves' overhead. After a failure they are
	// aborted first: a destroy waits for every peer, and one may be gone.
	defer func() {
		if err != nil {
			for _, comm := range c.idle {
				comm.Abort()
			}
		}
		began := time.Now()
		if cerr := c.closeIdle(what); cerr != nil && err == nil {
			err = fmt.Errorf("closing the groups of %s: %w", what, cerr)
		}
		c.overhead += time.Since(began)
	}()
	var units []unit
	for _, w := range waves {
		units = append(units, w...)
	}
	figs := make([][]float64, len(units))
	keep := func() ([]unit, [][]float64) {
		var us []unit
		var fs [][]float64
		for i, f := range figs {
			if len(f) > 0 {
				us, fs = append(us, units[i]), append(fs, f)
			}
		}
		return us, fs
	}
	defer func() {
		if c.steps != nil && len(waves) > 0 {
			us, _ := keep()
			c.steps.done(what, attribute.Int("collbench.health.waves", len(waves)), attribute.Int("collbench.health.figures", len(us)))
		}
	}()
	for pass := 0; pass < c.spec.Passes; pass++ {
		k := 0
		for _, wave := range waves {
			live, at := c.liveUnits(wave, what)
			if len(live) == 0 {
				c.skipWave(what)
				k += len(wave)
				continue
			}
			per, err := c.wave(ctx, live, coll, bytes, what)
			if err != nil || per == nil {
				us, fs := keep()
				return us, fs, err
			}
			for j, i := range at {
				figs[k+i] = append(figs[k+i], per[j])
			}
			k += len(wave)
		}
	}
	us, fs := keep()
	return us, fs, nil
}

// jobSlow says whether the job's all-reduce falls short of its
// expectation.
func (c *healthCheck) jobSlow() bool {
	_, short := c.spec.Criteria.Short(c.doc.Job.BusBW, c.spec.Expect["job"])
	return short
}

// bisect measures the halves of block at once, and keeps halving the
// slower while it is slower than the other by the criteria's drop and
// still has two nodes or more on each side.
func (c *healthCheck) bisect(ctx context.Context, block []int, coll *bench.Collective) error {
	for level := 1; len(block) >= 4; level++ {
		a, b := health.Halves(block)
		figs, err := c.blocks(ctx, level, [][]int{a, b}, coll)
		if err != nil || len(figs) < 2 {
			return err
		}
		c.doc.Bisection = append(c.doc.Bisection, figs...)
		slow, fast := figs[0], figs[1]
		if slow.BusBW > fast.BusBW {
			slow, fast = fast, slow
		}
		if _, short := c.spec.Criteria.Short(slow.BusBW, fast.BusBW); !short {
			return nil
		}
		block = slow.Nodes
	}
	return nil
}

// blocks measures an all-reduce over each block of nodes (all at once
// where their rank counts match).
func (c *healthCheck) blocks(ctx context.Context, level int, blocks [][]int, coll *bench.Collective) ([]document.BlockFigure, error) {
	units := make([]unit, len(blocks))
	for i, blk := range blocks {
		units[i] = unit{groups: [][]int{c.blockRanks(blk)}, node: i, span: blk}
	}
	what := "job all-reduce"
	if level > 0 {
		what = fmt.Sprintf("bisection level %d", level)
	}
	measured, figs, err := c.phase(ctx, c.blockWaves(units), coll, c.spec.ARBytes, what)
	if err != nil || c.spent {
		return nil, err
	}
	out := make([]document.BlockFigure, len(blocks))
	for i, blk := range blocks {
		out[i] = document.BlockFigure{Level: level, Nodes: blk}
	}
	for i, u := range measured {
		out[u.node].BusBW, out[u.node].Passes = best(figs[i]), figs[i]
	}
	return out, nil
}

// blockRanks lists the ranks of a block of nodes in ascending order.
func (c *healthCheck) blockRanks(block []int) []int {
	var ranks []int
	for _, n := range block {
		ranks = append(ranks, c.doc.Nodes[n].Ranks...)
	}
	slices.Sort(ranks)
	return ranks
}

// idleWaves is how many waves' communicators wait, idle, to be closed
// together where the backend can (bench.JointCloser): on GPUs closing
// them costs about half a second whether one wave's or eight are closed.
// Idle communicators hold some device memory each, so they are not kept
// for the whole check.
const idleWaves = 8

// closeIdle closes the waves' communicators waiting to be closed, in one
// go, and adds the time to phase what's.
func (c *healthCheck) closeIdle(what string) error {
	if len(c.idle) == 0 {
		return nil
	}
	began := time.Now()
	err := bench.CloseAll(c.idle)
	c.idle = nil
	c.closed(what, time.Since(began))
	return err
}

// errBudget leaves the rest of a check out.
var errBudget = errors.New("the time budget is spent")

// wave measures one wave's units at once, one pass, and returns each
// unit's bus bandwidth: the slowest of its groups, as a node pair is only
// as fast as its slowest pair of ranks. It returns nil (and records why)
// when the budget is spent.
func (c *healthCheck) wave(ctx context.Context, wave []unit, coll *bench.Collective, bytes int64, what string) ([]float64, error) {
	var sets [][]int
	owner := []int{} // unit of each set
	for i, u := range wave {
		for _, g := range u.groups {
			sets = append(sets, g)
			owner = append(owner, i)
		}
	}
	began := time.Now()
	if c.measured > 0 {
		c.budget.Reserve = c.overhead / time.Duration(c.measured) * time.Duration(max(c.left-1, 0))
	}
	// What is left must hold the warm-up and the fewest iterations at
	// the last time per call of this collective.
	over := c.budget.Spent()
	if last := c.perCall[coll.Name]; last > 0 && c.budget.Limit > 0 {
		over = over || last*time.Duration(c.spec.Warmup+c.budget.MinIters) > c.budget.Remaining()
	}
	agreed, err := c.agree(ctx, over, c.memoryLow())
	if err != nil {
		return nil, err
	}
	if agreed[1] {
		// Some GPU of the job runs short: the waves' idle communicators
		// close before the next are made.
		if err := c.closeIdle(what); err != nil {
			return nil, fmt.Errorf("closing the groups of %s: %w", what, err)
		}
	}
	if spent := agreed[0]; spent {
		c.spent = true
		c.doc.Skipped = append(c.doc.Skipped, what+" (from this wave on) and what follows: "+errBudget.Error())
		return nil, nil
	}
	world := c.j.World()
	comm := c.sess.Comm
	// closeWave hands the wave's own communicators over to be closed,
	// once: with later waves' where the backend closes several together
	// (on GPUs NCCL's teardown takes longer than the set-up), else now.
	closeWave := func() error { return nil }
	if len(sets) != 1 || len(sets[0]) != world {
		// Every process planned the same sets in the same order.
		g := bench.Grouping{Sets: sets}
		if err := g.Validate(world); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		opening := time.Now()
		opened, err := c.sess.Regroup(ctx, g, bytes)
		if err != nil {
			return nil, fmt.Errorf("opening the groups of %s: %w", what, err)
		}
		c.opened(what, time.Since(opening))
		closed := false
		closeWave = func() error {
			if closed {
				return nil
			}
			closed = true
			c.idle = append(c.idle, opened)
			if _, joint := opened.(bench.JointCloser); joint && len(c.idle) < idleWaves {
				return nil
			}
			return c.closeIdle(what)
		}
		defer closeWave()
		comm = opened
	}
	op := numeric.NoOp
	if coll.Reduces {
		op = numeric.Sum
	}
	opts, err := bench.Options{Coll: coll, Sweep: bench.Sweep{Min: bytes, Max: bytes, Factor: 2}, Iters: c.spec.Iters,
		Warmup: c.spec.Warmup, Agg: 1, Types: []numeric.DataType{c.spec.Type}, Ops: []numeric.RedOp{op}, Root: -1,
		Average: 3, Timeout: c.j.Limits.Collective, StallFloor: c.j.Limits.Watchdog}.Validate(len(sets[0]))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	eng := &bench.Engine{Comm: comm, Peers: c.j.Peers(), Opts: opts, CommRanks: len(sets[0]), Groups: len(sets)}
	row, err := eng.Point(ctx, c.spec.Type, op, -1, bytes, bench.PointPlan{Iters: c.budget.Iters,
		Cut: func(per []time.Duration) []bool { return c.cut(wave, what, bytes, per) }})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := closeWave(); err != nil {
		return nil, fmt.Errorf("closing the groups of %s: %w", what, err)
	}
	c.budget.Done(1)
	c.perCall[coll.Name] = time.Duration(row.OutOfPlace.Time * float64(time.Microsecond))
	c.overhead += max(time.Since(began)-c.perCall[coll.Name]*time.Duration(row.Iters), 0)
	c.measured++
	c.left = max(c.left-1, 0)
	per := make([]float64, len(wave))
	for i := range per {
		per[i] = -1
	}
	groups := row.OutOfPlace.Groups
	for s := range sets {
		bw := row.OutOfPlace.BusBW
		if len(groups) == len(sets) {
			bw = groups[s].BusBW
		}
		if u := owner[s]; per[u] < 0 || bw < per[u] {
			per[u] = bw
		}
	}
	if err := measured(what, wave, per); err != nil {
		return nil, err
	}
	c.stepDone(what)
	return per, nil
}

// stepDone counts a wave done and hands its name over.
func (c *healthCheck) stepDone(what string) {
	c.out.hand(what, what)
}

// measured refuses a wave whose figures include a zero: a timed call
// always moves bytes at some speed, so 0 GB/s means the backend timed
// nothing (communicators without devices), and a level of zeros has no
// outlier to flag, which would read as healthy.
func measured(what string, wave []unit, per []float64) error {
	for i, bw := range per {
		if bw <= 0 || math.IsNaN(bw) || math.IsInf(bw, 0) {
			return fmt.Errorf("%s: ranks %v measured %v GB/s: the backend timed nothing", what, wave[i].groups, bw)
		}
	}
	return nil
}

// agree makes a decision every process takes alike: true if any says so.
func (c *healthCheck) agree(ctx context.Context, yes ...bool) ([]bool, error) {
	v := make([]float64, len(yes))
	for i, y := range yes {
		if y {
			v[i] = 1
		}
	}
	got, err := c.j.Peers().AllReduce(ctx, v, bench.ReduceMax)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(got))
	for i, g := range got {
		out[i] = g > 0
	}
	return out, nil
}

// idleFloor is the free memory below which a GPU keeps no idle waves'
// communicators: on an H100 four ranks shared, one round's pairs held
// 0.9 GiB of it after a send/receive, 2.4 GiB after an all-reduce as well
// (docs/health.md).
const idleFloor = 4 << 30

// memoryLow says whether idle communicators are waiting and a GPU of this
// process has less than idleFloor free.
func (c *healthCheck) memoryLow() bool {
	if len(c.idle) == 0 {
		return false
	}
	r, ok := c.sess.Comm.(bench.MemoryReporter)
	if !ok {
		return false
	}
	u, err := r.MemoryUse()
	return err == nil && u.Free < idleFloor
}

// best is the highest of a figure's passes: a slowdown must show in every
// pass to count.
func best(passes []float64) float64 {
	if len(passes) == 0 {
		return 0
	}
	return slices.Max(passes)
}

// screenSeed is the seed that draws this check's screening and its
// confirmation's partners: the one asked for, else one rank 0 draws,
// agreed by every process, since every process lays out the plan itself.
// A drawn seed stays below 2⁵³, so that the agreement's float64 holds it
// exactly.
func (c *healthCheck) screenSeed(ctx context.Context) (uint64, error) {
	if c.spec.ScreenSeed != nil {
		return *c.spec.ScreenSeed, nil
	}
	v := 0.0
	if c.j.Rank == 0 {
		v = float64(rand.Uint64() >> 11)
	}
	got, err := c.j.Peers().AllReduce(ctx, []float64{v}, bench.ReduceMax)
	if err != nil {
		return 0, fmt.Errorf("agreeing on the screening's seed: %w", err)
	}
	return uint64(got[0]), nil
}

// screenRounds is how many rounds of random partners node pairs are
// screened in, 0 for every pair: as asked, or from health.ScreenFrom
// nodes on, health.MaxScreenRounds; a round robin of as few rounds or
// fewer measures every pair instead.
func (s HealthSpec) screenRounds(nodes int) int {
	r := s.ScreenRounds
	if r == 0 && !s.AllPairs && nodes >= health.ScreenFrom {
		r = health.MaxScreenRounds
	}
	if r >= health.RoundCount(nodes) {
		return 0
	}
	return r
}

// nodeRounds is the rounds of node pairs the check measures: a
// screening (rack-aware where every node's rack is known), or every pair.
func (c *healthCheck) nodeRounds(nodes int) [][]health.Pair {
	r := c.spec.screenRounds(nodes)
	switch {
	case r > 0 && c.doc.Config.Racks >= 2:
		return health.RackScreening(nodeRacks(c.doc.Nodes), r, c.seed)
	case r > 0:
		return health.Screening(nodes, r, c.seed)
	}
	return health.Rounds(nodes)
}
