package health

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
)

// MaxScreenRounds is the most rounds a screening measures, whatever the
// number of members: each member meets that many partners, so a fleet of
// 10,000 nodes is screened in 20 rounds where a full round robin takes
// 9,999.
const MaxScreenRounds = 20

// ScreenFrom is the number of members from which screening is the
// default: below it a full round robin takes no more rounds (n−1 ≤ 20)
// and judges every pair.
const ScreenFrom = MaxScreenRounds + 2

// ConfirmPartners is how many fresh partners a member clearly slow in the
// screening is measured with again before it is named: the median of
// eight figures varies by a third of one figure's noise.
const ConfirmPartners = 8

// BorderlinePartners is how many fresh partners a member gets whose
// screening drop lies within two of its own noise widths below MinDrop,
// or that sits at the end of two suspect links: whether it is slow is
// decided by its confirmation alone, so that figure must be sharper.
const BorderlinePartners = 16

// maxRepeats bounds the fresh figures a suspect link is measured in.
const maxRepeats = 6

// Screening is rounds rounds of disjoint pairs over n members (at most
// the n−1 of a round robin) in which every member meets a different
// partner each round: rounds of the round-robin tournament over the
// members relabelled at random (seed), so that partners are spread over
// the fleet rather than neighbours. Only the rounds measured are built.
func Screening(n, rounds int, seed uint64) [][]Pair {
	rounds = max(min(rounds, RoundCount(n)), 0)
	perm := rand.New(rand.NewPCG(seed, 0x5c4ee9)).Perm(n)
	out := make([][]Pair, rounds)
	for r := range out {
		round := Round(n, r)
		for i, p := range round {
			a, b := perm[p.A], perm[p.B]
			round[i] = Pair{min(a, b), max(a, b)}
		}
		out[r] = round
	}
	return out
}

// Coverage is the share of a fleet's n(n−1)/2 pairs that pairs distinct
// pairs cover: what one screening sees of single links.
func Coverage(n, pairs int) float64 {
	if n < 2 {
		return 0
	}
	return float64(pairs) / (float64(n) * float64(n-1) / 2)
}

// CoverageAfter is the share of single links that checks screenings with
// fresh seeds, each covering share, have met at least once.
func CoverageAfter(share float64, checks int) float64 {
	return 1 - math.Pow(1-share, float64(checks))
}

// Fleet is what a screening judges: N members (nodes), the rack of each
// (nil when racks are not known), the screening's pair figures, their
// noise (Noise), and the seed that drew the screening, which also draws
// the confirmation's partners.
type Fleet struct {
	N     int
	Racks []int
	Figs  []PairFigure
	Noise float64
	Seed  uint64
}

// SuspectMember is a member the screening asks to measure again: with the
// members With (fresh partners), its screening score as Outlier.
type SuspectMember struct {
	Member   int
	With     []int
	Screened int // its pairs in the screening
	Outlier
}

// Suspects is what a screening asks to look at again: members, links
// (each measured Repeats times, apart in time), and the racks whose
// uplinks the screening found slow, which explain their pairs across
// racks.
type Suspects struct {
	Members []SuspectMember
	Links   []Pair
	Repeats int
	Racks   []RackOutlier
}

// Empty says the screening found nothing to measure again.
func (s Suspects) Empty() bool { return len(s.Members)+len(s.Links) == 0 }

// view is a fleet as the judgement sees it once its racks are judged:
// which pairs a slow uplink explains, and the figures it does not.
type view struct {
	Fleet
	slowRack map[int]bool
	between  bool // two racks, and the link between them slow: every pair across is explained
	kept     []int
	typical  float64 // the median of the kept figures
}

func (c Criteria) view(f Fleet, racks []RackOutlier) view {
	v := view{Fleet: f, slowRack: map[int]bool{}}
	for _, r := range racks {
		if r.Rack < 0 {
			v.between = true
		} else {
			v.slowRack[r.Rack] = true
		}
	}
	v.kept = make([]int, 0, len(f.Figs))
	vals := make([]float64, 0, len(f.Figs))
	for i, fig := range f.Figs {
		if !v.explained(fig.Pair) {
			v.kept = append(v.kept, i)
			vals = append(vals, fig.Value)
		}
	}
	slices.Sort(vals)
	v.typical = sortedMedian(vals)
	return v
}

