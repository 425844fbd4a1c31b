package main

import (
	"github.com/spf13/pflag"

	"github.com/collbench/collbench/run"
)

// registerTraffic adds alltoallv's pattern flags; each defaults to the
// nccl-tests variable of the same meaning.
func registerTraffic(fs *pflag.FlagSet, t *run.TrafficRequest) {
	fs.Float64Var(&t.Spread, "spread", 1, "share of each rank's bytes weighted by distance to the receiver, 0 (uniform) to 1 (default NCCL_TESTS_ALLTOALLV_SPREAD or 1)")
	fs.StringVar(&t.Matrix, "matrix", "", "file of bytes each rank sends each rank, one row per sender; replaces the spread (default NCCL_TESTS_ALLTOALLV_MATRIX_FILE)")
	fs.Float64Var(&t.Scale, "matrix-scale", 1, "factor applied to the matrix (default NCCL_TESTS_ALLTOALLV_MATRIX_SCALE or 1)")
	fs.BoolVar(&t.Summary, "rank-summary", false, "print each rank's bytes and bandwidth before each row (default NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY)")
	registerRouting(fs, t, "time a mixture-of-experts layer's dispatch and combine, routed as --routing says", "tokens per rank per step")
	fs.Int64Var(&t.Hidden, "hidden", 4096, "with --moe: elements per token")
}

// registerRouting adds the flags that describe a mixture-of-experts
// layer's routing.
func registerRouting(fs *pflag.FlagSet, t *run.TrafficRequest, moeUsage, tokensUsage string) {
	fs.StringVar(&t.MoE, "moe", "", "EXPERTS,TOPK: "+moeUsage)
	fs.Int64Var(&t.Tokens, "tokens", 4096, "with --moe: "+tokensUsage)
	fs.StringVar(&t.Routing, "routing", "uniform", "with --moe: uniform, zipf:S (expert e chosen ∝ 1/(e+1)^S), or a file of counts per expert")
	fs.IntVar(&t.Draws, "draws", 0, "with --moe: routing draws, one per call, cycled (default -n)")
	fs.Uint64Var(&t.Seed, "seed", 1, "with --moe: seed of the routing draws")
}
