package charge

import "math"

// Tolerance is how far from collbench's time a planner's charge for a call
// may be before the call is flagged: 2 %.
const Tolerance = 0.02

// Charged is one planner's charge for a call beside collbench's time:
// their ratio, whether it is beyond Tolerance, or why the planner cannot
// time the call.
type Charged struct {
	Planner string  `json:"planner"`
	Us      float64 `json:"charge_us,omitempty"`
	Ratio   float64 `json:"ratio,omitempty"` // the planner's ÷ collbench's
	Off     bool    `json:"beyond_tolerance"`
	Cannot  string  `json:"cannot,omitempty"`
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
