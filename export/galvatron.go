package export

import (
	"fmt"
	"math"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/model"
	"github.com/collbench/collbench/model/profiled"
	"github.com/collbench/collbench/setting"
)

// galvatronFiles renders Galvatron's four hardware files, with the names
// its search engine builds (get_profiled_hardware_configs) and every key
// its loaders read (read_allreduce_bandwidth_config needs both layouts of
// every size below the world; remap_config needs 8 sizes per group size).
func galvatronFiles(p *document.Profile, o Options) ([]exportFile, error) {
	how := o.GalvatronBW
	if how == "" {
		how = "point:32M"
	}
	ref, err := parseBandwidthRef(how)
	if err != nil {
		return nil, err
	}
	suffix := fmt.Sprintf("%dnodes_%dgpus_per_node.json", p.Meta.NumNodes, p.Meta.RanksPerNode)
	world := p.Meta.WorldSize
	if world < 2 {
		return nil, fmt.Errorf("a world of %d rank has no collectives to describe", world)
	}
	var ar, pp, sp []field
	for _, n := range halvings(world) {
		for _, consec := range []int{1, 0} {
			if n == world && consec == 0 {
				continue // Galvatron leaves out the strided world: it is the same group
			}
			layout := map[int]string{1: "consecutive", 0: "strided"}[consec]
			c, err := p.Curve("allreduce", n, layout)
			if err != nil {
				return nil, err
			}
			bw, err := ref.busbw(c)
			if err != nil {
				return nil, err
			}
			ar = append(ar, field{fmt.Sprintf("allreduce_size_%d_consec_%d", n, consec), mibPerMs(bw)})
		}
	}
	ppSizes := halvings(world)
	for i := len(ppSizes) - 1; i >= 0; i-- {
		n := ppSizes[i]
		c, err := profiled.P2PCurve(p, n, "strided")
		if err != nil {
			return nil, err
		}
		bw, err := ref.busbw(c) // a pipeline's bus factor is 1: this is its algbw
		if err != nil {
			return nil, err
		}
		pp = append(pp, field{fmt.Sprintf("pp_size_%d", n), mibPerMs(bw)})
	}
	for _, op := range []struct{ coll, key string }{{"allreduce", "allreduce"}, {"alltoall", "all2all"}} {
		for _, n := range halvings(world) {
			c, err := p.Curve(op.coll, n, "consecutive")
			if err != nil {
				return nil, err
			}
			pts, err := measured(c)
			if err != nil {
				return nil, err
			}
			timeAt := func(pt model.Point) float64 { return pt.Time }
			if op.coll == "allreduce" {
				if timeAt, err = galvatronTPTime(p, n); err != nil {
					return nil, err
				}
			}
			count := 0
			for _, pt := range pts {
				if int64(pt.Bytes)%(1<<20) != 0 {
					continue // Galvatron's keys hold whole MiB
				}
				mib := int64(pt.Bytes) >> 20
				sp = append(sp, field{fmt.Sprintf("%s_size_%d_%dMB_time", op.key, n, mib), timeAt(pt) / 1e3})
				count++
			}
			if count < 8 {
				return nil, setting.Errorf("%s has %d whole-MiB sizes; Galvatron's loader needs at least 8 (profile with {MinBytes} 1M {MaxBytes} 128M or more)", c.Key(), count)
			}
		}
	}
	probe, err := p.PlannerProbe()
	if err != nil {
		return nil, err
	}
	coe := math.Max(probe.OverlapCoe, 1)
	return []exportFile{
		{name: "allreduce_bandwidth_" + suffix, data: orderedJSON(ar)},
		{name: "p2p_bandwidth_" + suffix, data: orderedJSON(pp)},
		{name: "sp_time_" + suffix, data: orderedJSON(sp)},
		{name: "overlap_coefficient.json", data: orderedJSON([]field{{"overlap_coe", coe}})},
	}, nil
}

// galvatronTPTime is what sp_time's allreduce key holds at a size of the
// all-reduce curve of n consecutive ranks: the group's all-gather plus
// its reduce-scatter there (their measured medians, or their curves'
// time at a size they lack). Galvatron reads these keys only halved, as
// its all-gather (remap_config_for_latency), and charges every
// tensor-parallel call so, the reduce-scatters of sequence parallelism
// and the halves of an all-reduce alike; no code of its times an
// all-reduce from them. Half the sum is the mean of the two calls, so a
// layer's tensor-parallel time is the measured one.
func galvatronTPTime(p *document.Profile, n int) (func(model.Point) float64, error) {
	var ops [2]func(bytes float64) float64
	for i, coll := range []string{"allgather", "reducescatter"} {
		c, err := p.Curve(coll, n, "consecutive")
		if err != nil {
			return nil, fmt.Errorf("Galvatron's tensor-parallel table: %w", err)
		}
		m, err := profiled.Curve(c)
		if err != nil {
			return nil, err
		}
		at := map[float64]float64{}
		for _, pt := range m.Points() {
			at[pt.Bytes] = pt.Time
		}
		ops[i] = func(bytes float64) float64 {
			if t, ok := at[bytes]; ok {
				return t
			}
			return m.Time(bytes)
		}
	}
	return func(pt model.Point) float64 { return ops[0](pt.Bytes) + ops[1](pt.Bytes) }, nil
}
