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
