package charge

import (
	"encoding/json"
	"math"
)

// Tolerance is how far from collbench's time a planner's charge for a call
// may be before the call is flagged: 2 %.
const Tolerance = 0.02

// Charged is one planner's charge for a call beside collbench's time:
// their ratio, whether it is beyond Tolerance, or why the planner cannot
// time the call.
type Charged struct {
	Planner string  `json:"planner"`
	Us      float64 `json:"charge_us"`
	Ratio   float64 `json:"ratio"` // the planner's ÷ collbench's
	Off     bool    `json:"beyond_tolerance"`
	Cannot  string  `json:"cannot,omitempty"`
}

// MarshalJSON leaves the charge and the ratio out where the planner cannot
// time the call, and keeps a charge of 0 (a planner that times a call as
// free) where it can.
func (c Charged) MarshalJSON() ([]byte, error) {
	type plain Charged
	if c.Cannot != "" {
		return json.Marshal(struct {
			Planner string `json:"planner"`
			Off     bool   `json:"beyond_tolerance"`
			Cannot  string `json:"cannot"`
		}{c.Planner, c.Off, c.Cannot})
	}
	return json.Marshal(plain(c))
}

// Row is one call of a plan, the time collbench charges it (the curve
// predict reads) and each planner's.
type Row struct {
	Call
	Us      float64   `json:"collbench_us"`
	Charges []Charged `json:"charges"`
}

// Compare charges every call (us[i] is collbench's time for calls[i]) by
// every planner.
func Compare(planners []Planner, calls []Call, us []float64) []Row {
	rows := make([]Row, len(calls))
	for i, c := range calls {
		rows[i] = Row{Call: c, Us: us[i]}
		for _, p := range planners {
			ch := Charged{Planner: p.Name()}
			got, err := p.Charge(c)
			switch {
			case err != nil:
				ch.Cannot = err.Error()
			case us[i] > 0:
				ch.Us, ch.Ratio = got, got/us[i]
				ch.Off = math.Abs(ch.Ratio-1) > Tolerance || math.IsNaN(ch.Ratio)
			}
			rows[i].Charges = append(rows[i].Charges, ch)
		}
	}
	return rows
}

// Step is one planner's charge for a training step's calls ÷ collbench's
// time for the same calls, each kind weighed by its calls per step, over
// the kinds of call the planner can time. Where a format holds one figure
// for several calls (Galvatron's tensor-parallel table for an all-gather
// and a reduce-scatter alike), the export writes the one that makes this
// ratio right, and the calls' own ratios show what is left.
type Step struct {
	Planner string  `json:"planner"`
	Ratio   float64 `json:"ratio"`
	Timed   int     `json:"kinds_timed"`
	Kinds   int     `json:"kinds"`
	Off     bool    `json:"beyond_tolerance"`
}

// Steps is each planner's Step over the rows, in the rows' planner order.
func Steps(rows []Row) []Step {
	if len(rows) == 0 {
		return nil
	}
	out := make([]Step, len(rows[0].Charges))
	for i, c := range rows[0].Charges {
		var charged, measured float64
		s := Step{Planner: c.Planner, Kinds: len(rows)}
		for _, r := range rows {
			if ch := r.Charges[i]; ch.Cannot == "" && r.Us > 0 {
				charged += r.PerStep * ch.Us
				measured += r.PerStep * r.Us
				s.Timed++
			}
		}
		if measured > 0 {
			s.Ratio = charged / measured
			s.Off = math.Abs(s.Ratio-1) > Tolerance
		}
		out[i] = s
	}
	return out
}
