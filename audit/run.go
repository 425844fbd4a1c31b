package audit

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/collbench/collbench/ab"
	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/compare"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/setting"
	"github.com/collbench/collbench/telemetry"
	"github.com/collbench/collbench/tune"
)

// Options describe an audit from one process's side.
type Options struct {
	ab.Processes
	Emit func(Event)
	// Keep is what a turn adds to Command so that every case runs the
	// bitwise check of repeats calls on order-revealing inputs and keeps
	// each rank's reference output in dir (the caller knows the flags).
	Keep func(repeats int, dir string) []string
	// Space is the settings tried besides the library's own choice.
	Space tune.Space
	// Repeats is how many calls of each case are compared run to run; 0:
	// DefaultRepeats.
	Repeats int
	// Rounds of the price's measurement; 0: the least that can show a
	// difference at Alpha over the sizes, at least DefaultRounds.
	Rounds           int
	Alpha, Threshold float64
	Stamp            document.Stamp
	// Telemetry hears rank 0's record: every check and every setting's
	// verdict (nil records nothing).
	Telemetry *telemetry.Recorder
}

// Defaults of an audit.
const (
	DefaultRepeats = 3
	DefaultRounds  = 5
	// OwnLabel names the library's own choice: the sweep as it is.
	OwnLabel = "own choice"
)

// Event is a turn that ended.
type Event struct {
	Stage         string // "run", "fresh", "setting" or "price"
	Round, Rounds int    // the price's rounds, 1-based; 0 otherwise
	Label         string
	Elapsed       time.Duration
	Failed        string // why the turn did not run
}

// Refused is an audit that cannot run as asked, known before anything
// was compared; its message names settings as {Name} (package setting).
type Refused struct{ Err error }

func (e *Refused) Error() string { return e.Err.Error() }
func (e *Refused) Unwrap() error { return e.Err }

// auditing is one audit's state.
type auditing struct {
	o        Options
	r        *ab.Runner
	coll     *bench.Collective
	rec      *document.AuditRun
	settings []*run // settings[0] is the library's own choice
	turns    int    // turns so far, each its own run document
}

// run is one setting the sweep ran under, and its kept outputs.
type run struct {
	ab.Arm
	dirs    []string // one folder of kept outputs per turn that ran
	refused string
	doc     *document.Run // its first turn's record (rank 0)
	seconds float64
}

// Result is an audit's outcome: the record on rank 0 (nil on the
// others), and on every process whether the library's own choice
// repeated in every check.
type Result struct {
	Record     *document.AuditRun
	OwnRepeats bool
}

// Run audits. Every process of the audit runs it.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Emit == nil {
		o.Emit = func(Event) {}
	}
	if o.Repeats == 0 {
		o.Repeats = DefaultRepeats
	}
	if len(o.Command) == 0 {
		return nil, &Refused{setting.Errorf("no sweep given")}
	}
	coll, err := bench.LookupCollective(o.Command[0])
	if err != nil {
		return nil, &Refused{err}
	}
	if o.Repeats < 1 {
		return nil, &Refused{setting.Errorf("{Repeats} must be at least 1 (got %d)", o.Repeats)}
	}
	r, err := ab.NewRunner(ab.Options{Processes: o.Processes})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	a := &auditing{o: o, r: r, coll: coll, rec: &document.AuditRun{Stamp: o.Stamp, Command: o.Command, Collective: coll.Name,
		Repeats: o.Repeats, Settings: []document.AuditSetting{}, Checks: []document.AuditCheck{}, Notes: []string{}, Errors: []string{}}}
	if err := a.runSettings(ctx); err != nil {
		return nil, err
	}
	if err := a.compareAll(ctx); err != nil {
		return nil, err
	}
	chosen, err := a.choose(ctx)
	if err != nil {
		return nil, err
	}
	if o.Rank != 0 {
		return &Result{OwnRepeats: chosen == 0}, nil
	}
	a.rec.Finish()
	record(ctx, o.Telemetry, a.rec)
	return &Result{Record: a.rec, OwnRepeats: chosen == 0}, nil
}

