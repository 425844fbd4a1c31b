package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/health"
)

// percent writes a share as a percentage, to two significant digits below
// 10 %, and a share short of all as no more than 99 %.
func percent(share float64) string {
	switch {
	case share < 0.1:
		return fmt.Sprintf("%.2g %%", 100*share)
	case share < 1 && share >= 0.995:
		return ">99 %" // not all
	}
	return fmt.Sprintf("%.0f %%", 100*share)
}

// matrixLimit is the most members a matrix is printed for; larger jobs
// get their slowest pairs listed instead.
const matrixLimit = 16

// Health writes the summary of a health check: the nodes, each level's
// figures (pair matrices while they fit a terminal), the findings and
// the verdict.
func Health(w io.Writer, d *document.Health) {
	d = printableHealth(d)
	c := d.Config
	nccl := ""
	if d.NCCLVersion != "" {
		nccl = " NCCL " + d.NCCLVersion
	}
	fmt.Fprintf(w, "# collbench version %s backend=%s%s\n", d.Collbench, d.Backend, nccl)
	fmt.Fprintf(w, "# Health: %d node(s), %d rank(s) in %d process(es); send/recv %s between pairs, all-reduce %s, %s\n",
		len(d.Nodes), c.NRanks, c.NProcs, bench.FormatSize(c.PairBytes), bench.FormatSize(c.ARBytes), c.Type)
	fmt.Fprintf(w, "# %d warm-up + up to %d timed iterations, best of %d pass(es); flagged when %.0f%% and %.3g robust σ below the peers' median",
		c.Warmup, c.Iters, c.Passes, 100*c.MinDrop, c.Z)
	if len(c.Expect) > 0 {
		var keys []string
		for k := range c.Expect {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s=%.3g", k, c.Expect[k]))
		}
		from := "{Expect}"
		if c.Baseline != "" {
			from += ", " + c.Baseline
		}
		fmt.Fprintf(w, ", or %.0f%% below the expectation (GB/s: %s; from %s)", 100*c.MinDrop, strings.Join(parts, " "), from)
	}
	fmt.Fprintf(w, "\n")
	for _, l := range d.Judged {
		if l.Limit != nil {
			fmt.Fprintf(w, "# Judged (%s): against %s\n", l.Level, l.Limit)
		} else {
			fmt.Fprintf(w, "# Judged (%s): no wire limit (%s)\n", l.Level, l.NoLimit)
		}
	}
	fmt.Fprintf(w, "#\n# Nodes\n")
	for i, n := range d.Nodes {
		rack := ""
		if n.Rack != "" {
			rack = "  rack " + n.Rack
		}
		fmt.Fprintf(w, "#  n%-3d %-28s ranks %s%s\n", i, n.Name, bench.RankRanges(n.Ranks, ","), rack)
	}
	if len(d.Intra) > 0 {
		fmt.Fprintf(w, "#\n# GPU pairs inside each node: send/recv busbw (GB/s)%s\n", noiseNote(d, "intra"))
		for n, node := range d.Nodes {
			var pairs []document.PairFigure
			for _, p := range d.Intra {
				if p.Node == n {
					pairs = append(pairs, p)
				}
			}
			if len(pairs) > 0 {
				fmt.Fprintf(w, "#  %s\n", node.Name)
				pairMatrix(w, node.Ranks, "r", pairs)
			}
		}
	}
	if len(d.NodeAR) > 0 {
		fmt.Fprintf(w, "#\n# All-reduce inside each node: busbw (GB/s)%s\n", noiseNote(d, "node"))
		for _, f := range d.NodeAR {
			fmt.Fprintf(w, "#  n%-3d %-28s %10.3f\n", f.Node, d.Nodes[f.Node].Name, f.BusBW)
		}
	}
	if len(d.Inter) > 0 {
		fmt.Fprintf(w, "#\n# Node pairs: send/recv busbw (GB/s), the slowest pair of ranks between them%s\n", noiseNote(d, "inter"))
		if r := c.ScreenRounds; r > 0 {
			n := len(d.Nodes)
			racks := ""
			if c.Racks > 1 {
				racks = fmt.Sprintf(", inside and across %d racks in turn", c.Racks)
			}
			share := health.Coverage(n, len(d.Inter))
			seed := ""
			if c.ScreenSeed != nil {
				seed = fmt.Sprintf(", seed %d", *c.ScreenSeed)
			}
			fmt.Fprintf(w, "#  screened: %d rounds of random partners%s%s, %d of the %d pairs (%s; - not measured)\n", r, racks, seed, len(d.Inter), n*(n-1)/2, percent(share))
			fmt.Fprintf(w, "#  a link outside them is not judged; checks with fresh seeds meet %s of links after 10, %s after 100\n",
				percent(health.CoverageAfter(share, 10)), percent(health.CoverageAfter(share, 100)))
		}
		nodes := make([]int, len(d.Nodes))
		for i := range nodes {
			nodes[i] = i
		}
		pairMatrix(w, nodes, "n", d.Inter)
		if len(d.Confirmation) > 0 {
			// A pair measured again several times is one entry, its
			// figures in the order measured.
			var order []string
			figs := map[string][]string{}
			for _, p := range d.Confirmation {
				k := fmt.Sprintf("n%d-n%d", p.A, p.B)
				if figs[k] == nil {
					order = append(order, k)
				}
				figs[k] = append(figs[k], fmt.Sprintf("%.3f", p.BusBW))
			}
			parts := make([]string, len(order))
			for i, k := range order {
				parts[i] = k + " " + strings.Join(figs[k], "/")
			}
			fmt.Fprintf(w, "#  suspects measured again (nodes with fresh partners, links repeated): %s\n", strings.Join(parts, ", "))
		}
	}
	if d.Job != nil {
		fmt.Fprintf(w, "#\n# All-reduce over the whole job: busbw %.3f GB/s\n", d.Job.BusBW)
	}
	for _, b := range d.Bisection {
		names := make([]string, len(b.Nodes))
		for i, n := range b.Nodes {
			names[i] = fmt.Sprintf("n%d", n)
		}
		fmt.Fprintf(w, "#  bisection level %d: {%s} %.3f GB/s\n", b.Level, strings.Join(names, ","), b.BusBW)
	}
	arrivals(w, d)
	if len(d.Setup) > 0 {
		var parts []string
		for _, s := range d.Setup {
			part := fmt.Sprintf("%s %d wave(s), opened in %s at most", s.Phase, s.Waves, seconds(s.MaxS))
			if s.Closes > 0 { // version 1 records have no teardown
				part += fmt.Sprintf(", closed %d time(s) in %s at most", s.Closes, seconds(s.CloseMaxS))
			}
			parts = append(parts, part)
		}
		fmt.Fprintf(w, "#\n# Communicators per wave: %s\n", strings.Join(parts, "; "))
	}
	for _, s := range d.Skipped {
		fmt.Fprintf(w, "# left out: %s\n", s)
	}
	for _, s := range d.CutShort {
		fmt.Fprintf(w, "# cut short: %s\n", s)
	}
	for _, s := range d.Notes {
		fmt.Fprintf(w, "# note: %s\n", s)
	}
	fmt.Fprintf(w, "#\n")
	for _, f := range d.Findings {
		fmt.Fprintf(w, "FLAGGED %s %s: %s\n", f.Kind, f.Where, findingFigures(f))
	}
	switch {
	case d.Healthy:
		fmt.Fprintf(w, "Healthy: nothing flagged\n")
	case len(d.Findings) > 0:
		fmt.Fprintf(w, "Unhealthy: %d finding(s)\n", len(d.Findings))
	default:
		fmt.Fprintf(w, "Incomplete: nothing flagged in what was measured, but %d part(s) were left out\n", len(d.Skipped))
	}
}

