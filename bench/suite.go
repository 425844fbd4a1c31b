package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/collbench/collbench/bench/numeric"
)

// Suite is the calibration sweep behind collbench profile: every
// collective at every grouping (group size and layout), every size, then
// the overlap probes, under one time budget.
type Suite struct {
	Colls     []*Collective
	Groupings []Grouping // each opened once; all its collectives run on it
	Sizes     []int64    // ascending
	Type      numeric.DataType
	RedOp     numeric.RedOp
	World     int // ranks in the job
	Warmup    int
	Check     int
	Timeout   time.Duration // per timed batch; 0 = none
	// StallFloor turns on the stall watchdog, as Options.StallFloor.
	StallFloor time.Duration
	Budget     Budget // Iters between Budget.MinIters and MaxIters
	// Power, with PowerWindow above zero, reads the devices' power draw
	// at every point as PointPlan says; the budget's PerPoint should
	// hold the window.
	Power       PowerMeter
	PowerWindow time.Duration
	// Wanted, when set, names the curves to measure first (a collective
	// at a group size and layout), so that a budget that runs short
	// leaves out the others: the curves an export will read. keep is how
	// many sizes from the smallest such a curve must hold (at least
	// MinCurveSizes): a budget that cannot give them all leaves the whole
	// curve out rather than hand over fewer.
	Wanted func(coll string, groupSize int, layout string) (wanted bool, keep int)

	curvesDone int // curves measured or left out so far, for the log
	Peers      Peers
	// Open opens the communicators of one grouping for messages of up to
	// need bytes; maxBytes is the largest they hold, less where the
	// devices' memory is short.
	Open func(ctx context.Context, g Grouping, need int64) (comm Comm, maxBytes int64, close func(), err error)
	// Probes are overlap measurements, run on communicators of the whole
	// job after the curves.
	Probes  []Probe
	Overlap OverlapOptions // Target, Cover and Timeout for the probes
	// Log reports progress; nil is silent.
	Log func(format string, a ...any)
	// Progress, when not nil, hears of every planned point as it is
	// measured or left out: done of total, and which.
	Progress func(done, total int, what string)
	points   int // points accounted for so far
}

// Probe is one overlap measurement: a collective of Size bytes against
// a compute workload.
type Probe struct {
	Name     string
	Coll     *Collective
	Type     numeric.DataType
	RedOp    numeric.RedOp
	Size     int64
	Workload Workload
}

// CurveResult is one collective measured at one grouping.
type CurveResult struct {
	Coll      *Collective
	Grouping  Grouping
	GroupSize int
	Groups    int   // groups that ran at once
	Rows      []Row // ascending sizes, out of place
	Note      string
}

// ProbeResult is one overlap probe's figures.
type ProbeResult struct {
	Probe     Probe
	GroupSize int
	Figures   OverlapFigures
	// LeftOut, when set, says why the probe was not measured.
	LeftOut string
}

// peers is the job's other processes; none when Peers is not set.
func (s *Suite) peers() Peers { return orSolo(s.Peers) }

// Points is the number of (curve, size) points the suite plans.
func (s *Suite) Points() int { return len(s.Colls) * len(s.Groupings) * len(s.Sizes) }

// Run measures everything, handing each curve and probe over as it
// completes. A budget that runs short trims iterations first, then the
// largest sizes of a curve (never below what it promises: MinCurveSizes,
// or what Wanted says), then whole curves, and every cut is said in the
// curve's Note; a probe the budget cannot
// hold is left out and logged. With Wanted, the wanted curves come first,
// then the probes (the planners' exports read one), then the others, so
// that what the budget leaves out is what nothing was waiting for.
func (s *Suite) Run(ctx context.Context, onCurve func(CurveResult), onProbe func(ProbeResult)) error {
	s.Budget.Start(s.Points())
	s.curvesDone = 0
	if s.Wanted == nil {
		if err := s.pass(ctx, func(*Collective, Grouping) bool { return true }, onCurve); err != nil {
			return err
		}
		return s.probes(ctx, onProbe)
	}
	if err := s.pass(ctx, s.wanted, onCurve); err != nil {
		return err
	}
	if err := s.probes(ctx, onProbe); err != nil {
		return err
	}
	return s.pass(ctx, func(c *Collective, g Grouping) bool { return !s.wanted(c, g) }, onCurve)
}

