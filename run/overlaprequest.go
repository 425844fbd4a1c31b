package run

import (
	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
)

// OverlapRequest is an overlap experiment as a person states it: names,
// sizes and seconds, not yet checked. Validate checks it (and applies a
// preset); Spec builds the OverlapSpec.
type OverlapRequest struct {
	Coll, CommType, Op string
	MinBytes, MaxBytes int64
	Factor             int64
	GEMMs, Copies      []string // m,n,k shapes; sizes of device copies
	DType              string   // the GEMMs' type; empty is the backend's default
	Cover, Target      float64  // the covering side's length (×); seconds the measured side runs
	Preset             string   // "galvatron" fixes Galvatron's probe
	CommPriority       string
	MaxCTAs, MinCTAs   int
}

// DefaultOverlapRequest is an overlap experiment as collbench runs it
// without settings: a float sum all-reduce from 1 MiB to 64 MiB by ×4,
// next to the backend's default GEMM (DType and GEMMs empty), the
// covering side 4 times longer, half a second a phase.
func DefaultOverlapRequest() OverlapRequest {
	return OverlapRequest{Coll: "allreduce", CommType: "float", Op: "sum", MinBytes: 1 << 20, MaxBytes: 64 << 20, Factor: 4,
		Cover: 4, Target: 0.5, CommPriority: "normal"}
}

// presetFixes are the settings a preset chooses itself.
var presetFixes = []string{"GEMMs", "Copies", "DataType", "MinBytes", "MaxBytes", "Coll", "CommType", "Cover", "Target"}

// Validate refuses settings out of range and applies the preset; given
// says which settings the caller chose, which a preset must not override.
func (r *OverlapRequest) Validate(given func(name string) bool) error {
	if r.Preset != "" && r.Preset != "galvatron" {
		return Usagef("unknown {Preset} %q (want galvatron)", r.Preset)
	}
	if r.Preset == "galvatron" {
		for _, name := range presetFixes {
			if given(name) {
				return Usagef("{Preset} galvatron fixes {%s}; leave it out", name)
			}
		}
		g := GalvatronProbe
		r.GEMMs, r.DType = []string{g.GEMM}, g.Type
		r.MinBytes, r.MaxBytes = g.Size, g.Size
		r.Cover, r.Target = g.Cover, g.Target
	}
	return nil
}

// Spec builds the experiment; args is the command line the document
// records.
func (r *OverlapRequest) Spec(args []string) (OverlapSpec, error) {
	p := OverlapSpec{GEMMs: r.GEMMs, GEMMType: r.DType, Cover: r.Cover, Target: duration(r.Target),
		CommPriority: r.CommPriority, MinCTAs: r.MinCTAs, MaxCTAs: r.MaxCTAs, Args: args,
		Sweep: bench.Sweep{Min: r.MinBytes, Max: r.MaxBytes, Factor: r.Factor}}
	var err error
	if p.Coll, err = bench.LookupCollective(r.Coll); err != nil {
		return p, UsageError{Err: err}
	}
	if p.CommType, err = numeric.ParseDataType(r.CommType); err != nil {
		return p, Usagef("{CommType}: %v", err)
	}
	p.RedOp = numeric.NoOp
	if p.Coll.Reduces {
		if p.RedOp, err = numeric.ParseRedOp(r.Op); err != nil {
			return p, UsageError{Err: err}
		}
	}
	for _, c := range r.Copies {
		n, err := bench.ParseSize(c)
		if err != nil || n <= 0 {
			return p, Usagef("{Copies} %q: want a positive size", c)
		}
		p.Copies = append(p.Copies, n)
	}
	return p, nil
}
