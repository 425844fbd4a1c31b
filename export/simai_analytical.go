package export

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/model"
	"github.com/collbench/collbench/model/profiled"
)

// SimAIRatioDir is where SimAI_analytical reads its ratio tables, relative
// to the folder it runs in (calbusbw.h: NIC_RATIO_PATH and the others).
const SimAIRatioDir = "astra-sim-alibabacloud/inputs/ratio/"

// simaiRatioHeader is the first line of SimAI's ratio tables, which it
// skips. The columns after the size are, in order, groups over 1, 2, 4,
// 8, 16, 32, 64 and 128 nodes, then the "multi" cases (calbusbw.cc,
// getValue).
const simaiRatioHeader = "Size,1 Node(NVLinkx),2Node-16GPU(NIC ),4Node-32GPU(NIC),8Node-64GPU(NIC),16Node-128GPU(NIC),32Node-256GPU(NIC),64Node-512GPU(NIC),128Node-1024GPU(NIC),Multi 16,Multi 32,Muiti 64,Multi (NIC)\n"

// simaiRatioColumns is the number of value columns of a ratio table.
const simaiRatioColumns = 12

// simaiLastRow is the size of the last row of every ratio table. SimAI
// divides each ratio by the last row's and refuses sizes beyond it, so a
// row of 1s this far out makes the measured rows the ratios themselves
// and keeps every real message inside the table.
const simaiLastRow = 1 << 40

// simaiSmallest is the smallest size SimAI times with its bandwidths;
// below it (Layer::compute_time) it charges fixed latencies per group size.
const simaiSmallest = 1 << 20

// simaiAnalyticalFiles renders what SimAI's analytical simulator reads
// since it computes bus bandwidths itself (aliyun/SimAI 26b4574b, July
// 2025, to today): the flags of SimAI_analytical (simai_analytical.args)
// and the three ratio tables. SimAI times a collective of S bytes over n
// ranks as S·f/(ratio·busbw), f = (n−1)/n (twice that for all-reduce),
// busbw in 2^30 B/s from -nv inside a node and -nic × NICs per GPU across
// nodes, and ratio from the tables for TP all-gather and reduce-scatter
// (nic_ratio.csv inside a node) and all-to-all (ata_ratio.csv). So:
//   - -g_p_s and -n_p_s are the ranks per node (one NIC per GPU);
//   - -nv is the TP group's all-reduce busbw (o.SimAIBW; by default the
//     line's busbw∞) (--simai-tp consecutive
//     ranks; the node's where TP fills it or was not measured), and -nic
//     the inter-node one (strided groups, one rank per node), each
//     ·10⁹/2^30;
//   - on one node -nic compensates SimAI's DP all-reduce instead
//     (simaiOneNodeNIC), the only thing it times with -nic there besides
//     the expert-data-parallel group's, from the DP group's own curve
//     (simaiDPBandwidth), or the expert-data-parallel group's where the
//     plan has one (simaiOneNodeEDP);
//   - the ratio tables' one-node column holds, at every measured size from
//     1 MiB, S·f/(nv·t) for the measured median t (outliers replaced by
//     the fit) of the group SimAI times: for all-gather and reduce-scatter
//     over the TP group (SimAI has one column for both) t is their mean,
//     all-to-all's own over the EP group (--simai-ep data-parallel ranks,
//     TP apart), each the node's where its group was not measured; other
//     columns are 1, SimAI's own formula.
func simaiAnalyticalFiles(p *document.Profile, o Options) ([]exportFile, error) {
	rpn, nodes, w := p.Meta.RanksPerNode, p.Meta.NumNodes, p.Meta.WorldSize
	if rpn < 1 {
		return nil, fmt.Errorf("the profile records no ranks per node")
	}
	tp, dp, ep, _, err := o.simaiGroups(p)
	if err != nil {
		return nil, err
	}
	// The groups SimAI times inside a node with -nv and the tables: TP's
	// (consecutive ranks) and EP's (data-parallel ranks, TP apart), each
	// where the profile measured it, else the node's.
	node := simaiGroup{rpn, 1}
	tpG, epG := node, node
	if tp >= 2 && tp <= rpn && measuredGroup(p, "allreduce", w, simaiGroup{tp, 1}) {
		tpG = simaiGroup{tp, 1}
	}
	if ep >= 2 && ep*tp <= rpn && measuredGroup(p, "alltoall", w, simaiGroup{ep, tp}) {
		epG = simaiGroup{ep, tp}
	}
	nv, nic := 0.0, 0.0
	if rpn > 1 {
		if bw, ok := o.groupBusBW(p, "allreduce", tpG); ok {
			nv = bw
		}
	}
	if nodes > 1 {
		if bw, ok := o.groupBusBW(p, "allreduce", simaiGroup{nodes, rpn}); ok {
			nic = bw
		}
	} else if nv > 0 && tp >= 1 && rpn%tp == 0 {
		dpBW := o.simaiDPBandwidth(p, nv, tp, dp)
		nic = simaiOneNodeNIC(dpBW, rpn, tp)
		if edpBW, ok := o.simaiEDPBandwidth(p, tp, dp, ep); ok {
			nv, nic = simaiOneNodeEDP(nv, dpBW, edpBW, rpn, tp, ep)
		}
	}
	args := fmt.Sprintf("-g_p_s %d -n_p_s %d", rpn, rpn)
	if nv > 0 {
		args += " -nv " + num(nv*1e9/(1<<30))
	}
	if nic > 0 {
		args += " -nic " + num(nic*1e9/(1<<30))
	}
	gather := simaiRatioRows(p, []string{"allgather", "reducescatter"}, tpG, nv)
	ata := simaiRatioRows(p, []string{"alltoall"}, epG, nv)
	return []exportFile{
		{name: "simai_analytical.args", data: []byte(args + "\n")},
		{name: SimAIRatioDir + "nic_ratio.csv", data: simaiRatioTable(gather)},
		{name: SimAIRatioDir + "nvlink_ratio.csv", data: simaiRatioTable(gather)},
		{name: SimAIRatioDir + "ata_ratio.csv", data: simaiRatioTable(ata)},
	}, nil
}