// pass measures, grouping by grouping, the curves keep selects; a
// grouping with none is not opened.
func (s *Suite) pass(ctx context.Context, keep func(*Collective, Grouping) bool, onCurve func(CurveResult)) error {
	total := len(s.Colls) * len(s.Groupings)
	for _, g := range s.Groupings {
		if err := g.Validate(s.World); err != nil {
			return err
		}
		var colls []*Collective
		for _, c := range s.Colls {
			if keep(c, g) {
				colls = append(colls, c)
			}
		}
		if len(colls) == 0 {
			continue
		}
		spent, err := s.agree(ctx, s.Budget.Spent())
		if err != nil {
			return err
		}
		if spent {
			for _, c := range colls {
				s.curvesDone++
				s.advance(len(s.Sizes), c.Name+" skipped")
				onCurve(CurveResult{Coll: c, Grouping: g, GroupSize: g.Of(s.World), Groups: g.Groups(s.World),
					Note: "left out: the time budget was spent"})
			}
			continue
		}
		comm, maxBytes, closeComm, err := s.Open(ctx, g, s.Sizes[len(s.Sizes)-1])
		if err != nil {
			return fmt.Errorf("opening groups of %d (%s): %w", g.Of(s.World), g.Layout(), err)
		}
		for _, c := range colls {
			s.curvesDone++
			r, err := s.curve(ctx, comm, g, c, maxBytes)
			if err != nil {
				closeComm()
				return fmt.Errorf("%s over groups of %d (%s): %w", c.Name, r.GroupSize, g.Layout(), err)
			}
			s.logCurve(s.curvesDone, total, r)
			onCurve(r)
		}
		closeComm()
	}
	return nil
}

func (s *Suite) wanted(c *Collective, g Grouping) bool {
	w, _ := s.Wanted(c.Name, g.Of(s.World), g.Layout())
	return w
}

// promised is how many sizes from the smallest the budget keeps on the
// curve of c over g, whenever its promise allows, and otherwise leaves the
// curve out: MinCurveSizes, or more where an export reads more.
func (s *Suite) promised(c *Collective, g Grouping) int {
	keep := MinCurveSizes
	if s.Wanted != nil {
		if w, k := s.Wanted(c.Name, g.Of(s.World), g.Layout()); w {
			keep = max(keep, k)
		}
	}
	return min(keep, len(s.Sizes))
}

// ErrWrongResults means a checked call (-c) returned wrong elements.
var ErrWrongResults = errors.New("wrong results")

func (s *Suite) curve(ctx context.Context, comm Comm, g Grouping, c *Collective, maxBytes int64) (CurveResult, error) {
	r := CurveResult{Coll: c, Grouping: g, GroupSize: g.Of(s.World), Groups: g.Groups(s.World)}
	if err := c.Fits(r.GroupSize); err != nil {
		r.Note = "left out: " + err.Error()
		s.advance(len(s.Sizes), c.Name+" left out")
		return r, nil
	}
	root := -1
	if c.Rooted {
		root = 0
	}
	op := s.RedOp
	if !c.Reduces {
		op = numeric.NoOp
	}
	eng := &Engine{Comm: comm, Peers: s.peers(), CommRanks: r.GroupSize, Groups: r.Groups, Opts: Options{Coll: c,
		Iters: s.Budget.MaxIters, Warmup: s.Warmup, Agg: 1, Check: s.Check, Types: []numeric.DataType{s.Type},
		Ops: []numeric.RedOp{op}, Root: root, IterTiming: true, Timeout: s.Timeout, StallFloor: s.StallFloor}}
	var last time.Duration // the previous size's time per call
	keep := s.promised(c, g)
	for i, size := range s.Sizes {
		if size > maxBytes {
			r.Note = fmt.Sprintf("sizes above %s left out: the devices hold no more", FormatSize(maxBytes))
			s.advance(len(s.Sizes)-i, c.Name+" trimmed")
			break
		}
		plan := PointPlan{Power: s.Power, PowerWindow: s.PowerWindow, Iters: func(perCall time.Duration) int {
			if s.tooLong(i, keep, perCall, 0) {
				return 0
			}
			return s.Budget.Iters(perCall)
		}}
		if s.Budget.Limit > 0 {
			// Before any call (an agreement among the processes, so
			// only under a limit): the warm-up and the fewest
			// iterations, at the last size's time scaled by size, must
			// fit.
			plan.Skip = func() bool {
				if s.Budget.Spent() {
					return true
				}
				if last <= 0 || i == 0 {
					return false
				}
				est := time.Duration(float64(last) * float64(size) / float64(s.Sizes[i-1]))
				return s.tooLong(i, keep, est, max(s.Warmup, 1))
			}
		}
		row, err := eng.Point(ctx, s.Type, op, root, size, plan)
		if err != nil {
			return r, err
		}
		if row.Iters == 0 {
			s.advance(len(s.Sizes)-i, c.Name+" trimmed")
			if i < keep {
				// Fewer sizes than promised: the whole curve goes, so
				// that no reader takes a stub for the curve.
				r.Note = fmt.Sprintf("left out: the time budget could not hold its first %d sizes (%s to %s); it held %d",
					keep, FormatSize(s.Sizes[0]), FormatSize(s.Sizes[keep-1]), i)
				r.Rows = nil
				break
			}
			r.Note = fmt.Sprintf("sizes from %s up left out to stay within the time budget", FormatSize(size))
			break
		}
		last = time.Duration(row.OutOfPlace.Time * float64(time.Microsecond))
		s.advance(1, fmt.Sprintf("%s n=%d %s", c.Name, r.GroupSize, FormatSize(size)))
		r.Rows = append(r.Rows, row)
		if w := row.OutOfPlace.Wrong; w > 0 {
			return r, fmt.Errorf("%w: %d wrong elements at %s", ErrWrongResults, w, FormatSize(size))
		}
	}
	return r, nil
}

