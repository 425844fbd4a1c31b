package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/fileio"
)

// TrafficRequest is an uneven all-to-all's pattern as a person states it:
// nccl-tests' spread or matrix file, or a mixture-of-experts layer's
// routing (MoE set).
type TrafficRequest struct {
	Spread, Scale float64 // distance-weighted share (0..1); factor on the matrix
	Matrix        string  // file of bytes per sender and receiver; replaces Spread
	Summary       bool    // per-rank lines before each row
	// MoE is "EXPERTS,TOPK"; Routing is uniform, zipf:S or a file of
	// counts per expert.
	MoE, Routing   string
	Tokens, Hidden int64
	Draws          int // routing draws, one per call; 0 is one per timed iteration
	Seed           uint64

	// The matrix and routing files' contents, once Load has read them.
	matrix, histogram []byte
	loaded            bool
}

// Load reads the files the request names, the matrix and a routing
// histogram, at most limit bytes each, as collbench reads every input (a
// FIFO waited for, never past ctx, which also ends the read); Pattern and
// RoutingOf then parse what was read. Without Load they read the files
// themselves, uninterruptibly.
func (t *TrafficRequest) Load(ctx context.Context, limit int64) error {
	var err error
	if t.Matrix != "" {
		if t.matrix, err = fileio.Read(ctx, t.Matrix, limit); err != nil {
			return inputError("traffic matrix", t.Matrix, err)
		}
	}
	if t.MoE != "" && t.routingFile() {
		if t.histogram, err = fileio.Read(ctx, t.Routing, limit); err != nil {
			return inputError("{Routing}", t.Routing, err)
		}
	}
	t.loaded = true
	return nil
}

// inputError says which input could not be read: an interruption as it
// is, anything else as a usage error naming the file.
func inputError(what, path string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return Usagef("%s %s: %v", what, path, err)
}

// Files are the files the request reads: the matrix and a routing
// histogram, where named.
func (t *TrafficRequest) Files() []string {
	if t == nil {
		return nil
	}
	var out []string
	if t.Matrix != "" {
		out = append(out, t.Matrix)
	}
	if t.MoE != "" && t.routingFile() {
		out = append(out, t.Routing)
	}
	return out
}

// routingFile says whether Routing names a histogram file rather than a
// built-in routing.
func (t *TrafficRequest) routingFile() bool {
	name, _, _ := strings.Cut(t.Routing, ":")
	return t.Routing != "uniform" && name != "zipf"
}

// read is a named file's contents: what Load read, or the file read now.
func (t *TrafficRequest) read(path string, loaded []byte) ([]byte, error) {
	if t.loaded {
		return loaded, nil
	}
	return fileio.Read(context.Background(), path, fileio.MaxInput)
}

// DefaultTrafficRequest is nccl-tests' uneven all-to-all (every rank's
// bytes weighted by distance, unscaled), and for a mixture-of-experts
// layer 4096 tokens of 4096 elements, routed uniformly, seed 1.
func DefaultTrafficRequest() TrafficRequest {
	return TrafficRequest{Spread: 1, Scale: 1, Hidden: 4096, Tokens: 4096, Routing: "uniform", Seed: 1}
}

// FromEnv fills what the caller did not give (given says which settings
// were, by their names: Spread, Scale, Matrix, RankSummary) from
// nccl-tests' variables of the same meaning.
func (t *TrafficRequest) FromEnv(given func(name string) bool, getenv func(string) string) error {
	for _, v := range []struct {
		name, env string
		dst       *float64
	}{{"Spread", "NCCL_TESTS_ALLTOALLV_SPREAD", &t.Spread}, {"Scale", "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE", &t.Scale}} {
		if s := getenv(v.env); s != "" && !given(v.name) {
			f, err := EnvFloat(v.env, s)
			if err != nil {
				return err
			}
			*v.dst = f
		}
	}
	if s := getenv("NCCL_TESTS_ALLTOALLV_MATRIX_FILE"); s != "" && !given("Matrix") {
		t.Matrix = s
	}
	if s := getenv("NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY"); s != "" && !given("RankSummary") {
		n, err := strconv.Atoi(s)
		if err != nil {
			return Usagef("NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY=%q is not an integer", s)
		}
		t.Summary = n != 0
	}
	return nil
}

// DrawCount is Draws, or iters when it is not given.
func (t *TrafficRequest) DrawCount(iters int) int {
	if t.Draws == 0 {
		return iters
	}
	return t.Draws
}