// measuredGroup says whether the profile has op's curve over g, in a
// job of w ranks.
func measuredGroup(p *document.Profile, op string, w int, g simaiGroup) bool {
	layout, ok := model.LayoutOf(w, g.n, g.stride)
	if !ok {
		return false
	}
	_, err := p.Curve(op, g.n, layout)
	return err == nil
}

// simaiOneNodeNIC is the -nic (GB/s) that makes SimAI time a
// data-parallel all-reduce inside one node of rpn ranks at bw, the DP
// group's measured bus bandwidth, under tensor parallelism tp. SimAI
// passes a DP group's rank count where cal_busbw takes a node count
// (Layer::compute_time), so it times the g = rpn/tp ranks of the group as
// g nodes of g GPUs and NICs each: its bus bandwidth is then the NICs'
// -nic·g where that is at most -nv, else the least of that and
// -nv·g/(g−1). Without -nic it takes its CX7 figure, nothing measured.
// -nic = bw/g gives bw exactly (up to -nv·g/(g−1)); on one node no other
// group SimAI times reads -nic (TP and EP groups inside a node are one
// node to it) but a DP_EP group's all-reduce, timed the same way over
// tp·ep, which gets bw/ep (simaiOneNodeEDP).
func simaiOneNodeNIC(bw float64, rpn, tp int) float64 {
	return bw * float64(tp) / float64(rpn)
}

// simaiEDPBandwidth is the bus bandwidth (GB/s) of the all-reduce over
// the expert-data-parallel group SimAI calls DP_EP (dp/ep ranks, tp·ep
// apart), where the plan has one (dp/ep ≥ 2) and the profile measured it.
func (o Options) simaiEDPBandwidth(p *document.Profile, tp, dp, ep int) (float64, bool) {
	if ep < 2 {
		return 0, false
	}
	return o.groupBusBW(p, "allreduce", simaiGroup{dp / ep, tp * ep})
}

// simaiOneNodeEDP chooses -nv and -nic (GB/s) on one node of rpn ranks
// when the plan has an expert-data-parallel group. SimAI times its
// all-reduce (Layer::compute_time, DP_EP inside a node) over
// rpn/(tp·ep) NICs at -nic each, and the DP group's over rpn/tp: one
// -nic cannot give both groups their own bandwidth, and left at the DP
// group's it charged mixtral's expert gradients, most of its step, 2.3×
// on the kept host profile. So -nic gives the EDP group its bandwidth
// (edpBW·tp·ep/rpn). The DP group then reads ep·edpBW, unless -nv caps
// it: SimAI takes the least of the NICs' and -nv·g/(g−1) for g = rpn/tp
// GPUs where the NICs exceed -nv. With tp 1 no TP group is timed with
// -nv, and the all-to-all's table is relative to it, so -nv =
// dpBW·(g−1)/g gives the DP group its own bandwidth too, wherever that
// cap does not also catch the EDP group. With tp > 1, -nv is the TP
// group's and the DP all-reduce is left at ep·edpBW.
func simaiOneNodeEDP(nv, dpBW, edpBW float64, rpn, tp, ep int) (float64, float64) {
	nic := edpBW * float64(tp*ep) / float64(rpn)
	g, ge := rpn/tp, rpn/(tp*ep)
	if tp > 1 || g < 2 || float64(ep)*edpBW <= dpBW {
		return nv, nic
	}
	capped := dpBW * float64(g-1) / float64(g)
	if ge >= 2 && edpBW > capped*float64(ge)/float64(ge-1) {
		return nv, nic
	}
	return capped, nic
}

