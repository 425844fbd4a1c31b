package gpu

import (
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/nccl"
)

func TestEveryCollectiveHasACode(t *testing.T) {
	seen := map[int]string{}
	for _, c := range bench.Collectives {
		code, err := collCode(c)
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		if other, dup := seen[code]; dup {
			t.Errorf("%s and %s share code %d", c.Name, other, code)
		}
		seen[code] = c.Name
	}
}

func TestTypesMapToNCCL(t *testing.T) {
	for _, dt := range numeric.AllTypes() {
		nt, ok := ncclTypes[dt]
		if !ok {
			t.Errorf("%s has no NCCL type", dt)
			continue
		}
		if nt.Size() != dt.Size() {
			t.Errorf("%s: %d bytes, NCCL's %d", dt, dt.Size(), nt.Size())
		}
		// Both enumerations follow nccl.h's order.
		if int(nt) != int(dt) {
			t.Errorf("%s maps to NCCL value %d, want %d", dt, int(nt), int(dt))
		}
	}
}

func TestTypeSupport(t *testing.T) {
	tests := []struct {
		t     numeric.DataType
		v     nccl.Version
		minSM int
		want  string
	}{
		{numeric.Float32, nccl.V(2, 7, 8), 70, ""},
		{numeric.Bfloat16, nccl.V(2, 9, 9), 80, "needs NCCL 2.10"},
		{numeric.Bfloat16, nccl.V(2, 18, 1), 80, ""},
		{numeric.Float8e4m3, nccl.V(2, 23, 4), 90, "needs NCCL 2.24"},
		{numeric.Float8e5m2, nccl.V(2, 30, 7), 80, "compute capability 9.0"},
		{numeric.Float8e5m2, nccl.V(2, 30, 7), 90, ""},
	}
	for _, tt := range tests {
		err := typeSupport(tt.t, tt.v, tt.minSM)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s on NCCL %s sm_%d: got %v, want %q", tt.t, tt.v, tt.minSM, err, tt.want)
		}
	}
	if opSupport(numeric.MulSum, nccl.V(2, 10, 3)) == nil || opSupport(numeric.MulSum, nccl.V(2, 11, 4)) != nil {
		t.Errorf("mulsum must need NCCL 2.11")
	}
	if opSupport(numeric.Avg, nccl.V(2, 9, 9)) == nil || opSupport(numeric.Avg, nccl.V(2, 10, 3)) != nil {
		t.Errorf("avg must need NCCL 2.10")
	}
}

func TestOpMapping(t *testing.T) {
	for op, want := range map[numeric.RedOp]nccl.RedOp{numeric.Sum: nccl.Sum, numeric.Prod: nccl.Prod,
		numeric.Max: nccl.Max, numeric.Min: nccl.Min, numeric.Avg: nccl.Avg, numeric.NoOp: nccl.Sum} {
		if code, premul := ncclOp(op); code != int(want) || premul {
			t.Errorf("%s: got %d premul=%v, want %d", op, code, premul, want)
		}
	}
	if _, premul := ncclOp(numeric.MulSum); !premul {
		t.Errorf("mulsum must be made with ncclRedOpCreatePreMulSum")
	}
}

// TestPremulScalar checks the encodings of 1 and 2 that ranks pass to
// ncclRedOpCreatePreMulSum.
func TestPremulScalar(t *testing.T) {
	tests := []struct {
		t        numeric.DataType
		one, two uint64
	}{
		{numeric.Int8, 1, 2}, {numeric.Uint64, 1, 2},
		{numeric.Float16, 0x3c00, 0x4000}, {numeric.Bfloat16, 0x3f80, 0x4000},
		{numeric.Float32, 0x3f800000, 0x40000000}, {numeric.Float64, 0x3ff0000000000000, 0x4000000000000000},
		{numeric.Float8e4m3, 0x38, 0x40}, {numeric.Float8e5m2, 0x3c, 0x40},
	}
	for _, tt := range tests {
		if got := premulScalar(tt.t, 0); got != tt.one {
			t.Errorf("%s rank 0: %#x, want %#x", tt.t, got, tt.one)
		}
		if got := premulScalar(tt.t, 3); got != tt.two {
			t.Errorf("%s rank 3: %#x, want %#x", tt.t, got, tt.two)
		}
	}
}

// TestMemoryCap follows nccl-tests: reserve 1 GiB per 16 GiB (at most 4),
// keep 1 GiB, split the rest in 3 with checks and in 2 without.
func TestMemoryCap(t *testing.T) {
	const gib = int64(1) << 30
	h100 := int64(85045231616) // totalGlobalMem of an H100 80GB HBM3
	tests := []struct {
		mem   int64
		check bool
		want  int64
	}{
		{h100, true, (h100 - 4*gib - gib) / 3},
		{h100, false, (h100 - 4*gib - gib) / 2},
		{16 * gib, true, (16*gib - gib - gib) / 3},
		{40 * gib, false, (40*gib - 3*gib - gib) / 2},
	}
	for _, tt := range tests {
		if got := memoryCap(tt.mem, tt.check); got != tt.want {
			t.Errorf("memoryCap(%d, %v) = %d, want %d", tt.mem, tt.check, got, tt.want)
		}
	}
}

func TestParseBusID(t *testing.T) {
	got, err := parseBusID("0000:b3:00.0")
	if err != nil || got != [3]int{0, 0xb3, 0} {
		t.Errorf("got %v %v", got, err)
	}
	if _, err := parseBusID("garbage"); err == nil {
		t.Errorf("garbage accepted")
	}
}

// -x goes into the communicator config where the loaded NCCL has the
// policy, and is refused in one line where it has not.
func TestCTAPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy int
		v      nccl.Version
		err    string
	}{
		{0, nccl.V(2, 19, 3), ""}, {1, nccl.V(2, 27, 3), ""}, {2, nccl.V(2, 28, 3), ""},
		{1, nccl.V(2, 26, 2), "needs NCCL 2.27 or later"}, {2, nccl.V(2, 27, 7), "needs NCCL 2.28 or later"},
		{3, nccl.V(2, 30, 7), "must be 0, 1 or 2"},
	} {
		err := ctaPolicySupport(tc.policy, tc.v)
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("policy %d on %s: %v, want %q", tc.policy, tc.v, err, tc.err)
		}
		if err != nil {
			continue
		}
		cfg := commConfig(tc.v, Tuning{CTAPolicy: tc.policy})
		want := nccl.DefaultConfig().CTAPolicy
		if tc.policy > 0 {
			want = tc.policy
		}
		if cfg.CTAPolicy != want {
			t.Errorf("policy %d: config has %d", tc.policy, cfg.CTAPolicy)
		}
		// The member is encoded where the release's ncclConfig_t has it.
		if l, ok := nccl.LayoutFor(tc.v); ok && tc.policy > 0 {
			if _, has := l.Offsets["CTAPolicy"]; !has {
				t.Errorf("%s's layout lacks CTAPolicy", tc.v)
			}
		}
	}
}
