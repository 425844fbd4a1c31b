package chart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/fileio"
)

// maxIntraPanels is the most nodes whose GPU matrix a heatmap draws:
// the nodes with findings first, then the first nodes.
const maxIntraPanels = 8

// pairGrid is a symmetric matrix of pair figures for gonum's heat map;
// the diagonal and pairs not measured are NaN.
type pairGrid struct {
	labels []string
	z      [][]float64
}

func (g pairGrid) Dims() (c, r int)   { return len(g.labels), len(g.labels) }
func (g pairGrid) Z(c, r int) float64 { return g.z[r][c] }
func (g pairGrid) X(c int) float64    { return float64(c) }
func (g pairGrid) Y(r int) float64    { return float64(len(g.labels) - 1 - r) } // row 0 on top, as a matrix is read

func newPairGrid(members []int, label func(int) string, pairs []document.PairFigure) pairGrid {
	at := map[int]int{}
	g := pairGrid{labels: make([]string, len(members)), z: make([][]float64, len(members))}
	for i, m := range members {
		at[m] = i
		g.labels[i] = label(m)
		g.z[i] = make([]float64, len(members))
		for j := range g.z[i] {
			g.z[i][j] = math.NaN()
		}
	}
	for _, p := range pairs {
		a, okA := at[p.A]
		b, okB := at[p.B]
		if okA && okB {
			g.z[a][b], g.z[b][a] = p.BusBW, p.BusBW
		}
	}
	return g
}

// healthPanels are the matrices a heatmap draws: node pairs, then the
// GPU pairs of up to maxIntraPanels nodes.
func healthPanels(d *document.Health) (titles []string, grids []pairGrid) {
	if len(d.Inter) > 0 {
		nodes := make([]int, len(d.Nodes))
		for i := range nodes {
			nodes[i] = i
		}
		titles = append(titles, "node pairs: send/recv busbw (GB/s)")
		grids = append(grids, newPairGrid(nodes, func(n int) string { return d.Nodes[n].Name }, d.Inter))
	}
	var order []int
	seen := map[int]bool{}
	for _, f := range d.Findings {
		if (f.Kind == "gpu" || f.Kind == "gpu-link") && len(f.Nodes) > 0 && !seen[f.Nodes[0]] {
			order, seen[f.Nodes[0]] = append(order, f.Nodes[0]), true
		}
	}
	for n := range d.Nodes {
		if !seen[n] {
			order, seen[n] = append(order, n), true
		}
	}
	for _, n := range order {
		var pairs []document.PairFigure
		for _, p := range d.Intra {
			if p.Node == n {
				pairs = append(pairs, p)
			}
		}
		if len(pairs) == 0 || len(grids) > maxIntraPanels {
			continue
		}
		titles = append(titles, d.Nodes[n].Name+": GPU pairs, send/recv busbw (GB/s)")
		grids = append(grids, newPairGrid(d.Nodes[n].Ranks, func(r int) string { return fmt.Sprintf("rank %d", r) }, pairs))
	}
	return titles, grids
}

// ErrNoPairs is a health record without pairs to draw: one node with
// one rank.
var ErrNoPairs = errors.New("nothing to draw: the health record has no pairs (one rank on one node)")

// RenderHealth draws a health record's pair matrices as heat maps, one
// panel each, in format (svg, png or pdf): a slow node is a dark row and
// column, a slow link a dark cell.
func RenderHealth(w io.Writer, format string, d *document.Health) error {
	titles, grids := healthPanels(d)
	if len(grids) == 0 {
		return ErrNoPairs
	}
	plots := make([][]*plot.Plot, len(grids))
	for i, g := range grids {
		p, err := heatPanel(titles[i], g)
		if err != nil {
			return err
		}
		plots[i] = []*plot.Plot{p}
	}
	side := 6 * vg.Inch
	canvas, write, err := newCanvas(format, side+vg.Inch, side*vg.Length(len(grids)))
	if err != nil {
		return err
	}
	tiles := draw.Tiles{Rows: len(grids), Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align(plots, tiles, draw.New(canvas))
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	return write(w)
}

// heatPanel is one matrix with its cells' values written in them while
// they fit.
func heatPanel(title string, g pairGrid) (*plot.Plot, error) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, row := range g.z {
		for i, v := range row {
			if math.IsInf(v, 0) || math.Abs(v) > 1e15 { // no bandwidth is that; draw it as missing
				row[i] = math.NaN()
			} else if !math.IsNaN(v) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 1
	}
	// The scale starts at zero, so the scatter of healthy pairs stays
	// one warm shade and only a real drop turns cold.
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s, %.3g–%.3g", title, lo, hi)
	lo = 0
	if hi <= lo {
		hi = lo + 1e-9
	}
	cm := moreland.SmoothBlueRed()
	cm.SetMin(lo)
	cm.SetMax(hi)
	pal := cm.Palette(64)
	for _, t := range []sized{{&p.Title.TextStyle, 12}, {&p.X.Tick.Label, 9}, {&p.Y.Tick.Label, 9}} {
		t.style.Font = font.From(sans, t.size)
	}
	h := plotter.NewHeatMap(g, pal)
	h.Min, h.Max, h.NaN = lo, hi, color.Gray{Y: 235}
	// Red is fast, blue slow: the bad row stands out cold.
	p.Add(h)
	n := len(g.labels)
	if n <= 12 {
		var labels plotter.XYLabels
		for r := 0; r < n; r++ {
			for c := 0; c < n; c++ {
				if v := g.z[r][c]; !math.IsNaN(v) {
					labels.XYs = append(labels.XYs, plotter.XY{X: float64(c), Y: g.Y(r)})
					labels.Labels = append(labels.Labels, fmt.Sprintf("%.3g", v))
				}
			}
		}
		l, err := plotter.NewLabels(labels)
		if err != nil {
			return nil, err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].Font = font.From(sans, 8)
			l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = -0.5, -0.5
		}
		p.Add(l)
	}
	xticks, yticks := make([]plot.Tick, n), make([]plot.Tick, n)
	for i, s := range g.labels {
		if n > 32 && i%(n/16) != 0 {
			s = ""
		}
		xticks[i] = plot.Tick{Value: float64(i), Label: s}
		yticks[i] = plot.Tick{Value: g.Y(i), Label: s}
	}
	p.X.Tick.Marker = plot.ConstantTicks(xticks)
	p.Y.Tick.Marker = plot.ConstantTicks(yticks)
	p.X.Tick.Label.Rotation, p.X.Tick.Label.XAlign = math.Pi/4, draw.XRight
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5, -0.5, float64(n)-0.5
	return p, nil
}