// explained says whether a slow uplink explains a pair: it crosses racks
// through one found slow.
func (v view) explained(p Pair) bool {
	if v.Racks == nil {
		return false
	}
	ra, rb := v.Racks[p.A], v.Racks[p.B]
	return ra != rb && (v.between || v.slowRack[ra] || v.slowRack[rb])
}

func (v view) keptFigs() []PairFigure {
	out := make([]PairFigure, len(v.kept))
	for i, k := range v.kept {
		out[i] = v.Figs[k]
	}
	return out
}

// racksOf judges a fleet's racks first (JudgeRacks), when they are known.
func (c Criteria) racksOf(f Fleet) []RackOutlier {
	if f.Racks == nil {
		return nil
	}
	return c.JudgeRacks(f.Racks, f.Figs, f.Noise)
}

// JudgeFleet judges a fleet whose every pair was measured: its racks'
// uplinks first, then members and links (Judge) on the pairs a slow
// uplink does not explain, so that a slow node inside a rack behind a
// slow uplink is still found, by its pairs inside.
func (c Criteria) JudgeFleet(f Fleet) Verdict {
	racks := c.racksOf(f)
	v := c.view(f, racks)
	out := c.Judge(v.keptFigs(), f.Noise)
	for i := range out.Links {
		out.Links[i].Index = v.kept[out.Links[i].Index]
	}
	out.Racks = racks
	return out
}

// Suspect reads a screening: racks first, then each member's score (the
// median of its pairs but the slowest, as Judge scores) against the
// others', with the noise of a median of that many figures: a member
// clearly slow gets ConfirmPartners fresh partners, one within two noise
// widths below MinDrop BorderlinePartners. The pairs touching no suspect
// member are judged among themselves for suspect links; a member at the
// end of two suspect links or more joins the suspect members (links that
// share an end are that end, until its fresh partners say otherwise).
// Each suspect link is measured again Repeats times, chosen from how many
// links are suspect (repeatsFor).
func (c Criteria) Suspect(f Fleet) Suspects {
	s := Suspects{Racks: c.racksOf(f)}
	v := c.view(f, s.Racks)
	figs := v.keptFigs()
	// Each member's figures, in one backing array: a fleet of 10,000
	// nodes has 200,000 of them.
	count := make([]int, f.N+1)
	for _, fig := range figs {
		count[fig.A+1]++
		count[fig.B+1]++
	}
	for m := 1; m <= f.N; m++ {
		count[m] += count[m-1]
	}
	flat := make([]float64, count[f.N])
	fill := slices.Clone(count[:f.N])
	for _, fig := range figs {
		flat[fill[fig.A]], flat[fill[fig.B]] = fig.Value, fig.Value
		fill[fig.A]++
		fill[fig.B]++
	}
	byMember := func(m int) []float64 { return flat[count[m]:count[m+1]] }
	var members []int
	for m := range f.N {
		if len(byMember(m)) >= 2 {
			members = append(members, m)
		}
	}
	partners := map[int]int{} // suspect member → fresh partners it gets
	outliers := map[int]Outlier{}
	if len(members) >= 3 {
		logs := make([]float64, len(members))
		counts := make([]float64, len(members))
		for k, m := range members {
			vals := byMember(m) // sorted in place: flat is this function's own
			slices.Sort(vals)
			logs[k] = math.Log(sortedMedian(vals[1:]))
			counts[k] = float64(len(vals) - 1)
		}
		mid, mad := MedianMAD(logs)
		width := func(count float64) float64 { return f.Noise * math.Sqrt(math.Pi/(2*count)) }
		sd := max(madScale*mad, width(quantile50(counts))*math.Sqrt(1+math.Pi/(2*float64(len(members)))))
		zmin := c.ZFor(len(members))
		for k, m := range members {
			z := math.Inf(1)
			if sd > 0 {
				z = (mid - logs[k]) / sd
			}
			drop := 1 - math.Exp(logs[k]-mid)
			if z < zmin {
				continue
			}
			o := Outlier{Index: m, Value: math.Exp(logs[k]), Median: math.Exp(mid), Drop: drop, Z: z}
			switch {
			case drop >= c.MinDrop:
				partners[m], outliers[m] = ConfirmPartners, o
			case drop >= c.MinDrop-2*width(counts[k]):
				partners[m], outliers[m] = BorderlinePartners, o
			}
		}
	}
	rest := make([]int, 0, len(figs))
	vals := make([]float64, 0, len(figs))
	for i, fig := range figs {
		if partners[fig.A] == 0 && partners[fig.B] == 0 {
			rest = append(rest, i)
			vals = append(vals, fig.Value)
		}
	}
	ends := map[int]int{}
	if len(vals) >= minLinkPeers {
		for _, o := range c.Below(vals, f.Noise) {
			p := figs[rest[o.Index]].Pair
			s.Links = append(s.Links, p)
			ends[p.A]++
			ends[p.B]++
		}
	}
	for m, k := range ends {
		if k >= 2 {
			partners[m] = BorderlinePartners
		}
	}
	// The screening's pairs of the suspect members alone: the partners
	// drawn for them must be fresh.
	screened := map[Pair]bool{}
	for _, fig := range f.Figs {
		if partners[fig.A] > 0 || partners[fig.B] > 0 {
			screened[fig.Pair] = true
		}
	}
	for _, m := range slices.Sorted(maps.Keys(partners)) {
		o := outliers[m]
		o.Index = m
		s.Members = append(s.Members, SuspectMember{Member: m, Outlier: o, Screened: len(byMember(m)),
			With: v.partners(m, partners[m], func(p int) bool { return partners[p] > 0 }, screened)})
	}
	s.Repeats = repeatsFor(len(s.Links), len(figs))
	return s
}

