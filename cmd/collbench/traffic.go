package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/bench"
)

// trafficFlags are alltoallv's pattern settings. Each defaults to the
// nccl-tests variable of the same meaning.
type trafficFlags struct {
	spread, scale float64
	matrix        string
	summary       bool
	// A mixture-of-experts layer's routed traffic instead (--moe).
	moe, routing   string
	tokens, hidden int64
	draws          int
	seed           uint64
}

func (t *trafficFlags) register(fs *pflag.FlagSet) {
	fs.Float64Var(&t.spread, "spread", 1, "share of each rank's bytes weighted by distance to the receiver, 0 (uniform) to 1 (default NCCL_TESTS_ALLTOALLV_SPREAD or 1)")
	fs.StringVar(&t.matrix, "matrix", "", "file of bytes each rank sends each rank, one row per sender; replaces the spread (default NCCL_TESTS_ALLTOALLV_MATRIX_FILE)")
	fs.Float64Var(&t.scale, "matrix-scale", 1, "factor applied to the matrix (default NCCL_TESTS_ALLTOALLV_MATRIX_SCALE or 1)")
	fs.BoolVar(&t.summary, "rank-summary", false, "print each rank's bytes and bandwidth before each row (default NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY)")
	t.registerRouting(fs, "time a mixture-of-experts layer's dispatch and combine, routed as --routing says", "tokens per rank per step")
	fs.Int64Var(&t.hidden, "hidden", 4096, "with --moe: elements per token")
}

// registerRouting adds the flags that describe a mixture-of-experts
// layer's routing.
func (t *trafficFlags) registerRouting(fs *pflag.FlagSet, moeUsage, tokensUsage string) {
	fs.StringVar(&t.moe, "moe", "", "EXPERTS,TOPK: "+moeUsage)
	fs.Int64Var(&t.tokens, "tokens", 4096, "with --moe: "+tokensUsage)
	fs.StringVar(&t.routing, "routing", "uniform", "with --moe: uniform, zipf:S (expert e chosen ∝ 1/(e+1)^S), or a file of counts per expert")
	fs.IntVar(&t.draws, "draws", 0, "with --moe: routing draws, one per call, cycled (default -n)")
	fs.Uint64Var(&t.seed, "seed", 1, "with --moe: seed of the routing draws")
}

// fromEnv fills the flags not given from nccl-tests' variables.
func (t *trafficFlags) fromEnv(fs *pflag.FlagSet) error {
	for _, v := range []struct {
		flag, env string
		dst       *float64
	}{{"spread", "NCCL_TESTS_ALLTOALLV_SPREAD", &t.spread}, {"matrix-scale", "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE", &t.scale}} {
		if s := os.Getenv(v.env); s != "" && !fs.Changed(v.flag) {
			f, err := parseEnvFloat(v.env, s)
			if err != nil {
				return err
			}
			*v.dst = f
		}
	}
	if s := os.Getenv("NCCL_TESTS_ALLTOALLV_MATRIX_FILE"); s != "" && !fs.Changed("matrix") {
		t.matrix = s
	}
	if s := os.Getenv("NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY"); s != "" && !fs.Changed("rank-summary") {
		n, err := strconv.Atoi(s)
		if err != nil {
			return usagef("NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY=%q is not an integer", s)
		}
		t.summary = n != 0
	}
	return nil
}

// drawCount is --draws, or -n iterations when it is not given.
func (t *trafficFlags) drawCount(iters int) int {
	if t.draws == 0 {
		return iters
	}
	return t.draws
}

// routingOf builds the --moe layer's routing for data of type elt.
func (t *trafficFlags) routingOf() (*bench.Routing, error) {
	var experts, topK int
	if _, err := fmt.Sscanf(t.moe, "%d,%d", &experts, &topK); err != nil || fmt.Sprintf("%d,%d", experts, topK) != t.moe {
		return nil, usagef("--moe %q: want EXPERTS,TOPK, e.g. 64,2", t.moe)
	}
	r := &bench.Routing{Experts: experts, TopK: topK, Tokens: t.tokens, Hidden: t.hidden, Name: t.routing, Seed: t.seed}
	switch name, arg, _ := strings.Cut(t.routing, ":"); {
	case t.routing == "uniform":
		r.Weights = bench.UniformWeights(experts)
	case name == "zipf":
		s, err := strconv.ParseFloat(arg, 64)
		if err != nil || s < 0 || !finite(s) {
			return nil, usagef("--routing %q: want zipf:S with a skew S ≥ 0", t.routing)
		}
		r.Weights = bench.ZipfWeights(experts, s)
	default:
		var err error
		if r.Weights, err = bench.ReadRoutingFile(t.routing); err != nil {
			return nil, usagef("--routing: %v (want uniform, zipf:S or a histogram file)", err)
		}
	}
	if len(r.Weights) != experts {
		return nil, usagef("--routing %s has %d experts; --moe says %d", t.routing, len(r.Weights), experts)
	}
	return r, nil
}

// traffic builds the pattern: the matrix file when one is named, else
// the spread.
func (t *trafficFlags) traffic() (*bench.Traffic, error) {
	if t.matrix == "" {
		if t.spread < 0 || t.spread > 1 || !finite(t.spread) {
			return nil, usagef("--spread must be between 0 and 1 (got %g)", t.spread)
		}
		return &bench.Traffic{Spread: t.spread, Scale: 1}, nil
	}
	tr, err := bench.ReadTrafficFile(t.matrix, t.scale)
	if err != nil {
		return nil, usageError{Err: err}
	}
	return tr, nil
}

// withTraffic gives an uneven all-to-all the pattern its flags describe;
// other collectives are returned as they are.
func (t *trafficFlags) withTraffic(coll *bench.Collective) (*bench.Collective, error) {
	if coll.Traffic == nil {
		return coll, nil
	}
	tr, err := t.traffic()
	if err != nil {
		return nil, err
	}
	c, err := coll.WithTraffic(tr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", coll.Name, err)
	}
	return c, nil
}
