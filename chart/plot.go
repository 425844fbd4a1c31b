package chart

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/setting"
)

// Metric is what a panel puts on its y axis.
type Metric string

// The panels a chart can have.
const (
	BusBW Metric = "busbw" // bus bandwidth, GB/s, linear axis from 0
	Time  Metric = "time"  // time per call, µs, log10 axis
)

// ParseMetrics reads --metric: busbw, time or both.
func ParseMetrics(s string) ([]Metric, error) {
	switch strings.ToLower(s) {
	case "busbw":
		return []Metric{BusBW}, nil
	case "time":
		return []Metric{Time}, nil
	case "both", "":
		return []Metric{BusBW, Time}, nil
	}
	return nil, setting.Errorf("{Metric} %q: want busbw, time or both", s)
}

// Options shape a chart.
type Options struct {
	Title   string
	Metrics []Metric  // panels, top to bottom; nil means busbw then time
	Width   vg.Length // 0 means 8 inches
	// Guides are drawn on the bus bandwidth panel: a judged run's wire
	// limit and published figures.
	Guides []Guide
}

// Formats are the image formats Render writes, by file extension.
var Formats = []string{"svg", "png", "pdf"}

// FormatOf picks the image format from a file name's extension.
func FormatOf(path string) (string, error) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	for _, f := range Formats {
		if ext == f {
			return f, nil
		}
	}
	return "", fmt.Errorf("%s: cannot tell the image format from the extension; use .svg, .png or .pdf", path)
}

// Render draws the series as stacked panels (one per metric) sharing a
// log2 message-size axis, and writes the image in format.
func Render(w io.Writer, format string, series []Series, o Options) error {
	if len(series) == 0 {
		return fmt.Errorf("nothing to plot: no series has a measured size")
	}
	metrics := o.Metrics
	if len(metrics) == 0 {
		metrics = []Metric{BusBW, Time}
	}
	width := o.Width
	if width == 0 {
		width = 8 * vg.Inch
	}
	// The legend sits inside the first panel; give it room.
	panel := max(4*vg.Inch, vg.Length(len(series)+len(o.Guides))*0.2*vg.Inch+1.5*vg.Inch)
	height := panel * vg.Length(len(metrics))

	plots := make([][]*plot.Plot, len(metrics))
	for i, m := range metrics {
		var guides []Guide
		if m == BusBW {
			guides = o.Guides
		}
		p, err := newPanel(series, guides, m, i == 0)
		if err != nil {
			return err
		}
		if i == 0 {
			p.Title.Text = o.Title
		}
		plots[i] = []*plot.Plot{p}
	}
	canvas, write, err := newCanvas(format, width, height)
	if err != nil {
		return err
	}
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: len(metrics), Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	return write(w)
}

// newCanvas returns a canvas of the format and the function that encodes it.
func newCanvas(format string, w, h vg.Length) (vg.CanvasSizer, func(io.Writer) error, error) {
	switch format {
	case "svg":
		c := vgsvg.New(w, h)
		return c, func(out io.Writer) error { _, err := c.WriteTo(out); return err }, nil
	case "png":
		c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110))
		return c, func(out io.Writer) error { _, err := vgimg.PngCanvas{Canvas: c}.WriteTo(out); return err }, nil
	case "pdf":
		c := vgpdf.New(w, h)
		return c, func(out io.Writer) error { _, err := c.WriteTo(out); return err }, nil
	}
	return nil, nil, fmt.Errorf("image format %q: want one of %s", format, strings.Join(Formats, ", "))
}

// sans is the face of every text on a chart.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func newPanel(series []Series, guides []Guide, m Metric, legend bool) (*plot.Plot, error) {
	p := plot.New()
	for _, t := range []sized{{&p.Title.TextStyle, 14}, {&p.X.Label.TextStyle, 11}, {&p.Y.Label.TextStyle, 11},
		{&p.X.Tick.Label, 9}, {&p.Y.Tick.Label, 9}, {&p.Legend.TextStyle, 9}} {
		t.style.Font = font.From(sans, t.size)
	}
	p.X.Label.Text = "message size (bytes)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.TickerFunc(sizeTicks)
	switch m {
	case BusBW:
		p.Y.Label.Text = "bus bandwidth (GB/s)" + placementOf(series)
		p.Y.Min = 0
	case Time:
		p.Y.Label.Text = "time (µs)" + placementOf(series)
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.TickerFunc(shortTicks(timeTicks))
	default:
		return nil, fmt.Errorf("unknown metric %q", m)
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), -vg.Points(4)
	for i, s := range series {
		xy := make(plotter.XYs, 0, len(s.Points))
		for _, pt := range s.Points {
			y := pt.BusBW
			if m == Time {
				y = pt.TimeUS
				if y <= 0 {
					continue // a log axis has no room for it
				}
			}
			xy = append(xy, plotter.XY{X: float64(pt.Bytes), Y: y})
		}
		if len(xy) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, fmt.Errorf("plotting %s: %w", s.Label, err)
		}
		line.Color = lineColors[i%len(lineColors)]
		line.Dashes = plotutil.Dashes(i / len(lineColors))
		line.Width = vg.Points(1.5)
		points.Color = line.Color
		points.Shape = plotutil.Shape(i)
		points.Radius = vg.Points(2.5)
		p.Add(line, points)
		if legend {
			p.Legend.Add(s.Label, line, points)
		}
		if fit := fittedLine(s.Fitted, m); fit != nil {
			fit.Color = line.Color
			p.Add(fit)
		}
	}
	if len(guides) > 0 {
		lo, hi := sizeRange(series)
		if err := addGuides(p, guides, lo, hi, legend); err != nil {
			return nil, err
		}
	}
	if legend && m == BusBW {
		// Room above the highest line for the legend, a line per entry,
		// so that it covers no data (a guide is often the highest line).
		p.Y.Max *= 1 + 0.06*float64(len(series)+len(guides)+1)
	}
	// One size (or one time) makes an empty range, which gonum widens
	// by ±1: through zero on a log axis. Widen it by a factor instead.
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		if _, log := ax.Scale.(plot.LogScale); log && ax.Min == ax.Max && ax.Min > 0 {
			ax.Min, ax.Max = ax.Min/2, ax.Max*2
		}
	}
	return p, nil
}