// noiseNote gives a level's pass-to-pass noise, which bounds the
// smallest slowdown the check can tell from chance.
func noiseNote(d *document.Health, level string) string {
	n, ok := d.Noise[level]
	if !ok {
		return ""
	}
	note := fmt.Sprintf("; pass-to-pass noise %.1f%%", 100*n)
	// A figure must lie Z noise deviations out (in logarithms) to count.
	if floor := 1 - math.Exp(-d.Config.Z*n); floor > 0.2 {
		note += fmt.Sprintf(": only slowdowns beyond about %.0f%% can be told from it (raise {Iters}, {Passes} or the sizes)", 100*floor)
	}
	return note
}

// findingFigures says how far below what a finding lies; for a straggler,
// how late it came.
func findingFigures(f document.Finding) string {
	if f.Kind == "straggler" {
		return fmt.Sprintf("late by %.0f%% of the job's typical time between calls", 100*f.Drop)
	}
	ref := map[string]string{"peers": "the peers' median", "expect": "the expectation", "baseline": "the baseline",
		"other half": "the other half", "published": "the published " + f.Published}[f.Against]
	if ref == "" {
		ref = f.Against
	}
	s := fmt.Sprintf("%.3f GB/s, %.0f%% below %s %.3f GB/s", f.BusBW, 100*f.Drop, ref, f.Reference)
	if f.Z != nil {
		s += fmt.Sprintf(" (%.1f robust σ)", *f.Z)
	} else if f.Against == "peers" {
		s += " (the peers agree exactly)"
	}
	if f.WireShare > 0 {
		s += fmt.Sprintf("; %.0f%% of the wire", 100*f.WireShare)
	}
	if f.PublishedRatio > 0 && f.Against != "published" {
		s += fmt.Sprintf("; %.2f× the published %s", f.PublishedRatio, f.Published)
	}
	return s
}

