package chart

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/model/profiled"
)

// Point is one message size of a series.
type Point struct {
	Bytes  int64
	TimeUS float64 // µs
	BusBW  float64 // GB/s
}

// Series is one line of a chart: a run's collective (or one of the groups
// that ran at once), or one profile curve.
type Series struct {
	Label  string
	Op     string // collective, to split a profile's charts by
	Points []Point
	// Placement names the results a run's series shows ("out of place",
	// as nccl-tests' first columns), for the axis to say; "" for a
	// profile's curve.
	Placement string
	// Fitted is a profile curve's fitted cost model at its sizes (and
	// between them), drawn as a thin dashed line beside the measured
	// points; none for a run.
	Fitted []Point
}

// FromRun returns a run's out-of-place results as series: one per data
// type, reduction and root, and one per group when several groups ran at
// once. prefix (a file name, say) starts each label when not empty.
func FromRun(r *document.Run, prefix string) []Series {
	type key struct {
		typ, op string
		root    int
		group   int
	}
	variants := map[string]bool{}
	for _, res := range r.Results {
		variants[fmt.Sprintf("%s %s %d", res.Type, res.RedOp, res.Root)] = true
	}
	byKey := map[key]*Series{}
	var order []key
	add := func(k key, p Point) {
		s, ok := byKey[k]
		if !ok {
			label := r.Collective
			if len(variants) > 1 {
				label += " " + k.typ
				if k.op != "none" && k.op != "" {
					label += " " + k.op
				}
				if k.root >= 0 {
					label += fmt.Sprintf(" root %d", k.root)
				}
			}
			if k.group >= 0 {
				label += fmt.Sprintf(" group %d", k.group)
			}
			s = &Series{Label: withPrefix(prefix, label), Op: r.Collective, Placement: "out of place"}
			byKey[k] = s
			order = append(order, k)
		}
		s.Points = append(s.Points, p)
	}
	for _, res := range r.Results {
		m := res.OutOfPlace
		if m.Time <= 0 || res.Size <= 0 {
			continue
		}
		k := key{res.Type, res.RedOp, res.Root, -1}
		if len(m.Groups) > 1 {
			for g, gm := range m.Groups {
				k.group = g
				add(k, Point{Bytes: res.Size, TimeUS: gm.Time, BusBW: gm.BusBW})
			}
			continue
		}
		add(k, Point{Bytes: res.Size, TimeUS: m.Time, BusBW: m.BusBW})
	}
	out := make([]Series, 0, len(order))
	for _, k := range order {
		out = append(out, sorted(*byKey[k]))
	}
	return out
}

// FromProfile returns one series per profile curve, labelled with its
// collective, group size and layout. Times are the curve's fitted times
// (the median of the slowest rank); bandwidths are nccl-tests' busbw.
func FromProfile(p *document.Profile, prefix string) []Series {
	out := make([]Series, 0, len(p.Curves))
	for _, c := range p.Curves {
		s := Series{Label: withPrefix(prefix, fmt.Sprintf("%s n=%d %s", c.Op, c.Group.Size, c.Group.Layout)), Op: c.Op}
		for _, smp := range c.Samples {
			if smp.Bytes > 0 && smp.TimeUs > 0 {
				s.Points = append(s.Points, Point{Bytes: smp.Bytes, TimeUS: smp.TimeUs, BusBW: smp.BusBW})
			}
		}
		if len(s.Points) > 0 {
			s = sorted(s)
			s.Fitted = fitted(c.Fit, s.Points)
			out = append(out, s)
		}
	}
	return out
}

// fitted evaluates a curve's fit at its measured sizes and the geometric
// midpoints between them; each bus bandwidth comes from the fitted time as
// the measured ones come from the measured times (busbw × time ∝ size, by
// the median ratio over the points: a point's bandwidth is nccl-tests'
// mean time's, its time the median the fits read).
func fitted(f *document.Fit, pts []Point) []Point {
	if f == nil || len(pts) == 0 {
		return nil
	}
	var ratios []float64
	for _, p := range pts {
		if p.Bytes > 0 && p.TimeUS > 0 && p.BusBW > 0 {
			ratios = append(ratios, p.BusBW*p.TimeUS/float64(p.Bytes))
		}
	}
	if len(ratios) == 0 {
		return nil
	}
	slices.Sort(ratios)
	k := ratios[len(ratios)/2]
	var sizes []int64
	for i, p := range pts {
		if i > 0 {
			sizes = append(sizes, int64(math.Round(math.Sqrt(float64(pts[i-1].Bytes)*float64(p.Bytes)))))
		}
		sizes = append(sizes, p.Bytes)
	}
	var out []Point
	for _, b := range sizes {
		if t := profiled.At(f, float64(b)); t > 0 && !math.IsInf(t, 0) && !math.IsNaN(t) {
			out = append(out, Point{Bytes: b, TimeUS: t, BusBW: k * float64(b) / t})
		}
	}
	return out
}

// Select returns the series of every entry, labelled with the entry's
// name when there are several, and only those whose label keep matches
// (all of them when keep is nil).
func Select(entries []Entry, keep *regexp.Regexp) []Series {
	var out []Series
	for _, e := range entries {
		prefix := ""
		if len(entries) > 1 {
			prefix = e.Name
		}
		for _, s := range FromDocument(e.Doc, prefix) {
			if keep == nil || keep.MatchString(s.Label) {
				out = append(out, s)
			}
		}
	}
	return out
}

// FromDocument returns the series of a run or a profile; a health
// record has none (its pairs are a heat map: RenderHealth).
func FromDocument(d document.Document, prefix string) []Series {
	if d.Health != nil {
		return nil
	}
	if d.Profile != nil {
		return FromProfile(d.Profile, prefix)
	}
	return FromRun(d.Run, prefix)
}

func withPrefix(prefix, label string) string {
	if prefix == "" {
		return label
	}
	return prefix + ": " + label
}

func sorted(s Series) Series {
	sort.SliceStable(s.Points, func(i, j int) bool { return s.Points[i].Bytes < s.Points[j].Bytes })
	return s
}