// simaiDPBandwidth is the bus bandwidth (GB/s) of the DP all-reduce
// inside one node under tensor parallelism tp: the line of the profile's
// all-reduce over the DP group (dp ranks, tp apart), or nv, the node's,
// where the profile lacks that group.
func (o Options) simaiDPBandwidth(p *document.Profile, nv float64, tp, dp int) float64 {
	if bw, ok := o.groupBusBW(p, "allreduce", simaiGroup{dp, tp}); ok {
		return bw
	}
	return nv
}

// groupBusBW is the bus bandwidth (GB/s) SimAI is given for the curve of
// op over the group g (o.SimAIBW); false where g has fewer than 2 ranks,
// is no layout the profile measures, or was not measured.
func (o Options) groupBusBW(p *document.Profile, op string, g simaiGroup) (float64, bool) {
	return o.groupBusBWBy(p.Meta.WorldSize, curveOf(p, op), g)
}

// groupBusBWBy is groupBusBW for the curve find gives (a collective's,
// or the pipeline's send) in a job of w ranks.
func (o Options) groupBusBWBy(w int, find func(n int, layout string) (*document.ProfileCurve, error), g simaiGroup) (float64, bool) {
	layout, ok := model.LayoutOf(w, g.n, g.stride)
	if !ok || g.n < 2 {
		return 0, false
	}
	c, err := find(g.n, layout)
	if err != nil {
		return 0, false
	}
	bw, err := o.simaiBusBW(c)
	return bw, err == nil
}

// simaiBusBW is the bus bandwidth (GB/s) SimAI is given for a curve:
// its line's (asymptotic, the default), at a point or the mean over its
// sizes (o.SimAIBW).
func (o Options) simaiBusBW(c *document.ProfileCurve) (float64, error) {
	if o.SimAIBW == "" || o.SimAIBW == "asymptotic" {
		return fittedBusBW(c)
	}
	ref, err := parseBandwidthRef(o.SimAIBW)
	if err != nil {
		return 0, err
	}
	bw, err := ref.busbw(c)
	if err == nil && !(bw > 0) {
		err = fmt.Errorf("%s: no bandwidth at %s", c.Key(), o.SimAIBW)
	}
	return bw, err
}

// fittedBusBW is the bus bandwidth of a curve's single line in GB/s
// (model.Curve.LineBusBW: the same line ASTRA-sim and Calculon are given);
// a line whose time does not grow is an error.
func fittedBusBW(c *document.ProfileCurve) (float64, error) {
	m, err := profiled.Curve(c)
	if err != nil {
		return 0, err
	}
	bw := m.LineBusBW()
	if bw <= 0 {
		return 0, fmt.Errorf("%s: no bandwidth term", c.Key())
	}
	return bw, nil
}

// simaiRatio is one row of a ratio table's one-node column.
type simaiRatio struct{ size, ratio float64 }

// simaiRatioRows are the ratios S·f/(nv·t) of the ops' curves over the
// group g (f = (n−1)/n of its n ranks), at each size all of them
// measured, with t the mean of the ops' times there: where one table
// serves two ops that a step makes as many of (sequence parallelism's
// all-gathers and reduce-scatters), SimAI then times the pair, and the
// step, as measured, each op off by its time's distance from the mean;
// none when nv is unknown.
func simaiRatioRows(p *document.Profile, ops []string, g simaiGroup, nv float64) []simaiRatio {
	layout, ok := model.LayoutOf(p.Meta.WorldSize, g.n, g.stride)
	if nv <= 0 || g.n < 2 || !ok {
		return nil
	}
	f := float64(g.n-1) / float64(g.n)
	times := map[float64]float64{}
	counts := map[float64]int{}
	for _, op := range ops {
		c, err := p.Curve(op, g.n, layout)
		if err != nil {
			return nil
		}
		pts, err := measured(c)
		if err != nil {
			return nil
		}
		for _, pt := range pts {
			if pt.Bytes < simaiSmallest || pt.Time <= 0 {
				continue
			}
			times[pt.Bytes] += pt.Time
			counts[pt.Bytes]++
		}
	}
	var rows []simaiRatio
	for s, sum := range times {
		if counts[s] == len(ops) {
			rows = append(rows, simaiRatio{s, s * f / (nv * 1e9 * sum / float64(len(ops)) * 1e-6)})
		}
	}
	slices.SortFunc(rows, func(a, b simaiRatio) int { return cmp.Compare(a.size, b.size) })
	return rows
}

// simaiRatioTable renders a ratio table: the measured rows (one-node
// column; the others 1), then the row of 1s at simaiLastRow.
func simaiRatioTable(rows []simaiRatio) []byte {
	var b strings.Builder
	b.WriteString(simaiRatioHeader)
	ones := strings.Repeat(",1", simaiRatioColumns-1)
	for _, r := range rows {
		fmt.Fprintf(&b, "%.0f,%s%s\n", r.size, num(r.ratio), ones)
	}
	fmt.Fprintf(&b, "%d,1%s\n", int64(simaiLastRow), ones)
	return []byte(b.String())
}
