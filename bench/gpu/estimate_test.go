package gpu

import (
	"strings"
	"testing"

	"github.com/collbench/collbench/bench/gpu/internal/calltrace"
	"github.com/collbench/collbench/bench/numeric"
)

// simulateEnd renders the recorder's ncclGroupSimulateEnd: the size,
// magic and version of the ncclSimInfo_t it was given.
func simulateEnd(version uint64) string {
	return calltrace.Call{Kind: "GroupSimulateEnd", Send: 24, Recv: 0x74685283, Count: version, Op: -1, Root: -1}.String()
}

// NCCL's estimate of a call is the call on every local GPU in one group
// that ncclGroupSimulateEnd closes, with NCCL_SIM_INFO_INITIALIZER's size
// and magic; nothing is launched (no ncclGroupEnd).
func TestEstimateSimulatesTheCall(t *testing.T) {
	c := traceComm(t, true)
	b := batch(t, "allreduce", numeric.Float32, numeric.Sum, -1, false, 1024)
	us, ok, err := c.Estimate(b.Op)
	if err != nil || !ok || us != 12.5 {
		t.Fatalf("estimate %v, %v, %v; want 12.5 µs", us, ok, err)
	}
	want := []string{group("GroupStart"), call("AllReduce", send(0), recv(0), 256, 7, 0, -1, 0),
		call("AllReduce", send(1), recv(1), 256, 7, 0, -1, 1), simulateEnd(0)}
	compare(t, got(), want)
}

// Collectives NCCL's model does not time (point-to-point calls, the
// uneven all-to-all) and a library without the entry point (before NCCL
// 2.22) give no estimate and make no call.
func TestEstimateWithoutAFigure(t *testing.T) {
	c := traceComm(t, true)
	for _, coll := range []string{"sendrecv", "alltoall", "hypercube"} {
		b := batch(t, coll, numeric.Float32, numeric.NoOp, -1, false, 1024)
		if _, ok, err := c.Estimate(b.Op); ok || err != nil {
			t.Errorf("%s: estimate ok %v, err %v; want none", coll, ok, err)
		}
	}
	c.cc.p.groupSimulateEnd = nil
	if _, ok, err := c.Estimate(batch(t, "allreduce", numeric.Float32, numeric.Sum, -1, false, 1024).Op); ok || err != nil {
		t.Errorf("without ncclGroupSimulateEnd: ok %v, err %v", ok, err)
	}
	if calls := got(); len(calls) != 0 {
		t.Errorf("calls made: %q", calls)
	}
}

// A failed ncclGroupSimulateEnd is the run's error, naming the call.
func TestEstimateFailure(t *testing.T) {
	c := traceComm(t, true)
	calltrace.FailAt(3, 5) // the fourth call: ncclGroupSimulateEnd
	defer calltrace.FailAt(-1, 0)
	_, _, err := c.Estimate(batch(t, "broadcast", numeric.Float32, numeric.NoOp, 0, false, 1024).Op)
	if err == nil || !strings.Contains(err.Error(), "ncclGroupSimulateEnd") {
		t.Errorf("error %v, want one naming ncclGroupSimulateEnd", err)
	}
}
