package health

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// fleetModel is a simulated fleet: its size, its noise and transients,
// and the faults planted in it. Figures are 10 GB/s times log-normal noise
// (σ on the logarithm) times each fault's factor; a transient halves a
// figure.
type fleetModel struct {
	name      string
	noise     float64 // σ of the logarithm
	transient float64 // share of figures halved
	slowNodes float64 // share of nodes slow (at least one when > 0)
	nodeSlow  float64 // their factor
	rackSize  int     // nodes per rack; 0: racks unknown
	uplinks   int     // racks whose uplink is slow (factor uplinkSlow across)
	behind    bool    // one slow node sits in a rack whose uplink is slow
	link      bool    // one slow link (factor 0.8) among the screened pairs
	unscreen  bool    // … or among the pairs the screening does not meet
}

const uplinkSlow = 0.7

// fleetTruth is what a trial planted.
type fleetTruth struct {
	nodes map[int]bool
	links map[Pair]bool
	racks map[int]bool
}

// fleetOutcome counts what a trial's verdict got right and wrong.
type fleetOutcome struct {
	found, planted int // slow nodes named / planted
	asLinks        bool
	linkFound      bool
	falseNamed     bool // anything named that was not planted
	healthyAlarm   bool // a fleet with no fault got a finding
}

// trial plants m's faults in a fleet of n nodes, screens it in
// MaxScreenRounds rounds with a fresh seed, confirms, and reads the
// verdict.
func (m fleetModel) trial(n int, rng *rand.Rand) fleetOutcome {
	truth := fleetTruth{nodes: map[int]bool{}, links: map[Pair]bool{}, racks: map[int]bool{}}
	var racks []int
	if m.rackSize > 0 {
		racks = make([]int, n)
		for i := range racks {
			racks[i] = i / m.rackSize
		}
	}
	nracks := 0
	if racks != nil {
		nracks = racks[n-1] + 1
	}
	for len(truth.racks) < m.uplinks {
		truth.racks[rng.IntN(nracks)] = true
	}
	if m.slowNodes > 0 {
		k := max(int(m.slowNodes*float64(n)), 1)
		for len(truth.nodes) < k {
			truth.nodes[rng.IntN(n)] = true
		}
	}
	if m.behind {
		var r int
		for r = range truth.racks {
			break
		}
		truth.nodes[r*m.rackSize+rng.IntN(m.rackSize)] = true
	}
	seed := rng.Uint64()
	var rounds [][]Pair
	if racks != nil {
		rounds = RackScreening(racks, MaxScreenRounds, seed)
	} else {
		rounds = Screening(n, MaxScreenRounds, seed)
	}
	if m.link || m.unscreen {
		screened := map[Pair]bool{}
		for _, r := range rounds {
			for _, p := range r {
				screened[p] = true
			}
		}
		for {
			var p Pair
			if m.link {
				r := rounds[rng.IntN(len(rounds))]
				p = r[rng.IntN(len(r))]
			} else {
				a, b := rng.IntN(n), rng.IntN(n)
				p = Pair{min(a, b), max(a, b)}
			}
			if p.A != p.B && !truth.nodes[p.A] && !truth.nodes[p.B] && screened[p] == m.link {
				truth.links[p] = true
				break
			}
		}
	}
	figure := func(p Pair) float64 {
		x := 10 * math.Exp(m.noise*rng.NormFloat64())
		if truth.nodes[p.A] || truth.nodes[p.B] {
			x *= m.nodeSlow
		}
		if truth.links[p] {
			x *= 0.8
		}
		if racks != nil && racks[p.A] != racks[p.B] && (truth.racks[racks[p.A]] || truth.racks[racks[p.B]]) {
			x *= uplinkSlow
		}
		if rng.Float64() < m.transient {
			x *= 0.5
		}
		return x
	}
	var figs []PairFigure
	for _, r := range rounds {
		for _, p := range r {
			figs = append(figs, PairFigure{Pair: p, Value: figure(p)})
		}
	}
	f := Fleet{N: n, Racks: racks, Figs: figs, Noise: m.noise, Seed: seed}
	v := DefaultCriteria.Screen(f, func(rounds [][]Pair) map[Pair][]float64 {
		out := map[Pair][]float64{}
		for _, r := range rounds {
			for _, p := range r {
				out[p] = append(out[p], figure(p))
			}
		}
		return out
	})
	var o fleetOutcome
	o.planted = len(truth.nodes)
	for _, mo := range v.Members {
		if truth.nodes[mo.Member] {
			o.found++
		} else {
			o.falseNamed = true
		}
	}
	for _, l := range v.Links {
		switch {
		case truth.links[l.Pair]:
			o.linkFound = true
		case truth.nodes[l.A] || truth.nodes[l.B]:
			o.asLinks, o.falseNamed = true, true
		default:
			o.falseNamed = true
		}
	}
	for _, r := range v.Racks {
		if r.Rack < 0 || !truth.racks[r.Rack] {
			o.falseNamed = true
		}
	}
	o.healthyAlarm = o.planted == 0 && len(truth.links) == 0 && len(truth.racks) == 0 && len(v.Members)+len(v.Links)+len(v.Racks) > 0
	return o
}