// pairMatrix prints a symmetric matrix of pair figures over members
// (labelled prefix+member), or, beyond matrixLimit members, the ten
// slowest pairs.
func pairMatrix(w io.Writer, members []int, prefix string, pairs []document.PairFigure) {
	if len(members) > matrixLimit {
		sorted := append([]document.PairFigure(nil), pairs...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].BusBW < sorted[j].BusBW })
		fmt.Fprintf(w, "#   %d pairs; the slowest:\n", len(pairs))
		for _, p := range sorted[:min(10, len(sorted))] {
			fmt.Fprintf(w, "#   %s%d ↔ %s%d %10.3f\n", prefix, p.A, prefix, p.B, p.BusBW)
		}
		return
	}
	at := map[[2]int]float64{}
	for _, p := range pairs {
		at[[2]int{p.A, p.B}], at[[2]int{p.B, p.A}] = p.BusBW, p.BusBW
	}
	var b strings.Builder
	b.WriteString("#   " + strings.Repeat(" ", 6))
	for _, m := range members {
		fmt.Fprintf(&b, " %8s", fmt.Sprintf("%s%d", prefix, m))
	}
	fmt.Fprintln(w, b.String())
	for _, r := range members {
		b.Reset()
		fmt.Fprintf(&b, "#   %6s", fmt.Sprintf("%s%d", prefix, r))
		for _, c := range members {
			if v, ok := at[[2]int{r, c}]; ok {
				fmt.Fprintf(&b, " %8.3f", v)
			} else {
				fmt.Fprintf(&b, " %8s", "-")
			}
		}
		fmt.Fprintln(w, b.String())
	}
}

// arrivals sums up who reached the job's all-reduce last, call after call.
func arrivals(w io.Writer, d *document.Health) {
	a := d.Arrivals
	if a == nil || len(a.Procs) == 0 {
		return
	}
	most := a.Procs[0]
	for _, p := range a.Procs {
		if p.Last > most.Last {
			most = p
		}
	}
	fmt.Fprintf(w, "#  arrivals: %d calls of a %s all-reduce, each after %s, %s apart (median): last most often %s ranks %s, in %d (a median %s after the first; its compute %s)\n",
		a.Calls, bench.FormatSize(a.Bytes), a.Workload, seconds(a.GapUs/1e6), d.Nodes[most.Node].Name, bench.RankRanges(most.Ranks, ","), most.Last,
		seconds(most.LateUs/1e6), seconds(most.WorkUs/1e6))
	if a.Unjudged != "" {
		fmt.Fprintf(w, "#  no straggler named: %s\n", a.Unjudged)
	}
}

// seconds writes a time in the unit that reads best.
func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Microsecond).String()
}

// printableHealth is d with the text a record may carry from elsewhere
// (host names, racks, findings' places, notes) made Printable.
func printableHealth(d *document.Health) *document.Health {
	c := *d
	c.Collbench, c.Backend, c.NCCLVersion = Printable(d.Collbench), Printable(d.Backend), Printable(d.NCCLVersion)
	c.Nodes = slices.Clone(d.Nodes)
	for i := range c.Nodes {
		c.Nodes[i].Name, c.Nodes[i].Rack = Printable(c.Nodes[i].Name), Printable(c.Nodes[i].Rack)
	}
	c.Findings = slices.Clone(d.Findings)
	for i := range c.Findings {
		c.Findings[i].Where = Printable(c.Findings[i].Where)
	}
	c.Skipped, c.Notes, c.Errors, c.CutShort = printables(d.Skipped), printables(d.Notes), printables(d.Errors), printables(d.CutShort)
	return &c
}