// record hands the record's checks and verdicts to telemetry.
func record(ctx context.Context, t *telemetry.Recorder, rec *document.AuditRun) {
	for _, c := range rec.Checks {
		place := "out_of_place"
		if c.InPlace {
			place = "in_place"
		}
		t.AuditCheck(ctx, telemetry.AuditCheck{Kind: c.Kind, Setting: c.Setting, Against: c.Against, Collective: rec.Collective,
			DType: c.Type, RedOp: c.RedOp, Placement: place, Bytes: c.Size, Bits: c.Bits, MaxULPs: c.MaxULPs})
	}
	for _, s := range rec.Settings {
		t.AuditSetting(ctx, s.Label, s.Repeats)
	}
}

// turn runs one turn of s, keeping its outputs in a folder of its own,
// and agrees on how it went; stage names it in events.
func (a *auditing) turn(ctx context.Context, s *run, stage string) (*document.Run, string, error) {
	a.turns++
	dir := filepath.Join(a.r.Dir(), fmt.Sprintf("turn%d", a.turns))
	arm := s.Arm
	arm.Args = append(append([]string(nil), arm.Args...), a.o.Keep(a.o.Repeats, dir)...)
	start := time.Now()
	doc, failed, err := a.r.Turn(ctx, arm, a.turns-1, 0)
	if err != nil {
		return nil, "", err
	}
	if failed == "" {
		s.dirs = append(s.dirs, dir)
	}
	if failed != "" && stage == "run" {
		return doc, failed, nil // the first run's failure ends the audit, which says it once
	}
	a.emit(Event{Stage: stage, Label: s.Label, Elapsed: time.Since(start), Failed: failed})
	return doc, failed, nil
}

// runSettings runs the sweep as it is twice (the second in fresh
// processes), then once under every setting of the space for the backend
// it ran on.
func (a *auditing) runSettings(ctx context.Context) error {
	own := &run{Arm: ab.Arm{Label: OwnLabel}}
	start := time.Now()
	doc, failed, err := a.turn(ctx, own, "run")
	if err != nil {
		return err
	}
	own.seconds = time.Since(start).Seconds()
	var p tune.Plan
	if a.o.Rank == 0 {
		p = tune.ReadPlan(doc, failed)
		own.doc = doc
	}
	if err := a.share(ctx, &p); err != nil {
		return err
	}
	if p.Failed != "" {
		if !ab.RefusedTurn(p.Failed) {
			return setting.Errorf("the sweep itself %s", p.Failed) // the machine's failure, exit 1
		}
		return &Refused{setting.Errorf("the sweep itself %s", p.Failed)}
	}
	if err := a.o.Space.Check(p.Backend); err != nil {
		return &Refused{err}
	}
	a.rec.Ranks, a.rec.Backend, a.rec.NCCLVersion = p.Ranks, p.Backend, p.NCCLVersion
	if _, failed, err = a.turn(ctx, own, "fresh"); err != nil {
		return err
	} else if failed != "" {
		a.rec.Errors = append(a.rec.Errors, "the second run of the library's own choice "+failed)
	}
	a.settings = []*run{own}
	for _, st := range a.o.Space.Settings(p.Backend, a.coll, p.Ranks) {
		s := &run{Arm: ab.Arm{Label: st.Label, Env: st.Env}}
		start := time.Now()
		doc, failed, err := a.turn(ctx, s, "setting")
		if err != nil {
			return err
		}
		s.refused, s.seconds, s.doc = failed, time.Since(start).Seconds(), doc
		a.settings = append(a.settings, s)
	}
	return nil
}

// share hands rank 0's v to every process (ab.Share).
func (a *auditing) share(ctx context.Context, v any) error {
	return ab.Share(ctx, a.o.Group, a.o.Rank, a.o.Size, v)
}

func (a *auditing) emit(ev Event) {
	if a.o.Rank == 0 {
		a.o.Emit(ev)
	}
}

// speed is a setting's first run's figure for the choice of the fastest:
// the geometric mean of its out-of-place bus bandwidths; 0 without any.
func speed(doc *document.Run) float64 {
	if doc == nil {
		return 0
	}
	sum, n := 0.0, 0
	for _, v := range compare.RowTimes(doc) {
		if v[1] > 0 {
			sum += math.Log(v[1])
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return math.Exp(sum / float64(n))
}
