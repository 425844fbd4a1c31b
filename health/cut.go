package health

import (
	"slices"
	"time"
)

// CutFactor is how many times longer than its peers' typical first call a
// measurement's first call must take for it to stop there: at a tenth of
// its peers' bandwidth a figure is slow by any criteria (a 90 % drop), and
// its remaining calls, at its speed, would take longer than all of its
// peers' together.
const CutFactor = 10

// FarBelow says which of a wave's units, by the time of their first call
// (times), are far below their peers: slower than CutFactor times the
// typical first call, the lower median of these and the earlier units'
// (earlier: the same phase's waves before), which a minority of slow
// units cannot move. With fewer than two figures nothing is far below.
func FarBelow(times, earlier []time.Duration) (far []bool, typical time.Duration) {
	all := slices.Concat(times, earlier)
	far = make([]bool, len(times))
	if len(all) < 2 {
		return far, 0
	}
	slices.Sort(all)
	typical = all[(len(all)-1)/2]
	for i, t := range times {
		far[i] = typical > 0 && t > CutFactor*typical
	}
	return far, typical
}