// MinCurveSizes is how many sizes of a curve, from the smallest, the
// budget keeps whenever its promise allows: a fit needs several. An equal
// share per point would drop them first, since a curve's largest sizes
// cost the most.
const MinCurveSizes = 8

// tooLong says whether the budget leaves out the size at index i of a
// curve that keeps its first keep sizes, whose calls take perCall, with
// extra calls before the timed ones.
func (s *Suite) tooLong(i, keep int, perCall time.Duration, extra int) bool {
	if i < keep {
		return s.Budget.Overruns(perCall, extra)
	}
	return s.Budget.TooLong(perCall, extra)
}

// advance accounts for n more points, measured or left out.
func (s *Suite) advance(n int, what string) {
	s.Budget.Done(n)
	s.points += n
	if s.Progress != nil {
		s.Progress(s.points, s.Points(), what)
	}
}

// agree makes a decision every process takes alike: true if any says so.
func (s *Suite) agree(ctx context.Context, yes bool) (bool, error) {
	v := 0.0
	if yes {
		v = 1
	}
	got, err := s.peers().AllReduce(ctx, []float64{v}, ReduceMax)
	if err != nil {
		return false, err
	}
	return got[0] > 0, nil
}

func (s *Suite) probes(ctx context.Context, onProbe func(ProbeResult)) error {
	if len(s.Probes) == 0 {
		return nil
	}
	var need int64
	for _, p := range s.Probes {
		need = max(need, p.Size)
	}
	var comm Comm
	var maxBytes int64
	for _, p := range s.Probes {
		// Under a limit, the probe runs only if what is left of the
		// budget holds it, decided by all processes together.
		if s.Budget.Limit > 0 {
			short, err := s.agree(ctx, s.Budget.Left() < s.Overlap.Duration())
			if err != nil {
				return err
			}
			if short {
				if s.Log != nil {
					s.Log("overlap %s left out: the time budget was spent", p.Name)
				}
				onProbe(ProbeResult{Probe: p, LeftOut: "the time budget was spent"})
				continue
			}
		}
		if comm == nil {
			var closeComm func()
			var err error
			if comm, maxBytes, closeComm, err = s.Open(ctx, Grouping{}, need); err != nil {
				return fmt.Errorf("opening the job's communicator for the overlap probes: %w", err)
			}
			defer closeComm()
		}
		if p.Size > maxBytes {
			return fmt.Errorf("overlap probe %s: %s does not fit in the devices (at most %s)", p.Name, FormatSize(p.Size), FormatSize(maxBytes))
		}
		o := s.Overlap
		o.Coll, o.Type, o.RedOp = p.Coll, p.Type, p.RedOp
		x := Overlap{Comm: comm, Peers: s.peers(), CommRanks: s.World, Opts: o}
		start := time.Now()
		fig, err := x.Measure(ctx, p.Size, p.Workload)
		if err != nil {
			return fmt.Errorf("overlap probe %s (%s of %s next to %s): %w", p.Name, p.Coll.Name, FormatSize(p.Size), p.Workload, err)
		}
		if s.Log != nil {
			s.Log("overlap %s: %s of %s next to %s: comm ×%.3f, compute ×%.3f (%.1f s)", p.Name, p.Coll.Name,
				FormatSize(p.Size), p.Workload, fig.CommSlowdown, fig.ComputeSlowdown, time.Since(start).Seconds())
		}
		onProbe(ProbeResult{Probe: p, GroupSize: s.World, Figures: fig})
	}
	return nil
}

func (s *Suite) logCurve(done, total int, r CurveResult) {
	if s.Log == nil {
		return
	}
	what := fmt.Sprintf("[%d/%d] %s over groups of %d (%s, %d at once)", done, total, r.Coll.Name, r.GroupSize, r.Grouping.Layout(), r.Groups)
	el := s.Budget.Elapsed().Round(100 * time.Millisecond)
	if len(r.Rows) == 0 {
		s.Log("%s: nothing measured (%s); %v elapsed", what, r.Note, el)
		return
	}
	last := r.Rows[len(r.Rows)-1]
	msg := fmt.Sprintf("%s: %d sizes, busbw %.2f GB/s at %s; %v elapsed", what, len(r.Rows), last.OutOfPlace.BusBW, FormatSize(last.Size), el)
	if r.Note != "" {
		msg += "; " + r.Note
	}
	s.Log("%s", msg)
}
