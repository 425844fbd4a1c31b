package cluster

import (
	"fmt"

	"github.com/collbench/collbench/bench"
)

// ProcName names a process of a job in messages. With one rank per
// process the process is its rank ("rank 3"); with several it is named as
// a process, with the ranks it holds ("process 1 (ranks 2-3)"), so that
// "rank" always means a rank.
func ProcName(proc, perProc int) string {
	return procList([]int{proc}, perProc)
}

// procList names several processes, runs folded into ranges.
func procList(procs []int, perProc int) string {
	if perProc <= 1 {
		return bench.RankNames(procs)
	}
	var ranks []int
	for _, p := range procs {
		for r := p * perProc; r < (p+1)*perProc; r++ {
			ranks = append(ranks, r)
		}
	}
	word := "process"
	if len(procs) > 1 {
		word = "processes"
	}
	list := bench.RankNames(procs)
	list = list[len("rank "):]
	if len(procs) > 1 {
		list = list[len("s "):]
	}
	return fmt.Sprintf("%s %s (%s)", word, list, bench.RankNames(ranks))
}
