package host

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/internal/tier"
)

func open(t testing.TB, n int, bufBytes int64) bench.Comm {
	t.Helper()
	return openVia(t, TransportAuto, n, bufBytes)
}

// openVia opens n ranks in this process joined by transport tr.
func openVia(t testing.TB, tr Transport, n int, bufBytes int64) bench.Comm {
	t.Helper()
	comm, err := Backend{Transport: tr}.Open(context.Background(), bench.Setup{JobRanks: n, LocalRanks: n, BufBytes: bufBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { comm.Close() })
	return comm
}

func runEngine(t *testing.T, comm bench.Comm, n int, o bench.Options) (bench.Summary, []bench.Row) {
	t.Helper()
	o, err := o.Validate(n)
	if err != nil {
		t.Fatal(err)
	}
	e := bench.Engine{Comm: comm, CommRanks: n, Opts: o}
	var rows []bench.Row
	sum, err := e.Run(context.Background(), func(r bench.Row) { rows = append(rows, r) })
	if err != nil {
		t.Fatal(err)
	}
	return sum, rows
}

// Every collective, every reduction, a spread of types and rank counts
// (odd ones included, and sizes that do not split evenly): all results
// exact, over shared memory and over TCP.
func TestCollectivesVerify(t *testing.T) {
	for _, tr := range tier.Cases([]Transport{TransportSharedMemory, TransportTCP}, []Transport{TransportSharedMemory}) {
		t.Run(tr.String(), func(t *testing.T) { verifyCollectives(t, tr) })
	}
}

func verifyCollectives(t *testing.T, tr Transport) {
	types := tier.Cases([]numeric.DataType{numeric.Int8, numeric.Uint32, numeric.Int64, numeric.Float16,
		numeric.Float32, numeric.Float64, numeric.Bfloat16, numeric.Float8e4m3, numeric.Float8e5m2},
		[]numeric.DataType{numeric.Int8, numeric.Float16, numeric.Float32, numeric.Bfloat16, numeric.Float8e4m3})
	for _, coll := range bench.Collectives {
		ranks := tier.Cases([]int{1, 2, 3, 5}, []int{1, 3})
		if coll.PowerOfTwo {
			ranks = tier.Cases([]int{1, 2, 4, 8}, []int{1, 4})
		}
		for _, n := range ranks {
			t.Run(fmt.Sprintf("%s/n=%d", coll.Name, n), func(t *testing.T) {
				comm := openVia(t, tr, n, 1<<12)
				o := bench.Options{Coll: coll, Sweep: bench.Sweep{Min: 8, Max: 1 << 12, Factor: 8}, Iters: 1, Warmup: 1,
					Agg: 1, Cycles: 1, Check: 1, Types: types, Ops: numeric.AllOps(), Root: -1, Average: 1}
				sum, rows := runEngine(t, comm, n, o)
				if sum.ErrorCases != 0 {
					for _, r := range rows {
						if r.OutOfPlace.Wrong+r.InPlace.Wrong > 0 {
							t.Errorf("%v %v root %d size %d: #wrong %d / %d", r.Type, r.Op, r.Root, r.Size, r.OutOfPlace.Wrong, r.InPlace.Wrong)
						}
					}
				}
				if len(rows) == 0 {
					t.Fatal("no rows")
				}
			})
		}
	}
}

// Segmented pipelines and rings with messages larger than a segment, and
// the blocking and aggregation modes.
func TestLargeMessagesAndModes(t *testing.T) {
	type mode struct {
		blocking bench.Blocking
		agg      int
	}
	for _, mode := range tier.Cases([]mode{{0, 1}, {0, 3}, {1, 1}, {2, 2}, {3, 1}}, []mode{{0, 3}, {2, 2}}) {
		for _, coll := range []string{"allreduce", "reduce", "broadcast", "reducescatter"} {
			t.Run(fmt.Sprintf("%s/z%d/m%d", coll, mode.blocking, mode.agg), func(t *testing.T) {
				c, _ := bench.LookupCollective(coll)
				comm := open(t, 3, 1<<20)
				o := bench.Options{Coll: c, Sweep: bench.Sweep{Min: 1 << 20, Max: 1 << 20, Factor: 2}, Iters: 2, Warmup: 0,
					Agg: mode.agg, Cycles: 1, Check: 1, Types: []numeric.DataType{numeric.Float32},
					Ops: []numeric.RedOp{numeric.Sum}, Root: 1, Blocking: mode.blocking, Average: 1}
				sum, rows := runEngine(t, comm, 3, o)
				if sum.ErrorCases != 0 {
					t.Fatalf("wrong results: %+v", rows)
				}
				r := rows[0]
				if r.OutOfPlace.Time <= 0 || r.OutOfPlace.BusBW <= 0 || r.OutOfPlace.Iter.N != 2 || r.OutOfPlace.Iter.Min <= 0 {
					t.Errorf("implausible measurement: %+v", r.OutOfPlace)
				}
			})
		}
	}
}

func TestAbortUnblocksWait(t *testing.T) {
	comm := open(t, 2, 1<<20).(*Comm)
	c, _ := bench.LookupCollective("sendrecv")
	// Rank 1 alone runs a call; rank 0 never joins, so rank 1 blocks reading.
	r1 := comm.ranks[1]
	comm.pending.Add(1)
	r1.work <- bench.Batch{Op: bench.Op{Coll: c, Type: numeric.Float32, RedOp: numeric.NoOp,
		Counts: bench.Counts{Send: 1024, Recv: 1024, Param: 1024}}, Iters: 1, Agg: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := comm.Wait(ctx); err == nil {
		t.Fatal("Wait returned without the peer")
	}
	comm.pending.Add(1) // rank 0's share, which never comes
	comm.Abort()
	comm.pending.Done()
	done := make(chan error, 1)
	go func() { done <- comm.Wait(context.Background()) }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("aborted call reported success")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Abort did not unblock the stream")
	}
	if err := comm.Enqueue(bench.Batch{}); err == nil {
		t.Error("Enqueue accepted after Abort")
	}
}

func TestOpenRefusesHugeBuffers(t *testing.T) {
	_, err := Backend{}.Open(context.Background(), bench.Setup{JobRanks: 4, LocalRanks: 4, BufBytes: 1 << 50})
	if err == nil {
		t.Fatal("1 PiB buffers accepted")
	}
}

// Groups of a power-of-two size run small all-reduces, all-gathers and
// reduce-scatters by recursive doubling or halving and large ones on the
// ring: both exact, for every reduction, on either side of doublingMax,
// in and out of place.
func TestDoublingAndRing(t *testing.T) {
	types := []numeric.DataType{numeric.Int8, numeric.Float32} // an integer average divides once, at the end
	for _, name := range []string{"allreduce", "allgather", "reducescatter"} {
		for _, c := range []struct {
			n     int
			sweep bench.Sweep
		}{
			{8, bench.Sweep{Min: 64, Max: 32 << 10, Factor: 8}},
			{4, bench.Sweep{Min: 64, Max: 32 << 10, Factor: 8}},
			{4, bench.Sweep{Min: doublingMax, Max: 2 * doublingMax, Factor: 2}}, // the last doubling size, then the ring
		} {
			t.Run(fmt.Sprintf("%s/n=%d/%d-%d", name, c.n, c.sweep.Min, c.sweep.Max), func(t *testing.T) {
				coll, _ := bench.LookupCollective(name)
				comm := open(t, c.n, c.sweep.Max)
				o := bench.Options{Coll: coll, Sweep: c.sweep, Iters: 1, Warmup: 0,
					Agg: 1, Cycles: 1, Check: 1, Types: types, Ops: numeric.AllOps(), Average: 1}
				if c.n == 8 {
					o.Types = types[1:]
				}
				if c.sweep.Max > doublingMax { // one operator that scales a rank's own share, one that does not
					o.Types, o.Ops = []numeric.DataType{numeric.Float32}, []numeric.RedOp{numeric.Sum, numeric.MulSum}
				}
				sum, rows := runEngine(t, comm, c.n, o)
				for _, r := range rows {
					if r.OutOfPlace.Wrong+r.InPlace.Wrong > 0 {
						t.Errorf("%v %v size %d: #wrong %d / %d", r.Type, r.Op, r.Size, r.OutOfPlace.Wrong, r.InPlace.Wrong)
					}
				}
				if sum.ErrorCases != 0 || len(rows) == 0 {
					t.Errorf("%d rows, %d wrong", len(rows), sum.ErrorCases)
				}
			})
		}
	}
}

// Ranks write small messages from their own goroutine before reading
// (inlineLimit). With socket buffers of 32 KiB, so that writes do wait
// for peers to read, no group of ranks waits on itself: every collective that writes inline completes, correct, on
// rings of odd and even size and on a power of two, with messages on
// both sides of the limit. (Buffers of 16 KiB or less stall TCP on
// loopback itself, inline writes or not: its segments are 64 KiB, the
// window no longer holds one, and the sender waits on zero-window
// probes.)
func TestInlineWritesCannotDeadlock(t *testing.T) {
	// Over TCP: a shared-memory ring holds four of the largest inline
	// message by construction (ringFor).
	saved := socketBuffer
	socketBuffer = 32 << 10 // the kernel doubles it: 64 KiB, a limit of 16 KiB
	t.Cleanup(func() { socketBuffer = saved })
	for _, name := range tier.Cases([]string{"allreduce", "allgather", "reducescatter", "alltoall", "sendrecv"}, []string{"allreduce", "alltoall"}) {
		for _, n := range []int{3, 8} {
			t.Run(fmt.Sprintf("%s/n=%d", name, n), func(t *testing.T) {
				coll, _ := bench.LookupCollective(name)
				size := int64(inlineSend) * int64(n) // chunks (and all-to-all blocks) of 4, 16 and 64 KiB
				comm := openVia(t, TransportTCP, n, size)
				o := bench.Options{Coll: coll, Sweep: bench.Sweep{Min: size / 16, Max: size, Factor: 4}, Iters: 5, Warmup: 1,
					Agg: 2, Cycles: 1, Check: 1, Types: []numeric.DataType{numeric.Float32}, Ops: []numeric.RedOp{numeric.Sum}, Average: 1,
					Timeout: time.Minute}
				sum, rows := runEngine(t, comm, n, o)
				if sum.ErrorCases != 0 || len(rows) != 3 {
					t.Errorf("%d rows, %d wrong", len(rows), sum.ErrorCases)
				}
			})
		}
	}
}