// sizeRange is the smallest and largest size the series measured.
func sizeRange(series []Series) (lo, hi float64) {
	for _, s := range series {
		for _, pt := range s.Points {
			b := float64(pt.Bytes)
			if lo == 0 || b < lo {
				lo = b
			}
			hi = max(hi, b)
		}
	}
	return lo, hi
}

// timeTicks are gonum's decade ticks where the times span up to ten
// decades; beyond that, every 2nd, 5th, 10th … decade, each labelled, so
// that a time far out (1e308 µs) does not write hundreds of labels over
// each other.
func timeTicks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= 0 {
		return nil
	}
	first, last := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if last-first <= 10 {
		return plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	}
	step := 2.0
	for _, s := range []float64{2, 5, 10, 20, 50, 100} {
		step = s
		if (last-first)/s <= 10 {
			break
		}
	}
	var ticks []plot.Tick
	for e := math.Ceil(first/step) * step; e <= last; e += step {
		v := math.Pow(10, e)
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
	}
	return ticks
}

// shortTicks labels ticks with k, M and G for thousands, millions and
// billions (100k, not 100000), leaving unlabelled ticks alone.
func shortTicks(ticker func(lo, hi float64) []plot.Tick) func(lo, hi float64) []plot.Tick {
	return func(lo, hi float64) []plot.Tick {
		ticks := ticker(lo, hi)
		for i, t := range ticks {
			if t.Label != "" {
				ticks[i].Label = shortNumber(t.Value)
			}
		}
		return ticks
	}
}

// shortNumber writes a tick's value with a k, M or G suffix from a
// thousand up, and as %g below.
func shortNumber(v float64) string {
	for _, u := range []struct {
		div  float64
		unit string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= u.div && math.Abs(v) < 1e12 {
			return strconv.FormatFloat(v/u.div, 'g', 4, 64) + u.unit
		}
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// lineColors are Okabe and Ito's colours, which readers with any common
// colour-vision deficiency tell apart (yellow, too faint on white, left
// out): no red beside green.
var lineColors = []color.Color{
	color.RGBA{0x00, 0x72, 0xb2, 0xff}, // blue
	color.RGBA{0xe6, 0x9f, 0x00, 0xff}, // orange
	color.RGBA{0x00, 0x9e, 0x73, 0xff}, // bluish green
	color.RGBA{0xd5, 0x5e, 0x00, 0xff}, // vermilion
	color.RGBA{0xcc, 0x79, 0xa7, 0xff}, // reddish purple
	color.RGBA{0x56, 0xb4, 0xe9, 0xff}, // sky blue
	color.RGBA{0x00, 0x00, 0x00, 0xff}, // black
}

// placementOf says, for an axis label, which placement the series show
// when they all show one (a run's out-of-place results).
func placementOf(series []Series) string {
	if len(series) == 0 || series[0].Placement == "" {
		return ""
	}
	for _, s := range series[1:] {
		if s.Placement != series[0].Placement {
			return ""
		}
	}
	return ", " + series[0].Placement
}

// sized is a text style and the point size it gets.
type sized struct {
	style *text.Style
	size  font.Length
}

// sizeTicks marks every power of two across the range and labels at most
// about ten of them in nccl-tests' size notation, every 1st, 2nd, 5th or
// 10th power so that 1K, 1M and 1G keep their labels where they can.
func sizeTicks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= 0 {
		return nil
	}
	first, last := math.Floor(math.Log2(lo)), math.Ceil(math.Log2(hi))
	step := 1
	for _, s := range []int{1, 2, 5, 10, 20} {
		step = s
		if (last-first)/float64(s) <= 10 {
			break
		}
	}
	var ticks []plot.Tick
	for e := first; e <= last; e++ {
		v := math.Exp2(e)
		t := plot.Tick{Value: v}
		if int(e)%step == 0 {
			t.Label = bench.FormatSize(int64(v))
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// fittedLine is a profile curve's fitted model as a thin dashed line, nil
// when it has none.
func fittedLine(pts []Point, m Metric) *plotter.Line {
	xy := make(plotter.XYs, 0, len(pts))
	for _, pt := range pts {
		y := pt.BusBW
		if m == Time {
			y = pt.TimeUS
		}
		if y > 0 {
			xy = append(xy, plotter.XY{X: float64(pt.Bytes), Y: y})
		}
	}
	if len(xy) < 2 {
		return nil
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return nil
	}
	l.Width = vg.Points(0.8)
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	return l
}
