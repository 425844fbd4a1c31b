package chart

import (
	"fmt"
	"image/color"
	"regexp"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/collbench/collbench/document"
)

// Guide is a bandwidth a judged run is measured against, drawn as a
// horizontal line on the bus bandwidth panel: the wire limit across every
// size, or a published figure across the sizes it covers.
type Guide struct {
	Label    string
	BusBW    float64 // GB/s
	From, To int64   // bytes; both 0 spans every size
	Wire     bool    // the wire limit, not a published figure
}

// GuidesFromRun returns the lines a run's judgement (--judge) draws: its
// wire limit, and each published figure it was judged against, over the
// run's sizes that figure judged. None without a judgement.
func GuidesFromRun(r *document.Run, prefix string) []Guide {
	jd := r.Judgement
	if jd == nil {
		return nil
	}
	var out []Guide
	if l := jd.Limit; l != nil && l.GBps > 0 {
		out = append(out, Guide{Label: withPrefix(prefix, "wire: "+l.String()), BusBW: l.GBps, Wire: true})
	}
	byID := map[string]int{}
	for _, row := range jd.Rows {
		ref := row.Reference
		if ref == nil || ref.BusBW <= 0 || row.Size <= 0 {
			continue
		}
		i, ok := byID[ref.ID]
		if !ok {
			label := fmt.Sprintf("published: %s GB/s (%s)", strconv.FormatFloat(ref.BusBW, 'f', -1, 64), ref.ID)
			out = append(out, Guide{Label: withPrefix(prefix, label), BusBW: ref.BusBW, From: row.Size, To: row.Size})
			byID[ref.ID] = len(out) - 1
			continue
		}
		out[i].From, out[i].To = min(out[i].From, row.Size), max(out[i].To, row.Size)
	}
	return out
}

// SelectGuides returns the guides of the runs among entries that have a
// series keep matches (every run when keep is nil), labelled with the
// entry's name when there are several.
func SelectGuides(entries []Entry, keep *regexp.Regexp) []Guide {
	var out []Guide
	for _, e := range entries {
		if e.Doc.Run == nil || e.Doc.Health != nil || e.Doc.Profile != nil {
			continue
		}
		prefix := ""
		if len(entries) > 1 {
			prefix = e.Name
		}
		kept := keep == nil
		for _, s := range FromRun(e.Doc.Run, prefix) {
			kept = kept || keep.MatchString(s.Label)
		}
		if kept {
			out = append(out, GuidesFromRun(e.Doc.Run, prefix)...)
		}
	}
	return out
}

// addGuides draws the guides on a bus bandwidth panel whose series span
// the sizes lo to hi: grey, dashed for the wire and dotted for a
// published figure, each in the legend when legend is set.
func addGuides(p *plot.Plot, guides []Guide, lo, hi float64, legend bool) error {
	sort.SliceStable(guides, func(i, j int) bool { return guides[i].Wire && !guides[j].Wire })
	for _, g := range guides {
		from, to := float64(g.From), float64(g.To)
		if g.From <= 0 || g.To <= 0 {
			from, to = lo, hi
		}
		if from == to { // one size: a short segment either side
			from, to = from/1.5, to*1.5
		}
		line, err := plotter.NewLine(plotter.XYs{{X: from, Y: g.BusBW}, {X: to, Y: g.BusBW}})
		if err != nil {
			return fmt.Errorf("guide %s: %w", g.Label, err)
		}
		line.Color = color.Gray{Y: 90}
		line.Width = vg.Points(1.2)
		line.Dashes = []vg.Length{vg.Points(1.5), vg.Points(2.5)}
		if g.Wire {
			line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		p.Add(line)
		if legend {
			p.Legend.Add(g.Label, line)
		}
	}
	return nil
}
