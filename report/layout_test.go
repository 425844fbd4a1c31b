package report

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/internal/fixture"
)

// The per-rank summary of an uneven all-to-all reads as nccl-tests'
// NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: testdata/alltoallv_summary.golden
// holds the lines nccl-tests 2.19.6's own code printed for a generated
// pattern (4 ranks, count 1000 floats, spread 0.5, 123 µs) and for
// bench/testdata/traffic5.txt at scale 1.5 (4 ranks, 42.7 µs).
func TestRankSummaryMatchesNcclTests(t *testing.T) {
	matrix, err := fixture.TrafficFile(t, "../bench/testdata/traffic5.txt", 1.5)
	if err != nil {
		t.Fatal(err)
	}
	base, err := bench.LookupCollective("alltoallv")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range []struct {
		traffic *bench.Traffic
		count   int64
		us      float64
	}{{&bench.Traffic{Spread: 0.5}, 1000, 123}, {matrix, 0, 42.7}} {
		coll, err := base.WithTraffic(c.traffic)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		tb := &Table{W: &buf, Info: Info{Coll: coll, Ranks: 4, RankSummary: true}}
		p := bench.Placement{Time: c.us}
		tb.Row(bench.Row{Size: 1, Count: c.count, Type: numeric.Float32, Op: numeric.NoOp, Root: -1, OutOfPlace: p, InPlace: p})
		lines := strings.Split(buf.String(), "\n")
		if len(lines) != 12 || !strings.HasPrefix(lines[10], " ") {
			t.Fatalf("want two summaries of 5 lines and the row:\n%s", buf.String())
		}
		if strings.Join(lines[:5], "\n") != strings.Join(lines[5:10], "\n") {
			t.Errorf("the in-place summary differs for the same time:\n%s", buf.String())
		}
		got = append(got, lines[:5]...)
	}
	want, err := os.ReadFile("testdata/alltoallv_summary.golden")
	if err != nil {
		t.Fatal(err)
	}
	if g := strings.Join(got, "\n") + "\n"; g != string(want) {
		t.Errorf("summary differs from nccl-tests'\n got:\n%s\nwant:\n%s", g, want)
	}
}

// hypercube prints an empty redop column, as nccl-tests does; other
// collectives that do not reduce print "none".
func TestRedopColumn(t *testing.T) {
	for name, want := range map[string]string{"hypercube": "      ", "alltoall": "  none", "allreduce": "   sum"} {
		c, _ := bench.LookupCollective(name)
		op := numeric.NoOp
		if c.Reduces {
			op = numeric.Sum
		}
		var buf bytes.Buffer
		(&Table{W: &buf, Info: Info{Coll: c}}).Row(bench.Row{Size: 64, Count: 16, Type: numeric.Float32, Op: op, Root: -1})
		if got := buf.String()[38:44]; got != want {
			t.Errorf("%s: redop column %q, want %q", name, got, want)
		}
	}
}

