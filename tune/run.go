// Package tune calibrates a collective library's own choice of
// algorithm, protocol and channels from measurements, and proves it: a
// trial of the sweep under every setting of a space (refused settings
// named in the library's words, each setting's choice per size read from
// the library's own log), rounds of the settings in turn as ab runs its
// arms, a verdict per size against the library's own choice with the
// tests' false discovery rate held, sizes merged into bands, a tuner file
// for NCCL's example plugin (or the host backend's own), and the proof:
// the library's own choice against the library steered by the file,
// every band that does not hold taken out. It runs its processes through
// ab's Runner; it spells no flag.
package tune

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/collbench/collbench/ab"
	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/compare"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/setting"
	"github.com/collbench/collbench/tuner"
)

// Options describe a tuning from one process's side.
type Options struct {
	ab.Processes
	Emit func(Event)

	Space Space
	// Rounds of the search; 0: the least that can show one difference
	// among its tests at Alpha, at least DefaultRounds.
	Rounds           int
	Alpha, Threshold float64
	// Budget bounds the whole tuning; 0: none.
	Budget time.Duration
	// Plugin is the tuner plugin library the proof loads on the nccl
	// backend (NCCL's example plugin); without it NCCL's file is not
	// proven.
	Plugin string
	Stamp  document.Stamp
}

// DefaultRounds is the least the search and the proof run unless their
// tests need more.
const DefaultRounds = 7

// Event is a trial or a turn that ended.
type Event struct {
	Stage         string // "trial", "round" or "proof"
	Round, Rounds int    // 1-based; 0 for a trial
	Arm, Label    string
	Elapsed       time.Duration
	Failed        string // why the arm dropped out or was refused
}

// Result is a tuning's outcome on rank 0 (nil on the others).
type Result struct {
	Record   *document.TuneRun
	File     []byte // the tuner file
	Measured []byte // the measurement rows, in optimize_config.py's columns
}

// Refused is a tuning that cannot run as asked, known before its rounds;
// its message names settings as {Name} (package setting).
type Refused struct{ Err error }

func (e *Refused) Error() string { return e.Err.Error() }
func (e *Refused) Unwrap() error { return e.Err }

// refuse makes a Refused of a message that names settings as {Name}.
func refuse(format string, a ...any) *Refused { return &Refused{setting.Errorf(format, a...)} }

// Run tunes. Every process of the tuning runs it; rank 0 decides each
// step and the others take its decision.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Emit == nil {
		o.Emit = func(Event) {}
	}
	coll, err := bench.LookupCollective(o.Command[0])
	if err != nil {
		return nil, err
	}
	r, err := ab.NewRunner(ab.Options{Processes: o.Processes})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	t := &tuning{o: o, r: r, coll: coll, start: time.Now(), rec: &document.TuneRun{Stamp: o.Stamp, Command: o.Command,
		Threshold: o.Threshold, Alpha: o.Alpha, Correction: string(compare.BH), Budget: o.Budget.Seconds(), Plugin: o.Plugin,
		Arms: []document.TuneArm{}, Sizes: []document.TuneSize{}, Bands: []document.TuneBand{}, Rows: []document.TunerRow{},
		Notes: []string{}, Errors: []string{}}}
	if err := t.planArms(ctx); err != nil {
		return nil, err
	}
	if err := t.trials(ctx); err != nil {
		return nil, err
	}
	if err := t.search(ctx); err != nil {
		return nil, err
	}
	file, err := t.prove(ctx)
	if err != nil {
		return nil, err
	}
	if o.Rank != 0 {
		return nil, nil
	}
	t.rec.Finish()
	return &Result{Record: t.rec, File: file, Measured: t.measured()}, nil
}

// tuning is one tuning's state.
type tuning struct {
	o     Options
	r     *ab.Runner
	coll  *bench.Collective
	start time.Time
	rec   *document.TuneRun

	backend  string
	sizes    []int64
	arms     []*arm // arms[0] is the library's own choice
	verdicts []verdict
	bands    []band
}

// arm is one setting of the space (or the library's own choice).
type arm struct {
	ab.Arm
	set     point
	own     bool
	refused string
	sameAs  int // another arm whose choices it repeats; -1 none
	seconds float64
	choices map[int64]tuner.Choice // per size, as the library logged it (rank 0)
	out     *ab.ArmOutcome         // its rounds, when it was measured
}

// Plan is what rank 0 reads off the library's own trial (the sweep as
// it is), for every process: the measurements that try the space
// (tune, audit) read it alike.
type Plan struct {
	Backend     string
	Ranks       int
	Nodes       int
	NCCLVersion string
	Sizes       []int64
	Failed      string
	Seconds     float64
	Logged      bool // the trial's log held the library's choices
}

