package run_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/health"
	"github.com/collbench/collbench/healthcheck"
	"github.com/collbench/collbench/internal/otlpreceiver"
	"github.com/collbench/collbench/run"
)

// measurementCase runs one kind of measurement small, on the host
// backend; step is called on rank 0 as each record is made, and wrote as
// the outputs are written, with the error the writer was given.
type measurementCase struct {
	name string
	span string // the span the measurement runs under
	run  func(ctx context.Context, j *run.Job, step func(), wrote func(error)) error
}

func measurementCases() []measurementCase {
	allreduce, _ := bench.LookupCollective("allreduce")
	sweep := bench.Options{Coll: allreduce, Sweep: bench.Sweep{Min: 1 << 10, Max: 64 << 10, Factor: 2}, Iters: 20, Warmup: 1,
		Agg: 1, Cycles: 1, Types: []numeric.DataType{numeric.Float32}, Ops: []numeric.RedOp{numeric.Sum}}
	return []measurementCase{
		{"sweep", "sweep", func(ctx context.Context, j *run.Job, step func(), wrote func(error)) error {
			_, err := j.Sweep(ctx, run.SweepSpec{Opts: sweep}, run.SweepHooks{Record: func(document.Result, int) { step() },
				Write: func(_ *document.Run, err error) error { wrote(err); return nil }})
			return err
		}},
		{"moe", "sweep", func(ctx context.Context, j *run.Job, step func(), wrote func(error)) error {
			opts := bench.Options{Iters: 20, Warmup: 1, Agg: 1, Cycles: 1}
			r := &bench.Routing{Experts: 4, TopK: 2, Tokens: 64, Hidden: 64, Weights: bench.UniformWeights(4), Name: "uniform", Seed: 1}
			_, err := j.MoE(ctx, run.MoESpec{Routing: r, Type: numeric.Float32, Draws: 1, Opts: opts}, run.MoEHooks{
				Record: func(document.MoEPhase, int) { step() },
				Write:  func(_ *document.MoERun, err error) error { wrote(err); return nil }})
			return err
		}},
		{"overlap", "sweep", func(ctx context.Context, j *run.Job, step func(), wrote func(error)) error {
			_, err := j.Overlap(ctx, run.OverlapSpec{Coll: allreduce, CommType: numeric.Float32, RedOp: numeric.Sum,
				Sweep: bench.Sweep{Min: 1 << 10, Max: 64 << 10, Factor: 2}, GEMMs: []string{"32,32,32"}, Cover: 1,
				Target: 20 * time.Millisecond, CommPriority: "normal"},
				run.OverlapHooks{Record: func(document.OverlapResult, int) { step() },
					Write: func(_ *document.OverlapRun, err error) error { wrote(err); return nil }})
			return err
		}},
		{"profile", "suite", func(ctx context.Context, j *run.Job, step func(), wrote func(error)) error {
			var err error
			// Two curves, so that a record (a curve) comes before the end.
			allgather, _ := bench.LookupCollective("allgather")
			_, err = j.Profile(ctx, run.ProfileSpec{Colls: []*bench.Collective{allreduce, allgather}, Sweep: bench.Sweep{Min: 1 << 10, Max: 1 << 20, Factor: 2},
				Type: numeric.Float32, RedOp: numeric.Sum, Layout: []string{"consecutive"}, Iters: 20, MinIters: 1, NoOverlap: true},
				run.ProfileHooks{Record: func(document.ProfileCurve, int) { step() },
					Write: func(d *document.Profile, _ error) error {
						wrote(errors.New(strings.Join(d.Errors, "; ")))
						return nil
					}})
			return err
		}},
		{"health", "check", func(ctx context.Context, j *run.Job, step func(), wrote func(error)) error {
			_, err := healthcheck.Run(ctx, j, healthcheck.Spec{PairBytes: 64 << 10, ARBytes: 64 << 10, Type: numeric.Float32, Iters: 20, Passes: 3,
				Criteria: health.Criteria{MinDrop: 0.2, Z: 4}}, healthcheck.Hooks{Record: func(string, int) { step() },
				Write: func(_ *document.Health, err error) error { wrote(err); return nil }})
			return err
		}},
	}
}

// progressLog is a Progress that remembers what it heard.
type progressLog struct {
	begun, planned, done int
	cleared              bool
}

func (p *progressLog) Begin(_ string, planned int) { p.begun++; p.planned = planned }
func (p *progressLog) Update(done int, _ string)   { p.done, p.cleared = done, false }
func (p *progressLog) Clear()                      { p.cleared = true }
func (p *progressLog) Print(string)                {}

