package tune

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/collbench/collbench/ab"
	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/compare"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/tuner"
)

// proofPlan is rank 0's file for the proof, for every process.
type proofPlan struct {
	File []byte
	Skip string // why there is no proof
}

// prove writes the file of the search's bands, then runs the library's
// own choice against the library steered by that file, as ab runs two
// arms: every band whose sizes are not all significantly faster (Holm
// over the sizes) is taken out, and the file is written again without
// it. It returns the file as it stands at the end (rank 0).
func (t *tuning) prove(ctx context.Context) ([]byte, error) {
	var pp proofPlan
	var rows []tuner.Row
	if t.o.Rank == 0 {
		rows = t.fileRows(t.bands)
		var err error
		if pp.File, err = t.file(rows); err != nil {
			return nil, err
		}
		switch {
		case !t.anyWinner():
			pp.Skip = "no setting was faster than the library's own choice beyond the threshold at any size: there is nothing to prove"
		case t.backend == backendNCCL && t.o.Plugin == "":
			pp.Skip = "no tuner plugin to prove the file with"
		}
	}
	if err := t.share(ctx, &pp); err != nil {
		return nil, err
	}
	if pp.Skip != "" {
		if t.o.Rank == 0 {
			t.note(pp.Skip)
			t.recordBands(rows)
		}
		return pp.File, nil
	}
	path := filepath.Join(t.r.Dir(), "tuned.conf")
	if err := os.WriteFile(path, pp.File, 0o644); err != nil {
		return nil, fmt.Errorf("the file under proof: %w", err)
	}
	env := []string{host.TunerFileVar + "=" + path}
	if t.backend == backendNCCL {
		env = []string{"NCCL_TUNER_PLUGIN=" + t.o.Plugin, "NCCL_TUNER_CONFIG_FILE=" + path}
	}
	tuned := ab.Arm{Label: "tuned", Env: env}
	proof := &document.TuneProof{Rounds: t.proofRounds(), Env: env, Choices: []document.TuneLogged{}, Mismatches: []string{},
		Sizes: []document.TuneProofSize{}, Default: []document.ABRound{}, Tuned: []document.ABRound{}}
	t.rec.Proof = proof
	start := time.Now()
	_, failed, err := t.r.Turn(ctx, t.withLog(tuned, "tuned"), len(t.arms), 0)
	if err != nil {
		return nil, err
	}
	t.emit(Event{Stage: "trial", Arm: "tuned", Label: "the library steered by the file", Elapsed: time.Since(start), Failed: failed})
	if failed != "" {
		proof.Failed = "the library steered by the file " + failed
	} else {
		out := ab.NewOutcome([]ab.Arm{t.arms[0].Arm, tuned})
		arms := []*arm{t.arms[0], {Arm: tuned}}
		if err := t.runner("proof", arms).Rounds(ctx, out, 1, proof.Rounds); err != nil {
			return nil, err
		}
		if t.o.Rank == 0 {
			choices := t.readChoices("tuned", t.rec.Ranks)
			proof.Choices = logged(choices)
			proof.Mismatches = t.mismatches(rows, choices)
			proof.Default, proof.Tuned = ab.Rounds(out.Arms[0]), ab.Rounds(out.Arms[1])
			if f := out.Arms[1].Failed; f != "" {
				proof.Failed = "the library steered by the file " + f
			} else if out.Arms[0].Failed == "" {
				t.judgeProof(out, proof)
			}
		}
	}
	if t.o.Rank != 0 {
		return nil, nil
	}
	if proof.Failed != "" {
		t.rec.Errors = append(t.rec.Errors, proof.Failed)
		for i := range t.bands {
			if !t.bands[i].own {
				t.bands[i].dropped = "the proof did not run"
			}
		}
	}
	return t.dropFailed()
}

// anyWinner says whether some band is a setting's.
func (t *tuning) anyWinner() bool {
	for _, b := range t.bands {
		if !b.own {
			return true
		}
	}
	return false
}

// judgeProof judges the proof size by size (Holm over the sizes) and
// each band: it holds where every size of it is significantly faster
// beyond the threshold.
func (t *tuning) judgeProof(out *ab.Outcome, proof *document.TuneProof) {
	rows := compare.Arms([][]map[compare.Row][2]float64{ab.Times(out.Arms[0]), ab.Times(out.Arms[1])}, 0,
		compare.ArmOptions{Threshold: t.o.Threshold, Alpha: t.o.Alpha, Correction: compare.Holm})
	predicted := map[int64]float64{}
	for _, v := range t.verdicts {
		predicted[v.size] = v.ratio
	}
	verdicts := map[int64]compare.ArmFigure{}
	for _, r := range rows {
		if len(r.Figures) != 2 {
			continue
		}
		base, f := r.Figures[0], r.Figures[1]
		verdicts[r.Size] = f
		fig := ab.Figure(f)
		ps := document.TuneProofSize{Size: r.Size, Default: base.Median, Tuned: f.Median, Ratio: f.Ratio, Predicted: 1,
			P: fig.P, PAdjusted: fig.PAdjusted, Verdict: f.Verdict}
		if b := t.bandOf(r.Size); b != nil && !b.own {
			ps.Predicted = predicted[r.Size]
		} else if f.Verdict == compare.ArmSlower {
			t.note(fmt.Sprintf("at %s, where the file keeps the library's own choice, the steered library was %.3f× its time (p %.2g)",
				bench.FormatSize(r.Size), f.Ratio, f.Adjusted))
		}
		proof.Sizes = append(proof.Sizes, ps)
	}
	for i := range t.bands {
		b := &t.bands[i]
		if b.own {
			continue
		}
		held, logSum, n := true, 0.0, 0
		var why []string
		for _, size := range b.sizes {
			f, ok := verdicts[size]
			if !ok {
				held = false
				why = append(why, bench.FormatSize(size)+" not measured")
				continue
			}
			logSum += math.Log(f.Ratio)
			n++
			if f.Verdict != compare.ArmFaster {
				held = false
				why = append(why, fmt.Sprintf("%s %.3f× (p %.2g, %s)", bench.FormatSize(size), f.Ratio, f.Adjusted, f.Verdict))
			}
		}
		if n > 0 {
			r := math.Exp(logSum / float64(n))
			b.realised = &r
		}
		b.held = &held
		if !held {
			b.dropped = "not faster in the proof at " + strings.Join(why, "; ")
		}
	}
}