// planArms runs the sweep as it is, with the library's choices logged,
// and from it makes the space's arms for the backend the sweep ran on.
func (t *tuning) planArms(ctx context.Context) error {
	own := &arm{Arm: ab.Arm{Label: "the library's own choice"}, own: true, sameAs: -1}
	start := time.Now()
	doc, failed, err := t.r.Turn(ctx, t.withLog(own.Arm, "A"), 0, 0)
	if err != nil {
		return err
	}
	var p Plan
	if t.o.Rank == 0 {
		p = ReadPlan(doc, failed)
		p.Seconds = time.Since(start).Seconds()
		own.choices = t.readChoices("A", p.Ranks)
		p.Logged = len(own.choices) > 0
	}
	if err := t.share(ctx, &p); err != nil {
		return err
	}
	if p.Failed != "" {
		if !ab.RefusedTurn(p.Failed) {
			// The machine failed it (a full disk, a lost rank): a
			// failure, not a refusal of what was asked.
			return setting.Errorf("the sweep itself %s", p.Failed)
		}
		return refuse("the sweep itself %s", p.Failed)
	}
	own.seconds = p.Seconds
	t.emit(Event{Stage: "trial", Arm: "A", Label: own.Label, Elapsed: time.Since(start)})
	if p.Backend == backendNCCL && !p.Logged {
		return refuse("NCCL %s logged no choice per call: its TUNING lines name the algorithm, protocol and channels from NCCL 2.24 on, and tune reads them", p.NCCLVersion)
	}
	t.backend, t.sizes = p.Backend, p.Sizes
	t.rec.Backend, t.rec.Ranks, t.rec.Nodes, t.rec.NCCLVersion = p.Backend, p.Ranks, p.Nodes, p.NCCLVersion
	t.rec.Collective = host.TunerName(t.coll.ID)
	if err := t.o.Space.Check(p.Backend); err != nil {
		return &Refused{err}
	}
	if p.Backend == backendNCCL && t.o.Plugin == "" {
		t.note("not proven: no tuner plugin was given to load the file with (scripts/tuner-plugin.sh builds NCCL's example plugin)")
	}
	t.arms = []*arm{own}
	for _, s := range t.o.Space.settings(p.Backend, t.coll, p.Ranks) {
		a := &arm{Arm: ab.Arm{Label: s.label(), Env: s.env(p.Backend)}, set: s, sameAs: -1}
		t.arms = append(t.arms, a)
	}
	if len(t.arms) > ab.MaxArms {
		return refuse("%d settings: at most %d, each tried and measured in a process of its own; narrow the space", len(t.arms)-1, ab.MaxArms-1)
	}
	return t.checkBudget(p.Seconds*float64(len(t.arms)), p.Seconds)
}

// ReadPlan reads the library's own trial: its run document, or failed,
// why it did not run.
func ReadPlan(doc *document.Run, failed string) Plan {
	if failed != "" {
		return Plan{Failed: failed}
	}
	if doc == nil || len(doc.Results) == 0 {
		return Plan{Failed: "measured no size"}
	}
	p := Plan{Backend: doc.Backend, Ranks: doc.Config.NRanks}
	if doc.Config.GroupSize > 0 {
		p.Ranks = doc.Config.GroupSize
	}
	if v := doc.NCCLVersion; v != nil && *v > 0 {
		// NCCL's code: major×10000 + minor×100 + patch from 2.9 on.
		p.NCCLVersion = fmt.Sprintf("%d.%d.%d", *v/10000, *v%10000/100, *v%100)
	}
	hosts := map[string]bool{}
	for _, d := range doc.Config.Devices {
		if d.Group == 0 {
			hosts[d.Hostname] = true
		}
	}
	p.Nodes = max(1, len(hosts))
	seen := map[int64]bool{}
	for _, res := range doc.Results {
		if !seen[res.Size] {
			seen[res.Size] = true
			p.Sizes = append(p.Sizes, res.Size)
		}
	}
	if p.Backend != backendNCCL && p.Backend != backendHost {
		return Plan{Failed: fmt.Sprintf("ran on a backend the settings' space does not know (%q)", p.Backend)}
	}
	return p
}

// withLog is the arm with the library's choice per call logged into this
// process's folder, under name.
func (t *tuning) withLog(a ab.Arm, name string) ab.Arm {
	dir := t.r.Dir()
	a.Env = append(append([]string(nil), a.Env...), "NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=TUNING",
		"NCCL_DEBUG_FILE="+filepath.Join(dir, name+".nccl.log"), host.TuningLogVar+"="+filepath.Join(dir, name+".host.log"))
	return a
}