// fleetRates runs trials of a model and returns the share of planted slow
// nodes found, of checks that named a slow node's pairs as links, of
// checks with anything falsely named, and of checks that found the slow
// link.
func fleetRates(m fleetModel, n, trials int) (found, asLinks, falseNamed, linkFound float64) {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(len(m.name))*7919+uint64(m.noise*1e4)))
	var f, p, al, fn, lf int
	for range trials {
		o := m.trial(n, rng)
		f, p = f+o.found, p+o.planted
		if o.asLinks {
			al++
		}
		if o.falseNamed {
			fn++
		}
		if o.linkFound {
			lf++
		}
	}
	t := float64(trials)
	found = math.NaN()
	if p > 0 {
		found = float64(f) / float64(p)
	}
	return found, float64(al) / t, float64(fn) / t, float64(lf) / t
}

// The screening's verdicts hold under a real fleet's noise, at 1,000 and
// 10,000 nodes (docs/health.md's table: COLLBENCH_SIM_TRIALS=200 go test
// ./health -run TestFleetVerdicts -v): log-normal noise, transient halved
// figures, several faults at once, mildly slow nodes, a slow node behind a
// slow rack uplink. Each row states what it must hold; with few trials one
// miss or false alarm is allowed where the bound is a rate.
func TestFleetVerdicts(t *testing.T) {
	type bound struct {
		minFound, maxFound float64 // share of slow nodes named
		maxFalse           float64 // share of checks naming anything not planted
		minLink            float64 // share of checks naming the planted link
	}
	models := []struct {
		fleetModel
		bound
	}{
		{fleetModel{name: "healthy, log-normal 3 %", noise: 0.03}, bound{maxFalse: 0.01}},
		{fleetModel{name: "healthy, 1 % of figures halved", noise: 0.02, transient: 0.01}, bound{maxFalse: 0.01}},
		{fleetModel{name: "1 % of nodes 20 % slow, transients", noise: 0.03, transient: 0.01, slowNodes: 0.01, nodeSlow: 0.8}, bound{minFound: 0.99, maxFound: 1, maxFalse: 0.01}},
		{fleetModel{name: "10 % of nodes 20 % slow", noise: 0.03, slowNodes: 0.10, nodeSlow: 0.8}, bound{minFound: 0.99, maxFound: 1, maxFalse: 0.01}},
		{fleetModel{name: "one node 12 % slow", noise: 0.02, slowNodes: 1e-9, nodeSlow: 0.88}, bound{minFound: 0.95, maxFound: 1, maxFalse: 0.01}},
		{fleetModel{name: "one node 10 % slow", noise: 0.02, slowNodes: 1e-9, nodeSlow: 0.90}, bound{minFound: 0, maxFound: 1, maxFalse: 0.01}},
		{fleetModel{name: "one node 5 % slow", noise: 0.02, slowNodes: 1e-9, nodeSlow: 0.95}, bound{minFound: 0, maxFound: 0.01, maxFalse: 0.01}},
		{fleetModel{name: "one screened link 20 % slow, transients", noise: 0.02, transient: 0.01, link: true}, bound{maxFalse: 0.01, minLink: 0.95}},
		{fleetModel{name: "one unscreened link 20 % slow", noise: 0.02, unscreen: true}, bound{maxFalse: 0.01}},
		{fleetModel{name: "3 slow uplinks, 2 % of nodes slow", noise: 0.03, rackSize: 40, uplinks: 3, slowNodes: 0.02, nodeSlow: 0.8}, bound{minFound: 0.99, maxFound: 1, maxFalse: 0.01}},
		{fleetModel{name: "a slow node behind a slow uplink", noise: 0.02, rackSize: 40, uplinks: 1, behind: true, nodeSlow: 0.8}, bound{minFound: 0.95, maxFound: 1, maxFalse: 0.01}},
	}
	sizes := []int{1000, 10000, 7919}
	for _, n := range sizes {
		for _, m := range models {
			if n == 7919 && m.name != "one node 12 % slow" && m.name != "healthy, 1 % of figures halved" {
				continue // the stride case: partners drawn, not strided
			}
			t.Run(fmt.Sprintf("%d/%s", n, m.name), func(t *testing.T) {
				trials := simTrials(t, n)
				found, asLinks, falseNamed, link := fleetRates(m.fleetModel, n, trials)
				t.Logf("n=%-5d %-40s %4d trials: slow nodes found %5.1f%%, named as links %5.1f%%, false findings %5.1f%%, slow link found %5.1f%%",
					n, m.name, trials, 100*found, 100*asLinks, 100*falseNamed, 100*link)
				slack := 1.0 / float64(trials)
				if !math.IsNaN(found) && (found < m.minFound-slack || found > m.maxFound+slack) {
					t.Errorf("slow nodes found %.3f, want %.2f–%.2f", found, m.minFound, m.maxFound)
				}
				if asLinks > 0 {
					t.Errorf("a slow node's pairs were named as links in %.3f of checks", asLinks)
				}
				if falseNamed > max(m.maxFalse, slack) {
					t.Errorf("something not planted was named in %.3f of checks, want at most %.2f", falseNamed, m.maxFalse)
				}
				if link < m.minLink-slack {
					t.Errorf("the slow link was found in %.3f of checks, want %.2f", link, m.minLink)
				}
			})
		}
	}
}

