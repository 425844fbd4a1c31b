package host

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/internal/tier"
	"github.com/collbench/collbench/tuner"
)

// openTuned opens n ranks in this process with tuning t.
func openTuned(t *testing.T, n int, bufBytes int64, tu Tuning) bench.Comm {
	t.Helper()
	comm, err := Backend{Tuning: tu}.Open(context.Background(), bench.Setup{JobRanks: n, LocalRanks: n, BufBytes: bufBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { comm.Close() })
	return comm
}

// Every algorithm of every tunable collective, forced, with segments
// smaller than a message, larger, and not a divisor of it: every result
// exact for every reduction, in and out of place, on odd and even groups
// (recursive doubling on powers of two only).
func TestEveryChoiceVerifies(t *testing.T) {
	for _, name := range []string{"allreduce", "allgather", "reducescatter", "broadcast", "reduce"} {
		coll, _ := bench.LookupCollective(name)
		for _, algo := range Algorithms(coll.ID) {
			for _, seg := range tier.Cases([]int64{64, 1008, DefaultSegment}, []int64{1008}) {
				ranks := []int{2, 3, 5}
				if algo == AlgoDoubling {
					ranks = []int{2, 4, 8}
				}
				for _, n := range ranks {
					t.Run(fmt.Sprintf("%s/%s/seg=%d/n=%d", name, algo, seg, n), func(t *testing.T) {
						comm := openTuned(t, n, 1<<14, Tuning{Algorithm: algo, Segment: seg})
						o := bench.Options{Coll: coll, Sweep: bench.Sweep{Min: 8, Max: 1 << 14, Factor: 16}, Iters: 2, Warmup: 1,
							Agg: 1, Cycles: 1, Check: 1, Types: []numeric.DataType{numeric.Int8, numeric.Float32, numeric.Float64},
							Ops: numeric.AllOps(), Root: -1, Average: 1}
						sum, rows := runEngine(t, comm, n, o)
						if sum.ErrorCases != 0 || len(rows) == 0 {
							for _, r := range rows {
								if r.OutOfPlace.Wrong+r.InPlace.Wrong > 0 {
									t.Errorf("%v %v root %d size %d: #wrong %d / %d", r.Type, r.Op, r.Root, r.Size, r.OutOfPlace.Wrong, r.InPlace.Wrong)
								}
							}
							t.Fatalf("%d rows, %d wrong", len(rows), sum.ErrorCases)
						}
					})
				}
			}
		}
	}
}

// A choice the backend cannot make fails the call in one sentence that
// says what it has; a setting outside the bounds is refused at open.
func TestChoicesRefused(t *testing.T) {
	cases := []struct {
		coll string
		n    int
		tu   Tuning
		want string
	}{
		{"broadcast", 2, Tuning{Algorithm: AlgoDoubling}, "the host backend has no doubling broadcast (it has pipeline, direct)"},
		{"allreduce", 3, Tuning{Algorithm: AlgoDoubling}, "recursive doubling needs a power-of-two group, and allreduce runs on 3 ranks"},
		{"allgather", 2, Tuning{Algorithm: AlgoDirect}, "the host backend has no direct allgather (it has ring, doubling)"},
	}
	for _, c := range cases {
		coll, _ := bench.LookupCollective(c.coll)
		comm := openTuned(t, c.n, 1<<10, c.tu)
		o, _ := bench.Options{Coll: coll, Sweep: bench.Sweep{Min: 64, Max: 64, Factor: 2}, Iters: 1, Agg: 1, Cycles: 1,
			Types: []numeric.DataType{numeric.Float32}, Ops: []numeric.RedOp{numeric.Sum}, Average: 1}.Validate(c.n)
		e := bench.Engine{Comm: comm, CommRanks: c.n, Opts: o}
		_, err := e.Run(context.Background(), func(bench.Row) {})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on %d ranks with %+v: %v, want %q", c.coll, c.n, c.tu, err, c.want)
		}
	}
	for _, tu := range []Tuning{{Algorithm: "tree"}, {Segment: 8}, {Segment: 100}, {Segment: MaxSegment + 16}} {
		if _, err := (Backend{Tuning: tu}).Open(context.Background(), bench.Setup{JobRanks: 2, LocalRanks: 2, BufBytes: 64}); err == nil {
			t.Errorf("%+v accepted", tu)
		}
	}
}