// readChoices reads the choices a trial logged (rank 0), per size.
func (t *tuning) readChoices(name string, ranks int) map[int64]tuner.Choice {
	var data []byte
	for _, suffix := range []string{".nccl.log", ".host.log"} {
		if b, err := os.ReadFile(filepath.Join(t.r.Dir(), name+suffix)); err == nil {
			data = append(data, b...)
		}
	}
	out := map[int64]tuner.Choice{}
	for _, l := range tuner.ReadLog(data, ranks) {
		if l.Collective == host.TunerName(t.coll.ID) {
			out[int64(l.Bytes)] = l.Choice
		}
	}
	return out
}

// trialsOutcome is rank 0's account of the trials, for every process.
type trialsOutcome struct {
	Refused []string
	SameAs  []int
	Seconds []float64
	Choices []map[int64]tuner.Choice
	Rounds  int
	Budget  string // why the budget cannot hold the rounds
}

// trials runs every setting once with its choices logged: a setting the
// library refuses is named, in its words, and left out; one whose choice
// at every size is another's is left out as that one's twin.
func (t *tuning) trials(ctx context.Context) error {
	var got trialsOutcome
	for i := 1; i < len(t.arms); i++ {
		a := t.arms[i]
		start := time.Now()
		_, failed, err := t.r.Turn(ctx, t.withLog(a.Arm, ab.Letter(i)), i, 0)
		if err != nil {
			return err
		}
		a.refused, a.seconds = failed, time.Since(start).Seconds()
		if t.o.Rank == 0 && failed == "" {
			a.choices = t.readChoices(ab.Letter(i), t.rec.Ranks)
		}
		t.emit(Event{Stage: "trial", Arm: ab.Letter(i), Label: a.Label, Elapsed: time.Since(start), Failed: failed})
	}
	if t.o.Rank == 0 {
		for i, a := range t.arms {
			if i > 0 && a.refused == "" {
				a.sameAs = t.twin(i)
			}
			got.Refused = append(got.Refused, a.refused)
			got.SameAs = append(got.SameAs, a.sameAs)
			got.Seconds = append(got.Seconds, a.seconds)
			got.Choices = append(got.Choices, a.choices)
		}
		got.Rounds, got.Budget = t.settleRounds()
	}
	if err := t.share(ctx, &got); err != nil {
		return err
	}
	for i, a := range t.arms {
		a.refused, a.sameAs, a.seconds, a.choices = got.Refused[i], got.SameAs[i], got.Seconds[i], got.Choices[i]
	}
	if got.Budget != "" {
		return refuse("%s", got.Budget) // rank 0's message, its {Name} marks kept
	}
	t.rec.Rounds = got.Rounds
	return nil
}

// twin is an earlier arm whose logged choice is arm i's at every size:
// measuring both measures one thing twice.
func (t *tuning) twin(i int) int {
	mine := t.arms[i].choices
	if len(mine) == 0 {
		return -1
	}
	for j := 0; j < i; j++ {
		other := t.arms[j]
		if other.refused != "" || other.sameAs >= 0 || len(other.choices) != len(mine) {
			continue
		}
		same := true
		for size, c := range mine {
			if other.choices[size] != c {
				same = false
				break
			}
		}
		if same {
			return j
		}
	}
	return -1
}

// measuredArms are the arms the rounds run: the library's own, and every
// setting neither refused nor a twin.
func (t *tuning) measuredArms() []*arm {
	var out []*arm
	for _, a := range t.arms {
		if a.refused == "" && a.sameAs < 0 {
			out = append(out, a)
		}
	}
	return out
}

// settleRounds picks the rounds of the search (rank 0): as asked, or the
// least that can show one difference among its tests, and checks that
// they fit the budget with the proof's.
func (t *tuning) settleRounds() (int, string) {
	arms := t.measuredArms()
	tests := len(t.sizes) * (len(arms) - 1)
	need := compare.RoundsNeeded(t.o.Alpha, tests, compare.BH, 1)
	rounds := t.o.Rounds
	if rounds == 0 {
		rounds = max(DefaultRounds, need)
	}
	if len(arms) < 2 {
		return rounds, ""
	}
	if rounds < need {
		return rounds, fmt.Sprintf("%d rounds cannot show a difference among %d tests at p < %g (%d setting(s) measured at %d size(s)); use at least %d",
			rounds, tests, t.o.Alpha, len(arms)-1, len(t.sizes), need)
	}
	if t.o.Budget == 0 {
		return rounds, ""
	}
	perRound := 0.0
	for _, a := range arms {
		perRound += a.seconds
	}
	proof := float64(t.proofRounds()) * 2 * t.arms[0].seconds
	left := t.o.Budget.Seconds() - time.Since(t.start).Seconds() - proof
	fit := int(math.Floor(left / perRound))
	if fit < need {
		return rounds, fmt.Sprintf("a budget of %s holds %d round(s) of the %d settings measured and the library's own (%.1f s a round, then %.0f s of proof); p < %g over %d tests needs %d: give {Budget} %s or narrow the space",
			t.o.Budget, max(fit, 0), len(arms)-1, perRound, proof, t.o.Alpha, tests, need,
			(time.Duration(math.Ceil(time.Since(t.start).Seconds()+proof+float64(need)*perRound)) * time.Second).String())
	}
	if fit < rounds {
		t.note(fmt.Sprintf("the budget holds %d rounds of the %d asked for", fit, rounds))
		rounds = fit
	}
	return rounds, ""
}

