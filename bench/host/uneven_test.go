package host

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/internal/fixture"
)

var everyType = []numeric.DataType{numeric.Int8, numeric.Uint8, numeric.Int32, numeric.Uint32, numeric.Int64,
	numeric.Uint64, numeric.Float16, numeric.Float32, numeric.Float64, numeric.Bfloat16, numeric.Float8e4m3,
	numeric.Float8e5m2}

// alltoallv with spreads 0, 0.5 and 1 and with a matrix file, on 1 to 5
// ranks and every type: every share lands where nccl-tests expects it.
func TestAllToAllVVerifies(t *testing.T) {
	matrix, err := fixture.TrafficFile(t, "../testdata/traffic5.txt", 3)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := bench.LookupCollective("alltoallv")
	cases := []struct {
		name    string
		traffic *bench.Traffic
		sweep   bench.Sweep
	}{
		{"spread0", &bench.Traffic{Spread: 0}, bench.Sweep{Min: 8, Max: 1 << 16, Factor: 16}},
		{"spread0.5", &bench.Traffic{Spread: 0.5}, bench.Sweep{Min: 8, Max: 1 << 16, Factor: 16}},
		{"spread1", &bench.Traffic{Spread: 1}, bench.Sweep{Min: 8, Max: 1 << 16, Factor: 16}},
		{"matrix", matrix, bench.Sweep{Min: 64 << 10, Max: 64 << 10, Factor: 2}},
	}
	for _, tc := range cases {
		coll, err := base.WithTraffic(tc.traffic)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 2, 3, 4, 5} {
			t.Run(fmt.Sprintf("%s/n=%d", tc.name, n), func(t *testing.T) {
				comm := open(t, n, tc.sweep.Max)
				o := bench.Options{Coll: coll, Sweep: tc.sweep, Iters: 2, Warmup: 1, Agg: 1, Cycles: 1, Check: 1,
					Types: everyType, Root: -1, Average: 1}
				sum, rows := runEngine(t, comm, n, o)
				for _, r := range rows {
					if r.OutOfPlace.Wrong != 0 || !r.OutOfPlace.Checked || r.InPlace.Checked {
						t.Errorf("%v size %d: #wrong %d checked %v, in place checked %v", r.Type, r.Size,
							r.OutOfPlace.Wrong, r.OutOfPlace.Checked, r.InPlace.Checked)
					}
				}
				if sum.ErrorCases != 0 || len(rows) == 0 {
					t.Fatalf("%d error cases in %d rows", sum.ErrorCases, len(rows))
				}
			})
		}
	}
}

// The busiest rank's bytes set the size column and the bandwidth, with
// the ring factor, as nccl-tests' AlltoAllvGetBw.
func TestAllToAllVBandwidthIsTheBusiestRank(t *testing.T) {
	matrix, err := fixture.TrafficFile(t, "../testdata/traffic5.txt", 1.5)
	if err != nil {
		t.Fatal(err)
	}
	coll, _ := bench.Collectives[bench.AllToAllV].WithTraffic(matrix)
	comm := open(t, 4, 4096)
	o := bench.Options{Coll: coll, Sweep: bench.Sweep{Min: 4096, Max: 4096, Factor: 2}, Iters: 3, Warmup: 1, Agg: 1,
		Cycles: 1, Check: 1, Types: []numeric.DataType{numeric.Float32}, Root: -1, Average: 1}
	_, rows := runEngine(t, comm, 4, o)
	r := rows[0]
	// Of 4 ranks on traffic5.txt ×1.5, rank 2 sends the most: 2448 bytes.
	if r.Size != 2448 || r.Count != 0 {
		t.Errorf("size %d count %d, want 2448 and 0", r.Size, r.Count)
	}
	p := r.OutOfPlace
	if alg := 2448 / 1e3 / p.Time; !near(p.AlgBW, alg) || !near(p.BusBW, alg*0.75) {
		t.Errorf("algbw %g busbw %g for %g µs, want %g and %g", p.AlgBW, p.BusBW, p.Time, alg, alg*0.75)
	}
}