// bandOf is the band that holds a measured size.
func (t *tuning) bandOf(size int64) *band {
	for i := range t.bands {
		for _, s := range t.bands[i].sizes {
			if s == size {
				return &t.bands[i]
			}
		}
	}
	return nil
}

// mismatches are the sizes where the steered library did not make the
// choice the file's row says, one line each.
func (t *tuning) mismatches(rows []tuner.Row, got map[int64]tuner.Choice) []string {
	out := []string{}
	for _, size := range t.sizes {
		d := tuner.Apply(rows, tuner.Query{Collective: t.rec.Collective, Bytes: uint64(size), Nodes: t.rec.Nodes, Ranks: t.rec.Ranks,
			PipeOps: 1, RegBuff: 0})
		if d.Row < 0 {
			continue
		}
		want := tuner.Choice{Algorithm: d.Algorithm, Protocol: d.Protocol, Channels: d.Channels}
		c, ok := got[size]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: the file says %s, and the library logged no call of that size", bench.FormatSize(size), want))
		case c != want:
			out = append(out, fmt.Sprintf("%s: the file says %s, the library chose %s", bench.FormatSize(size), want, c))
		}
	}
	return out
}

// dropFailed takes every band that did not hold out of the file (its
// sizes keep the library's own choice, pinned on NCCL), records the
// bands and rows, and returns the file.
func (t *tuning) dropFailed() ([]byte, error) {
	final := t.bands
	dropped := map[int64]string{}
	for _, b := range t.bands {
		if b.dropped != "" {
			for _, s := range b.sizes {
				dropped[s] = b.dropped
			}
		}
	}
	if len(dropped) > 0 {
		vs := append([]verdict(nil), t.verdicts...)
		for i := range vs {
			if _, ok := dropped[vs[i].size]; ok {
				vs[i].win, vs[i].arm, vs[i].ratio = false, -1, 1
			}
		}
		final = t.makeBands(vs)
		for _, b := range t.bands {
			if b.dropped != "" {
				t.note(fmt.Sprintf("taken out of the file: %s at %s (%s)", b.choice, sizeSpan(b), b.dropped))
			}
		}
	}
	// The held bands keep what the proof found.
	held := map[string]band{}
	for _, b := range t.bands {
		held[fmt.Sprint(b.sizes)] = b
	}
	for i := range final {
		if b, ok := held[fmt.Sprint(final[i].sizes)]; ok && !final[i].own {
			final[i].realised, final[i].held = b.realised, b.held
		}
	}
	rows := t.fileRows(final)
	file, err := t.file(rows)
	if err != nil {
		return nil, err
	}
	t.recordBands(rows) // every band the search made, taken out or not, and the rows written
	return file, nil
}

// file writes rows as the backend's reader takes them, with a head that
// says what was measured and how to load it.
func (t *tuning) file(rows []tuner.Row) ([]byte, error) {
	arms := t.measuredArms()
	head := []string{
		fmt.Sprintf("collbench tune %s, %s: %s on %d rank(s), %d node(s), %s backend%s", t.rec.Collbench, t.rec.StartTime,
			t.rec.Collective, t.rec.Ranks, t.rec.Nodes, t.backend, ncclOf(t.rec.NCCLVersion)),
		fmt.Sprintf("search: %d round(s) of %d setting(s) and the library's own choice, at %d size(s); a setting is written where it was faster beyond %g %% at p < %g (Benjamini–Hochberg over the search's tests), then proven against the library's own choice (Holm over the sizes)",
			t.rec.Rounds, len(arms)-1, len(t.sizes), t.o.Threshold*100, t.o.Alpha),
	}
	if t.backend == backendNCCL {
		head = append(head, "load with NCCL_TUNER_PLUGIN=libnccl-tuner-example.so (NCCL's example plugin, built from NCCL 2.30 or later) and NCCL_TUNER_CONFIG_FILE=this file",
			fmt.Sprintf("the rows match communicators of %d rank(s) on %d node(s) only: the example plugin runs every call no row matches on one channel, so load the file only in jobs whose every communicator of %s calls is of that shape",
				t.rec.Ranks, t.rec.Nodes, t.rec.Collective))
	} else {
		head = append(head, "load with "+host.TunerFileVar+"=this file; a call no row matches keeps the host backend's own choice")
	}
	if len(rows) == 0 {
		head = append(head, "no row: the library's own choice held at every size measured")
	}
	var b bytes.Buffer
	if err := tuner.Write(&b, vocabulary(t.backend), head, rows); err != nil {
		return nil, fmt.Errorf("the tuner file: %w", err)
	}
	return b.Bytes(), nil
}

func ncclOf(v string) string {
	if v == "" {
		return ""
	}
	return ", NCCL " + v
}
