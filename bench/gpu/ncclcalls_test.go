package gpu

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/gpu/internal/calltrace"
	"github.com/collbench/collbench/bench/numeric"
)

// ncclTestsCase is one case of testdata/nccl_tests_calls.txt: a sweep
// point as nccl-tests' BenchTime issues it (the synchronising call, then
// iters iterations of agg calls), with the calls its own code made.
type ncclTestsCase struct {
	header                   string
	coll                     string
	nccl, ranks, procs, proc int
	gpus, typ, op, root      int
	iters, agg               int
	bytes, maxBytes          int64
	inPlace                  bool
	calls                    []string
}

// readNcclTestsCalls reads the calls nccl-tests' own startColl and
// per-collective functions make (scripts/nccl-tests-calls/gen.sh).
func readNcclTestsCalls(t *testing.T) []ncclTestsCase {
	t.Helper()
	f, err := os.Open("testdata/nccl_tests_calls.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []ncclTestsCase
	var cur *ncclTestsCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "case "):
			c := ncclTestsCase{header: line}
			fields := strings.Fields(line)
			c.coll = fields[1]
			ints := map[string]*int{"nccl": &c.nccl, "ranks": &c.ranks, "procs": &c.procs, "proc": &c.proc, "gpus": &c.gpus,
				"type": &c.typ, "op": &c.op, "root": &c.root, "iters": &c.iters, "agg": &c.agg}
			for _, kv := range fields[2:] {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					c.inPlace = kv == "in-place"
					continue
				}
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				switch p := ints[k]; {
				case p != nil:
					*p = int(n)
				case k == "bytes":
					c.bytes = n
				case k == "maxbytes":
					c.maxBytes = n
				}
			}
			out = append(out, c)
			cur = &out[len(out)-1]
		case line == "end":
			cur = nil
		case cur != nil:
			cur.calls = append(cur.calls, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no cases in testdata/nccl_tests_calls.txt")
	}
	return out
}

// ncclTypeOf is the data type behind an ncclDataType_t code.
func ncclTypeOf(t *testing.T, code int) numeric.DataType {
	t.Helper()
	for dt, nt := range ncclTypes {
		if int(nt) == code {
			return dt
		}
	}
	t.Fatalf("no data type with NCCL code %d", code)
	return 0
}

// ncclOpOf is the operator behind an op code of the trace: -1 for
// collectives that do not reduce, 5 for a PreMulSum.
func ncclOpOf(code int) numeric.RedOp {
	switch code {
	case -1:
		return numeric.NoOp
	case 5:
		return numeric.MulSum
	}
	return numeric.RedOp(code)
}

// renderCalls writes recorded calls in the trace file's format: the rank
// that made each call, pointers named by the local buffer they point into.
func renderCalls(calls []calltrace.Call, first int) []string {
	ref := func(p uint64) string {
		for _, b := range []struct {
			prefix string
			base   uint64
		}{{"s", sendBase}, {"r", recvBase}} {
			if p >= b.base && p < b.base+16*devStep {
				d := (p - b.base) / devStep
				if off := p - b.base - d*devStep; off != 0 {
					return fmt.Sprintf("%s%d+%#x", b.prefix, d, off)
				}
				return fmt.Sprintf("%s%d+0", b.prefix, d) // as C's %#x writes zero
			}
		}
		return fmt.Sprintf("%#x", p)
	}
	var out []string
	for _, c := range calls {
		rank := first + int(c.Comm) - 0xc0
		switch c.Kind {
		case "GroupStart", "GroupEnd":
			out = append(out, c.Kind)
		case "Send":
			out = append(out, fmt.Sprintf("r%d Send s=%s n=%d t=%d peer=%d", rank, ref(c.Send), c.Count, c.Type, c.Root))
		case "Recv":
			out = append(out, fmt.Sprintf("r%d Recv r=%s n=%d t=%d peer=%d", rank, ref(c.Recv), c.Count, c.Type, c.Root))
		case "Memcpy":
			rank = first + int(c.Stream) - 0x500
			out = append(out, fmt.Sprintf("r%d Memcpy dst=%s src=%s bytes=%d", rank, ref(c.Recv), ref(c.Send), c.Count))
		case "PreMulSum":
			out = append(out, fmt.Sprintf("r%d PreMulSum scalar=%#x t=%d residence=%d", rank, c.Send, c.Type, c.Recv))
		case "RedOpDestroy":
			out = append(out, fmt.Sprintf("r%d RedOpDestroy op=%d", rank, c.Op))
		default:
			out = append(out, fmt.Sprintf("r%d %s s=%s r=%s n=%d t=%d op=%d root=%d", rank, c.Kind, ref(c.Send), ref(c.Recv), c.Count, c.Type, c.Op, c.Root))
		}
	}
	return out
}

// byRank splits a trace into each rank's calls, dropping the group
// markers.
func byRank(calls []string) map[string][]string {
	out := map[string][]string{}
	for _, c := range calls {
		if who, _, ok := strings.Cut(c, " "); ok {
			out[who] = append(out[who], c)
		}
	}
	return out
}

// TestCallsMatchNcclTests runs every case nccl-tests' own code was traced
// on (every collective; 4 ranks in one process, 2 of 4 in the second of
// two processes, and 8 ranks for those whose peers depend on the count;
// in and out of place; rotation over the buffer; -m 2; PreMulSum; before
// and from NCCL 2.28) through the C loop and compares the calls: every
// pointer, count, type, operator, root and peer. The calls' grouping is
// nccl-tests' too, except hypercube's (TestEnqueueHyperCube says why).
func TestCallsMatchNcclTests(t *testing.T) {
	for _, tc := range readNcclTestsCalls(t) {
		coll, err := bench.LookupCollective(tc.coll)
		if err != nil {
			t.Fatal(err)
		}
		typ := ncclTypeOf(t, tc.typ)
		c := traceCommOf(t, tc.gpus, tc.proc*tc.gpus, tc.ranks, tc.maxBytes, tc.nccl >= 22800)
		op := bench.Op{Coll: coll, Type: typ, RedOp: ncclOpOf(tc.op), Root: tc.root, InPlace: tc.inPlace,
			Counts: coll.Counts(tc.bytes/int64(typ.Size()), typ.Size(), tc.ranks)}
		for _, b := range []bench.Batch{{Op: op, Iters: 1, Agg: 1}, {Op: op, Iters: tc.iters, Agg: tc.agg}} {
			if err := c.Enqueue(b); err != nil {
				t.Fatalf("%s: %v", tc.header, err)
			}
		}
		mine := renderCalls(calltrace.Take(), tc.proc*tc.gpus)
		if coll.ID == bench.HyperCube {
			want, have := byRank(tc.calls), byRank(mine)
			for rank, calls := range want {
				sameCalls(t, tc.header+" ("+rank+")", have[rank], calls)
			}
		} else {
			sameCalls(t, tc.header, mine, tc.calls)
		}
		c.Close()
		if t.Failed() {
			return // one case's difference is enough to read
		}
	}
}

// sameCalls reports the first call where got and want part.
func sameCalls(t *testing.T, what string, got, want []string) {
	t.Helper()
	for i := 0; i < max(len(got), len(want)); i++ {
		g, w := "(none)", "(none)"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("%s: call %d differs\n got: %s\nwant: %s", what, i, g, w)
			return
		}
	}
}
