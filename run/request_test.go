package run

import (
	"errors"
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
)

// A request is checked in the library, naming the settings (the command
// line says them as its flags), so a Go program gets the same refusals.
func TestRequestsRefuse(t *testing.T) {
	job := JobRequest{NGPUs: 1, Threads: 1, Backend: "auto", Layout: "consecutive"}
	env := func(string) string { return "" }
	cases := []struct {
		name string
		err  func() error
		want string
	}{
		{"no GPUs", func() error { j := job; j.NGPUs = 0; _, err := j.Settings("v", env); return err }, "RanksPerProc must be at least 1"},
		{"too many ranks", func() error {
			j := job
			j.Threads = 2
			j.NGPUs = MaxLocalRanks
			_, err := j.Settings("v", env)
			return err
		}, "at most 1024 ranks"},
		{"layout", func() error { j := job; j.Layout = "diagonal"; _, err := j.Settings("v", env); return err }, "unknown Layout"},
		{"timeout", func() error { j := job; j.Timeout = -1; _, err := j.Settings("v", env); return err }, "Timeout cannot be negative"},
		{"backend", func() error { j := job; j.Backend = "tpu"; _, err := j.Settings("v", env); return err }, "unknown Backend"},
		{"no iterations", func() error { return (&SweepRequest{Iters: 0, Factor: 1}).Validate() }, "Iters must be at least 1 (got 0)"},
		{"skip", func() error { return (&SweepRequest{Iters: 3, IterSkip: 3, Factor: 1}).Validate() }, "IterSkip must be between"},
		{"switch", func() error { return (&SweepRequest{Iters: 3, Factor: 1, MemoryReport: 2}).Validate() }, "MemoryReport must be 0 or 1"},
		{"moe", func() error { return (&TrafficRequest{MoE: "8"}).routingErr() }, "want EXPERTS,TOPK"},
		{"zipf", func() error { return (&TrafficRequest{MoE: "8,2", Routing: "zipf:-1"}).routingErr() }, "zipf:S with a skew"},
		{"negative experts", func() error { return (&TrafficRequest{MoE: "-4,2", Routing: "uniform"}).routingErr() }, "at least 1"},
		{"no experts", func() error { return (&TrafficRequest{MoE: "0,0", Routing: "zipf:1"}).routingErr() }, "at least 1"},
		{"top-k over experts", func() error { return (&TrafficRequest{MoE: "4,8", Routing: "uniform"}).routingErr() }, "more than the 4 experts"},
		{"too many experts", func() error { return (&TrafficRequest{MoE: "2000000000,1", Routing: "uniform"}).routingErr() }, "at most 65536 experts"},
		{"spread", func() error { _, err := (&TrafficRequest{Spread: 2}).Pattern(); return err }, "Spread must be between 0 and 1"},
		{"profile", func() error { _, err := (&ProfileRequest{Colls: "allreduce,nope"}).Spec(nil); return err }, "Colls"},
		{"overlap preset", func() error {
			return (&OverlapRequest{Preset: "x", Target: 1}).Validate(func(string) bool { return false })
		}, "unknown Preset"},
		{"min bw", func() error { _, err := MinBusBW(func(string) string { return "-3" }); return err }, "cannot be negative"},
	}
	for _, c := range cases {
		err := c.err()
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, new(UsageError)) {
			t.Errorf("%s: got %v, want a usage error containing %q", c.name, err, c.want)
		}
	}
	s, err := job.Settings("v", env)
	if err != nil || s.RanksPerProc != 1 || s.Backend != "auto" || s.Version != "v" {
		t.Errorf("a good job request gave %+v, %v", s, err)
	}
}

func (t *TrafficRequest) routingErr() error { _, err := t.RoutingOf(); return err }

// nccl-tests' variables fill only what the caller did not give.
func TestTrafficFromEnv(t *testing.T) {
	env := map[string]string{"NCCL_TESTS_ALLTOALLV_SPREAD": "0.25", "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE": "2", "NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY": "1"}
	tr := TrafficRequest{Spread: 1, Scale: 1}
	if err := tr.FromEnv(func(n string) bool { return n == "Scale" }, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if tr.Spread != 0.25 || tr.Scale != 1 || !tr.Summary {
		t.Errorf("got %+v: want the spread and summary from the environment, the given scale kept", tr)
	}
	env["NCCL_TESTS_ALLTOALLV_SPREAD"] = "NaN"
	if err := tr.FromEnv(func(string) bool { return false }, func(k string) string { return env[k] }); err == nil {
		t.Error("a NaN spread was accepted")
	}
}

// The defaults are the library's: a Go program that starts from them
// runs nccl-tests' default sweep, as the command line does without flags.
func TestDefaultRequestsRun(t *testing.T) {
	job, sweep := DefaultJobRequest(), DefaultSweepRequest()
	s, err := job.Settings("v", func(string) string { return "" })
	if err != nil {
		t.Fatalf("the default job is refused: %v", err)
	}
	if err := sweep.Validate(); err != nil {
		t.Fatalf("the default sweep is refused: %v", err)
	}
	allreduce, _ := bench.LookupCollective("allreduce")
	spec, err := sweep.Spec(allreduce, job, false, func(string) string { return "" }, nil)
	if err != nil {
		t.Fatalf("the default sweep gives no spec: %v", err)
	}
	o := spec.Opts
	if s.RanksPerProc != 1 || o.Sweep.Min != 32<<20 || o.Sweep.Max != 32<<20 || o.Iters != 20 || o.Warmup != 1 || o.Agg != 1 ||
		o.Cycles != 1 || o.Check != 1 || o.Average != 1 || len(o.Types) != 1 || o.Types[0].String() != "float" || len(o.Ops) != 1 || o.Ops[0].String() != "sum" {
		t.Errorf("the defaults are not nccl-tests': %d rank(s) per process, %+v", s.RanksPerProc, o)
	}
}
