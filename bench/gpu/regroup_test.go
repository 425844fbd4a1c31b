package gpu

import (
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/nccl"
)

// Regroup refuses, before NCCL is called, what it cannot split: closed or
// aborted communicators, ones already split into groups or borrowed from
// another Comm, and a grouping outside the job.
func TestRegroupRefuses(t *testing.T) {
	rank := func(r int) *gpu { return &gpu{info: bench.Device{Rank: r}, comm: new(nccl.Comm)} }
	split := rank(0)
	split.world = new(nccl.Comm)
	lent := rank(0)
	lent.borrowed = true
	for _, c := range []struct {
		name string
		comm *Comm
		g    bench.Grouping
		want string
	}{
		{"closed", &Comm{nranks: 2, gpus: []*gpu{rank(0), rank(1)}, closed: true}, bench.Grouping{Sets: [][]int{{0, 1}}}, "already closed"},
		{"aborted", &Comm{nranks: 2, gpus: []*gpu{rank(0), rank(1)}, aborted: true}, bench.Grouping{Sets: [][]int{{0, 1}}}, "already closed"},
		{"no ranks", &Comm{nranks: 2}, bench.Grouping{Sets: [][]int{{0, 1}}}, "without ranks"},
		{"split", &Comm{nranks: 2, gpus: []*gpu{split, rank(1)}}, bench.Grouping{Sets: [][]int{{0, 1}}}, "only job-wide"},
		{"borrowed", &Comm{nranks: 2, gpus: []*gpu{lent, rank(1)}}, bench.Grouping{Sets: [][]int{{0, 1}}}, "only job-wide"},
		{"outside the job", &Comm{nranks: 2, gpus: []*gpu{rank(0), rank(1)}}, bench.Grouping{Sets: [][]int{{0, 2}}}, "outside the job's 2 ranks"},
		{"uneven sets", &Comm{nranks: 4, gpus: []*gpu{rank(0), rank(1)}}, bench.Grouping{Sets: [][]int{{0, 1}, {2}}}, "every group must have 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sub, err := c.comm.Regroup(c.g)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, %v; want an error containing %q", sub, err, c.want)
			}
		})
	}
}

// CloseWith closes every Comm it is given, and refuses another backend's
// before closing anything. Before jointDestroySince each is closed on its
// own, as Close does.
func TestCloseWith(t *testing.T) {
	a, b := traceComm(t, true), traceComm(t, true)
	if err := a.CloseWith([]bench.Comm{b, otherComm{}}); err == nil || !strings.Contains(err.Error(), "gpu.otherComm") {
		t.Errorf("another backend's communicator: %v", err)
	}
	if a.closed || b.closed {
		t.Fatal("a refused CloseWith closed something")
	}
	if a.version >= jointDestroySince {
		t.Fatalf("the traced communicators claim NCCL %s", a.version)
	}
	if err := a.CloseWith([]bench.Comm{b}); err != nil || !a.closed || !b.closed || a.cc != nil || b.cc != nil {
		t.Errorf("closed %v and %v (C layout freed: %v, %v): %v", a.closed, b.closed, a.cc == nil, b.cc == nil, err)
	}
	if err := bench.CloseAll([]bench.Comm{a, b}); err != nil {
		t.Errorf("closing them again: %v", err)
	}
}

// otherComm is a communicator of no backend of this package.
type otherComm struct{ bench.Comm }