// HealthHeatmapFile draws a health record's heat maps into the image
// out, its format from its extension; nothing is written on failure.
func HealthHeatmapFile(ctx context.Context, out string, d *document.Health) error {
	format, err := FormatOf(out)
	if err != nil {
		return err
	}
	var img bytes.Buffer
	if err := RenderHealth(&img, format, d); err != nil {
		return err
	}
	return fileio.WriteBytes(ctx, out, img.Bytes())
}

// healthSection lays out a health record for a report page: the verdict,
// the findings, the per-level figures and the heat maps.
func healthSection(name string, d *document.Health) (section, error) {
	c := d.Config
	s := section{Title: fmt.Sprintf("%s: health of %d node(s), %d rank(s), %s backend", name, len(d.Nodes), c.NRanks, d.Backend)}
	verdict := "healthy: nothing flagged"
	switch {
	case len(d.Findings) > 0:
		verdict = fmt.Sprintf("unhealthy: %d finding(s)", len(d.Findings))
	case !d.Healthy:
		verdict = fmt.Sprintf("incomplete: %d part(s) left out, nothing flagged in the rest", len(d.Skipped))
	}
	s.Facts = []fact{
		{"verdict", verdict},
		{"sizes", fmt.Sprintf("send/recv %d B between pairs, all-reduce %d B, %s", c.PairBytes, c.ARBytes, c.Type)},
		{"criteria", fmt.Sprintf("%.0f %% and %.3g robust σ below the peers' median, best of %d pass(es)", 100*c.MinDrop, c.Z, c.Passes)},
		{"started", d.StartTime},
		{"finished", d.EndTime},
		{"command", strings.Join(d.Args, " ")},
	}
	if len(d.Findings) > 0 {
		t := table{Caption: "Findings", Head: []string{"kind", "where", "busbw (GB/s)", "reference (GB/s)", "against", "below"}}
		for _, f := range d.Findings {
			t.Rows = append(t.Rows, []string{f.Kind, f.Where, num(f.BusBW), num(f.Reference), f.Against, fmt.Sprintf("%.0f %%", 100*f.Drop)})
		}
		s.Tables = append(s.Tables, t)
	}
	if len(d.NodeAR) > 0 || d.Job != nil {
		t := table{Caption: "All-reduce bus bandwidth (GB/s)", Head: []string{"over", "busbw"}}
		for _, f := range d.NodeAR {
			t.Rows = append(t.Rows, []string{d.Nodes[f.Node].Name, num(f.BusBW)})
		}
		if d.Job != nil {
			t.Rows = append(t.Rows, []string{"the whole job", num(d.Job.BusBW)})
		}
		for _, b := range d.Bisection {
			t.Rows = append(t.Rows, []string{fmt.Sprintf("bisection level %d: nodes %v", b.Level, b.Nodes), num(b.BusBW)})
		}
		s.Tables = append(s.Tables, t)
	}
	if _, grids := healthPanels(d); len(grids) > 0 {
		var b bytes.Buffer
		if err := RenderHealth(&b, "svg", d); err != nil {
			return s, fmt.Errorf("%s: %w", name, err)
		}
		s.Charts = append(s.Charts, image{Caption: "send/recv bus bandwidth between pairs (GB/s); cold cells are slow", Name: "pairs", SVG: b.Bytes()})
	}
	s.Notes = append(s.Notes, d.Skipped...)
	return s, nil
}