// Every measurement goes through the same steps: its outputs written
// once, on rank 0, its progress told the same way (the steps it plans,
// each as it ends, cleared at the end), and its telemetry opened,
// measured and written under the spans every command sends.
func TestEveryMeasurementTheSameSteps(t *testing.T) {
	for _, c := range measurementCases() {
		t.Run(c.name, func(t *testing.T) {
			rcv := otlpreceiver.Start()
			defer rcv.Close()
			j, err := run.NewJob(run.Settings{RanksPerProc: 2, Backend: "host", Version: "test", OTLPEndpoint: rcv.URL()}, func(string) string { return "" }, t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			prog := &progressLog{}
			j.Progress = prog
			writes := 0
			if err := c.run(t.Context(), j, func() {}, func(error) { writes++ }); err != nil {
				t.Fatal(err)
			}
			if writes != 1 {
				t.Errorf("outputs written %d times, want once", writes)
			}
			// A health check may confirm a suspect: steps beyond the plan.
			if prog.begun != 1 || prog.planned < 1 || prog.done < prog.planned || (c.name != "health" && prog.done != prog.planned) || !prog.cleared {
				t.Errorf("progress: begun %d times, %d steps planned, %d done, cleared at the end %v", prog.begun, prog.planned, prog.done, prog.cleared)
			}
			var names []string
			for _, s := range rcv.Spans() {
				names = append(names, s.Name)
			}
			for _, want := range []string{"open", c.span, "write"} {
				if !slices.Contains(names, want) {
					t.Errorf("no %q span among %q", want, names)
				}
			}
		})
	}
}

// A measurement whose peer is lost says which, to a Go program as to the
// command line: the error it returns and the one its outputs record are
// the job's, whatever the local symptom was. The peer is a real process,
// killed after rank 0's first record.
func TestLostPeerExplainedByEveryMeasurement(t *testing.T) {
	for _, c := range measurementCases() {
		if c.name == "moe" {
			continue // one exchange: there is no record to stop after
		}
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
			ln.Close()
			vars := func(rank int) map[string]string {
				return map[string]string{"RANK": strconv.Itoa(rank), "WORLD_SIZE": "2", "LOCAL_RANK": strconv.Itoa(rank),
					"LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "COLLBENCH_TOKEN": "t-" + t.Name()}
			}
			peer := exec.Command(os.Args[0], "-test.run=^TestPeerRank$")
			peer.Env = append(os.Environ(), peerCaseVar+"="+c.name)
			for k, v := range vars(1) {
				peer.Env = append(peer.Env, k+"="+v)
			}
			var peerOut strings.Builder
			peer.Stdout, peer.Stderr = &peerOut, &peerOut
			if err := peer.Start(); err != nil {
				t.Fatal(err)
			}
			waited := make(chan struct{})
			go func() { peer.Wait(); close(waited) }()
			defer func() { peer.Process.Kill(); <-waited }()
			v0 := vars(0)
			j, err := run.NewJob(run.Settings{RanksPerProc: 1, Backend: "host", Timeout: 20 * time.Second}, func(k string) string { return v0[k] }, t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			var once sync.Once
			var recorded error
			got := c.run(t.Context(), j, func() { once.Do(func() { peer.Process.Kill() }) }, func(err error) { recorded = err })
			want := "rank 1 left the job"
			if got == nil || !strings.Contains(got.Error(), want) {
				t.Errorf("rank 0 returned %v; want the job's failure, %q (peer said %q)", got, want, peerOut.String())
			}
			if recorded == nil || !strings.Contains(recorded.Error(), want) {
				t.Errorf("rank 0's outputs record %v; want the job's failure, %q", recorded, want)
			}
			if c.name != "profile" && fmt.Sprint(got) != fmt.Sprint(recorded) { // a profile records its errors in a list
				t.Errorf("the outputs record %q; the caller gets %q", recorded, got)
			}
		})
	}
}

// peerCaseVar names the measurement TestPeerRank runs as rank 1.
const peerCaseVar = "COLLBENCH_RUN_PEER_CASE"

// TestPeerRank is the peer process of TestLostPeerExplainedByEveryMeasurement;
// it runs only when started by it.
func TestPeerRank(t *testing.T) {
	name := os.Getenv(peerCaseVar)
	if name == "" {
		t.Skip("started only as another test's peer")
	}
	for _, c := range measurementCases() {
		if c.name == name {
			j, err := run.NewJob(run.Settings{RanksPerProc: 1, Backend: "host", Timeout: 20 * time.Second}, os.Getenv, t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			c.run(t.Context(), j, func() {}, func(error) {})
		}
	}
}
