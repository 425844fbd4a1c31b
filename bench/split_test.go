package bench

import (
	"reflect"
	"strings"
	"testing"
)

// nccl-tests' colour functions of NCCL_TESTS_SPLIT and _SPLIT_MASK, and
// how they map onto collbench's groups.
func TestSplitGrouping(t *testing.T) {
	tests := []struct {
		env, mask       string
		nprocs, perProc int
		want            Grouping
		err             string
	}{
		{env: "DIV 2", nprocs: 8, perProc: 1, want: Grouping{Size: 2}},
		{env: "/4", nprocs: 8, perProc: 2, want: Grouping{Size: 8}},
		{env: "MOD 2", nprocs: 8, perProc: 1, want: Grouping{Size: 4, Strided: true}},
		{env: "%4", nprocs: 8, perProc: 2, err: "[0 4] [1 5] [2 6] [3 7]"},
		{env: "and 0x6", nprocs: 8, perProc: 1, want: Grouping{Size: 2}},
		{mask: "6", nprocs: 8, perProc: 1, want: Grouping{Size: 2}},
		{mask: "0x1", nprocs: 8, perProc: 1, want: Grouping{Size: 4, Strided: true}},
		{env: "& 0b11", nprocs: 8, perProc: 1, want: Grouping{Size: 2, Strided: true}},
		{env: "AND 2", nprocs: 8, perProc: 1, err: "[0 1 4 5] [2 3 6 7]"},
		{env: "OR 1", nprocs: 8, perProc: 3, want: Grouping{Size: 6}},
		{env: "|6", nprocs: 8, perProc: 1, want: Grouping{Size: 4, Strided: true}},
		{env: "MOD 3", nprocs: 8, perProc: 1, err: "[0 3 6] [1 4 7] [2 5]"},
		{env: "AND 0", nprocs: 8, perProc: 2, want: Grouping{}},
		{env: "DIV 8", nprocs: 4, perProc: 1, want: Grouping{}},
		{env: "XOR 1", err: "want AND, OR, MOD or DIV"},
		{env: "MOD 0", err: "cannot divide by 0"},
		{env: "DIV x", err: `"x" is not a number`},
		{env: "", err: "want AND"},
		{mask: "zz", err: "is not a hexadecimal mask"},
	}
	for _, tt := range tests {
		var sp Split
		var err error
		if tt.mask != "" {
			sp, err = ParseSplitMask(tt.mask)
		} else {
			sp, err = ParseSplit(tt.env)
		}
		var g Grouping
		if err == nil {
			g, err = sp.Grouping(tt.nprocs, tt.perProc)
		}
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q%q: err %v, want %q", tt.env, tt.mask, err, tt.err)
		case tt.err == "" && (err != nil || !reflect.DeepEqual(g, tt.want)):
			t.Errorf("%q%q over %d×%d: %+v, %v; want %+v", tt.env, tt.mask, tt.nprocs, tt.perProc, g, err, tt.want)
		}
	}
}

func FuzzParseSplit(f *testing.F) {
	for _, s := range []string{"AND 3", "%0x4", "div 0b10", "OR", "/ -1"} {
		f.Add(s, 8)
	}
	f.Fuzz(func(t *testing.T, s string, nprocs int) {
		sp, err := ParseSplit(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		nprocs = 1 + (nprocs&0x7fffffff)%64
		if g, err := sp.Grouping(nprocs, 1); err == nil && g.Validate(nprocs) != nil {
			t.Fatalf("%q over %d: invalid grouping %+v", s, nprocs, g)
		}
	})
}