// The choice of each call: a tuner file's first matching row over the
// backend's own, a forced setting over both; the log says, per call of
// the group's rank 0, what ran, as NCCL's TUNING lines do (recursive
// doubling moves whole messages: whatever segment was asked for, it runs
// and is logged with the default).
func TestChoicePrecedenceAndLog(t *testing.T) {
	rules := Rules{
		{Collective: "allreduce", MinBytes: 0, MaxBytes: 4096, Algorithm: AlgoRing, Protocol: "1K", Channels: 1, Nodes: tuner.Any, Ranks: 4, PipeOps: tuner.Any, RegBuff: tuner.Any},
		{Collective: "allreduce", MinBytes: 0, MaxBytes: 1 << 30, Algorithm: AlgoDoubling, Protocol: "64K", Channels: 1, Nodes: 1, Ranks: tuner.Any, PipeOps: tuner.Any, RegBuff: tuner.Any},
		{Collective: "broadcast", MinBytes: 0, MaxBytes: 1 << 30, Algorithm: AlgoDirect, Protocol: "64K", Channels: 1, Nodes: 2, Ranks: tuner.Any, PipeOps: tuner.Any, RegBuff: tuner.Any},
	}
	coll, _ := bench.LookupCollective("allreduce")
	bcast, _ := bench.LookupCollective("broadcast")
	cases := []struct {
		name string
		tu   Tuning
		coll *bench.Collective
		want string
	}{
		{"own choice, small", Tuning{}, coll, "AllReduce: 1024 Bytes -> Algo DOUBLING proto 256K channel{Lo..Hi}={0..0}\n" +
			"AllReduce: 1048576 Bytes -> Algo RING proto 256K channel{Lo..Hi}={0..0}\n"},
		{"own model, no doubling", Tuning{DoublingMax: NoDoubling}, coll, "AllReduce: 1024 Bytes -> Algo RING proto 256K channel{Lo..Hi}={0..0}\n" +
			"AllReduce: 1048576 Bytes -> Algo RING proto 256K channel{Lo..Hi}={0..0}\n"},
		{"own model, doubling to 1M", Tuning{DoublingMax: 1 << 20}, coll, "AllReduce: 1024 Bytes -> Algo DOUBLING proto 256K channel{Lo..Hi}={0..0}\n" +
			"AllReduce: 1048576 Bytes -> Algo DOUBLING proto 256K channel{Lo..Hi}={0..0}\n"},
		{"the table's over the model", Tuning{Table: rules, DoublingMax: NoDoubling}, coll, "AllReduce: 1024 Bytes -> Algo RING proto 1K channel{Lo..Hi}={0..0}\n" +
			"AllReduce: 1048576 Bytes -> Algo DOUBLING proto 256K channel{Lo..Hi}={0..0}\n"},
		{"forced over the table", Tuning{Table: rules, Algorithm: AlgoRing, Segment: 4096}, coll,
			"AllReduce: 1024 Bytes -> Algo RING proto 4K channel{Lo..Hi}={0..0}\n" +
				"AllReduce: 1048576 Bytes -> Algo RING proto 4K channel{Lo..Hi}={0..0}\n"},
		{"a row for other nodes", Tuning{Table: rules}, bcast, "Broadcast: 1024 Bytes -> Algo PIPELINE proto 256K channel{Lo..Hi}={0..0}\n" +
			"Broadcast: 1048576 Bytes -> Algo PIPELINE proto 256K channel{Lo..Hi}={0..0}\n"},
	}
	for _, c := range cases {
		var log syncBuffer
		c.tu.Log = &log
		comm := openTuned(t, 4, 1<<20, c.tu)
		o, err := bench.Options{Coll: c.coll, Sweep: bench.Sweep{Min: 1024, Max: 1 << 20, Factor: 1024}, Iters: 1, Agg: 1, Cycles: 1,
			Check: 1, Types: []numeric.DataType{numeric.Float32}, Ops: []numeric.RedOp{numeric.Sum}, Average: 1}.Validate(4)
		if err != nil {
			t.Fatal(err)
		}
		e := bench.Engine{Comm: comm, CommRanks: 4, Opts: o}
		if _, err := e.Run(context.Background(), func(bench.Row) {}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := distinctLines(log.String()); got != c.want {
			t.Errorf("%s: the log says\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

// distinctLines keeps the first of each run of equal lines.
func distinctLines(s string) string {
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" && (len(out) == 0 || out[len(out)-1] != l) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// syncBuffer is a buffer ranks may write from their goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
