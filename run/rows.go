package run

import (
	"github.com/collbench/collbench/document"
)

// rowKeeper holds a sweep's result rows for its record. A finite run
// keeps every row, each cycle's too, as nccl-tests prints them. A run
// until interrupted (-N 0) keeps one cycle's worth, each slot the latest
// row of its size, so that a soak test of days holds the same memory, and
// writes the same file size, as one of minutes.
type rowKeeper struct {
	limit   int // 0: keep everything
	n       int // rows seen
	results []document.Result
}

func newRowKeeper(cycles, perCycle int) *rowKeeper {
	k := &rowKeeper{}
	if cycles == 0 {
		k.limit = max(perCycle, 1)
	}
	return k
}

func (k *rowKeeper) add(r document.Result) {
	if k.limit == 0 || len(k.results) < k.limit {
		k.results = append(k.results, r)
	} else {
		k.results[k.n%k.limit] = r
	}
	k.n++
}