func near(a, b float64) bool { return a == b || (a-b)/b < 1e-9 && (b-a)/b < 1e-9 }

// hypercube on 2, 4 and 8 ranks, every type: the gathered blocks are
// exact in and out of place; 3 and 6 ranks are refused in one line.
func TestHyperCube(t *testing.T) {
	coll := bench.Collectives[bench.HyperCube]
	for _, n := range []int{2, 4, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			comm := open(t, n, 1<<16)
			o := bench.Options{Coll: coll, Sweep: bench.Sweep{Min: 8, Max: 1 << 16, Factor: 16}, Iters: 2, Warmup: 1,
				Agg: 1, Cycles: 1, Check: 1, Types: everyType, Root: -1, Average: 1}
			sum, rows := runEngine(t, comm, n, o)
			if sum.ErrorCases != 0 || len(rows) == 0 {
				t.Fatalf("%d error cases in %d rows", sum.ErrorCases, len(rows))
			}
			// algbw counts the n-1 blocks received: base·elt·(n-1).
			last := rows[len(rows)-1]
			if want := float64(last.Count*int64(last.Type.Size())*int64(n-1)) / 1e3 / last.OutOfPlace.Time; !near(last.OutOfPlace.AlgBW, want) || last.OutOfPlace.BusBW != last.OutOfPlace.AlgBW {
				t.Errorf("algbw %g busbw %g, want %g for both", last.OutOfPlace.AlgBW, last.OutOfPlace.BusBW, want)
			}
		})
	}
	for _, n := range []int{3, 6} {
		o := bench.Options{Coll: coll, Sweep: bench.Sweep{Min: 8, Max: 8, Factor: 2}, Iters: 1, Agg: 1, Cycles: 1,
			Types: []numeric.DataType{numeric.Float32}, Root: -1}
		if _, err := o.Validate(n); err == nil || !strings.Contains(err.Error(), "power-of-two") {
			t.Errorf("%d ranks: %v", n, err)
		}
	}
}

// A mixture-of-experts layer's dispatch and combine on 4 ranks: every
// draw's exchange is exact, a rank sends tokens·top-k hidden vectors on
// average, and Zipf routing loads the rank holding the popular experts.
func TestMoEPhases(t *testing.T) {
	for _, tc := range []struct {
		name    string
		weights []float64
		skewed  bool
	}{{"uniform", bench.UniformWeights(8), false}, {"zipf", bench.ZipfWeights(8, 1.2), true}} {
		t.Run(tc.name, func(t *testing.T) {
			r := &bench.Routing{Experts: 8, TopK: 2, Tokens: 256, Hidden: 32, Weights: tc.weights, Seed: 5}
			comm := open(t, 4, 1<<20)
			e := bench.Engine{Comm: comm, CommRanks: 4, Opts: bench.Options{Iters: 6, Warmup: 1, Agg: 1, Cycles: 1,
				Check: 1, Average: 1}}
			phases, err := e.MoE(context.Background(), r, numeric.Bfloat16, 6)
			if err != nil {
				t.Fatal(err)
			}
			if len(phases) != 2 || phases[0].Name != "dispatch" || phases[1].Name != "combine" {
				t.Fatalf("phases %+v", phases)
			}
			for _, p := range phases {
				o := p.Row.OutOfPlace
				if !o.Checked || o.Wrong != 0 || o.Time <= 0 || o.Iter.N != 6 {
					t.Errorf("%s: checked %v, #wrong %d, time %g, %d samples", p.Name, o.Checked, o.Wrong, o.Time, o.Iter.N)
				}
				if want := float64(256 * 2 * 32 * 2); p.MeanBytes != want {
					t.Errorf("%s: mean bytes %g, want %g", p.Name, p.MeanBytes, want)
				}
				if p.Imbalance < 1 || (p.Imbalance > 1.5) != tc.skewed {
					t.Errorf("%s: imbalance %.3f", p.Name, p.Imbalance)
				}
				if want := p.Busiest / 1e3 / o.Time; !near(o.AlgBW, want) || !near(o.BusBW, want*0.75) {
					t.Errorf("%s: algbw %g busbw %g, want %g and ×0.75", p.Name, o.AlgBW, o.BusBW, want)
				}
			}
			if phases[0].Busiest != phases[1].Busiest {
				t.Errorf("combine reverses dispatch, so its busiest rank moves as much: %g and %g", phases[0].Busiest, phases[1].Busiest)
			}
		})
	}
}