// With -S the headers gain nccl-tests' timestamp cell and each row ends
// with the time; the rows here are a hypercube's (empty redop) and an
// alltoallv's (in place unchecked). testdata/timestamps.golden was
// printed by nccl-tests' own printf formats (writeResultHeader,
// writeBenchmarkLine*, writeTimestamp) compiled on the host.
func TestTimestampsMatchNcclTests(t *testing.T) {
	stamps := []time.Time{time.Date(2026, 11, 24, 8, 44, 4, 0, time.Local), time.Date(2026, 11, 24, 8, 44, 5, 0, time.Local)}
	hc, _ := bench.LookupCollective("hypercube")
	av, _ := bench.LookupCollective("alltoallv")
	var buf bytes.Buffer
	for i, r := range []struct {
		coll *bench.Collective
		row  bench.Row
	}{
		{hc, bench.Row{Size: 4096, Count: 256, Type: numeric.Float32, Op: numeric.NoOp, Root: -1,
			OutOfPlace: bench.Placement{Time: 12.5, AlgBW: 0.25, BusBW: 0.25, Checked: true},
			InPlace:    bench.Placement{Time: 11.25, AlgBW: 0.27, BusBW: 0.27, Checked: true}}},
		{av, bench.Row{Size: 1616, Count: 0, Type: numeric.Int8, Op: numeric.NoOp, Root: -1,
			OutOfPlace: bench.Placement{Time: 83.86, AlgBW: 0.02, BusBW: 0.01, Checked: true},
			InPlace:    bench.Placement{Time: 89.54, AlgBW: 0.02, BusBW: 0.01}}},
	} {
		tb := &Table{W: &buf, Info: Info{Coll: r.coll, Timestamps: true, Now: func() time.Time { return stamps[i] }}}
		if i == 0 {
			tb.columns()
		}
		tb.Row(r.row)
	}
	want, err := os.ReadFile("testdata/timestamps.golden")
	if err != nil {
		t.Fatal(err)
	}
	if buf.String() != string(want) {
		t.Errorf("differs from nccl-tests' layout\n got:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// The -M footer line reads as nccl-tests': testdata/memory.golden was
// printed by nccl-tests' own getMemString and writeMemInfo compiled on
// the host. Its amounts of 2 GiB and more come out in bytes there (an
// integer abs()); collbench prints them in GB.
func TestMemoryLineMatchesNcclTests(t *testing.T) {
	cases := [][3]int64{{0, 0, 0}, {512, 1023, 1024}, {1536, 10240, 102400}, {1048575, 1048576, 5*1048576 + 7},
		{104857600, 1073741823, 1073741824}, {3 << 30, 12 << 30, 123 << 30}, {-4096, 0, -7}}
	data, err := os.ReadFile("testdata/memory.golden")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	want[4] = strings.Replace(want[4], "2252341247.00 B", "2.10 GB", 1)
	want[5] = "# GPU memory usage     : Initialization 3.00 GB | User-Allocated 12.0 GB | Collective 123 GB | Total  138 GB"
	for i, c := range cases {
		var buf bytes.Buffer
		(&Table{W: &buf}).Memory(bench.MemoryUse{Init: c[0], Buffers: c[1], Collective: c[2]})
		if got := strings.TrimSuffix(buf.String(), "\n"); got != want[i] {
			t.Errorf("%v:\n got %q\nwant %q", c, got, want[i])
		}
	}
}

// The -B table reads as nccl-tests' bitwise check (NVIDIA/nccl-tests
// pull request 388): testdata/bitwise.golden was printed by that pull
// request's own writeResultHeader, writeBenchmarkLine*,
// writeBitwiseResultDetails and writeResultFooter compiled on the host,
// for the same figures.
func TestBitwiseMatchesNcclTests(t *testing.T) {
	place := func(tm, alg, bus float64, checked bool, b bench.Bitwise) bench.Placement {
		return bench.Placement{Time: tm, AlgBW: alg, BusBW: bus, Checked: checked, Bitwise: &b}
	}
	clean := bench.Bitwise{Repeats: 3, FirstRepeat: -1, FirstRank: -1, FirstElement: -1, FirstBit: -1}
	found := bench.Bitwise{Repeats: 3, Elements: 1, Bits: 1, FirstRepeat: 1, FirstRank: 2, FirstElement: 37, FirstBit: 13}
	many := bench.Bitwise{Repeats: 3, Elements: 3, Bits: 1234567, FirstRepeat: 0, FirstRank: 1, FirstElement: 0, FirstBit: 0}
	var buf bytes.Buffer
	tb := &Table{W: &buf, Info: Info{Bitwise: 3, TestName: "all_reduce_perf"}}
	tb.columns()
	tb.Row(bench.Row{Size: 1024, Count: 256, Type: numeric.Float32, Op: numeric.Sum, Root: -1,
		OutOfPlace: place(43.31, 0.02, 0.04, true, clean), InPlace: place(190.07, 0.01, 0.01, true, clean)})
	tb.Row(bench.Row{Size: 4096, Count: 1024, Type: numeric.Float32, Op: numeric.Sum, Root: -1,
		OutOfPlace: place(191.19, 0.02, 0.03, true, found), InPlace: place(208.74, 0.02, 0.03, false, many)})
	tb.Footer(bench.Summary{AvgBusBW: 0.0686279, BitwiseCases: 2})
	want, err := os.ReadFile("testdata/bitwise.golden")
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := strings.Cut(buf.String(), "# Collective test concluded: all_reduce_perf\n")
	got += "# Collective test concluded: all_reduce_perf\n"
	if got != string(want) {
		t.Errorf("differs from nccl-tests' -B layout\n got:\n%s\nwant:\n%s", got, want)
	}
}