// Judging a screening of 10,000 nodes (100,000 pair figures, 1 % of them
// halved by transients, 10 nodes 20 % slow), with its confirmation, takes
// well under a second and a few MB (go test ./health -run '^$' -bench
// Fleet -benchmem).
func BenchmarkFleetJudgement(b *testing.B) {
	const n = 10000
	rng := rand.New(rand.NewPCG(1, 2))
	slow := map[int]bool{}
	for len(slow) < 10 {
		slow[rng.IntN(n)] = true
	}
	figure := func(p Pair) float64 {
		x := 10 * math.Exp(0.02*rng.NormFloat64())
		if slow[p.A] || slow[p.B] {
			x *= 0.8
		}
		if rng.Float64() < 0.01 {
			x *= 0.5
		}
		return x
	}
	var figs []PairFigure
	for _, r := range Screening(n, MaxScreenRounds, 7) {
		for _, p := range r {
			figs = append(figs, PairFigure{Pair: p, Value: figure(p)})
		}
	}
	f := Fleet{N: n, Figs: figs, Noise: 0.02, Seed: 7}
	again := func(rounds [][]Pair) map[Pair][]float64 {
		out := map[Pair][]float64{}
		for _, r := range rounds {
			for _, p := range r {
				out[p] = append(out[p], figure(p))
			}
		}
		return out
	}
	for b.Loop() {
		if v := DefaultCriteria.Screen(f, again); len(v.Members) != len(slow) || len(v.Links) != 0 {
			b.Fatalf("named %d nodes and %d links; want %d and none", len(v.Members), len(v.Links), len(slow))
		}
	}
}

// Screening builds only the rounds it measures: 20 rounds of 10,000
// members cost O(N) memory, not the O(N²) of the whole tournament.
func BenchmarkScreening(b *testing.B) {
	for b.Loop() {
		Screening(10000, MaxScreenRounds, 1)
	}
}

// A member's fresh partners differ from it, from each other, from the
// suspects and from its screening partners, whatever n (7919 was a
// stride's multiple: its suspects got no partner, 15,838's got one four
// times); a member behind a slow uplink is given partners in its rack.
func TestConfirmationPartners(t *testing.T) {
	for _, n := range []int{7919, 15838, 40, 25} {
		rng := rand.New(rand.NewPCG(uint64(n), 5))
		rounds := Screening(n, MaxScreenRounds, 3)
		bad := 7 % n
		figs := screenFigures(rounds, rng, 0.02, func(p Pair) float64 {
			if p.A == bad || p.B == bad {
				return 0.7
			}
			return 1
		})
		s := DefaultCriteria.Suspect(Fleet{N: n, Figs: figs, Noise: 0.02, Seed: 3})
		if len(s.Members) != 1 || s.Members[0].Member != bad {
			t.Fatalf("n=%d: suspects %+v, want member %d", n, s.Members, bad)
		}
		with := s.Members[0].With
		met := map[int]bool{}
		for _, f := range figs {
			if f.A == bad {
				met[f.B] = true
			} else if f.B == bad {
				met[f.A] = true
			}
		}
		want := min(ConfirmPartners, n-1-len(met))
		fresh := 0
		for _, p := range with {
			if !met[p] {
				fresh++
			}
		}
		if len(with) != ConfirmPartners || fresh < want || slices.Contains(with, bad) || len(slices.Compact(slices.Sorted(slices.Values(with)))) != len(with) {
			t.Errorf("n=%d: partners %v of %d: want %d distinct partners, %d of them not met in the screening", n, with, bad, ConfirmPartners, want)
		}
	}
	// Behind a slow uplink: partners from the member's own rack.
	racks := make([]int, 120)
	for i := range racks {
		racks[i] = i / 40
	}
	v := DefaultCriteria.view(Fleet{N: 120, Racks: racks, Seed: 9}, []RackOutlier{{Rack: 1}})
	for _, p := range v.partners(45, BorderlinePartners, func(int) bool { return false }, map[Pair]bool{}) {
		if racks[p] != 1 {
			t.Errorf("member 45 (rack 1, behind a slow uplink) got partner %d in rack %d", p, racks[p])
		}
	}
}

// A suspect link is measured again more often the more links are suspect,
// so that the whole check stays below familyRisk.
func TestRepeatsFor(t *testing.T) {
	for _, c := range []struct{ suspects, figures, want int }{
		{0, 100000, 0}, {1, 100000, 2}, {1000, 100000, 3}, {100, 10000, 3}, {5000, 10000, maxRepeats},
	} {
		if got := repeatsFor(c.suspects, c.figures); got != c.want {
			t.Errorf("repeatsFor(%d, %d) = %d, want %d", c.suspects, c.figures, got, c.want)
		}
	}
}
