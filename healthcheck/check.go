package healthcheck

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/health"
	"github.com/collbench/collbench/nccl"
	"github.com/collbench/collbench/run"
)

// Hooks hear of a health check: its record laid out (with the
// waves of every pass and the arrival run planned), each step's name as
// it ends (a wave's figures are judged only once every pass is in, so
// the step is all there is to hand over), and the finished record.
type Hooks = run.Hooks[*document.Health, string]

// healthCheck is one check in progress.
type healthCheck struct {
	j      *run.Job
	spec   Spec
	sess   *run.Session
	doc    *document.Health
	budget bench.Budget
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
	out       *run.Recording[string]
}

// Run measures the job's GPUs, nodes and links and judges them, driven
// as every measurement is (run.Drive). It returns the record (nil when
// nothing ran) and an error: Write's if it failed, else the
// measurement's. A check that ran and flagged something is not an error:
// the record's Healthy says so.
func Run(ctx context.Context, j *run.Job, spec Spec, h Hooks) (*document.Health, error) {
	c := &healthCheck{j: j, spec: spec, perCall: map[string]time.Duration{},
		firstCalls: map[string][]time.Duration{}, farCount: map[int]int{}, setAside: map[int]bool{}, cutNoted: map[string]bool{}}
	return run.Drive(ctx, j, c, h)
}

func (c *healthCheck) Check(_ context.Context, j *run.Job) error {
	if err := c.spec.check(); err != nil {
		return err
	}
	if j.World() < 2 {
		return run.Usagef("collbench health compares ranks with each other and needs two or more (got one: start it with collbench launch, mpirun, srun or torchrun, or give {RanksPerProc})")
	}
	if g := j.Settings.Grouping; g.Size != 0 || g.Isolated {
		return run.Usagef("collbench health forms its own groups; drop {GroupSize} and {Isolated}")
	}
	return nil
}

func (c *healthCheck) Opening(_ context.Context, j *run.Job) (run.Opening, error) {
	backend, _, err := j.Backend()
	if err != nil {
		return run.Opening{}, err
	}
	spec := &c.spec
	def := DefaultBytes(run.OnGPU(backend))
	if spec.PairBytes == 0 {
		spec.PairBytes = def
	}
	if spec.ARBytes == 0 {
		spec.ARBytes = def
	}
	if err := spec.sameSettings(backend.Name(), c.j.World(), transportName(c.j, backend.Name())); err != nil {
		return run.Opening{}, err
	}
	big := max(spec.PairBytes, spec.ARBytes)
	return run.Opening{Sweep: bench.Sweep{Min: big, Max: big, Factor: 2}, Command: "health", Span: "check"}, nil
}

func (c *healthCheck) Begin(ctx context.Context, sess *run.Session) (*document.Health, int, error) {
	j, spec := c.j, &c.spec
	c.sess = sess
	if big := max(spec.PairBytes, spec.ARBytes); sess.Sweep.Max < big {
		// The devices hold less: measure at what they hold.
		spec.PairBytes, spec.ARBytes = min(spec.PairBytes, sess.Sweep.Max), min(spec.ARBytes, sess.Sweep.Max)
		if err := spec.sameSettings(sess.Backend.Name(), j.World(), transportName(j, sess.Backend.Name())); err != nil {
			return nil, 0, err
		}
	}
	nodes, unracked, err := nodesOf(ctx, j, spec.Racks)
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
			ScreenRounds: spec.screenRounds(len(nodes)), Racks: len(rackIndex(nodes)), Transport: transportName(j, sess.Backend.Name())}}
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

func (c *healthCheck) Measure(ctx context.Context, out *run.Recording[string]) error {
	c.out = out
	return c.measurePlan(ctx, c.schedule)
}

func (c *healthCheck) Finish(ctx context.Context, out *run.Recording[string], runErr error) error {
	c.doc.Finish()
	if runErr != nil {
		c.doc.Errors = append(c.doc.Errors, runErr.Error())
	} else {
		c.judge()
		if c.spec.Judge != nil && c.j.Rank == 0 {
			c.judgePublished(levelJudgers(c.sess.Topology(c.j.Settings.NCCLLib), c.spec.Judge.Tables))
		}
	}
	recordHealth(ctx, out.Telemetry(), c.doc) // the recorder is rank 0's alone
	return nil
}
