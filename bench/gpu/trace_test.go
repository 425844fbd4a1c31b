package gpu

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/gpu/internal/calltrace"
	"github.com/collbench/collbench/bench/numeric"
)

// Two local GPUs holding ranks 2 and 3 of a 4-rank job, with handles the
// recorder shows back: buffers at recognisable addresses, comm 0xc0+d,
// stream 0x500+d.
const (
	bufBytes = 4096
	sendBase = 0x10000000
	recvBase = 0x20000000
	devStep  = 0x01000000
)

func traceComm(t *testing.T, native bool) *Comm {
	t.Helper()
	return traceCommOf(t, 2, 2, 4, bufBytes, native)
}

// traceCommOf lays out ndev local GPUs holding ranks first.. of an
// nranks job, each with buffers of buf bytes.
func traceCommOf(t *testing.T, ndev, first, nranks int, buf int64, native bool) *Comm {
	t.Helper()
	c := &Comm{nranks: nranks, bufBytes: buf}
	var hs []handles
	for d := 0; d < ndev; d++ {
		hs = append(hs, handles{ctx: uintptr(0x900 + d), comm: uintptr(0xc0 + d), stream: uintptr(0x500 + d),
			send: uintptr(sendBase + d*devStep), recv: uintptr(recvBase + d*devStep), rank: first + d, global: first + d})
	}
	c.layout(hs)
	procs := calltrace.Procs()
	if !native {
		for _, n := range []string{"ncclAlltoAll", "ncclGather", "ncclScatter"} {
			delete(procs, n)
		}
	}
	if err := c.useProcs(func(name string) unsafe.Pointer { return procs[name] }); err != nil {
		t.Fatal(err)
	}
	events := make([][]uintptr, ndev)
	for d := range events {
		for i := 0; i < 4; i++ {
			events[d] = append(events[d], uintptr(0xe00+0x10*d+i))
		}
	}
	c.setEvents(events)
	t.Cleanup(func() { c.Close() })
	calltrace.Take()
	return c
}

func batch(t *testing.T, coll string, typ numeric.DataType, op numeric.RedOp, root int, inPlace bool, bytes int64) bench.Batch {
	t.Helper()
	c, err := bench.LookupCollective(coll)
	if err != nil {
		t.Fatal(err)
	}
	elt := typ.Size()
	return bench.Batch{Op: bench.Op{Coll: c, Type: typ, RedOp: op, Root: root, InPlace: inPlace,
		Counts: c.Counts(bytes/int64(elt), elt, 4)}, Iters: 1, Agg: 1}
}

// call renders one expected call in the recorder's format.
func call(kind string, s, r, n uint64, typ, op, root, d int) string {
	comm, stream := uint64(0xc0+d), uint64(0x500+d)
	if kind == "GroupStart" || kind == "GroupEnd" {
		comm, stream = 0, 0
	}
	return calltrace.Call{Kind: kind, Send: s, Recv: r, Count: n, Type: typ, Op: op, Root: root, Comm: comm, Stream: stream}.String()
}

func group(kind string) string { return call(kind, 0, 0, 0, 0, -1, -1, 0) }

func send(d int) uint64 { return uint64(sendBase + d*devStep) }
func recv(d int) uint64 { return uint64(recvBase + d*devStep) }

func got() []string {
	var out []string
	for _, c := range calltrace.Take() {
		out = append(out, c.String())
	}
	return out
}