// repeatsFor is how many fresh figures each of suspects suspect links
// needs, among figures figures, for a whole check to name a healthy one
// with a chance below familyRisk: a transient (congestion, a straggling
// pass) that made a figure suspect hits a fresh figure with about the
// share of figures found suspect (doubled, as transients too shallow to
// be suspect in the screening can still fail a confirmation), and every
// fresh figure must be slow for the link to be named. At least two,
// spaced in time; at most maxRepeats.
func repeatsFor(suspects, figures int) int {
	if suspects == 0 {
		return 0
	}
	p := min(0.5, max(2*float64(suspects), 1)/float64(max(figures, 1)))
	k := math.Ceil(math.Log(familyRisk/float64(suspects)) / math.Log(p))
	return int(min(max(k, 2), maxRepeats))
}

// partners draws want fresh partners for member m: members that are no
// suspect (avoid), met across no slow uplink, and, where the fleet has
// pairs enough, not met in the screening. A member of a rack behind a
// slow uplink is given partners in its own rack. Draws come from the
// fleet's seed and the member, so every process draws the same.
func (v view) partners(m, want int, avoid func(int) bool, screened map[Pair]bool) []int {
	var pool []int // nil: every member
	if v.Racks != nil && (v.between || v.slowRack[v.Racks[m]]) {
		for p, r := range v.Racks {
			if r == v.Racks[m] {
				pool = append(pool, p)
			}
		}
	}
	size := v.N
	at := func(i int) int { return i }
	if pool != nil {
		size, at = len(pool), func(i int) int { return pool[i] }
	}
	if size < 2 {
		return nil
	}
	rng := rand.New(rand.NewPCG(v.Seed, uint64(m)+0x70a7))
	chosen := map[int]bool{}
	var out []int
	ok := func(p int, fresh bool) bool {
		pr := Pair{min(m, p), max(m, p)}
		return p != m && !chosen[p] && !avoid(p) && !v.explained(pr) && !(fresh && screened[pr])
	}
	for try := 0; try < 32*want && len(out) < want; try++ {
		if p := at(rng.IntN(size)); ok(p, true) {
			chosen[p] = true
			out = append(out, p)
		}
	}
	// A small fleet or rack: take whom the draws missed, met before or
	// not, from a random start.
	for i, start := 0, rng.IntN(size); i < size && len(out) < want; i++ {
		if p := at((start + i) % size); ok(p, false) {
			chosen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// Confirmation lays out the suspects' fresh figures in rounds of
// disjoint pairs: first every suspect member with its partners and every
// suspect link once, then each further repeat of the links as rounds of
// their own, so that a link's figures lie a whole set of rounds apart.
func (s Suspects) Confirmation() [][]Pair {
	var first []Pair
	for _, m := range s.Members {
		for _, p := range m.With {
			first = append(first, Pair{min(m.Member, p), max(m.Member, p)})
		}
	}
	rounds := Disjoint(append(first, s.Links...))
	for r := 1; r < s.Repeats; r++ {
		rounds = append(rounds, Disjoint(s.Links)...)
	}
	return rounds
}

// Confirm judges the suspects by their fresh figures (again: each pair's
// figures in the order measured; a member none of whose pairs is there
// was left out on purpose, found far below its peers already, and is
// named on its screening when that drops MinDrop). A member is named when the median of
// its fresh pairs is slow against the screening's typical pair (MinDrop,
// and Z standard deviations of a median of that many figures). A link
// touching no named member is named when every one of its fresh figures
// is slow against the typical pair, or against an end's own fresh median
// where that is lower: a member somewhat slow, but not named, does not
// make its pairs slow links. Racks come as the screening found them.
func (c Criteria) Confirm(f Fleet, s Suspects, again map[Pair][]float64) Verdict {
	v := c.view(f, s.Racks)
	out := Verdict{Racks: s.Racks}
	judge := func(vals []float64, ref float64) (Outlier, bool) {
		x := quantile50(vals)
		drop, short := c.Short(x, ref)
		sd := f.Noise * math.Sqrt(math.Pi/(2*float64(len(vals))))
		z := math.Inf(1)
		if sd > 0 {
			z = -math.Log1p(-drop) / sd
		}
		return Outlier{Value: x, Median: ref, Drop: drop, Z: z}, short && z >= c.Z
	}
	named := map[int]bool{}
	own := map[int]float64{} // a suspect member's fresh median
	for _, m := range s.Members {
		var vals []float64
		for _, p := range m.With {
			if got := again[Pair{min(m.Member, p), max(m.Member, p)}]; len(got) > 0 {
				vals = append(vals, got[0])
			}
		}
		if len(vals) == 0 {
			// Not measured again: the caller left it out, having found
			// it far below its peers already, and its screening stands.
			if m.Drop >= c.MinDrop {
				named[m.Member] = true
				out.Members = append(out.Members, MemberOutlier{Member: m.Member, Partners: m.Screened, Outlier: m.Outlier})
			}
			continue
		}
		o, slow := judge(vals, v.typical)
		own[m.Member] = o.Value
		if slow {
			o.Index = m.Member
			named[m.Member] = true
			out.Members = append(out.Members, MemberOutlier{Member: m.Member, Partners: len(vals), Outlier: o})
		}
	}
	for _, l := range s.Links {
		if named[l.A] || named[l.B] {
			continue
		}
		vals := again[l]
		if len(vals) == 0 {
			continue
		}
		ref := v.typical
		for _, end := range []int{l.A, l.B} {
			if x, ok := own[end]; ok {
				ref = min(ref, x)
			}
		}
		all := true
		for _, x := range vals {
			if _, slow := judge([]float64{x}, ref); !slow {
				all = false
				break
			}
		}
		if !all {
			continue
		}
		o, _ := judge(vals, ref)
		o.Index = slices.IndexFunc(f.Figs, func(fig PairFigure) bool { return fig.Pair == l })
		out.Links = append(out.Links, PairOutlier{Pair: l, Outlier: o})
	}
	return out
}

// Screen judges a screening's figures (Suspect), measures the suspects
// again (measure gets Confirmation's rounds and returns each pair's fresh
// figures in order) and names what is slow again (Confirm). Only what is
// slow twice is named, so one unlucky figure is not a finding, while a
// slow member or link is slow every time.
func (c Criteria) Screen(f Fleet, measure func(rounds [][]Pair) map[Pair][]float64) Verdict {
	s := c.Suspect(f)
	if s.Empty() {
		return Verdict{Racks: s.Racks}
	}
	return c.Confirm(f, s, measure(s.Confirmation()))
}

// sortedMedian is the median of sorted values (the mean of the middle two
// for an even count), NaN for none: quantile50 without its copy.
func sortedMedian(sorted []float64) float64 {
	n := len(sorted)
	switch {
	case n == 0:
		return math.NaN()
	case n%2 == 1:
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
