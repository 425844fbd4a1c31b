package health

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"

	"github.com/montanaflynn/stats"
)

// RackScreening is Screening for members that sit in racks (racks[i] is
// member i's rack, 0 … R−1): the rounds alternate between rounds inside
// every rack at once (each rack's own screening) and rounds across racks
// (the fleet's screening, keeping the pairs whose members sit in
// different racks), so that every member meets partners on both sides of
// its rack's uplink and a slow uplink shows as slowness across racks
// only. A rack of one member sits out the rounds inside racks.
func RackScreening(racks []int, rounds int, seed uint64) [][]Pair {
	n := len(racks)
	members := map[int][]int{}
	nracks := 0
	for i, r := range racks {
		members[r] = append(members[r], i)
		nracks = max(nracks, r+1)
	}
	inside := make([][][]Pair, nracks) // per rack, its rounds
	for r := 0; r < nracks; r++ {
		m := members[r]
		for _, round := range Screening(len(m), (rounds+1)/2, seed+uint64(r)+1) {
			var out []Pair
			for _, p := range round {
				a, b := m[p.A], m[p.B]
				out = append(out, Pair{min(a, b), max(a, b)})
			}
			inside[r] = append(inside[r], out)
		}
	}
	across := Screening(n, rounds, seed)
	var out [][]Pair
	for k, in, ac := 0, 0, 0; k < rounds; k++ {
		var round []Pair
		if k%2 == 0 {
			for r := range inside {
				if in < len(inside[r]) {
					round = append(round, inside[r][in]...)
				}
			}
			in++
		} else if ac < len(across) {
			for _, p := range across[ac] {
				if racks[p.A] != racks[p.B] {
					round = append(round, p)
				}
			}
			ac++
		}
		if len(round) > 0 {
			out = append(out, round)
		}
	}
	return out
}

// RackOf finds a node's rack from the job's own description, tried in
// order: a labels file's line for the host, a pattern's first group
// matched against the host name, the leaf switch of Slurm's
// SLURM_TOPOLOGY_ADDR (switch.switch.node: the component before the
// node's). "" when none says.
type RackOf struct {
	Labels  map[string]string // host → rack
	Pattern *regexp.Regexp    // one capture group: the rack
}

// Rack is host's rack, given the process's SLURM_TOPOLOGY_ADDR (or "").
func (r RackOf) Rack(host, slurmAddr string) string {
	if rack, ok := r.Labels[host]; ok {
		return rack
	}
	if r.Pattern != nil {
		if m := r.Pattern.FindStringSubmatch(host); len(m) > 1 {
			return m[1]
		}
	}
	if parts := strings.Split(slurmAddr, "."); len(parts) >= 2 {
		return parts[len(parts)-2]
	}
	return ""
}

// ParseRackPattern reads a host-name pattern with exactly one capture
// group, the rack.
func ParseRackPattern(s string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, err
	}
	if re.NumSubexp() != 1 {
		return nil, fmt.Errorf("%q has %d groups; want one, around the rack (e.g. ^(r[0-9]+)-)", s, re.NumSubexp())
	}
	return re, nil
}

// ParseRackLabels reads a racks file: one "HOST RACK" per line, separated
// by white space; blank lines and lines from # on are skipped. A host
// named twice with two racks is an error, as is a line of one or three
// words.
func ParseRackLabels(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(text)
		switch {
		case len(f) == 0:
			continue
		case len(f) != 2:
			return nil, fmt.Errorf("line %d: want HOST RACK, got %d word(s)", line, len(f))
		}
		if was, ok := out[f[0]]; ok && was != f[1] {
			return nil, fmt.Errorf("line %d: %s is in rack %s and rack %s", line, f[0], was, f[1])
		}
		out[f[0]] = f[1]
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no HOST RACK line")
	}
	return out, nil
}

// RackOutlier is a rack whose pairs across racks are slow against the
// other racks' (Rack ≥ 0), or, with two racks, the link between them
// (Rack −1): its uplink. Inside is the median of the rack's own pairs (of
// every rack's, with two racks), which tells a slow uplink (fast inside)
// from slow nodes.
type RackOutlier struct {
	Rack int
	Outlier
	Inside float64
}

