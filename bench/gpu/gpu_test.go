package gpu

import (
	"os"
	"testing"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/cuda"
	"github.com/collbench/collbench/nccl"
)

// TestMain allows several ranks per GPU before NCCL reads its settings,
// which it does once per process.
func TestMain(m *testing.M) {
	if os.Getenv("NCCL_MULTI_RANK_GPU_ENABLE") == "" {
		os.Setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1")
	}
	os.Exit(m.Run())
}

// openGPUs opens n ranks on the GPUs of this machine, several on one GPU
// when there are fewer GPUs than ranks (NCCL 2.30 and later), and skips
// the test with the reason when that is not possible.
func openGPUs(t *testing.T, n int, bufBytes int64) bench.Comm {
	t.Helper()
	b := Backend{}
	if _, err := b.Load(); err != nil {
		t.Skipf("needs an NVIDIA GPU with the CUDA driver and NCCL: %v", err)
	}
	count, err := cuda.DeviceCount()
	if err != nil || count == 0 {
		t.Skipf("needs an NVIDIA GPU: the driver sees none (%v)", err)
	}
	devs := make([]int, n)
	for i := range devs {
		devs[i] = i % count
	}
	if n > count {
		if nccl.RuntimeVersion() < nccl.V(2, 30, 0) {
			t.Skipf("%d ranks on %d GPU(s) needs NCCL 2.30 (loaded %s)", n, count, nccl.RuntimeVersion())
		}
	}
	comm, err := b.Open(t.Context(), bench.Setup{JobRanks: n, LocalRanks: n, BufBytes: bufBytes, Devices: devs})
	if err != nil {
		t.Fatalf("opening %d rank(s) on GPUs %v: %v", n, devs, err)
	}
	t.Cleanup(func() { comm.Close() })
	return comm
}

// TestCollectivesOnGPU runs every collective with checks on the GPUs of
// this machine, for the types and operators the GPU and NCCL support.
func TestCollectivesOnGPU(t *testing.T) {
	for _, ranks := range []int{1, 2} {
		comm := openGPUs(t, ranks, 1<<20)
		caps := comm.Capabilities()
		var types []numeric.DataType
		for _, ty := range numeric.AllTypes() {
			if caps.Type(ty) == nil {
				types = append(types, ty)
			}
		}
		var skip []bench.TypeOp
		for _, ty := range types {
			for _, op := range numeric.AllOps() {
				if caps.Pair(ty, op) != nil {
					skip = append(skip, bench.TypeOp{Type: ty, Op: op})
				}
			}
		}
		for _, coll := range bench.Collectives {
			opts := bench.Options{Coll: coll, Sweep: bench.Sweep{Min: 8, Max: 1 << 20, Factor: 64}, Iters: 3, Warmup: 1,
				Agg: 1, Cycles: 1, Check: 1, Types: types, Ops: numeric.AllOps(), Skip: skip, Root: -1, Average: 1,
				Timeout: 30 * time.Second, IterTiming: true}
			opts, err := opts.Validate(ranks)
			if err != nil {
				t.Fatal(err)
			}
			eng := &bench.Engine{Comm: comm, Opts: opts, CommRanks: ranks}
			sum, err := eng.Run(t.Context(), func(r bench.Row) {
				if r.OutOfPlace.Iter.N != opts.Iters {
					t.Errorf("%s %s: %d per-iteration samples, want %d", coll.Name, r.Type, r.OutOfPlace.Iter.N, opts.Iters)
				}
			})
			if err != nil {
				t.Fatalf("%d rank(s) %s: %v", ranks, coll.Name, err)
			}
			if sum.ErrorCases != 0 {
				t.Errorf("%d rank(s) %s: %d cases with wrong results", ranks, coll.Name, sum.ErrorCases)
			}
		}
	}
}

// TestGraphModeOnGPU captures and replays all-reduce as -G does.
func TestGraphModeOnGPU(t *testing.T) {
	comm := openGPUs(t, 1, 1<<20)
	coll, _ := bench.LookupCollective("allreduce")
	opts := bench.Options{Coll: coll, Sweep: bench.Sweep{Min: 1024, Max: 1 << 20, Factor: 32}, Iters: 5, Warmup: 1, Agg: 2,
		Cycles: 1, Check: 1, Types: []numeric.DataType{numeric.Float32}, Ops: []numeric.RedOp{numeric.Sum}, Graph: 3, Average: 1}
	sum, err := (&bench.Engine{Comm: comm, Opts: opts, CommRanks: 1}).Run(t.Context(), func(r bench.Row) {
		if r.OutOfPlace.Time <= 0 {
			t.Errorf("size %d: no time measured", r.Size)
		}
	})
	if err != nil || sum.ErrorCases != 0 {
		t.Fatalf("graph run: %v, %d wrong cases", err, sum.ErrorCases)
	}
}

