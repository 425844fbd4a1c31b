package run

import (
	"context"
	"errors"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
)

// noEnv is an environment without any launcher: a job of one process.
func noEnv(string) string { return "" }

// A Go program runs a sweep and a profile through the library alone, on
// the host backend, and gets checked results and filled documents.
func TestLibraryRuns(t *testing.T) {
	ctx := context.Background()
	j, err := NewJob(Settings{RanksPerProc: 2, Backend: "host", Version: "test"}, noEnv, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	allreduce, _ := bench.LookupCollective("allreduce")
	opts := bench.Options{Coll: allreduce, Sweep: bench.Sweep{Min: 1 << 10, Max: 4 << 10, Factor: 2}, Iters: 2, Warmup: 1,
		Agg: 1, Cycles: 1, Check: 1, Types: []numeric.DataType{numeric.Float32}, Ops: []numeric.RedOp{numeric.Sum}, Average: 1}
	var rows, wrote int
	res, err := j.Sweep(ctx, SweepSpec{Opts: opts}, SweepHooks{
		Record: func(document.Result, int) { rows++ },
		Write:  func(*document.Run, error) error { wrote++; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if rows != 3 || wrote != 1 || len(res.Results) != 3 || res.Summary().ErrorCases != 0 || res.Config.NRanks != 2 {
		t.Fatalf("sweep: %d rows, %d writes, %d results, %d errors, %d ranks", rows, wrote, len(res.Results), res.Summary().ErrorCases, res.Config.NRanks)
	}
	for _, r := range res.Results {
		if r.OutOfPlace.NWrong == nil || *r.OutOfPlace.NWrong != 0 {
			t.Errorf("size %d not checked, or wrong: %v", r.Size, r.OutOfPlace.NWrong)
		}
	}

	var got *document.Profile
	doc, err := j.Profile(ctx, ProfileSpec{Colls: []*bench.Collective{allreduce}, Sweep: bench.Sweep{Min: 1 << 10, Max: 8 << 10, Factor: 2},
		Type: numeric.Float32, RedOp: numeric.Sum, Layout: []string{"consecutive"}, Iters: 2, MinIters: 1, NoOverlap: true},
		ProfileHooks{Write: func(d *document.Profile, runErr error) error {
			if runErr != nil {
				t.Error("a complete profile written as incomplete")
			}
			got = d
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if got != doc || len(doc.Curves) != 1 || len(doc.Curves[0].Samples) != 4 || doc.Meta.WorldSize != 2 {
		t.Fatalf("profile: %d curves, world %d", len(doc.Curves), doc.Meta.WorldSize)
	}
}

// Specs the library cannot run are refused with a usage error before
// anything is opened.
func TestLibraryRefusals(t *testing.T) {
	j, err := NewJob(Settings{RanksPerProc: 2, Backend: "host"}, noEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	allreduce, _ := bench.LookupCollective("allreduce")
	var ue UsageError
	if _, err := j.Overlap(context.Background(), OverlapSpec{Coll: allreduce, Cover: 0.5, Target: 1, CommPriority: "normal"}, OverlapHooks{}); !asUsage(err, &ue) {
		t.Errorf("cover below 1: %v", err)
	}
	if _, err := j.Profile(context.Background(), ProfileSpec{Colls: []*bench.Collective{allreduce}, Sweep: bench.Sweep{Min: 1, Max: 2, Factor: 2}, Iters: 1, MinIters: 2}, ProfileHooks{}); !asUsage(err, &ue) {
		t.Errorf("min-iters above iters: %v", err)
	}
}

func asUsage(err error, ue *UsageError) bool { return errors.As(err, ue) }
