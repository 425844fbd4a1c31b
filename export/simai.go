package export

import (
	"fmt"
	"strings"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/model/profiled"
)

// simaiGroup is one group SimAI 1.x's busbw.yaml describes: its size and
// the rank distance inside it, in Megatron's rank order (TP innermost,
// then DP).
type simaiGroup struct{ n, stride int }

// simaiFiles renders busbw.yaml as SimAI 1.0 and 1.1 read it (the -busbw
// flag; later SimAI computes bus bandwidths itself and reads no file).
// Values are each curve's busbw under o.SimAIBW (by default its line's
// busbw∞) in SimAI's GB/s, which is 2^30 bytes per second (Common.hh:
// GBps = 1/2^30), so busbw·10⁹/2^30. Sections: TP
// over consecutive TP groups; DP over DP groups (stride TP); under EP,
// allreduce, allgather and reducescatter describe the expert-data-parallel
// group SimAI calls DP_EP (the DP/EP ranks holding the same experts,
// stride TP·EP) and alltoall the EP group itself (EP consecutive DP ranks,
// stride TP); PP the pipeline chain (profiled.P2PCurve) over PP ranks. A
// group that is not one of the profile's layouts, or not measured, is null.
func simaiFiles(p *document.Profile, o Options) ([]exportFile, error) {
	w := p.Meta.WorldSize
	tp, dp, ep, pp, err := o.simaiGroups(p)
	if err != nil {
		return nil, err
	}
	name := o.Name
	if name == "" {
		name = "collbench"
	}
	// bw finds a group's curve with find (p.Curve of a collective, or
	// profiled.P2PCurve) and gives its busbw (o.SimAIBW) in 2^30 B/s; false where the
	// profile has no curve of exactly that group's ranks.
	bw := func(find func(n int, layout string) (*document.ProfileCurve, error), g simaiGroup) (float64, bool) {
		v, ok := o.groupBusBWBy(w, find, g)
		return v * 1e9 / (1 << 30), ok
	}
	yaml := func(v float64, ok bool) string {
		if !ok {
			return "null"
		}
		return num(v)
	}
	tpG, dpG := simaiGroup{tp, 1}, simaiGroup{dp, tp}
	edpG, epG := simaiGroup{dp / ep, tp * ep}, simaiGroup{ep, tp}
	var b strings.Builder
	b.WriteString(name + "\n")
	for _, dim := range []struct {
		name        string
		reduce, ata simaiGroup
	}{{"TP", tpG, tpG}, {"DP", dpG, dpG}, {"EP", edpG, epG}} {
		fmt.Fprintf(&b, "%s:\n", dim.name)
		for _, coll := range []string{"allreduce", "allgather", "reducescatter"} {
			g := dim.reduce
			if dim.name == "TP" && coll == "allreduce" && tp == 1 && w == p.Meta.RanksPerNode {
				// SimAI 1.1 times every all-reduce on one node, DP's
				// included, with this value (Layer.cc), and a null as −1
				// made those times negative.
				g = dpG
			}
			v, ok := bw(curveOf(p, coll), g)
			if coll == "allgather" {
				// SimAI times a reduce-scatter with the all-gather's value
				// (Layer.cc): the pair's, so that a step making as many of
				// each (sequence parallelism, ZeRO) is timed as measured.
				if rs, rsOK := bw(curveOf(p, "reducescatter"), g); ok && rsOK {
					v = 2 / (1/v + 1/rs)
				}
			}
			fmt.Fprintf(&b, "%s,: %s\n", coll, yaml(v, ok))
		}
		fmt.Fprintf(&b, "alltoall,: %s\n", yaml(bw(curveOf(p, "alltoall"), dim.ata)))
	}
	fmt.Fprintf(&b, "PP:\nbusbw: %s\n", yaml(bw(func(n int, layout string) (*document.ProfileCurve, error) { return profiled.P2PCurve(p, n, layout) }, simaiGroup{pp, w / pp})))
	return []exportFile{{name: "busbw.yaml", data: []byte(b.String())}}, nil
}

// curveOf finds the curves of one collective.
func curveOf(p *document.Profile, coll string) func(n int, layout string) (*document.ProfileCurve, error) {
	return func(n int, layout string) (*document.ProfileCurve, error) { return p.Curve(coll, n, layout) }
}

// simaiGroups are the group sizes SimAI's files describe: TP (the
// option, or the ranks of a node), DP (world/TP), EP (DP) and PP (2),
// each the option where given; an error where they do not fit the world.
func (o Options) simaiGroups(p *document.Profile) (tp, dp, ep, pp int, err error) {
	w := p.Meta.WorldSize
	tp, dp, ep, pp = o.TP, o.DP, o.EP, o.PP
	if tp == 0 {
		tp = p.Meta.RanksPerNode
	}
	if dp == 0 && tp > 0 {
		dp = w / tp
	}
	if ep == 0 {
		ep = dp
	}
	if pp == 0 {
		pp = min(2, w)
	}
	for _, g := range []struct {
		name string
		n    int
	}{{"TP", tp}, {"DP", dp}, {"EP", ep}, {"PP", pp}} {
		if g.n < 1 || g.n > w || w%g.n != 0 {
			return 0, 0, 0, 0, fmt.Errorf("%s size %d does not divide the world size %d", g.name, g.n, w)
		}
	}
	if tp*dp > w || dp%ep != 0 {
		return 0, 0, 0, 0, fmt.Errorf("TP %d × DP %d must fit the world of %d, and EP %d must divide DP", tp, dp, w, ep)
	}
	return tp, dp, ep, pp, nil
}
