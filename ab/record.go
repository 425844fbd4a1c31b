package ab

import (
	"math"
	"sort"

	"github.com/collbench/collbench/compare"
	"github.com/collbench/collbench/document"
)

// Judge compares every arm's rounds with the base arm's and makes the
// record: the arms with their rounds, each row's figures, the best arm
// per size band. stamp begins the record; command is the sweep.
func Judge(out *Outcome, stamp document.Stamp, command []string, rounds int, o compare.ArmOptions) *document.ABRun {
	correction := o.Correction
	if correction == "" {
		correction = compare.NoCorrection
	}
	rec := &document.ABRun{Stamp: stamp, Command: command, Rounds: rounds, Threshold: o.Threshold, Alpha: o.Alpha,
		Correction: string(correction), Arms: []document.ABArm{}, Rows: []document.ABRow{}, Bands: []document.ABBand{},
		Stopped: out.Stopped, Errors: []string{}}
	times := make([][]map[compare.Row][2]float64, len(out.Arms))
	for i, a := range out.Arms {
		arm := document.ABArm{Letter: Letter(i), Label: a.Label, Changes: a.Changes(), Lib: a.Lib,
			Env: nonNil(a.Env), Args: nonNil(a.Args), NCCLVersion: a.NCCLVersion, NCCLPath: a.NCCLPath,
			NCCLError: a.NCCLError, Failed: a.Failed, FailedRound: a.FailedRound, Rounds: []document.ABRound{}}
		times[i] = Times(a)
		arm.Rounds = Rounds(a)
		if a.Failed != "" {
			rec.Errors = append(rec.Errors, "arm "+Letter(i)+" ("+a.Label+"): "+a.Failed)
			// A failed arm's rounds stay in the record but are not judged:
			// the rounds it ran are not a fair sample of the rounds.
			times[i] = nil
		}
		rec.Arms = append(rec.Arms, arm)
	}
	// The base is the first arm that ran: with the first failed, the
	// others are still compared with each other.
	rec.Base = -1
	for i, a := range out.Arms {
		if a.Failed == "" {
			rec.Base = i
			break
		}
	}
	rows := compare.Arms(times, rec.Base, o)
	for _, r := range rows {
		row := document.ABRow{Name: r.Name, Size: r.Size}
		for _, f := range r.Figures {
			if f.Verdict == compare.ArmSlower {
				rec.Slower++
			}
			row.Arms = append(row.Arms, Figure(f))
		}
		rec.Rows = append(rec.Rows, row)
	}
	for _, b := range compare.BestPerBand(rows, len(out.Arms)) {
		rec.Bands = append(rec.Bands, document.ABBand{Name: b.Name, From: b.From, To: b.To, Best: b.Best,
			Ratio: b.Ratio, Faster: b.Faster, Rows: b.Rows})
	}
	return rec
}

// Times is an arm's rounds as compare judges them: each run's RowTimes.
func Times(a ArmOutcome) []map[compare.Row][2]float64 {
	var out []map[compare.Row][2]float64
	for _, run := range a.Runs {
		out = append(out, compare.RowTimes(run))
	}
	return out
}

// Rounds is an arm's rounds as a record holds them: each round's wall
// time and out-of-place times, by row name and size.
func Rounds(a ArmOutcome) []document.ABRound {
	out := []document.ABRound{}
	for j, run := range a.Runs {
		round := document.ABRound{Seconds: a.Seconds[j], Times: []document.ABTime{}}
		for k, v := range compare.RowTimes(run) {
			round.Times = append(round.Times, document.ABTime{Name: k.Name, Size: k.Size, Time: v[0], BusBW: v[1]})
		}
		sort.Slice(round.Times, func(x, y int) bool {
			if round.Times[x].Name != round.Times[y].Name {
				return round.Times[x].Name < round.Times[y].Name
			}
			return round.Times[x].Size < round.Times[y].Size
		})
		out = append(out, round)
	}
	return out
}

// Figure is one arm's figure at one row as a record holds it.
func Figure(f compare.ArmFigure) document.ABFigure {
	return document.ABFigure{Arm: f.Arm, Rounds: f.Rounds, Median: f.Median, Low: f.Low, High: f.High, Level: f.Level,
		BusBW: f.BusBW, Ratio: f.Ratio, P: finite(f.P), PAdjusted: finite(f.Adjusted), Verdict: f.Verdict}
}

// finite is v, or nil for NaN (no test).
func finite(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

// Letter names arm i in tables: A to Z, then AA, AB, …
func Letter(i int) string {
	s := ""
	for i++; i > 0; i = (i - 1) / 26 {
		s = string(rune('A'+(i-1)%26)) + s
	}
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
