package export

import (
	"slices"
	"strings"
	"testing"
)

// The curves each target reads, on 2 nodes of 4 ranks: what a budget
// measures first.
func TestNeeds(t *testing.T) {
	type curve struct {
		op     string
		n      int
		layout string
	}
	has := func(ns []Need, c curve) bool {
		return slices.ContainsFunc(ns, func(n Need) bool { return n.Reads(c.op) && n.Size == c.n && n.Layout == c.layout })
	}
	tests := []struct {
		target   string
		want     []curve
		wantNone []curve
	}{
		{"galvatron", []curve{{"allreduce", 8, "consecutive"}, {"allreduce", 4, "strided"}, {"allreduce", 2, "consecutive"},
			{"alltoall", 4, "consecutive"}, {"pipeline", 2, "strided"}, {"sendrecv", 8, "consecutive"},
			{"allgather", 4, "consecutive"}, {"reducescatter", 2, "consecutive"}}, []curve{{"allgather", 4, "strided"}, {"broadcast", 4, "consecutive"}}},
		{"calculon", []curve{{"allreduce", 4, "consecutive"}, {"allgather", 4, "consecutive"}, {"reducescatter", 2, "strided"}, {"sendrecv", 2, "strided"}},
			[]curve{{"alltoall", 4, "consecutive"}, {"allreduce", 8, "consecutive"}}},
		{"astra-sim", []curve{{"allreduce", 4, "consecutive"}, {"allreduce", 2, "strided"}}, []curve{{"allgather", 4, "consecutive"}}},
		{"simai", []curve{{"allreduce", 4, "consecutive"}, {"allreduce", 2, "strided"}, {"alltoall", 4, "consecutive"}, {"allreduce", 8, "consecutive"}}, nil},
	}
	for _, tc := range tests {
		got := Needs([]string{tc.target}, 8, 4)
		for _, c := range tc.want {
			if !has(got, c) {
				t.Errorf("%s: %v lacks %+v", tc.target, got, c)
			}
		}
		for _, c := range tc.wantNone {
			if has(got, c) {
				t.Errorf("%s: %v has %+v, which it does not read", tc.target, got, c)
			}
		}
	}
	if got := Needs(nil, 8, 4); len(got) != 0 {
		t.Errorf("no target needs %v", got)
	}
	// A curve two targets read keeps the stricter need: Calculon needs the
	// intra-node all-reduce that SimAI can do without.
	for _, n := range Needs([]string{"simai", "calculon"}, 8, 4) {
		if n.Op == "allreduce" && n.Size == 4 && n.Optional {
			t.Errorf("%+v: optional, though Calculon reads it", n)
		}
	}
}

// Keep is the sizes a curve must hold from the smallest: Galvatron's
// tables up to their eighth whole-MiB size.
func TestNeedKeep(t *testing.T) {
	sweep := func(from, to int64) (out []int64) {
		for s := from; s <= to; s *= 2 {
			out = append(out, s)
		}
		return out
	}
	table := Need{Op: "allreduce", WholeMiB: 8}
	for _, c := range []struct {
		need  Need
		sizes []int64
		want  int
	}{
		{table, sweep(1<<20, 128<<20), 8},
		{table, sweep(1<<10, 1<<30), 18}, // 1 KiB … 128 MiB
		{table, sweep(1<<20, 64<<20), 0},
		{Need{Op: "allreduce"}, sweep(1<<10, 1<<12), 1},
	} {
		if got := c.need.Keep(c.sizes); got != c.want {
			t.Errorf("Keep(%d sizes from %d) = %d, want %d", len(c.sizes), c.sizes[0], got, c.want)
		}
	}
}

// Unmet names the first curve, size range or probe an export reads that
// the profile as asked will not have.
func TestUnmet(t *testing.T) {
	all := []string{"allreduce", "allgather", "reducescatter", "alltoall", "sendrecv", "pipeline"}
	every := func(int, string) bool { return true }
	consecutive := func(_ int, layout string) bool { return layout == "consecutive" }
	mib := []int64{1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20, 128 << 20}
	for _, c := range []struct {
		targets []string
		colls   []string
		has     func(int, string) bool
		sizes   []int64
		probes  bool
		want    string
	}{
		{[]string{"galvatron", "calculon", "astra-sim", "simai"}, all, every, mib, true, ""},
		{[]string{"galvatron"}, all, every, mib, false, "the galvatron export reads the overlap probe, which this profile leaves out"},
		{[]string{"galvatron"}, []string{"allreduce", "allgather", "reducescatter", "alltoall", "sendrecv"}, every, mib, true, ""}, // send/recv serves for the pipeline
		{[]string{"galvatron"}, []string{"allreduce", "allgather", "reducescatter", "sendrecv"}, every, mib, true, "the galvatron export reads alltoall over groups of 4 (consecutive), which this profile does not measure"},
		{[]string{"galvatron"}, []string{"allreduce", "alltoall", "sendrecv"}, every, mib, true, "the galvatron export reads allgather over groups of 4 (consecutive), which this profile does not measure"},
		{[]string{"galvatron"}, all, consecutive, mib, true, "the galvatron export reads allreduce over groups of 2 (strided), which this profile does not measure"},
		{[]string{"galvatron"}, all, every, mib[:7], true, "the galvatron export reads 8 whole-MiB sizes of allreduce over groups of 4 (consecutive), and the sizes asked for hold fewer (from 1 MiB to 128 MiB holds 8)"},
		{[]string{"astra-sim"}, []string{"allreduce"}, consecutive, mib[:2], false, ""},
		{[]string{"simai"}, []string{"alltoall"}, consecutive, mib[:1], false, ""}, // SimAI keeps its defaults
	} {
		got := Unmet(c.targets, Needs(c.targets, 4, 4), c.colls, c.has, c.sizes, c.probes)
		if got != c.want {
			t.Errorf("%v with %v: %q\nwant %q", c.targets, c.colls, got, c.want)
		}
		if strings.Contains(got, "--") {
			t.Errorf("%q names a flag", got)
		}
	}
}