// The overlap experiment on a GPU: a bf16 GEMM through cuBLAS and a
// device copy against an all-reduce; every figure present and slowdowns
// at least 1 within noise.
func TestOverlapOnGPU(t *testing.T) {
	comm := openGPUs(t, 1, 64<<20)
	if _, err := cuda.LoadBLAS(""); err != nil {
		t.Skipf("needs cuBLAS: %v", err)
	}
	coll, _ := bench.LookupCollective("allreduce")
	x := bench.Overlap{Comm: comm, CommRanks: 1, Opts: bench.OverlapOptions{Coll: coll, Type: numeric.Float32,
		RedOp: numeric.Sum, Target: 50 * time.Millisecond, Cover: 4, Timeout: time.Minute}}
	for _, w := range []bench.Workload{
		{Kind: bench.GEMM, M: 2048, N: 2048, K: 2048, Type: numeric.Bfloat16},
		{Kind: bench.Copy, Bytes: 256 << 20},
	} {
		f, err := x.Measure(t.Context(), 64<<20, w)
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		t.Logf("%s: %+v", w, f)
		if f.CommAlone <= 0 || f.ComputeAlone <= 0 || f.CommSlowdown < 0.8 || f.ComputeSlowdown < 0.8 {
			t.Errorf("%s: implausible figures %+v", w, f)
		}
	}
}

// TestRegroupOnGPU splits four job-wide ranks into the pairs of each round
// of a round robin and into a pair that leaves two ranks out, checks an
// all-reduce and a send/receive on every split, closes it, and checks the
// job-wide communicators still run afterwards.
func TestRegroupOnGPU(t *testing.T) {
	const ranks, buf = 4, 1 << 20
	comm := openGPUs(t, ranks, buf)
	r, ok := comm.(bench.Regrouper)
	if !ok {
		t.Fatal("the nccl backend's communicators do not regroup")
	}
	check := func(c bench.Comm, name string, commRanks, groups int) {
		t.Helper()
		coll, _ := bench.LookupCollective(name)
		opts, err := bench.Options{Coll: coll, Sweep: bench.Sweep{Min: 1024, Max: buf, Factor: 32}, Iters: 3, Warmup: 1,
			Agg: 1, Cycles: 1, Check: 1, Types: []numeric.DataType{numeric.Float32}, Ops: []numeric.RedOp{numeric.Sum},
			Root: -1, Average: 1, Timeout: 30 * time.Second}.Validate(commRanks)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := (&bench.Engine{Comm: c, Opts: opts, CommRanks: commRanks, Groups: groups}).Run(t.Context(), func(bench.Row) {})
		if err != nil || sum.ErrorCases != 0 {
			t.Fatalf("%s on %d group(s) of %d: %v, %d wrong case(s)", name, groups, commRanks, err, sum.ErrorCases)
		}
	}
	for _, sets := range [][][]int{{{0, 3}, {1, 2}}, {{0, 1}, {2, 3}}, {{0, 2}, {1, 3}}, {{1, 2}}} {
		began := time.Now()
		sub, err := r.Regroup(bench.Grouping{Sets: sets})
		if err != nil {
			t.Fatalf("regrouping into %v: %v", sets, err)
		}
		made := time.Since(began)
		check(sub, "allreduce", 2, len(sets))
		check(sub, "sendrecv", 2, len(sets))
		began = time.Now()
		if err := sub.Close(); err != nil {
			t.Fatalf("closing %v: %v", sets, err)
		}
		t.Logf("%v: made in %v, closed in %v", sets, made, time.Since(began))
	}
	if _, err := r.Regroup(bench.Grouping{Sets: [][]int{{0, 5}}}); err == nil {
		t.Error("a grouping outside the job was regrouped")
	}
	// Several rounds' splits kept, idle, and closed together in one NCCL
	// group, as collbench health closes its waves'.
	// The job's communicators see the memory the idle ones hold.
	var idle []bench.Comm
	free := func() int64 {
		t.Helper()
		u, err := comm.(bench.MemoryReporter).MemoryUse()
		if err != nil || u.Free <= 0 {
			t.Fatalf("free memory %d: %v", u.Free, err)
		}
		return u.Free
	}
	before := free()
	for _, sets := range [][][]int{{{0, 3}, {1, 2}}, {{0, 1}, {2, 3}}, {{0, 2}, {1, 3}}} {
		sub, err := r.Regroup(bench.Grouping{Sets: sets})
		if err != nil {
			t.Fatalf("regrouping into %v: %v", sets, err)
		}
		check(sub, "sendrecv", 2, len(sets))
		idle = append(idle, sub)
		t.Logf("%d set(s) idle after send/receive: %d MiB of the GPU taken", len(idle), (before-free())>>20)
	}
	if kept := free(); kept >= before {
		t.Errorf("free memory %d bytes with %d idle sets, %d before", kept, len(idle), before)
	}
	began := time.Now()
	if err := bench.CloseAll(idle); err != nil {
		t.Fatalf("closing %d regrouped sets together: %v", len(idle), err)
	}
	t.Logf("%d regrouped sets closed together in %v", len(idle), time.Since(began))
	check(comm, "allreduce", ranks, 1)
}
