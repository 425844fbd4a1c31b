package export

import (
	"fmt"
	"math"

	"github.com/collbench/collbench/document"
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
			count := 0
			for _, pt := range pts {
				if int64(pt.Bytes)%(1<<20) != 0 {
					continue // Galvatron's keys hold whole MiB
				}
				mib := int64(pt.Bytes) >> 20
				sp = append(sp, field{fmt.Sprintf("%s_size_%d_%dMB_time", op.key, n, mib), pt.Time / 1e3})
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
