package chart

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/golden"
	"github.com/collbench/collbench/model/profiled"
)

// load reads a document measured by collbench on the host backend
// (testdata/*.json were written by collbench allreduce/alltoall -J and
// collbench profile -o).
func load(t *testing.T, name string) document.Document {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := document.DecodeDocument(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

func TestRenderGolden(t *testing.T) {
	var series []Series
	for _, n := range []string{"allreduce", "alltoall"} {
		series = append(series, FromDocument(load(t, n), n)...)
	}
	var b bytes.Buffer
	if err := Render(&b, "svg", series, Options{Title: "allreduce vs alltoall"}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "runs.svg", b.Bytes())
	// A run's series show its out-of-place results, and the axes say so;
	// the colours are Okabe and Ito's (blue, then orange).
	for _, want := range []string{">allreduce: allreduce<", ">alltoall: alltoall<", ">bus bandwidth (GB/s), out of place<", ">time (µs), out of place<",
		">1M<", ">1K<", "stroke:#0072B2", "stroke:#E69F00"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

func TestRenderFormats(t *testing.T) {
	series := FromDocument(load(t, "allreduce"), "")
	for _, tc := range []struct {
		format  string
		metrics []Metric
		check   func([]byte) error
	}{
		{"png", []Metric{BusBW}, func(b []byte) error {
			img, err := png.Decode(bytes.NewReader(b))
			if err == nil && img.Bounds().Dx() != 880 { // 8 in at 110 dpi
				t.Errorf("png is %d pixels wide, want 880", img.Bounds().Dx())
			}
			return err
		}},
		{"pdf", []Metric{Time}, func(b []byte) error {
			if !bytes.HasPrefix(b, []byte("%PDF-")) {
				t.Errorf("not a PDF: %q", b[:min(len(b), 8)])
			}
			return nil
		}},
		{"svg", nil, func(b []byte) error {
			if n := bytes.Count(b, []byte(">message size (bytes)<")); n != 2 {
				t.Errorf("default chart has %d panels, want 2", n)
			}
			return nil
		}},
	} {
		var b bytes.Buffer
		if err := Render(&b, tc.format, series, Options{Metrics: tc.metrics}); err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		if err := tc.check(b.Bytes()); err != nil {
			t.Errorf("%s: %v", tc.format, err)
		}
	}
	if err := Render(&bytes.Buffer{}, "svg", nil, Options{}); err == nil {
		t.Error("rendering no series succeeded")
	}
	if err := Render(&bytes.Buffer{}, "gif", series, Options{}); err == nil {
		t.Error("rendering a gif succeeded")
	}
}

func TestReportGolden(t *testing.T) {
	entries := []Entry{{Name: "allreduce", Doc: load(t, "allreduce")}, {Name: "profile", Doc: load(t, "profile")}}
	var html bytes.Buffer
	if err := WriteHTML(&html, "collbench report", entries); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "report.html", html.Bytes())
	if n := strings.Count(html.String(), "<svg"); n != 3 {
		t.Errorf("HTML report has %d charts, want 3 (the run, and the profile's allreduce and allgather)", n)
	}

	var md bytes.Buffer
	var saved []string
	err := WriteMarkdown(&md, "collbench report", entries, func(name string, svg []byte) (string, error) {
		if !bytes.Contains(svg, []byte("<svg")) {
			t.Errorf("%s: not an SVG", name)
		}
		saved = append(saved, name)
		return "report-" + name + ".svg", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "report.md", md.Bytes())
	if want := []string{"1-allreduce", "2-allreduce", "2-allgather"}; !reflect.DeepEqual(saved, want) {
		t.Errorf("saved images %v, want %v", saved, want)
	}
}

func TestFromRunLabels(t *testing.T) {
	m := func(us float64, groups ...document.GroupMeasure) document.Measure {
		return document.Measure{Time: us, BusBW: 1000 / us, Groups: groups}
	}
	tests := []struct {
		name    string
		results []document.Result
		want    []string
	}{
		{"one variant", []document.Result{
			{Size: 1024, Type: "float", RedOp: "sum", Root: -1, OutOfPlace: m(10)},
			{Size: 2048, Type: "float", RedOp: "sum", Root: -1, OutOfPlace: m(12)},
		}, []string{"f: allreduce"}},
		{"types and ops", []document.Result{
			{Size: 1024, Type: "float", RedOp: "sum", Root: -1, OutOfPlace: m(10)},
			{Size: 1024, Type: "half", RedOp: "max", Root: -1, OutOfPlace: m(10)},
		}, []string{"f: allreduce float sum", "f: allreduce half max"}},
		{"concurrent groups", []document.Result{
			{Size: 1024, Type: "float", RedOp: "sum", Root: -1, OutOfPlace: m(10, document.GroupMeasure{Time: 10}, document.GroupMeasure{Time: 11})},
		}, []string{"f: allreduce group 0", "f: allreduce group 1"}},
		{"sizes without a time are left out", []document.Result{
			{Size: 0, Type: "float", RedOp: "sum", Root: -1, OutOfPlace: m(1)},
			{Size: 1024, Type: "float", RedOp: "sum", Root: -1},
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range FromRun(&document.Run{Collective: "allreduce", Results: tc.results}, "f") {
				got = append(got, s.Label)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("labels %q, want %q", got, tc.want)
			}
		})
	}
}

// A time axis from 0.1 µs to 1e308 µs (a call that never ended) has at
// most about ten labels, not one a decade; an ordinary range keeps
// gonum's decade ticks.
func TestTimeTicks(t *testing.T) {
	labelled := func(ticks []plot.Tick) int {
		n := 0
		for _, tk := range ticks {
			if tk.Label != "" {
				n++
			}
		}
		return n
	}
	if n := labelled(timeTicks(0.1, 1e308)); n < 5 || n > 11 {
		t.Errorf("0.1 to 1e308 µs: %d labels", n)
	}
	if got, want := timeTicks(1, 1000), (plot.LogTicks{Prec: -1}).Ticks(1, 1000); len(got) != len(want) || labelled(got) != labelled(want) {
		t.Errorf("1 to 1000 µs: %d ticks, want gonum's %d", len(got), len(want))
	}
}

func TestSizeTicks(t *testing.T) {
	labels := func(ticks []plot.Tick) []string {
		var out []string
		for _, tk := range ticks {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	tests := []struct {
		lo, hi float64
		ticks  int
		want   []string
	}{
		{1024, 8192, 4, []string{"1K", "2K", "4K", "8K"}},
		{8, 128 << 20, 25, []string{"32", "1K", "32K", "1M", "32M"}},
		{1000, 3000, 4, []string{"512", "1K", "2K", "4K"}},
		{1, 1 << 40, 41, []string{"1", "32", "1K", "32K", "1M", "32M", "1G", "32G", "1024G"}},
		{0, 10, 0, nil},
	}
	for _, tc := range tests {
		ticks := sizeTicks(tc.lo, tc.hi)
		if tc.ticks != 0 && len(ticks) != tc.ticks {
			t.Errorf("sizeTicks(%g, %g): %d ticks, want %d", tc.lo, tc.hi, len(ticks), tc.ticks)
		}
		if got := labels(ticks); tc.want != nil && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("sizeTicks(%g, %g) labels %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestParseMetricsAndFormat(t *testing.T) {
	for in, want := range map[string]int{"busbw": 1, "time": 1, "both": 2, "BOTH": 2} {
		m, err := ParseMetrics(in)
		if err != nil || len(m) != want {
			t.Errorf("ParseMetrics(%q) = %v, %v", in, m, err)
		}
	}
	if _, err := ParseMetrics("latency"); err == nil {
		t.Error("ParseMetrics accepted latency")
	}
	for in, want := range map[string]string{"a.svg": "svg", "b.PNG": "png", "c.pdf": "pdf", "d.gif": "", "e": ""} {
		got, err := FormatOf(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("FormatOf(%q) = %q, %v", in, got, err)
		}
	}
	for in, want := range map[string]string{"r.html": "html", "r.HTM": "html", "r.md": "md", "r.MD": "md", "r.txt": "", "r": ""} {
		got, err := PageFormat(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("PageFormat(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := Page("r.txt", "t", nil); err == nil {
		t.Error("Page rendered r.txt")
	}
}

// Several entries label their lines with their names; a filter keeps the
// lines whose label matches.
func TestSelect(t *testing.T) {
	run := func() document.Document {
		return document.Document{Run: &document.Run{Collective: "allreduce", Results: []document.Result{
			{Size: 1024, Type: "float", RedOp: "sum", Root: -1, OutOfPlace: document.Measure{Time: 10, BusBW: 1}}}}}
	}
	entries := []Entry{{Name: "x", Doc: run()}, {Name: "y", Doc: run()}}
	all := Select(entries, nil)
	if len(all) == 0 || !strings.HasPrefix(all[0].Label, "x") {
		t.Fatalf("series %+v", all)
	}
	only := Select(entries, regexp.MustCompile(`^y`))
	if len(only) == 0 || len(only) >= len(all) || !strings.HasPrefix(only[0].Label, "y") {
		t.Errorf("filtered series %+v of %d", only, len(all))
	}
	if one := Select(entries[:1], nil); len(one) == 0 || strings.HasPrefix(one[0].Label, "x") {
		t.Errorf("a single entry's lines carry its name: %+v", one)
	}
}

// Time ticks read 100k, not 100000; bus bandwidth panels leave the
// legend room above the data; a profile's curves name no placement.
func TestTicksAndLegendRoom(t *testing.T) {
	for v, want := range map[float64]string{1: "1", 10: "10", 100: "100", 1000: "1k", 100000: "100k", 1e6: "1M", 2.5e9: "2.5G", 0.01: "0.01"} {
		if got := shortNumber(v); got != want {
			t.Errorf("shortNumber(%g) = %q, want %q", v, got, want)
		}
	}
	series := []Series{{Label: "a", Points: []Point{{Bytes: 1024, TimeUS: 1e5, BusBW: 10}, {Bytes: 2048, TimeUS: 2e5, BusBW: 20}}}}
	p, err := newPanel(series, nil, BusBW, true)
	if err != nil {
		t.Fatal(err)
	}
	if p.Y.Max < 20*(1+0.06*2)-1e-9 || placementOf(series) != "" {
		t.Errorf("busbw panel up to %g for data up to 20; want room for the legend above it", p.Y.Max)
	}
	p, err = newPanel(series, nil, Time, false)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if !slices.Contains(labels, "100k") || slices.Contains(labels, "100000") {
		t.Errorf("time ticks %v, want 100k", labels)
	}
}

// A profile's curves carry their fitted model, drawn dashed beside the
// measured points: at each measured size its time is the fit's, and its
// bus bandwidth follows from that time as the measured one does.
func TestProfileDrawsItsFit(t *testing.T) {
	d := load(t, "profile")
	series := FromDocument(d, "")
	if len(series) == 0 {
		t.Fatal("no series")
	}
	drawn := 0
	for i, s := range series {
		c := d.Profile.Curves[i]
		if c.Fit == nil {
			continue
		}
		if len(s.Fitted) != 2*len(s.Points)-1 {
			t.Errorf("%s: %d fitted points for %d measured", s.Label, len(s.Fitted), len(s.Points))
			continue
		}
		drawn++
		for _, f := range s.Fitted {
			if want := profiled.At(c.Fit, float64(f.Bytes)); math.Abs(f.TimeUS-want) > 1e-9*want {
				t.Errorf("%s at %d B: fitted %g µs, the fit says %g", s.Label, f.Bytes, f.TimeUS, want)
			}
		}
		// busbw × time / size is one constant along the fitted line, the
		// measured points' median.
		var ratios []float64
		for _, m := range s.Points {
			ratios = append(ratios, m.BusBW*m.TimeUS/float64(m.Bytes))
		}
		slices.Sort(ratios)
		for _, f := range s.Fitted {
			if got, want := f.BusBW*f.TimeUS/float64(f.Bytes), ratios[len(ratios)/2]; math.Abs(got-want) > 1e-9*want {
				t.Errorf("%s at %d B: fitted busbw×time/size %g, the points' median %g", s.Label, f.Bytes, got, want)
			}
		}
	}
	if drawn == 0 {
		t.Error("no curve of the profile has a fit to draw")
	}
	var b bytes.Buffer
	if err := Render(&b, "svg", series, Options{}); err != nil || !strings.Contains(b.String(), "stroke-dasharray") {
		t.Errorf("render: %v; the fitted lines are not drawn dashed", err)
	}
}
