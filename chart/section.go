package chart

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/judge"
)

// section is one document of a report, laid out independently of the
// page format: facts, tables, charts and notes.
type section struct {
	Title  string
	Facts  []fact
	Tables []table
	Charts []image
	Notes  []string
}

type fact struct{ Key, Value string }

type table struct {
	Caption string
	Head    []string
	Rows    [][]string
}

// image is one chart, always drawn as SVG.
type image struct {
	Caption string
	Name    string // short name for a file of its own
	SVG     []byte
}

// Entry is one document of a report and the name it goes by there.
type Entry struct {
	Name string
	Doc  document.Document
}

func sectionOf(e Entry) (section, error) {
	if e.Doc.Health != nil {
		return healthSection(e.Name, e.Doc.Health)
	}
	if e.Doc.Profile != nil {
		return profileSection(e.Name, e.Doc.Profile)
	}
	return runSection(e.Name, e.Doc.Run)
}

func runSection(name string, r *document.Run) (section, error) {
	c := r.Config
	s := section{Title: fmt.Sprintf("%s: %s on the %s backend", name, r.Test, r.Backend)}
	s.Facts = []fact{
		{"collective", r.Collective},
		{"ranks", fmt.Sprintf("%d in %d process(es), group size %d (%s, %d group(s))", c.NRanks, c.NProcs, c.GroupSize, c.Layout, c.Groups)},
		{"sizes", fmt.Sprintf("%s to %s", bench.FormatSize(c.MinBytes), bench.FormatSize(c.MaxBytes))},
		{"iterations", fmt.Sprintf("%d timed, %d warm-up", c.Iters, c.Warmup)},
		{"started", r.StartTime},
		{"ended", r.EndTime},
		{"command", strings.Join(r.Args, " ")},
		{"average bus bandwidth", fmt.Sprintf("%.3f GB/s", r.AvgBusBW.Bandwidth)},
		{"out of bounds values", outOfBounds(r.OutOfBounds)},
	}
	if r.NCCLVersion != nil {
		s.Facts = append(s.Facts, fact{"NCCL", strconv.Itoa(*r.NCCLVersion)})
	}
	jd := r.Judgement
	if jd != nil {
		s.Facts = append(s.Facts, fact{"judgement", jd.Summary})
	}
	res := table{Caption: "Results (time in µs, bandwidth in GB/s)",
		Head: []string{"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "in-place time", "algbw", "busbw", "#wrong"}}
	if jd != nil && len(jd.Rows) == len(r.Results) {
		res.Caption += "; judged out of place: share of the wire, ratio to the published figure and verdict, ratio to NCCL's estimate"
		res.Head = append(res.Head, "wire", "× published", "verdict", "× estimate")
	}
	for i, x := range r.Results {
		row := []string{strconv.FormatInt(x.Size, 10), strconv.FormatInt(x.Count, 10), x.Type, x.RedOp, strconv.Itoa(x.Root)}
		row = append(row, measure(x.OutOfPlace)...)
		row = append(row, measure(x.InPlace)...)
		if len(res.Head) > 13 {
			row = append(row, judged(jd.Rows[i])...)
		}
		res.Rows = append(res.Rows, row)
	}
	devs := table{Caption: "Devices", Head: []string{"rank", "group", "host", "pid", "device", "bus id", "name"}}
	for _, d := range c.Devices {
		devs.Rows = append(devs.Rows, []string{strconv.Itoa(d.Rank), strconv.Itoa(d.Group), d.Hostname, strconv.Itoa(d.PID),
			strconv.Itoa(d.Device), d.BusID, d.Info})
	}
	s.Tables = []table{res, devs}
	if series := FromRun(r, ""); len(series) > 0 {
		svg, err := renderSVG(series, GuidesFromRun(r, ""), r.Test)
		if err != nil {
			return s, fmt.Errorf("%s: %w", name, err)
		}
		s.Charts = append(s.Charts, image{Caption: "Bus bandwidth and time against message size (out of place)", Name: r.Collective, SVG: svg})
	}
	for _, e := range r.Errors {
		s.Notes = append(s.Notes, "error: "+e)
	}
	return s, nil
}

// judged is a row's judgement as the report's cells: "-" where a figure
// does not apply.
func judged(j judge.RowJudgement) []string {
	out := []string{"-", "-", "-", "-"}
	if j.WireShare > 0 {
		out[0] = strconv.FormatFloat(j.WireShare*100, 'f', 1, 64) + " %"
	}
	if j.Reference != nil {
		out[1], out[2] = strconv.FormatFloat(j.RefRatio, 'f', 2, 64), j.VerdictText()
	}
	if j.EstimateRatio > 0 {
		out[3] = strconv.FormatFloat(j.EstimateRatio, 'f', 2, 64)
	}
	return out
}

func outOfBounds(o document.OutOfBounds) string {
	if o.Okay {
		return fmt.Sprintf("%d OK", o.Count)
	}
	return fmt.Sprintf("%d FAILED", o.Count)
}

func measure(m document.Measure) []string {
	if m.Time <= 0 {
		return []string{"-", "-", "-", "-"}
	}
	wrong := "N/A"
	if m.NWrong != nil {
		wrong = strconv.FormatInt(*m.NWrong, 10)
	}
	return []string{num(m.Time), num(m.AlgBW), num(m.BusBW), wrong}
}

// num prints a figure the way the text table does: two decimals, or
// four significant digits when that would hide it.
func num(v float64) string {
	if v != 0 && v < 0.01 && v > -0.01 {
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func profileSection(name string, p *document.Profile) (section, error) {
	m := p.Meta
	s := section{Title: fmt.Sprintf("%s: profile of %d rank(s) on %d node(s), %s backend", name, m.WorldSize, m.NumNodes, p.Backend)}
	s.Facts = []fact{
		{"ranks", fmt.Sprintf("%d (%d per node, %d process(es))", m.WorldSize, m.RanksPerNode, m.NProcs)},
		{"data type", p.Suite.Type},
		{"collectives", strings.Join(p.Suite.Collectives, ", ")},
		{"created", p.Created},
		{"finished", p.Finished},
		{"elapsed", fmt.Sprintf("%.1f s", p.Suite.ElapsedS)},
		{"command", strings.Join(p.Args, " ")},
	}
	for _, f := range []fact{{"NCCL", m.NCCLVersion}, {"CUDA driver", m.CUDADriver}, {"driver release", m.Driver}} {
		if f.Value != "" {
			s.Facts = append(s.Facts, f)
		}
	}
	fits := table{Caption: "Fits: t = α + S·factor/busbw∞ (α in µs, busbw∞ in GB/s, n½ in bytes)",
		Head: []string{"op", "ranks", "layout", "groups", "sizes", "α", "busbw∞", "n½", "R²", "max err", "model"}}
	var ops []string
	seen := map[string]bool{}
	for i := range p.Curves {
		c := &p.Curves[i]
		if !seen[c.Op] {
			seen[c.Op] = true
			ops = append(ops, c.Op)
		}
		row := []string{c.Op, strconv.Itoa(c.Group.Size), c.Group.Layout, strconv.Itoa(c.Group.Groups), strconv.Itoa(len(c.Samples))}
		if f := c.Fit; f != nil {
			row = append(row, num(f.Alpha), num(f.BusBWInf), strconv.FormatFloat(f.NHalf, 'g', 4, 64), strconv.FormatFloat(f.R2, 'f', 4, 64),
				strconv.FormatFloat(f.MaxRel*100, 'f', 1, 64)+"%", f.Model)
		} else {
			row = append(row, "-", "-", "-", "-", "-", "-")
		}
		fits.Rows = append(fits.Rows, row)
		if c.Note != "" {
			s.Notes = append(s.Notes, c.Key()+": "+c.Note)
		}
	}
	s.Tables = append(s.Tables, fits)
	if len(p.Overlap) > 0 {
		ov := table{Caption: "Overlap probes (slowdowns are overlapped ÷ alone)",
			Head: []string{"probe", "collective", "bytes", "next to", "comm ×", "compute ×", "overlap_coe", "processor_usage"}}
		for _, o := range p.Overlap {
			ov.Rows = append(ov.Rows, []string{o.Name, o.Collective, strconv.FormatInt(o.Size, 10), o.Workload,
				strconv.FormatFloat(o.CommSlowdown, 'f', 3, 64), strconv.FormatFloat(o.ComputeSlowdown, 'f', 3, 64),
				strconv.FormatFloat(o.OverlapCoe, 'f', 3, 64), strconv.FormatFloat(o.ProcessorUsage, 'f', 3, 64)})
		}
		s.Tables = append(s.Tables, ov)
	}
	all := FromProfile(p, "")
	for _, op := range ops {
		var series []Series
		for _, x := range all {
			if x.Op == op {
				series = append(series, x)
			}
		}
		if len(series) == 0 {
			continue
		}
		svg, err := renderSVG(series, nil, op)
		if err != nil {
			return s, fmt.Errorf("%s: %w", name, err)
		}
		s.Charts = append(s.Charts, image{Caption: op + " by group size and layout", Name: op, SVG: svg})
	}
	for _, e := range p.Errors {
		s.Notes = append(s.Notes, "error: "+e)
	}
	return s, nil
}

func renderSVG(series []Series, guides []Guide, title string) ([]byte, error) {
	var b bytes.Buffer
	if err := Render(&b, "svg", series, Options{Title: title, Guides: guides}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
