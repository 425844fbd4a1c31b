package health

import "math"

// Arrival is what one process did in a run of back-to-back calls of the
// job's all-reduce, each after the same fixed compute: how many calls it
// reached last, how late it was then, and its compute time.
type Arrival struct {
	Last   int     // calls it reached last
	LateUs float64 // median, over those calls, of how long after the first process it arrived; 0 when never last
	WorkUs float64 // median time of its compute before a call (its gap may hold more: the host's stalls)
}

// Arrivals judges who reaches the calls last. gap[p][i] is the time
// process p took from its return from call i−1 to its start of call i,
// on its own clock (bench.ArrivalRun): as the processes leave a call
// together, the longest gap arrives last, and how much longer it is
// than the shortest is how late it came. work[p][i] is p's compute in
// that gap. It returns every process's figures and the stragglers
// (Straggler), judged against the job's typical gap, which it returns
// too.
func Arrivals(gap, work [][]float64, c Criteria) (arrivals []Arrival, typicalUs float64, stragglers []int) {
	procs := len(gap)
	out := make([]Arrival, procs)
	if procs < 2 {
		return out, 0, nil
	}
	calls := len(gap[0])
	late := make([][]float64, procs)
	var gaps []float64
	for i := 0; i < calls; i++ {
		first, last := 0, 0
		for p := range gap {
			if gap[p][i] < gap[first][i] {
				first = p
			}
			if gap[p][i] > gap[last][i] {
				last = p
			}
			gaps = append(gaps, gap[p][i])
		}
		out[last].Last++
		late[last] = append(late[last], gap[last][i]-gap[first][i])
	}
	for p := range out {
		if len(late[p]) > 0 {
			out[p].LateUs = quantile50(late[p])
		}
		out[p].WorkUs = quantile50(work[p])
	}
	typical := quantile50(gaps)
	for p, a := range out {
		if Straggler(a, procs, calls, typical, c) {
			stragglers = append(stragglers, p)
		}
	}
	return out, typical, stragglers
}

// Straggler says whether a process is the job's straggler: last in three
// quarters of the calls or more, and more often than chance allows (each
// of procs processes is last in 1/procs of the calls on a healthy job;
// c.Z binomial standard deviations above that), and late by c.MinDrop of
// the typical gap between calls or more, so that who merely loses the
// race by microseconds is not named. A slow GPU or host is late call
// after call; a process that a busy machine holds up now and then is
// last in about half of them (12 of 20 on four host processes sharing two
// busy cores), and is not named.
func Straggler(a Arrival, procs, calls int, typicalUs float64, c Criteria) bool {
	if procs < 2 || calls < 1 {
		return false
	}
	share := 1 / float64(procs)
	chance := float64(calls)*share + c.Z*math.Sqrt(float64(calls)*share*(1-share))
	return 4*a.Last >= 3*calls && float64(a.Last) >= chance && a.LateUs >= c.MinDrop*typicalUs
}
