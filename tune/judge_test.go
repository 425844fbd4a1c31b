package tune

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/tuner"
)

func ch(a, p string, n int) tuner.Choice { return tuner.Choice{Algorithm: a, Protocol: p, Channels: n} }

// Bands and rows, from verdicts per size: a winner's band ends half-way
// to the next size and, at the ends of the sweep, at the size measured;
// on NCCL the library's own choice is pinned everywhere else (the example
// plugin runs a call no row matches on one channel), by its choice at
// each size; on the host backend it gets no row.
func TestBandsAndRows(t *testing.T) {
	ring4, ring8, ll2 := ch("ring", "simple", 4), ch("ring", "simple", 8), ch("ring", "ll", 2)
	vs := []verdict{
		{size: 1024, win: true, choice: ll2, ratio: 0.5, own: ring4, ownOK: true},
		{size: 4096, win: true, choice: ll2, ratio: 0.8, own: ring4, ownOK: true},
		{size: 16384, own: ring4, ownOK: true, ratio: 1},
		{size: 65536, own: ring8, ownOK: true, ratio: 1},
	}
	for i := range vs {
		if !vs[i].win {
			vs[i].arm = -1
		} else {
			vs[i].arm = 3
		}
	}
	cases := []struct {
		backend string
		want    []tuner.Row
	}{
		{backendNCCL, []tuner.Row{
			{Collective: "allreduce", MinBytes: 0, MaxBytes: 1023, Algorithm: "ring", Protocol: "simple", Channels: 4},
			{Collective: "allreduce", MinBytes: 1024, MaxBytes: 10240, Algorithm: "ring", Protocol: "ll", Channels: 2},
			{Collective: "allreduce", MinBytes: 10241, MaxBytes: 40960, Algorithm: "ring", Protocol: "simple", Channels: 4},
			{Collective: "allreduce", MinBytes: 40961, MaxBytes: math.MaxUint64, Algorithm: "ring", Protocol: "simple", Channels: 8},
		}},
		{backendHost, []tuner.Row{
			{Collective: "allreduce", MinBytes: 1024, MaxBytes: 10240, Algorithm: "ring", Protocol: "ll", Channels: 1},
		}},
	}
	for _, c := range cases {
		tu := &tuning{backend: c.backend, rec: &document.TuneRun{Collective: "allreduce", Ranks: 8, Nodes: 1}}
		bands := tu.makeBands(vs)
		rows := tu.fileRows(bands)
		for i := range rows {
			if !strings.Contains(rows[i].Comment, "measured at") && !strings.Contains(rows[i].Comment, "not measured") {
				t.Errorf("%s: row %d's comment %q", c.backend, i, rows[i].Comment)
			}
			rows[i].Comment = ""
			c.want[i].Nodes, c.want[i].Ranks, c.want[i].PipeOps, c.want[i].RegBuff = 1, 8, tuner.Any, tuner.Any
		}
		if !reflect.DeepEqual(rows, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.backend, rows, c.want)
		}
		if b := bands[boolIndex(c.backend == backendNCCL)]; b.own || math.Abs(b.predicted-math.Sqrt(0.5*0.8)) > 1e-12 {
			t.Errorf("%s: the winner's band %+v, want a predicted ratio of the geometric mean 0.632", c.backend, b)
		}
	}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The settings of a space on each backend, and their environment.
func TestSettings(t *testing.T) {
	allreduce, _ := bench.LookupCollective("allreduce")
	bcast, _ := bench.LookupCollective("broadcast")
	cases := []struct {
		backend string
		coll    *bench.Collective
		ranks   int
		sp      Space
		labels  []string
		env     []string // of the last setting
	}{
		{backendNCCL, allreduce, 4, Space{Algorithms: []string{"ring", "nvls_tree"}, Protocols: []string{"ll"}, Channels: []int{2}},
			[]string{"ring/ll/2ch", "nvls_tree/ll/2ch"}, []string{"NCCL_ALGO=NVLSTree", "NCCL_PROTO=LL", "NCCL_MIN_NCHANNELS=2", "NCCL_MAX_NCHANNELS=2"}},
		{backendNCCL, allreduce, 4, Space{Algorithms: []string{"collnet_direct"}, Protocols: []string{"ll128", "simple"}},
			[]string{"collnet_direct/ll128", "collnet_direct/simple"}, []string{"NCCL_ALGO=CollNetDirect", "NCCL_PROTO=Simple"}},
		{backendHost, allreduce, 4, Space{}, []string{"ring/256K", "doubling/256K", "pipeline/256K"}, []string{"COLLBENCH_HOST_ALGO=pipeline", "COLLBENCH_HOST_SEGMENT=256K"}},
		{backendHost, allreduce, 3, Space{Protocols: []string{"64K"}}, []string{"ring/64K", "pipeline/64K"}, []string{"COLLBENCH_HOST_ALGO=pipeline", "COLLBENCH_HOST_SEGMENT=64K"}},
		{backendHost, bcast, 3, Space{Algorithms: []string{"direct", "doubling"}}, []string{"direct/256K"}, []string{"COLLBENCH_HOST_ALGO=direct", "COLLBENCH_HOST_SEGMENT=256K"}},
	}
	for _, c := range cases {
		set := c.sp.settings(c.backend, c.coll, c.ranks)
		var labels []string
		for _, s := range set {
			labels = append(labels, s.label())
		}
		if !reflect.DeepEqual(labels, c.labels) || !reflect.DeepEqual(set[len(set)-1].env(c.backend), c.env) {
			t.Errorf("%s %s: %v, %v; want %v, %v", c.backend, c.coll.Name, labels, set[len(set)-1].env(c.backend), c.labels, c.env)
		}
	}
	for _, c := range []struct {
		backend string
		sp      Space
		want    string
	}{
		{backendNCCL, Space{Algorithms: []string{"doubling"}}, `no algorithm "doubling"`},
		{backendHost, Space{Protocols: []string{"ll"}}, "the protocol column holds the segment"},
		{backendHost, Space{Channels: []int{2}}, "no channel count to tune"},
		{backendNCCL, Space{Channels: []int{65}}, "65 channels"},
	} {
		if err := c.sp.Check(c.backend); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: %v, want %q", c.backend, c.sp, err, c.want)
		}
	}
}