// RoutingOf builds the MoE layer's routing.
func (t *TrafficRequest) RoutingOf() (*bench.Routing, error) {
	var experts, topK int
	if _, err := fmt.Sscanf(t.MoE, "%d,%d", &experts, &topK); err != nil || fmt.Sprintf("%d,%d", experts, topK) != t.MoE {
		return nil, Usagef("{MoE} %q: want EXPERTS,TOPK, e.g. 64,2", t.MoE)
	}
	if err := bench.CheckShape(experts, topK); err != nil {
		return nil, Usagef("{MoE}: %v", err)
	}
	r := &bench.Routing{Experts: experts, TopK: topK, Tokens: t.Tokens, Hidden: t.Hidden, Name: t.Routing, Seed: t.Seed}
	switch name, arg, _ := strings.Cut(t.Routing, ":"); {
	case t.Routing == "uniform":
		r.Weights = bench.UniformWeights(experts)
	case name == "zipf":
		s, err := strconv.ParseFloat(arg, 64)
		if err != nil || s < 0 || !Finite(s) {
			return nil, Usagef("{Routing} %q: want zipf:S with a skew S ≥ 0", t.Routing)
		}
		r.Weights = bench.ZipfWeights(experts, s)
	default:
		data, err := t.read(t.Routing, t.histogram)
		if err == nil {
			r.Weights, err = bench.ReadRoutingHistogram(bytes.NewReader(data), t.Routing)
		}
		if err != nil {
			return nil, Usagef("{Routing}: %v (want uniform, zipf:S or a histogram file)", err)
		}
	}
	if len(r.Weights) != experts {
		return nil, Usagef("{Routing} %s has %d experts; {MoE} says %d", t.Routing, len(r.Weights), experts)
	}
	switch {
	case t.Tokens < 1 || t.Tokens > bench.MaxTokens:
		return nil, Usagef("{Tokens} must be between 1 and %d (got %d)", bench.MaxTokens, t.Tokens)
	case t.Draws < 0 || t.Draws > bench.MaxDraws:
		return nil, Usagef("{Draws} must be between 1 and %d (got %d)", bench.MaxDraws, t.Draws)
	}
	return r, nil
}

// Pattern is the matrix file when one is named, else the spread.
func (t *TrafficRequest) Pattern() (*bench.Traffic, error) {
	if t.Matrix == "" {
		if t.Spread < 0 || t.Spread > 1 || !Finite(t.Spread) {
			return nil, Usagef("{Spread} must be between 0 and 1 (got %g)", t.Spread)
		}
		return &bench.Traffic{Spread: t.Spread, Scale: 1}, nil
	}
	data, err := t.read(t.Matrix, t.matrix)
	if err != nil {
		return nil, Usagef("traffic matrix %s: %v", t.Matrix, err)
	}
	tr, err := bench.ReadTrafficMatrix(bytes.NewReader(data), t.Scale, t.Matrix)
	if err != nil {
		return nil, UsageError{Err: err}
	}
	return tr, nil
}

// Apply gives an uneven all-to-all the pattern, or, with MoE, the
// routing's proportions over iters draws; other collectives are returned
// as they are.
func (t *TrafficRequest) Apply(coll *bench.Collective, iters int) (*bench.Collective, error) {
	if coll.Traffic == nil {
		return coll, nil
	}
	var tr *bench.Traffic
	var err error
	if t.MoE != "" {
		r, err := t.RoutingOf()
		if err != nil {
			return nil, err
		}
		tr = bench.RoutedTraffic(r, t.DrawCount(iters))
	} else if tr, err = t.Pattern(); err != nil {
		return nil, err
	}
	c, err := coll.WithTraffic(tr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", coll.Name, err)
	}
	return c, nil
}

// CheckMoE refuses, with a MoE layer's routing, the settings that cannot
// follow it. (Those the routing replaces, such as the sizes, are the
// caller's to refuse where it knows which were given.)
func (r *SweepRequest) CheckMoE() error {
	switch {
	case strings.EqualFold(r.DType, "all"):
		return Usagef("{MoE} runs one data type; choose it with {DataType}")
	case r.Cycles != 1:
		return Usagef("{Cycles} does not apply with {MoE}")
	case r.Graph != 0:
		return Usagef("{Graph} does not apply with {MoE}: every call follows its own routing draw")
	}
	return nil
}

// MoESpec is the mixture-of-experts layer the request asks for (with
// Traffic.MoE set); args is the command line the document records.
func (r *SweepRequest) MoESpec(job JobRequest, opChanged bool, args []string) (MoESpec, error) {
	routing, err := r.Traffic.RoutingOf()
	if err != nil {
		return MoESpec{}, err
	}
	t, err := numeric.ParseDataType(r.DType)
	if err != nil {
		return MoESpec{}, UsageError{Err: err}
	}
	// The collective and the sizes follow from the routing; the options
	// carry the iterations, warm-up, checks, -a and -m.
	opts, err := r.Options(&bench.Collective{}, job, opChanged)
	if err != nil {
		return MoESpec{}, err
	}
	return MoESpec{Routing: routing, Type: t, Draws: r.Traffic.DrawCount(r.Iters), Opts: opts, Args: args}, nil
}
