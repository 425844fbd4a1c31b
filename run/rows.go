package run

import (
	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
)

// rowKeeper holds a sweep's rows for the footer and the JSON document.
// A finite run keeps every row, each cycle's too, as nccl-tests prints
// them. A run until interrupted (-N 0) keeps one cycle's worth, each slot
// the latest row of its size, so that a soak test of days holds the same
// memory, and writes the same file size, as one of minutes.
type rowKeeper struct {
	limit   int // 0: keep everything
	n       int // rows seen
	rows    []bench.Row
	results []document.Result
}

func newRowKeeper(cycles, perCycle int) *rowKeeper {
	k := &rowKeeper{}
	if cycles == 0 {
		k.limit = max(perCycle, 1)
	}
	return k
}

func (k *rowKeeper) add(r bench.Row) {
	res := document.MakeResult(r)
	if k.limit == 0 || len(k.rows) < k.limit {
		k.rows = append(k.rows, r)
		k.results = append(k.results, res)
	} else {
		i := k.n % k.limit
		k.rows[i], k.results[i] = r, res
	}
	k.n++
}

// seen is how many rows were measured, kept or not.
func (k *rowKeeper) seen() int { return k.n }