// JudgeRacks judges the racks' uplinks from node-pair figures. With three
// racks or more, the rack whose pairs across racks are slowest has its
// median over them held against the median of the pairs across racks
// that do not touch it (so that a slow rack does not drag down the
// reference it is judged by): MinDrop below it, and Z standard deviations
// of a median of that many figures at noise, and below its own pairs
// inside it (a rack of slow nodes is slow inside too, and is left to their
// findings). A rack found slow sets its pairs aside and the next slowest
// is judged, until one is not slow or too few pairs are left. With two racks, the median across is held against
// the median inside racks.
func (c Criteria) JudgeRacks(racks []int, figs []PairFigure, noise float64) []RackOutlier {
	nracks := 0
	for _, r := range racks {
		nracks = max(nracks, r+1)
	}
	if nracks < 2 {
		return nil
	}
	inside := make([][]float64, nracks)
	var allInside []float64
	type crossing struct {
		a, b int
		v    float64
	}
	var across []crossing
	for _, f := range figs {
		ra, rb := racks[f.A], racks[f.B]
		if ra == rb {
			inside[ra] = append(inside[ra], f.Value)
			allInside = append(allInside, f.Value)
		} else {
			across = append(across, crossing{ra, rb, f.Value})
		}
	}
	typicalInside := quantile50(allInside)
	slow := func(vals []float64, ref float64) (Outlier, bool) {
		x := quantile50(vals)
		drop, short := c.Short(x, ref)
		sd := noise * math.Sqrt(math.Pi/(2*float64(len(vals))))
		z := math.Inf(1)
		if sd > 0 {
			z = -math.Log1p(-drop) / sd
		}
		return Outlier{Value: x, Median: ref, Drop: drop, Z: z}, short && z >= c.Z
	}
	// An uplink is slow when the rack's pairs across are slow against its
	// own pairs inside; a rack whose nodes are slow is slow inside too.
	uplink := func(r int, across float64) bool {
		if len(inside[r]) == 0 {
			return true // nothing says otherwise
		}
		_, short := c.Short(across, quantile50(inside[r]))
		return short
	}
	if nracks == 2 {
		var vals []float64
		for _, x := range across {
			vals = append(vals, x.v)
		}
		if o, ok := slow(vals, typicalInside); ok && len(vals) > 0 && len(allInside) > 0 {
			return []RackOutlier{{Rack: -1, Outlier: o, Inside: typicalInside}}
		}
		return nil
	}
	// Peel: judge the rack whose pairs across are slowest (lowest mean
	// logarithm), set its pairs aside when it is slow (named as an uplink
	// when it is fast inside), and judge the others again without them,
	// so that a rack whose partners across happened to sit behind the
	// slow uplink is not named for it.
	var out []RackOutlier
	named := make([]bool, nracks)
	for {
		best, bestMean := -1, math.Inf(1)
		var own, rest []float64
		for r := 0; r < nracks; r++ {
			if named[r] {
				continue
			}
			var o, sum []float64
			for _, x := range across {
				if named[x.a] || named[x.b] || (x.a != r && x.b != r) {
					continue
				}
				o = append(o, x.v)
				sum = append(sum, math.Log(x.v))
			}
			if len(o) == 0 {
				continue
			}
			if m, _ := stats.Mean(sum); m < bestMean {
				best, bestMean, own = r, m, o
			}
		}
		if best < 0 {
			return out
		}
		rest = rest[:0]
		for _, x := range across {
			if !named[x.a] && !named[x.b] && x.a != best && x.b != best {
				rest = append(rest, x.v)
			}
		}
		if len(rest) < minRackPeers {
			return out
		}
		o, ok := slow(own, quantile50(rest))
		if !ok {
			return out
		}
		named[best] = true // set aside, named or not
		if uplink(best, o.Value) {
			o.Index = best
			out = append(out, RackOutlier{Rack: best, Outlier: o, Inside: quantile50(inside[best])})
		}
	}
}

// minRackPeers is the fewest pairs across racks, not touching a rack, that
// it is judged against: fewer are mostly chance.
const minRackPeers = 3
