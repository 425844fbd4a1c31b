package report

import (
	"bytes"
	"testing"

	"github.com/collbench/collbench/ab"
	"github.com/collbench/collbench/compare"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/golden"
)

// Three arms over seven rounds, one faster than the base at small sizes
// and slower at large ones, one that failed in its third round, as
// testdata/ab.golden holds it; the p column is Holm-adjusted over the
// three tests (0.00188 raw, 0.00565 adjusted).
func TestABTable(t *testing.T) {
	runOf := func(t1, t2, t3 float64) *document.Run {
		row := func(size int64, tm float64) document.Result {
			return document.Result{Size: size, Type: "float", RedOp: "sum", Root: -1,
				OutOfPlace: document.Measure{Time: tm, BusBW: float64(size) / tm / 1e3}}
		}
		return &document.Run{Collective: "allreduce", Results: []document.Result{row(8, t1), row(1<<20, t2), row(64<<20, t3)}}
	}
	out := &ab.Outcome{}
	base, _ := ab.ParseArm("name=2.28 lib=/opt/a/libnccl.so.2")
	next, _ := ab.ParseArm("lib=/opt/b/libnccl.so.2")
	bad, _ := ab.ParseArm("NCCL_ALGO=NVLS")
	out.Arms = []ab.ArmOutcome{{Arm: base, NCCLVersion: "2.28.9", NCCLPath: "/opt/a/libnccl.so.2"},
		{Arm: next, NCCLVersion: "2.30.7", NCCLPath: "/opt/b/libnccl.so.2"},
		{Arm: bad, NCCLVersion: "2.28.3", NCCLPath: "libnccl.so.2", Failed: "failed in round 3 (exit 1): collbench allreduce: NCCL error", FailedRound: 3}}
	for i := 0; i < 7; i++ {
		d := float64(i%3) * 0.1
		out.Arms[0].Runs = append(out.Arms[0].Runs, runOf(10+d, 100+d, 700+d))
		out.Arms[0].Seconds = append(out.Arms[0].Seconds, 2)
		out.Arms[1].Runs = append(out.Arms[1].Runs, runOf(6+d, 100.5-d, 760+d))
		out.Arms[1].Seconds = append(out.Arms[1].Seconds, 2)
		if i < 2 {
			out.Arms[2].Runs = append(out.Arms[2].Runs, runOf(5, 50, 500))
			out.Arms[2].Seconds = append(out.Arms[2].Seconds, 1)
		}
	}
	rec := ab.Judge(out, document.Stamp{Collbench: "test"}, []string{"allreduce", "-b", "8", "-e", "64M", "-f", "8192"}, 7,
		compare.ArmOptions{Threshold: 0.05, Alpha: 0.01, Correction: compare.Holm})
	if rec.Slower != 1 || len(rec.Errors) != 1 || len(rec.Arms[2].Rounds) != 2 {
		t.Errorf("slower rows %d, errors %q, the failed arm's rounds %d; want 1, 1 and 2", rec.Slower, rec.Errors, len(rec.Arms[2].Rounds))
	}
	var b bytes.Buffer
	ABArms(&b, rec)
	ABTable(&b, rec)
	ABFailures(&b, rec)
	golden.Check(t, "ab.golden", b.Bytes())
}

// The first arm failed before its first round: the next arm is the base,
// and the table says so, as testdata/ab_base.golden holds it.
func TestABTableAnotherBase(t *testing.T) {
	out := &ab.Outcome{}
	nvls, _ := ab.ParseArm("name=NVLS NCCL_ALGO=NVLS")
	simple, _ := ab.ParseArm("NCCL_PROTO=Simple")
	ll, _ := ab.ParseArm("NCCL_PROTO=LL")
	out.Arms = []ab.ArmOutcome{{Arm: nvls, NCCLVersion: "2.30.7", NCCLPath: "libnccl.so.2",
		Failed: "failed in round 1 (exit 1): collbench allreduce: ncclGroupEnd: ncclInvalidUsage", FailedRound: 1},
		{Arm: simple, NCCLVersion: "2.30.7", NCCLPath: "libnccl.so.2"}, {Arm: ll, NCCLVersion: "2.30.7", NCCLPath: "libnccl.so.2"}}
	for i := 0; i < 7; i++ {
		d := float64(i) * 0.1
		row := func(tm float64) *document.Run {
			return &document.Run{Collective: "allreduce", Results: []document.Result{{Size: 2 << 20, Type: "float", RedOp: "sum", Root: -1,
				OutOfPlace: document.Measure{Time: tm, BusBW: float64(2<<20) / tm / 1e3}}}}
		}
		out.Arms[1].Runs = append(out.Arms[1].Runs, row(47+d))
		out.Arms[1].Seconds = append(out.Arms[1].Seconds, 1)
		out.Arms[2].Runs = append(out.Arms[2].Runs, row(26+d))
		out.Arms[2].Seconds = append(out.Arms[2].Seconds, 1)
	}
	rec := ab.Judge(out, document.Stamp{Collbench: "test"}, []string{"allreduce", "-g", "2", "-b", "2M", "-e", "2M"}, 7,
		compare.ArmOptions{Threshold: 0.05, Alpha: 0.01})
	if rec.Base != 1 {
		t.Errorf("base %d, want 1", rec.Base)
	}
	var b bytes.Buffer
	ABArms(&b, rec)
	ABTable(&b, rec)
	ABFailures(&b, rec)
	golden.Check(t, "ab_base.golden", b.Bytes())
}