func compare(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls differ\n got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestEnqueueRotatesBuffers: each call of a batch moves both buffers by the
// footprint, wrapping at the buffer size, and the local GPUs' calls are
// grouped, as nccl-tests' startColl.
func TestEnqueueRotatesBuffers(t *testing.T) {
	c := traceComm(t, true)
	b := batch(t, "allreduce", numeric.Float32, numeric.Sum, -1, false, 1024) // 4 rotation steps
	b.Iters, b.FirstIter = 5, 1
	if err := c.Enqueue(b); err != nil {
		t.Fatal(err)
	}
	var want []string
	for it := 0; it < 5; it++ {
		shift := uint64(1024 * ((1 + it) % 4))
		want = append(want, group("GroupStart"))
		for d := 0; d < 2; d++ {
			want = append(want, call("AllReduce", send(d)+shift, recv(d)+shift, 256, 7, 0, -1, d))
		}
		want = append(want, group("GroupEnd"))
	}
	compare(t, got(), want)
}

// TestEnqueueInPlaceOffsets: in place, all-gather sends from the rank's
// block of the receive buffer and reduce-scatter receives into it.
func TestEnqueueInPlaceOffsets(t *testing.T) {
	c := traceComm(t, true)
	if err := c.Enqueue(batch(t, "allgather", numeric.Float32, numeric.NoOp, -1, true, 1024)); err != nil {
		t.Fatal(err)
	}
	// 1024 B over 4 ranks: 64 floats per rank; ranks 2 and 3.
	want := []string{group("GroupStart"),
		call("AllGather", recv(0)+2*256, recv(0), 64, 7, -1, -1, 0),
		call("AllGather", recv(1)+3*256, recv(1), 64, 7, -1, -1, 1),
		group("GroupEnd")}
	compare(t, got(), want)

	if err := c.Enqueue(batch(t, "reducescatter", numeric.Float32, numeric.Max, -1, true, 1024)); err != nil {
		t.Fatal(err)
	}
	want = []string{group("GroupStart"),
		call("ReduceScatter", recv(0), recv(0)+2*256, 64, 7, 2, -1, 0),
		call("ReduceScatter", recv(1), recv(1)+3*256, 64, 7, 2, -1, 1),
		group("GroupEnd")}
	compare(t, got(), want)
}

// TestEnqueueSendRecvFallbacks: before NCCL 2.28, all-to-all, gather and
// scatter are grouped sends and receives exactly as nccl-tests builds them.
func TestEnqueueSendRecvFallbacks(t *testing.T) {
	c := traceComm(t, false)
	if err := c.Enqueue(batch(t, "alltoall", numeric.Int32, numeric.NoOp, -1, false, 1024)); err != nil {
		t.Fatal(err)
	}
	want := []string{group("GroupStart")}
	for d := 0; d < 2; d++ {
		want = append(want, group("GroupStart"))
		for r := 0; r < 4; r++ {
			want = append(want, call("Send", send(d)+uint64(r*256), 0, 64, 2, -1, r, d), call("Recv", 0, recv(d)+uint64(r*256), 64, 2, -1, r, d))
		}
		want = append(want, group("GroupEnd"))
	}
	compare(t, got(), append(want, group("GroupEnd")))

	// Gather to root 3: rank 2 only sends; rank 3 sends to itself and
	// receives every block.
	if err := c.Enqueue(batch(t, "gather", numeric.Int32, numeric.NoOp, 3, false, 1024)); err != nil {
		t.Fatal(err)
	}
	want = []string{group("GroupStart"), group("GroupStart"), call("Send", send(0), 0, 64, 2, -1, 3, 0), group("GroupEnd"),
		group("GroupStart"), call("Send", send(1), 0, 64, 2, -1, 3, 1)}
	for r := 0; r < 4; r++ {
		want = append(want, call("Recv", 0, recv(1)+uint64(r*256), 64, 2, -1, r, 1))
	}
	want = append(want, group("GroupEnd"), group("GroupEnd"))
	compare(t, got(), want)

	// Scatter from root 2.
	if err := c.Enqueue(batch(t, "scatter", numeric.Int32, numeric.NoOp, 2, false, 1024)); err != nil {
		t.Fatal(err)
	}
	want = []string{group("GroupStart"), group("GroupStart")}
	for r := 0; r < 4; r++ {
		want = append(want, call("Send", send(0)+uint64(r*256), 0, 64, 2, -1, r, 0))
	}
	want = append(want, call("Recv", 0, recv(0), 64, 2, -1, 2, 0), group("GroupEnd"),
		group("GroupStart"), call("Recv", 0, recv(1), 64, 2, -1, 2, 1), group("GroupEnd"), group("GroupEnd"))
	compare(t, got(), want)
}

// TestEnqueueNative: from NCCL 2.28 the library's own calls are used.
func TestEnqueueNative(t *testing.T) {
	c := traceComm(t, true)
	if err := c.Enqueue(batch(t, "scatter", numeric.Float64, numeric.NoOp, 1, false, 1024)); err != nil {
		t.Fatal(err)
	}
	want := []string{group("GroupStart"), call("Scatter", send(0), recv(0), 32, 8, -1, 1, 0),
		call("Scatter", send(1), recv(1), 32, 8, -1, 1, 1), group("GroupEnd")}
	compare(t, got(), want)
}

// TestEnqueuePreMulSum: each rank makes its operator with its own scalar
// (1 on even ranks, 2 on odd) before the call and frees it after, as
// nccl-tests does per call.
func TestEnqueuePreMulSum(t *testing.T) {
	c := traceComm(t, true)
	if err := c.Enqueue(batch(t, "allreduce", numeric.Float16, numeric.MulSum, -1, false, 64)); err != nil {
		t.Fatal(err)
	}
	premul := func(scalar uint64, d int) string {
		return calltrace.Call{Kind: "PreMulSum", Send: scalar, Recv: 1, Type: 6, Op: 5, Root: -1, Comm: uint64(0xc0 + d)}.String()
	}
	destroy := func(d int) string {
		return calltrace.Call{Kind: "RedOpDestroy", Op: 5, Root: -1, Comm: uint64(0xc0 + d)}.String()
	}
	want := []string{group("GroupStart"),
		premul(0x3c00, 0), call("AllReduce", send(0), recv(0), 32, 6, 5, -1, 0), destroy(0),
		premul(0x4000, 1), call("AllReduce", send(1), recv(1), 32, 6, 5, -1, 1), destroy(1),
		group("GroupEnd")}
	compare(t, got(), want)
}

// TestEnqueueAggregatedAndRecorded: with -m the calls of an iteration share
// a group, and the per-iteration events are recorded inside it, before the
// calls, as nccl-tests' -I does; one more event closes the batch.
func TestEnqueueAggregatedAndRecorded(t *testing.T) {
	c := traceComm(t, true)
	b := batch(t, "broadcast", numeric.Uint8, numeric.NoOp, 0, false, 4096)
	b.Iters, b.Agg, b.Record = 2, 2, true
	if err := c.Enqueue(b); err != nil {
		t.Fatal(err)
	}
	event := func(e uint64, d int) string {
		return calltrace.Call{Kind: "EventRecord", Send: e, Op: -1, Root: -1, Stream: uint64(0x500 + d)}.String()
	}
	var want []string
	for it := 0; it < 2; it++ {
		want = append(want, group("GroupStart"), event(uint64(0xe00+it), 0), event(uint64(0xe10+it), 1))
		for a := 0; a < 2; a++ {
			want = append(want, group("GroupStart"), call("Broadcast", send(0), recv(0), 4096, 1, -1, 0, 0),
				call("Broadcast", send(1), recv(1), 4096, 1, -1, 0, 1), group("GroupEnd"))
		}
		want = append(want, group("GroupEnd"))
	}
	want = append(want, event(0xe02, 0), event(0xe12, 1))
	compare(t, got(), want)
	if c.recorded != 2 {
		t.Errorf("recorded %d iterations, want 2", c.recorded)
	}
}

// TestCaptureAndLaunch: -G captures the batch on every stream in
// thread-local mode, and Launch replays each GPU's graph n times.
func TestCaptureAndLaunch(t *testing.T) {
	c := traceComm(t, true)
	b := batch(t, "sendrecv", numeric.Float32, numeric.NoOp, -1, false, 256)
	g, err := c.Capture(b)
	if err != nil {
		t.Fatal(err)
	}
	capture := func(kind string, d int) string {
		op := -1
		if kind == "BeginCapture" {
			op = 1
		}
		return calltrace.Call{Kind: kind, Op: op, Root: -1, Stream: uint64(0x500 + d)}.String()
	}
	want := []string{capture("BeginCapture", 0), capture("BeginCapture", 1), group("GroupStart")}
	for d := 0; d < 2; d++ {
		rank := 2 + d
		want = append(want, group("GroupStart"), call("Send", send(d), 0, 64, 7, -1, (rank+1)%4, d),
			call("Recv", 0, recv(d), 64, 7, -1, (rank+3)%4, d), group("GroupEnd"))
	}
	want = append(want, group("GroupEnd"), capture("EndCapture", 0), capture("EndCapture", 1))
	compare(t, got(), want)

	if err := g.Launch(3); err != nil {
		t.Fatal(err)
	}
	var launches []string
	for l := 0; l < 3; l++ {
		for d := 0; d < 2; d++ {
			// The recorder's graph is its stream handle (see calltrace.c).
			launches = append(launches, calltrace.Call{Kind: "GraphLaunch", Send: uint64(0x500 + d), Op: -1, Root: -1, Stream: uint64(0x500 + d)}.String())
		}
	}
	compare(t, got(), launches)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestWaitReturnsWhenIdle(t *testing.T) {
	c := traceComm(t, true)
	if err := c.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// A failure injected at every call of a batch in turn: the loop stops at
// it, makes no further collective or event call, ends every group it had
// opened, destroys every PreMulSum op it had created, and reports the
// failed call.
func TestEnqueueFailureAtEachCall(t *testing.T) {
	cases := []struct {
		name   string
		native bool
		b      func(t *testing.T) bench.Batch
	}{
		{"premulsum aggregated, recorded", true, func(t *testing.T) bench.Batch {
			b := batch(t, "allreduce", numeric.Float32, numeric.MulSum, -1, false, 1024)
			b.Iters, b.Agg, b.Record = 2, 2, true
			return b
		}},
		{"all-to-all by send/recv, aggregated", false, func(t *testing.T) bench.Batch {
			b := batch(t, "alltoall", numeric.Float32, numeric.NoOp, -1, false, 1024)
			b.Agg = 2
			return b
		}},
		{"gather by send/recv", false, func(t *testing.T) bench.Batch {
			return batch(t, "gather", numeric.Float32, numeric.NoOp, 2, false, 1024)
		}},
		{"scatter by send/recv", false, func(t *testing.T) bench.Batch {
			return batch(t, "scatter", numeric.Float32, numeric.NoOp, 3, false, 1024)
		}},
		{"send/recv", true, func(t *testing.T) bench.Batch {
			return batch(t, "sendrecv", numeric.Float32, numeric.NoOp, -1, false, 1024)
		}},
		{"hypercube, aggregated, recorded", true, func(t *testing.T) bench.Batch {
			b := batch(t, "hypercube", numeric.Float32, numeric.NoOp, -1, false, 1024)
			b.Iters, b.Agg, b.Record = 2, 2, true
			return b
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := traceComm(t, tc.native)
			b := tc.b(t)
			if err := c.Enqueue(b); err != nil {
				t.Fatal(err)
			}
			clean := calltrace.Take()
			for i := range clean {
				calltrace.FailAt(i, 1)
				err := c.Enqueue(b)
				calls := calltrace.Take()
				calltrace.FailAt(-1, 0)
				if err == nil || !strings.Contains(err.Error(), callName(clean[i].Kind)) {
					t.Errorf("failure at call %d (%s): error %v", i, clean[i].Kind, err)
				}
				// NCCL's last-error text is read right after the failing
				// call, not after the clean-up that follows it.
				if k := clean[i].Kind; k != "EventRecord" && k != "Memcpy" && err != nil && !strings.Contains(err.Error(), "calltrace: last call "+k) {
					t.Errorf("failure at call %d (%s): the error's detail is not the failing call's: %v", i, k, err)
				}
				checkCleanUp(t, i, clean, calls)
			}
		})
	}
}

// callName is the library function a recorded kind stands for.
func callName(kind string) string {
	switch kind {
	case "PreMulSum":
		return "ncclRedOpCreatePreMulSum"
	case "EventRecord":
		return "cuEventRecord"
	case "Memcpy":
		return "cuMemcpyDtoDAsync"
	}
	return "nccl" + kind
}

// checkCleanUp checks what follows a failure injected at call i.
func checkCleanUp(t *testing.T, i int, clean, calls []calltrace.Call) {
	t.Helper()
	if len(calls) <= i || calls[i].Kind != clean[i].Kind || !calls[i].Failed {
		t.Fatalf("failure at call %d: the calls before it changed: %v", i, calls)
	}
	opened, ended, created, destroyed := 0, 0, 0, 0
	for j, c := range calls {
		if j > i && c.Kind != "GroupEnd" && c.Kind != "RedOpDestroy" {
			t.Errorf("failure at call %d (%s): call %d is %s; only clean-up may follow", i, clean[i].Kind, j, c)
		}
		switch {
		case c.Kind == "GroupStart" && !c.Failed:
			opened++
		case c.Kind == "GroupEnd":
			ended++
		case c.Kind == "PreMulSum" && !c.Failed:
			created++
		case c.Kind == "RedOpDestroy":
			destroyed++
		}
	}
	if opened != ended || created != destroyed {
		t.Errorf("failure at call %d (%s): %d groups opened, %d ended; %d PreMulSum ops created, %d destroyed",
			i, clean[i].Kind, opened, ended, created, destroyed)
	}
}

// TestEnqueuePipeline: a chain, as Galvatron's p2p probe: rank 2 of 4
// sends to 3 and receives from 1; rank 3, the last, only receives.
func TestEnqueuePipeline(t *testing.T) {
	c := traceComm(t, true)
	if err := c.Enqueue(batch(t, "pipeline", numeric.Float32, numeric.NoOp, -1, false, 1024)); err != nil {
		t.Fatal(err)
	}
	want := []string{group("GroupStart"),
		group("GroupStart"), call("Send", send(0), 0, 256, 7, -1, 3, 0), call("Recv", 0, recv(0), 256, 7, -1, 1, 0), group("GroupEnd"),
		group("GroupStart"), call("Recv", 0, recv(1), 256, 7, -1, 2, 1), group("GroupEnd"),
		group("GroupEnd")}
	compare(t, got(), want)
}

// TestEnqueueAllToAllV: each rank posts, in peer order, a send of its
// share for the peer and a receive of the peer's share for it, packed in
// both buffers, and posts nothing for an empty share, as nccl-tests'
// alltoallv. 1024 B of int32 over 4 ranks at spread 1 puts 0, 160, 336
// and 512 bytes on distances 0 to 3.
func TestEnqueueAllToAllV(t *testing.T) {
	c := traceComm(t, true)
	if err := c.Enqueue(batch(t, "alltoallv", numeric.Int32, numeric.NoOp, -1, false, 1024)); err != nil {
		t.Fatal(err)
	}
	sr := func(d int, peer int, sendAt, sendN, recvAt, recvN uint64) []string {
		var out []string
		if sendN > 0 {
			out = append(out, call("Send", send(d)+sendAt, 0, sendN, 2, -1, peer, d))
		}
		if recvN > 0 {
			out = append(out, call("Recv", 0, recv(d)+recvAt, recvN, 2, -1, peer, d))
		}
		return out
	}
	want := []string{group("GroupStart"), group("GroupStart")}
	// Rank 2 sends 336, 512, 0, 160 bytes and receives 336, 160, 0, 512.
	want = append(want, sr(0, 0, 0, 84, 0, 84)...)
	want = append(want, sr(0, 1, 336, 128, 336, 40)...)
	want = append(want, sr(0, 3, 848, 40, 496, 128)...)
	want = append(want, group("GroupEnd"), group("GroupStart"))
	// Rank 3 sends 160, 336, 512, 0 bytes and receives 512, 336, 160, 0.
	want = append(want, sr(1, 0, 0, 40, 0, 128)...)
	want = append(want, sr(1, 1, 160, 84, 512, 84)...)
	want = append(want, sr(1, 2, 496, 128, 848, 40)...)
	want = append(want, group("GroupEnd"), group("GroupEnd"))
	compare(t, got(), want)
}

// TestEnqueueHyperCube: the own blocks are copied into place (not in
// place, where they already are), then each dimension is one group in
// which every local rank swaps the blocks gathered so far with rank^mask.
// Each rank's calls are nccl-tests' (TestCallsMatchNcclTests); the groups
// are not: nccl-tests nests each dimension's group in the group over the
// local GPUs, where NCCL merges the dimensions and a rank may pass on
// blocks before it has them (wrong results with four ranks on one GPU).
func TestEnqueueHyperCube(t *testing.T) {
	memcpy := func(d int, src, dst uint64) string {
		return calltrace.Call{Kind: "Memcpy", Send: src, Recv: dst, Count: 256, Op: -1, Root: -1, Stream: uint64(0x500 + d)}.String()
	}
	swap := func(d, peer int, sendBlock, recvBlock, n uint64) []string {
		return []string{call("Send", recv(d)+sendBlock*256, 0, n, 7, -1, peer, d),
			call("Recv", 0, recv(d)+recvBlock*256, n, 7, -1, peer, d)}
	}
	for _, inPlace := range []bool{false, true} {
		c := traceComm(t, true)
		b := batch(t, "hypercube", numeric.Float32, numeric.NoOp, -1, inPlace, 1024)
		if err := c.Enqueue(b); err != nil {
			t.Fatal(err)
		}
		var want []string
		if !inPlace {
			want = append(want, memcpy(0, send(0), recv(0)+2*256), memcpy(1, send(1), recv(1)+3*256))
		}
		want = append(want, group("GroupStart"))
		want = append(want, swap(0, 3, 2, 3, 64)...)
		want = append(want, swap(1, 2, 3, 2, 64)...)
		want = append(want, group("GroupEnd"), group("GroupStart"))
		want = append(want, swap(0, 0, 2, 0, 128)...)
		want = append(want, swap(1, 1, 2, 0, 128)...)
		compare(t, got(), append(want, group("GroupEnd")))

		// With -m 2 each call is issued whole, one after the other: its
		// dimensions must not share a group with anything.
		b.Agg = 2
		if err := c.Enqueue(b); err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, call := range calltrace.Take() {
			kinds = append(kinds, call.Kind)
		}
		one := "GroupStart Send Recv Send Recv GroupEnd GroupStart Send Recv Send Recv GroupEnd"
		if !inPlace {
			one = "Memcpy Memcpy " + one
		}
		if want := one + " " + one; strings.Join(kinds, " ") != want {
			t.Errorf("in place %v, -m 2: calls %v, want %s", inPlace, kinds, want)
		}
	}
}

// Routed traffic changes with every call: call k of a batch sends what
// draw k mod draws gives, here two draws alternating over three calls.
func TestEnqueueAllToAllVDraws(t *testing.T) {
	c := traceComm(t, true)
	// Two draws over 4 ranks of 16-byte units: rank r sends peer p
	// (r+p+k+1)·16 bytes in draw k.
	tr := &bench.Traffic{Dim: 4, Draws: make([][]int64, 2)}
	for k := range tr.Draws {
		tr.Draws[k] = make([]int64, 16)
		for r := 0; r < 4; r++ {
			for p := 0; p < 4; p++ {
				tr.Draws[k][r*4+p] = int64(r+p+k+1) * 16
			}
		}
	}
	coll, err := bench.Collectives[bench.AllToAllV].WithTraffic(tr)
	if err != nil {
		t.Fatal(err)
	}
	b := bench.Batch{Op: bench.Op{Coll: coll, Type: numeric.Uint8, RedOp: numeric.NoOp, Counts: coll.Counts(0, 1, 4)}, Iters: 3, Agg: 1}
	if err := c.Enqueue(b); err != nil {
		t.Fatal(err)
	}
	footprint := uint64(b.Footprint())
	var want []string
	for it := 0; it < 3; it++ {
		k := it % 2
		shift := footprint * uint64(it%int(bufBytes/footprint))
		want = append(want, group("GroupStart"))
		for d, me := range []int{2, 3} {
			want = append(want, group("GroupStart"))
			var sent, got uint64
			for p := 0; p < 4; p++ {
				out, in := uint64(me+p+k+1)*16, uint64(p+me+k+1)*16
				want = append(want, call("Send", send(d)+shift+sent, 0, out, 1, -1, p, d), call("Recv", 0, recv(d)+shift+got, in, 1, -1, p, d))
				sent, got = sent+out, got+in
			}
			want = append(want, group("GroupEnd"))
		}
		want = append(want, group("GroupEnd"))
	}
	compare(t, got(), want)
}

// -u moves both pointers of every call by the same bytes, after the
// rotation and, in place, before the rank's own offset.
func TestEnqueueUnalign(t *testing.T) {
	c := traceComm(t, true)
	b := batch(t, "allgather", numeric.Float32, numeric.NoOp, -1, true, 1024)
	b.Unalign = 12
	if err := c.Enqueue(b); err != nil {
		t.Fatal(err)
	}
	want := []string{group("GroupStart"),
		call("AllGather", recv(0)+12+2*256, recv(0)+12, 64, 7, -1, -1, 0),
		call("AllGather", recv(1)+12+3*256, recv(1)+12, 64, 7, -1, -1, 1),
		group("GroupEnd")}
	compare(t, got(), want)
}

// TestStallWatchdogOnGPU: streams whose work never completes (kernels
// spinning on peers that never come) end at the stall watchdog's bound
// with no -T, in one line naming the collective, the size, the ranks still
// waiting and, with four ranks crowding one GPU, that cause.
func TestStallWatchdogOnGPU(t *testing.T) {
	c := traceCommOf(t, 4, 0, 4, 1<<20, true)
	c.plan = planCTAs([]placement{proc("a", 0, h100("0000:18:00.0", 0), h100("0000:18:00.0", 0),
		h100("0000:18:00.0", 0), h100("0000:18:00.0", 0))}, 0, 0, 0, "")
	calltrace.Busy(true)
	t.Cleanup(func() { calltrace.Busy(false) })
	coll, _ := bench.LookupCollective("allreduce")
	e := bench.Engine{Comm: c, CommRanks: 4, Opts: bench.Options{Coll: coll, Sweep: bench.Sweep{Min: 1 << 20, Max: 1 << 20, Factor: 2},
		Iters: 5, Agg: 1, Cycles: 1, Types: []numeric.DataType{numeric.Float32}, Ops: []numeric.RedOp{numeric.Sum}, Average: 1,
		StallFloor: 300 * time.Millisecond}}
	start := time.Now()
	_, err := e.Run(t.Context(), func(bench.Row) {})
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("given up on after %v", took)
	}
	var te *bench.TimeoutError
	if !errors.As(err, &te) || !te.Stalled {
		t.Fatalf("err = %v, want the watchdog's", err)
	}
	msg := err.Error()
	for _, want := range []string{"allreduce of 1048576 bytes", "ranks 0-3 still waiting",
		"likely cause: 4 ranks share GPU 0: their channels may not fit the GPU together", "communicators aborted"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if !c.aborted {
		t.Error("communicators not aborted")
	}
}
