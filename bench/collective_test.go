package bench

import (
	"math"
	"strings"
	"testing"
)

// The expected values are nccl-tests' getCollByteCount for each binary
// (src/*.cu), at count = 1000 floats over 3 ranks: base = 333 & ~3 = 332.
func TestCounts(t *testing.T) {
	tests := []struct {
		coll string
		want Counts
	}{
		{"allreduce", Counts{Send: 1000, Recv: 1000, Param: 1000}},
		{"broadcast", Counts{Send: 1000, Recv: 1000, Param: 1000}},
		{"reduce", Counts{Send: 1000, Recv: 1000, Param: 1000}},
		{"sendrecv", Counts{Send: 1000, Recv: 1000, Param: 1000}},
		{"allgather", Counts{Send: 332, Recv: 996, Param: 332, SendInPlace: 332}},
		{"gather", Counts{Send: 332, Recv: 996, Param: 332, SendInPlace: 332}},
		{"reducescatter", Counts{Send: 996, Recv: 332, Param: 332, RecvInPlace: 332}},
		{"scatter", Counts{Send: 996, Recv: 332, Param: 332, RecvInPlace: 332}},
		{"alltoall", Counts{Send: 996, Recv: 996, Param: 332}},
	}
	for _, tt := range tests {
		c, err := LookupCollective(tt.coll)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Counts(1000, 4, 3); got != tt.want {
			t.Errorf("%s: Counts = %+v, want %+v", tt.coll, got, tt.want)
		}
	}
}

// In place, nccl-tests leaves all-to-all, all-to-all-v and send/recv
// unchecked (their InitData sets reportErrors to 0 in place, and #wrong
// prints N/A): a rank's send and receive of one group share the buffer,
// and NCCL does not order them, so a receive may land before the send has
// read. A pipeline stage sends and receives in one buffer the same way.
func TestVerifyInPlaceAsNcclTests(t *testing.T) {
	unchecked := map[string]bool{"alltoall": true, "alltoallv": true, "sendrecv": true, "pipeline": true}
	for _, c := range Collectives {
		if c.VerifyInPlace == unchecked[c.Name] {
			t.Errorf("%s: VerifyInPlace = %v, want %v", c.Name, c.VerifyInPlace, !unchecked[c.Name])
		}
	}
}

func TestPerRankBaseRounding(t *testing.T) {
	// 16-byte rounding: 8 doubles → multiples of 2; bytes → multiples of 16.
	tests := []struct {
		count    int64
		elt, n   int
		wantBase int64
	}{{100, 8, 4, 24}, {100, 1, 4, 16}, {7, 4, 8, 0}, {1 << 20, 2, 8, 1 << 17}}
	for _, tt := range tests {
		if got := perRankBase(tt.count, tt.elt, tt.n); got != tt.wantBase {
			t.Errorf("perRankBase(%d, %d, %d) = %d, want %d", tt.count, tt.elt, tt.n, got, tt.wantBase)
		}
	}
}

func TestBusFactor(t *testing.T) {
	tests := []struct {
		coll string
		n    int
		want float64
	}{
		{"allreduce", 8, 1.75}, {"allreduce", 2, 1},
		{"allgather", 8, 0.875}, {"reducescatter", 4, 0.75}, {"alltoall", 4, 0.75},
		{"gather", 4, 0.75}, {"scatter", 4, 0.75},
		{"broadcast", 8, 1}, {"reduce", 8, 1}, {"sendrecv", 8, 1},
	}
	for _, tt := range tests {
		c, _ := LookupCollective(tt.coll)
		if got := c.BusFactor(tt.n); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s n=%d: factor %g, want %g", tt.coll, tt.n, got, tt.want)
		}
	}
}

func TestLookupCollective(t *testing.T) {
	for name, want := range map[string]string{
		"allreduce": "allreduce", "all_reduce": "allreduce", "all_reduce_perf": "allreduce",
		"ALL_GATHER_PERF": "allgather", "reduce_scatter": "reducescatter", "alltoall_perf": "alltoall",
		"sendrecv_perf": "sendrecv", "broadcast": "broadcast", "gather_perf": "gather", "scatter": "scatter",
	} {
		c, err := LookupCollective(name)
		if err != nil || c.Name != want {
			t.Errorf("LookupCollective(%q) = %v, %v; want %s", name, c, err, want)
		}
	}
	if _, err := LookupCollective("allreduce2"); err == nil {
		t.Error("unknown collective accepted")
	}
}

// Every collective has its own ID, and every alias (the nccl-tests binary
// name with and without _perf, where nccl-tests has one) finds it.
func TestCollectiveIDsAndAliases(t *testing.T) {
	seen := map[ID]string{}
	for _, c := range Collectives {
		if other, ok := seen[c.ID]; ok {
			t.Errorf("%s and %s share ID %d", c.Name, other, c.ID)
		}
		seen[c.ID] = c.Name
		names := append([]string{c.Name, strings.ToUpper(c.Name)}, c.Aliases...)
		if c.TestName != "" {
			names = append(names, c.TestName, strings.TrimSuffix(c.TestName, "_perf"))
		}
		for _, name := range names {
			if got, err := LookupCollective(name); err != nil || got != c {
				t.Errorf("LookupCollective(%q) = %v, %v; want %s", name, got, err, c.Name)
			}
		}
	}
}

// -u moves both placements' data by the same bytes, in place on top of
// the rank's own offset.
func TestRegionsUnalign(t *testing.T) {
	ag, _ := LookupCollective("allgather")
	op := Op{Coll: ag, Type: 0, Counts: ag.Counts(64, 1, 4), Unalign: 3}
	if k, s, r := op.Regions(2); k != SendBuf || s != 3 || r != 3 {
		t.Errorf("out of place: %v %d %d", k, s, r)
	}
	op.InPlace = true
	if k, s, r := op.Regions(2); k != RecvBuf || s != 3+2*16 || r != 3 {
		t.Errorf("in place: %v %d %d", k, s, r)
	}
}
