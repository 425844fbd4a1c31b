package export

import (
	"fmt"
	"strings"

	"github.com/collbench/collbench/document"
)

// alpaOps maps collbench collectives to Alpa's MeshProfilingResult
// dictionaries.
var alpaOps = []struct{ coll, dict string }{
	{"allreduce", "all_reduce_cost_dict"}, {"allgather", "all_gather_cost_dict"},
	{"reducescatter", "reduce_scatter_cost_dict"}, {"alltoall", "all_to_all_cost_dict"},
}

// alpaTypes names data types as Alpa's profiler does.
var alpaTypes = map[string]string{"float": "f32", "half": "f16", "bfloat16": "bf16"}

// alpaFiles renders Alpa's profiling database as JSON, with a loader that
// turns it into the pickled ProfilingResultDatabase Alpa opens. Sizes are
// elements as Alpa counts them (all-to-all: the whole exchange, n times
// nccl-tests' per-rank buffer), times seconds; mesh_alpha and mesh_beta
// (seconds, seconds per byte) feed get_logical_mesh per mesh dimension.
func alpaFiles(p *document.Profile) ([]exportFile, error) {
	dtype, ok := alpaTypes[p.Suite.Type]
	if !ok {
		return nil, fmt.Errorf("Alpa profiles float, half and bfloat16; this profile measured %s", p.Suite.Type)
	}
	elt := map[string]int64{"f32": 4, "f16": 2, "bf16": 2}[dtype]
	var entries []any
	for _, op := range alpaOps {
		for i := range p.Curves {
			c := &p.Curves[i]
			if c.Op != op.coll || len(c.Samples) < 2 {
				continue
			}
			var groups, points []any
			for _, g := range c.Group.Ranks {
				var ids []any
				for _, r := range g {
					ids = append(ids, r)
				}
				groups = append(groups, ids)
			}
			for _, s := range c.Samples {
				n := s.Bytes / elt
				if op.coll == "alltoall" {
					n *= int64(c.Group.Size)
				}
				points = append(points, []any{n, s.TimeUs * 1e-6})
			}
			entries = append(entries, []field{{"dict", op.dict}, {"group_size", c.Group.Size}, {"layout", c.Group.Layout},
				{"replica_groups", groups}, {"points", points}})
		}
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("the profile has no all-reduce, all-gather, reduce-scatter or all-to-all curve")
	}
	// Alpa's logical mesh is (hosts, devices per host): dimension 0
	// crosses hosts, dimension 1 stays inside one.
	alpha, beta := []any{nil, nil}, []any{nil, nil}
	for _, l := range levels(p) {
		bw, a, err := fitted(p, "allreduce", l)
		if err != nil {
			return nil, err
		}
		dim := map[string]int{"inter-node": 0, "intra-node": 1}[l.name]
		alpha[dim], beta[dim] = a*1e-6, 1/(bw*1e9)
	}
	doc := []field{{"cluster_key", "default"}, {"mesh_shape", []any{p.Meta.NumNodes, p.Meta.RanksPerNode}},
		{"dtype", dtype}, {"mesh_alpha", alpha}, {"mesh_beta", beta}, {"entries", entries}}
	return []exportFile{
		{name: "alpa_prof.json", data: orderedJSON(doc)},
		{name: "alpa_load_prof.py", data: []byte(strings.TrimLeft(alpaLoader, "\n")), exec: true},
	}, nil
}

// alpaLoader builds Alpa's database from alpa_prof.json.
const alpaLoader = `
#!/usr/bin/env python3
"""Turn collbench's alpa_prof.json into Alpa's pickled profiling database.

    python3 alpa_load_prof.py alpa_prof.json prof_database.pkl [--bf16-as f16]

Alpa looks its tables up by (replica groups, dtype); a bfloat16 profile is
stored as "f16" with --bf16-as f16 (same element size, same traffic).
Pass the .pkl to Alpa as AutoStageOption(profiling_database_filename=...).
mesh_alpha and mesh_beta are printed for get_logical_mesh(mesh_alpha=...,
mesh_beta=...); a dimension of size 1 has none (None).
"""
import argparse
import json

from alpa.mesh_profiling import MeshProfilingResult, ProfilingResultDatabase


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile")
    ap.add_argument("out")
    ap.add_argument("--bf16-as", default="bf16")
    args = ap.parse_args()
    with open(args.profile) as f:
        doc = json.load(f)
    dtype = doc["dtype"]
    if dtype == "bf16":
        dtype = args.bf16_as
    result = MeshProfilingResult()
    for e in doc["entries"]:
        groups = tuple(tuple(g) for g in e["replica_groups"])
        table = getattr(result, e["dict"])
        table[(groups, dtype)] = sorted((int(n), float(t)) for n, t in e["points"])
    result.sort_cost_lists()
    db = ProfilingResultDatabase()
    db.update_one_mesh(doc["cluster_key"], tuple(doc["mesh_shape"]), result)
    db.save(args.out)
    print("wrote", args.out, "for mesh", tuple(doc["mesh_shape"]))
    print("mesh_alpha =", tuple(doc["mesh_alpha"]), " mesh_beta =", tuple(doc["mesh_beta"]))


if __name__ == "__main__":
    main()
`
