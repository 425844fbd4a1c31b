package host

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/cluster"
)

// procJob is a job of nprocs "processes" in this test, each with its own
// backend Open, joined by a real rendezvous store.
func procJob(t *testing.T, nprocs int) []*cluster.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	store := cluster.Serve(ln, cluster.StoreConfig{Token: "t", Size: nprocs})
	t.Cleanup(func() { store.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	clients := make([]*cluster.Client, nprocs)
	for p := range clients {
		if clients[p], err = cluster.Dial(ctx, ln.Addr().String(), cluster.DialConfig{Token: "t", Rank: p, Size: nprocs}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { clients[p].Close() })
	}
	return clients
}

// Two processes with two ranks each, split into strided pairs: each
// process holds one rank of each group, every group checks out, and the
// connections of the mesh went between the processes.
func TestProcessesAndGroups(t *testing.T) {
	for _, g := range []bench.Grouping{{}, {Size: 2, Strided: true}, {Size: 2}, {Size: 2, Isolated: true}} {
		clients := procJob(t, 2)
		coll, _ := bench.LookupCollective("allreduce")
		var wg sync.WaitGroup
		errs := make([]error, 2)
		sums := make([]bench.Summary, 2)
		for p := 0; p < 2; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := context.Background()
				s := bench.Setup{JobRanks: 4, FirstRank: 2 * p, LocalRanks: 2, BufBytes: 1 << 16, Groups: g,
					Exchange: clients[p].AllGather}
				comm, err := Backend{}.Open(ctx, s)
				if err != nil {
					errs[p] = err
					return
				}
				defer comm.Close()
				o := bench.Options{Coll: coll, Sweep: bench.Sweep{Min: 1 << 10, Max: 1 << 16, Factor: 8}, Iters: 2,
					Agg: 1, Cycles: 1, Check: 1, Types: []numeric.DataType{numeric.Int32, numeric.Float32},
					Ops: []numeric.RedOp{numeric.Sum, numeric.MulSum}, Average: 1}
				o, err = o.Validate(g.Of(4))
				if err != nil {
					errs[p] = err
					return
				}
				e := bench.Engine{Comm: comm, Peers: cluster.Peers{C: clients[p]}, Opts: o, CommRanks: g.Of(4), Groups: g.Groups(4)}
				sums[p], errs[p] = e.Run(ctx, func(bench.Row) {})
			}()
		}
		wg.Wait()
		for p := range errs {
			if errs[p] != nil {
				t.Fatalf("%+v process %d: %v", g, p, errs[p])
			}
			if sums[p].ErrorCases != 0 || sums[p].Rows == 0 {
				t.Errorf("%+v process %d: %+v", g, p, sums[p])
			}
		}
	}
}

// A stranger at a rank's mesh port — wrong key, or silence — is dropped
// and the ranks still connect.
func TestMeshRefusesStrangers(t *testing.T) {
	clients := procJob(t, 2)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for p := 0; p < 2; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			exchange := func(ctx context.Context, mine []byte) ([][]byte, error) {
				var ep endpoint
				if err := json.Unmarshal(mine, &ep); err == nil {
					for _, addr := range ep.Addrs { // knock first, with a wrong key and with nothing
						if c, err := net.Dial("tcp", addr); err == nil {
							c.Write(make([]byte, 4+keyLen))
							defer c.Close()
						}
						if c, err := net.Dial("tcp", addr); err == nil {
							defer c.Close()
						}
					}
				}
				return clients[p].AllGather(ctx, mine)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			comm, err := Backend{}.Open(ctx, bench.Setup{JobRanks: 2, FirstRank: p, LocalRanks: 1, BufBytes: 64, Exchange: exchange})
			if err == nil {
				comm.Close()
			}
			errs[p] = err
		}()
	}
	wg.Wait()
	for p, err := range errs {
		if err != nil {
			t.Errorf("process %d: %v", p, err)
		}
	}
}

// A Point whose plan cuts one group after its first call ends for every
// process: the cut group's figure is that call, the other group times its
// iterations, and with every process cut the row's time is the slowest
// first call. Checked results ride along without the cut group.
func TestPointCut(t *testing.T) {
	for _, c := range []struct {
		name string
		cut  []bool
	}{
		{"one group", []bool{false, false, true, true}},
		{"every group", []bool{true, true, true, true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clients := procJob(t, 4)
			coll, _ := bench.LookupCollective("allreduce")
			g := bench.Grouping{Size: 2}
			var wg sync.WaitGroup
			rows := make([]bench.Row, 4)
			errs := make([]error, 4)
			firsts := make([][]time.Duration, 4)
			for p := 0; p < 4; p++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					s := bench.Setup{JobRanks: 4, FirstRank: p, LocalRanks: 1, BufBytes: 1 << 16, Groups: g, Exchange: clients[p].AllGather}
					comm, err := Backend{}.Open(ctx, s)
					if err != nil {
						errs[p] = err
						return
					}
					defer comm.Close()
					o, err := bench.Options{Coll: coll, Sweep: bench.Sweep{Min: 1 << 16, Max: 1 << 16, Factor: 2}, Iters: 7, Warmup: 3,
						Agg: 1, Check: 1, Types: []numeric.DataType{numeric.Float32}, Ops: []numeric.RedOp{numeric.Sum},
						Root: -1, Average: bench.AverageMax}.Validate(2)
					if err != nil {
						errs[p] = err
						return
					}
					e := bench.Engine{Comm: comm, Peers: cluster.Peers{C: clients[p]}, Opts: o, CommRanks: 2, Groups: 2}
					rows[p], errs[p] = e.Point(ctx, numeric.Float32, numeric.Sum, -1, 1<<16, bench.PointPlan{
						Cut: func(per []time.Duration) []bool {
							firsts[p] = per
							return c.cut
						}})
				}()
			}
			wg.Wait()
			for p, err := range errs {
				if err != nil {
					t.Fatalf("process %d: %v", p, err)
				}
			}
			for p := range rows {
				r := rows[p].OutOfPlace
				if len(firsts[p]) != 4 || slices.Contains(firsts[p], 0) || rows[p].Iters != 7 || len(r.Groups) != 2 || r.Wrong != 0 {
					t.Fatalf("process %d: first calls %v, %d iterations, groups %+v, %d wrong", p, firsts[p], rows[p].Iters, r.Groups, r.Wrong)
				}
				// The cut group's figure is its first call: the slower of
				// its two processes', as the group's time is their mean.
				cutTime := float64(max(firsts[p][2], firsts[p][3])) / 1e3
				mean := float64(firsts[p][2]+firsts[p][3]) / 2 / 1e3
				if got := r.Groups[1].Time; math.Abs(got-mean) > 1e-3*mean || got > cutTime {
					t.Errorf("process %d: the cut group's time %.1f µs, want its first calls' mean %.1f µs", p, got, mean)
				}
				if !c.cut[0] && (r.Time <= 0 || r.Groups[0].Time <= 0) {
					t.Errorf("process %d: the uncut group timed nothing: %+v", p, r)
				}
				if c.cut[0] && (r.Time <= 0 || r.BusBW <= 0) {
					t.Errorf("process %d: every process cut, yet the row has no time: %+v", p, r)
				}
			}
		})
	}
}
