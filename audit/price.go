package audit

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/collbench/collbench/ab"
	"github.com/collbench/collbench/compare"
	"github.com/collbench/collbench/document"
)

// choice is rank 0's decision for every process: the settings that may
// be chosen, fastest first, and the rounds the price takes.
type choice struct {
	Candidates []int
	Rounds     int
}

// repeats says whether the setting ran and every check of it, save
// those against another setting, found the same bits.
func (a *auditing) repeats(s *run) bool {
	if s.refused != "" || len(s.dirs) == 0 {
		return false
	}
	for _, c := range a.rec.Checks {
		if c.Setting == s.Label && c.Kind != document.AuditSettings && c.Differs() {
			return false
		}
	}
	return true
}

// choose picks the fastest setting that repeats. The library's own
// choice, when it repeats, is chosen whatever its speed: repeating then
// costs nothing. Any other is first run once more, in fresh processes,
// and chosen only if that run repeats its first too. It returns the
// chosen setting's index, -1 when none repeats.
func (a *auditing) choose(ctx context.Context) (int, error) {
	var ch choice
	if a.o.Rank == 0 {
		ch = a.candidates()
	}
	if err := a.share(ctx, &ch); err != nil {
		return -1, err
	}
	chosen := -1
	for _, i := range ch.Candidates {
		if i == 0 {
			chosen = 0
			break
		}
		ok, err := a.freshRun(ctx, a.settings[i])
		if err != nil {
			return -1, err
		}
		if ok {
			chosen = i
			break
		}
	}
	if a.o.Rank == 0 {
		a.record(chosen)
	}
	return chosen, a.priceRounds(ctx, chosen, ch.Rounds)
}

// candidates lists the settings that repeated, the library's own choice
// first when it did, the others fastest first.
func (a *auditing) candidates() choice {
	var ch choice
	speeds := make([]float64, len(a.settings))
	for i, s := range a.settings {
		if a.repeats(s) {
			ch.Candidates = append(ch.Candidates, i)
			speeds[i] = speed(s.doc)
		}
	}
	slices.SortStableFunc(ch.Candidates, func(x, y int) int {
		switch {
		case x == 0:
			return -1
		case y == 0:
			return 1
		}
		return cmp.Compare(speeds[y], speeds[x]) // the fastest first
	})
	ch.Rounds = a.o.Rounds
	if ch.Rounds == 0 {
		rows := len(compare.RowTimes(a.settings[0].doc))
		ch.Rounds = max(DefaultRounds, compare.RoundsNeeded(a.o.Alpha, max(rows, 1), compare.Holm, DefaultRounds))
	}
	return ch
}

// freshRun runs a setting once more and compares the run with its
// first: whether it repeats in fresh processes, as every process learns.
func (a *auditing) freshRun(ctx context.Context, s *run) (bool, error) {
	_, failed, err := a.turn(ctx, s, "fresh")
	if err != nil {
		return false, err
	}
	var mine []found
	if failed == "" {
		if mine, err = compareDir(document.AuditFresh, s.Label, "its first run", s.dirs[1], s.dirs[0], false); err != nil {
			return false, fmt.Errorf("comparing the kept outputs: %w", err)
		}
	}
	all, err := a.gather(ctx, mine)
	if err != nil {
		return false, err
	}
	ok := failed == ""
	if a.o.Rank == 0 {
		if failed != "" {
			a.rec.Errors = append(a.rec.Errors, "the second run of "+s.Label+" "+failed)
		}
		checks := merge(all)
		a.rec.Checks = append(a.rec.Checks, checks...)
		for _, c := range checks {
			ok = ok && !c.Differs()
		}
	}
	err = a.share(ctx, &ok)
	return ok, err
}

// record writes every setting and the choice into the record.
func (a *auditing) record(chosen int) {
	order := map[string]int{}
	for i, s := range a.settings {
		order[s.Label] = i
		st := document.AuditSetting{Label: s.Label, Default: i == 0, Env: s.Env, Refused: s.refused,
			Repeats: a.repeats(s), BusBW: []document.AuditBusBW{}, TrialSeconds: s.seconds}
		if st.Env == nil {
			st.Env = []string{}
		}
		if s.doc != nil {
			for row, v := range compare.RowTimes(s.doc) {
				st.BusBW = append(st.BusBW, document.AuditBusBW{Name: row.Name, Size: row.Size, BusBW: v[1]})
			}
			slices.SortFunc(st.BusBW, func(x, y document.AuditBusBW) int {
				if x.Name != y.Name {
					return strings.Compare(x.Name, y.Name)
				}
				return cmp.Compare(x.Size, y.Size)
			})
		}
		a.rec.Settings = append(a.rec.Settings, st)
	}
	sortChecks(a.rec.Checks, order)
	switch {
	case chosen == 0:
		a.rec.Chosen = &chosen
		a.rec.Notes = append(a.rec.Notes, "the library's own choice repeated in every check: repeating costs nothing")
	case chosen > 0:
		a.rec.Chosen = &chosen
	default:
		a.rec.Notes = append(a.rec.Notes, "no setting repeated in every check: none can be chosen, and repeating has no price to measure")
	}
}

// priceRounds measures the chosen setting against the library's own
// choice in interleaved rounds, as ab measures its arms.
func (a *auditing) priceRounds(ctx context.Context, chosen, rounds int) error {
	if chosen <= 0 {
		return nil
	}
	s := a.settings[chosen]
	labels := []string{OwnLabel, s.Label}
	out := ab.NewOutcome([]ab.Arm{{Label: OwnLabel}, {Label: s.Label, Env: s.Env}})
	r := a.r.WithEmit(func(ev ab.Event) {
		a.emit(Event{Stage: "price", Round: ev.Round, Rounds: rounds, Label: labels[ev.Arm], Elapsed: ev.Elapsed, Failed: ev.Failed})
	})
	if err := r.Rounds(ctx, out, 1, rounds); err != nil {
		return err
	}
	if a.o.Rank != 0 {
		return nil
	}
	stamp := a.o.Stamp
	stamp.Schema, stamp.Version = document.ABSchemaName, document.ABSchemaVersion
	a.rec.Price = ab.Judge(out, stamp, a.o.Command, rounds, compare.ArmOptions{Threshold: a.o.Threshold, Alpha: a.o.Alpha, Correction: compare.Holm})
	a.rec.Price.Finish()
	return nil
}