// Routed traffic at every size of a sweep, as collbench profile --moe
// measures alltoallv: exact on 2, 4 and 8 ranks, with buffers sized for
// the busiest rank.
func TestRoutedSweepVerifies(t *testing.T) {
	r := &bench.Routing{Experts: 8, TopK: 2, Tokens: 1024, Hidden: 1, Weights: bench.ZipfWeights(8, 1.2), Seed: 2}
	coll, err := bench.Collectives[bench.AllToAllV].WithTraffic(bench.RoutedTraffic(r, 4))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 4, 8} {
		sweep := bench.Sweep{Min: 1 << 10, Max: 1 << 18, Factor: 4}
		comm := open(t, n, coll.BufferBytes(sweep.Max, 2, n))
		o := bench.Options{Coll: coll, Sweep: sweep, Iters: 4, Warmup: 1, Agg: 1, Cycles: 1, Check: 1,
			Types: []numeric.DataType{numeric.Float16, numeric.Int8}, Root: -1, Average: 1}
		sum, rows := runEngine(t, comm, n, o)
		if sum.ErrorCases != 0 || len(rows) != 10 {
			t.Fatalf("n=%d: %d error cases in %d rows", n, sum.ErrorCases, len(rows))
		}
		if last := rows[4]; last.Size <= sweep.Max {
			t.Errorf("n=%d: the busiest rank moves %d bytes at %d per rank; routed Zipf traffic should exceed it", n, last.Size, sweep.Max)
		}
	}
}

// -u moves every call's data into its buffers by that many elements:
// every collective stays exact, out of place and in place, in types of
// every size.
func TestUnalign(t *testing.T) {
	for _, coll := range bench.Collectives {
		n := 3
		if coll.PowerOfTwo {
			n = 4
		}
		t.Run(coll.Name, func(t *testing.T) {
			const unalign = 3
			comm, err := Backend{}.Open(context.Background(), bench.Setup{JobRanks: n, LocalRanks: n, BufBytes: 1 << 14, Pad: 8 * unalign})
			if err != nil {
				t.Fatal(err)
			}
			defer comm.Close()
			o := bench.Options{Coll: coll, Sweep: bench.Sweep{Min: 1 << 10, Max: 1 << 14, Factor: 4}, Iters: 3, Warmup: 1, Agg: 1,
				Cycles: 1, Check: 1, Types: []numeric.DataType{numeric.Int8, numeric.Float16, numeric.Float64},
				Ops: []numeric.RedOp{numeric.Sum}, Root: 1, Average: 1, Unalign: unalign}
			sum, rows := runEngine(t, comm, n, o)
			if sum.ErrorCases != 0 || len(rows) == 0 {
				t.Fatalf("%d error cases in %d rows", sum.ErrorCases, len(rows))
			}
		})
	}
}

// A hypercube batch on 3 ranks that gets past every check fails in one
// error on each rank instead of indexing past the ranks.
func TestHyperCubeRefusesOddRanks(t *testing.T) {
	comm := open(t, 3, 1<<12)
	coll := bench.Collectives[bench.HyperCube]
	op := bench.Op{Coll: coll, Type: numeric.Float32, RedOp: numeric.NoOp, Counts: coll.Counts(768, 4, 3)}
	if err := comm.Enqueue(bench.Batch{Op: op, Iters: 1, Agg: 1}); err != nil {
		t.Fatal(err)
	}
	if err := comm.Wait(context.Background()); err == nil || !strings.Contains(err.Error(), "power-of-two") {
		t.Errorf("Wait: %v", err)
	}
}
