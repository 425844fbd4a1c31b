package health

import (
	"math/rand/v2"
	"testing"
)

// simulateArrivals runs calls of a job of procs processes, each leaving
// the previous call within 20 µs of the others and computing for 1 ms
// (×slow for the one at index slowProc) with noise: each process's gap
// before each call, and its compute.
func simulateArrivals(r *rand.Rand, procs, calls, slowProc int, slow, noise float64) (gap, work [][]float64) {
	gap, work = make([][]float64, procs), make([][]float64, procs)
	for i := 0; i < calls; i++ {
		for p := 0; p < procs; p++ {
			w := 1000 * (1 + noise*r.NormFloat64())
			if p == slowProc {
				w *= slow
			}
			work[p] = append(work[p], w)
			gap[p] = append(gap[p], w+20*r.Float64())
		}
	}
	return gap, work
}

// A process 20 % slower at the same compute is named in nearly every run;
// a healthy job almost never names anyone; two processes cannot be told
// apart by chance alone.
func TestArrivalsNameTheStraggler(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const trials, calls = 1000, 20
	for _, procs := range []int{2, 8, 64} {
		found, falseAlarms := 0, 0
		for trial := 0; trial < trials; trial++ {
			gap, work := simulateArrivals(r, procs, calls, procs-1, 1.2, 0.02)
			a, _, s := Arrivals(gap, work, DefaultCriteria)
			if len(s) == 1 && s[0] == procs-1 && a[procs-1].Last >= calls/2 {
				found++
			}
			gap, work = simulateArrivals(r, procs, calls, -1, 1, 0.02)
			if _, _, s := Arrivals(gap, work, DefaultCriteria); len(s) > 0 {
				falseAlarms++
			}
		}
		t.Logf("%d processes, %d calls: a 20 %%-slow process named in %.1f %% of %d runs; someone named on a healthy job in %.1f %%",
			procs, calls, 100*float64(found)/trials, trials, 100*float64(falseAlarms)/trials)
		if found < trials*95/100 || falseAlarms > trials/100 {
			t.Errorf("%d processes: straggler found in %d of %d runs, false alarms in %d", procs, found, trials, falseAlarms)
		}
	}
}

// The rule, case by case: majority, chance and lateness.
func TestStraggler(t *testing.T) {
	c := DefaultCriteria
	for _, tc := range []struct {
		a            Arrival
		procs, calls int
		want         bool
	}{
		{Arrival{Last: 20, LateUs: 200}, 8, 20, true},
		{Arrival{Last: 15, LateUs: 200}, 8, 20, true},
		{Arrival{Last: 12, LateUs: 200}, 4, 20, false}, // held up now and then (a healthy fabric on busy cores)
		{Arrival{Last: 10, LateUs: 200}, 8, 20, false}, // not three quarters
		{Arrival{Last: 15, LateUs: 200}, 2, 20, false}, // two processes: 15 of 20 happens by chance
		{Arrival{Last: 19, LateUs: 200}, 2, 20, true},  //   19 of 20 hardly does
		{Arrival{Last: 20, LateUs: 5}, 8, 20, false},   // last by 5 µs of 1 ms: no straggler
		{Arrival{Last: 20, LateUs: 200}, 1, 20, false}, // nobody to be late for
	} {
		if got := Straggler(tc.a, tc.procs, tc.calls, 1000, c); got != tc.want {
			t.Errorf("%+v of %d calls among %d: %v, want %v", tc.a, tc.calls, tc.procs, got, tc.want)
		}
	}
}
