package healthcheck

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/health"
)

// cut decides, from every process's first call of a wave (per), which of
// the wave's units stop there (bench.PointPlan.Cut): a pair or node
// all-reduce whose first call took more than health.CutFactor times its
// phase's typical one, and a block all-reduce (the job's, a bisection's)
// over a node of such a unit, which runs through it. Their one call is
// their figure, and the record says so: a sick link's every call would
// otherwise take as long as its peers' whole measurement. Every process
// gets the same per and decides alike.
func (c *healthCheck) cut(wave []unit, what string, bytes int64, per []time.Duration) []bool {
	times := make([]time.Duration, len(wave))
	procs := make([][]int, len(wave))
	perProc := c.j.Settings.RanksPerProc
	for i, u := range wave {
		for _, g := range u.groups {
			for _, r := range g {
				p := r / perProc
				if p < len(per) && !slices.Contains(procs[i], p) {
					procs[i] = append(procs[i], p)
					times[i] = max(times[i], per[p])
				}
			}
		}
	}
	far, typical := health.FarBelow(times, c.firstCalls[what])
	c.firstCalls[what] = append(c.firstCalls[what], times...)
	out := make([]bool, len(per))
	for i, u := range wave {
		why := ""
		switch {
		case len(u.span) > 0:
			if through := c.farOf(u.span); len(through) > 0 {
				why = fmt.Sprintf("one call (%s), as it runs through %s, found far below its peers", roundTime(times[i]), strings.Join(through, ", "))
			}
		case far[i]:
			why = fmt.Sprintf("stopped after its first call of %s: %s, %.0f× its peers' typical first call (%s)",
				bench.FormatSize(bytes), roundTime(times[i]), float64(times[i])/float64(typical), roundTime(typical))
			// A unit far below again (the next pass, a confirmation)
			// counts once.
			nodes := c.unitNodes(u)
			if !slices.ContainsFunc(c.farUnits, func(was []int) bool { return slices.Equal(was, nodes) }) {
				c.farUnits = append(c.farUnits, nodes)
				for _, n := range nodes {
					c.farCount[n]++
				}
			}
		}
		if why == "" {
			continue
		}
		for _, p := range procs[i] {
			out[p] = true
		}
		c.noteCut(what+" "+c.unitName(u), why)
	}
	return out
}

// noteCut records, once for each of a phase's units whatever the
// passes, what was cut short and why.
func (c *healthCheck) noteCut(what, why string) {
	if c.cutNoted[what] {
		return
	}
	c.cutNoted[what] = true
	c.doc.CutShort = append(c.doc.CutShort, what+": "+why)
}

// farOf names the nodes of span that a block all-reduce over it runs
// through far below their peers: those in two units found far below or
// more (a sick node), else the ends of such a unit that span holds both of
// (a sick link).
func (c *healthCheck) farOf(span []int) []string {
	in := map[int]bool{}
	for _, n := range span {
		in[n] = true
	}
	var found []int
	for _, n := range span {
		if c.farCount[n] >= 2 {
			found = append(found, n)
		}
	}
	if len(found) == 0 {
		for _, nodes := range c.farUnits {
			if !slices.ContainsFunc(nodes, func(n int) bool { return !in[n] }) {
				found = append(found, nodes...)
			}
		}
	}
	slices.Sort(found)
	found = slices.Compact(found)
	out := make([]string, len(found))
	for i, n := range found {
		out[i] = c.doc.Nodes[n].Name
	}
	return out
}

// liveUnits are the units of a wave still to be measured, and where each
// sits in the wave: a node pair whose node was far below its peers in two
// pairs already is left out, the node being found (health.Judge names a
// member from two figures); other units are all measured.
func (c *healthCheck) liveUnits(wave []unit, what string) ([]unit, []int) {
	var live []unit
	var at []int
	for i, u := range wave {
		if u.node < 0 && len(u.span) == 0 {
			if n, ok := c.sick(u.pair.A, u.pair.B); ok {
				if !c.setAside[n] {
					c.setAside[n] = true
					c.noteCut(what+" of "+c.doc.Nodes[n].Name, fmt.Sprintf("the rest left out, %d of them being far below their peers already", c.farCount[n]))
				}
				continue
			}
		}
		live, at = append(live, u), append(at, i)
	}
	return live, at
}

// sick says whether either node was far below its peers in two units or
// more, and which.
func (c *healthCheck) sick(a, b int) (int, bool) {
	for _, n := range []int{a, b} {
		if c.farCount[n] >= 2 {
			return n, true
		}
	}
	return 0, false
}

// skipWave counts a wave whose every unit was left out as done.
func (c *healthCheck) skipWave(what string) {
	c.left = max(c.left-1, 0)
	c.stepDone(what)
}

// unitNodes are the nodes a unit measures: a GPU pair's or node
// all-reduce's node, a node pair's two, a block's.
func (c *healthCheck) unitNodes(u unit) []int {
	switch {
	case len(u.span) > 0:
		return u.span
	case u.node >= 0:
		return []int{u.node}
	}
	return []int{u.pair.A, u.pair.B}
}

// unitName names a unit as the summary does.
func (c *healthCheck) unitName(u unit) string {
	d := c.doc
	switch {
	case len(u.span) > 0:
		return fmt.Sprintf("(%d nodes)", len(u.span))
	case u.node >= 0 && u.pair != health.Pair{}:
		return c.gpuName(u.pair.A) + " ↔ " + c.gpuName(u.pair.B)
	case u.node >= 0:
		return d.Nodes[u.node].Name
	}
	return d.Nodes[u.pair.A].Name + " ↔ " + d.Nodes[u.pair.B].Name
}

// roundTime writes a call's time to three significant digits or so.
func roundTime(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}
