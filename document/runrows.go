package document

import (
	"fmt"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
)

// Row is the engine row a result was made from (MakeResult), so that a
// saved run renders as the table its run printed. Per-iteration samples
// are not kept in the document beyond their statistics.
func (r Result) Row() (bench.Row, error) {
	t, err := numeric.ParseDataType(r.Type)
	if err != nil {
		return bench.Row{}, fmt.Errorf("size %d: %w", r.Size, err)
	}
	op := numeric.NoOp
	if r.RedOp != "none" {
		if op, err = numeric.ParseRedOp(r.RedOp); err != nil {
			return bench.Row{}, fmt.Errorf("size %d: %w", r.Size, err)
		}
	}
	p := func(m Measure) bench.Placement {
		out := bench.Placement{Time: m.Time, AlgBW: m.AlgBW, BusBW: m.BusBW, Checked: m.NWrong != nil, Bitwise: m.Bitwise.Check()}
		if m.NWrong != nil {
			out.Wrong = *m.NWrong
		}
		if m.NCCLEstimate != nil {
			out.Estimate = *m.NCCLEstimate
		}
		for _, t := range m.ProcTimes {
			if t == nil {
				out.Procs = append(out.Procs, -1)
			} else {
				out.Procs = append(out.Procs, *t)
			}
		}
		for _, g := range m.Groups {
			out.Groups = append(out.Groups, bench.GroupPlacement(g))
		}
		return out
	}
	return bench.Row{Size: r.Size, Count: r.Count, Type: t, Op: op, Root: r.Root, OutOfPlace: p(r.OutOfPlace), InPlace: p(r.InPlace),
		Iters: r.Iterations}, nil
}

// Summary is the footer the run printed: its error cases, average bus
// bandwidth and floor.
func (d *Run) Summary() bench.Summary {
	s := bench.Summary{Rows: len(d.Results), AvgBusBW: d.AvgBusBW.Bandwidth, ErrorCases: d.OutOfBounds.Count}
	if d.AvgBusBW.Minimum != nil {
		s.MinBusBW = *d.AvgBusBW.Minimum
	}
	if d.BitwiseMismatches != nil {
		s.BitwiseCases = d.BitwiseMismatches.Count
	}
	return s
}