// checkBudget refuses, before the trials, a budget that cannot hold the
// trials (about trials seconds) and the least rounds of every setting and
// the proof, at round seconds a run.
func (t *tuning) checkBudget(trials, round float64) error {
	if t.o.Budget == 0 {
		return nil
	}
	tests := len(t.sizes) * (len(t.arms) - 1)
	need := compare.RoundsNeeded(t.o.Alpha, tests, compare.BH, 1)
	least := time.Since(t.start).Seconds() + trials + float64(need)*float64(len(t.arms))*round + float64(t.proofRounds())*2*round
	if least > t.o.Budget.Seconds() {
		return refuse("a budget of %s cannot hold %d trials, %d rounds of the %d settings and the library's own, and the proof (%.1f s a run: about %s); give more, or narrow the space",
			t.o.Budget, len(t.arms)-1, need, len(t.arms)-1, round, (time.Duration(math.Ceil(least)) * time.Second).String())
	}
	return nil
}

// proofRounds is the rounds of the proof: enough to show one difference
// among its sizes (Holm), at least DefaultRounds or the search's.
func (t *tuning) proofRounds() int {
	n := max(DefaultRounds, compare.RoundsNeeded(t.o.Alpha, len(t.sizes), compare.Holm, 1))
	if t.o.Rounds > 0 {
		n = max(n, t.o.Rounds)
	}
	return n
}

// search runs the rounds of the measured arms and judges every size.
func (t *tuning) search(ctx context.Context) error {
	arms := t.measuredArms()
	if len(arms) < 2 {
		t.note("no setting differs from the library's own choice: nothing to measure")
		if t.o.Rank == 0 {
			t.recordArms()
		}
		return nil
	}
	var abArms []ab.Arm
	for _, a := range arms {
		abArms = append(abArms, a.Arm)
	}
	out := ab.NewOutcome(abArms)
	r := t.runner("round", arms)
	if err := r.Rounds(ctx, out, 1, t.rec.Rounds); err != nil {
		return err
	}
	for i, a := range arms {
		a.out = &out.Arms[i]
	}
	if t.o.Rank != 0 {
		return nil // only rank 0's turns carry the runs
	}
	if out.Stopped != "" {
		t.rec.Errors = append(t.rec.Errors, out.Stopped)
	}
	t.recordArms()
	t.judge(out)
	return nil
}

// runner is the tuning's Runner with its events named as stage.
func (t *tuning) runner(stage string, arms []*arm) *ab.Runner {
	rounds := t.rec.Rounds
	if stage == "proof" {
		rounds = t.proofRounds()
	}
	return t.r.WithEmit(func(ev ab.Event) {
		a := arms[ev.Arm]
		letter := "tuned"
		if i := t.index(a); i >= 0 {
			letter = ab.Letter(i)
		}
		t.emit(Event{Stage: stage, Round: ev.Round, Rounds: rounds, Arm: letter, Label: a.Label, Elapsed: ev.Elapsed, Failed: ev.Failed})
	})
}

// recordArms writes every arm into the record.
func (t *tuning) recordArms() {
	t.rec.Arms = t.rec.Arms[:0]
	for i, a := range t.arms {
		d := document.TuneArm{Letter: ab.Letter(i), Label: a.Label, Default: a.own, Env: nonNil(a.Env), Refused: a.refused,
			TrialSeconds: a.seconds, Choices: logged(a.choices), Rounds: []document.ABRound{}}
		if !a.own {
			d.Setting = document.TuneChoice(a.set.Choice)
		}
		if a.sameAs >= 0 {
			d.SameAs = ab.Letter(a.sameAs)
		}
		if a.out != nil {
			d.Failed, d.FailedRound = a.out.Failed, a.out.FailedRound
			d.Rounds = ab.Rounds(*a.out)
		}
		t.rec.Arms = append(t.rec.Arms, d)
	}
}

// share hands rank 0's v to every process (ab.Share).
func (t *tuning) share(ctx context.Context, v any) error {
	return ab.Share(ctx, t.o.Group, t.o.Rank, t.o.Size, v)
}

func (t *tuning) emit(ev Event) {
	if t.o.Rank == 0 {
		t.o.Emit(ev)
	}
}

// note adds a line the user of the file must read.
func (t *tuning) note(line string) { t.rec.Notes = append(t.rec.Notes, line) }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
