package chart

import (
	"bytes"
	"strings"
	"testing"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/judge"
)

// judgedRun is the host all-reduce of testdata judged against a 2 GB/s
// wire and a site's figure of 0.5 GB/s from 16 KiB to 1 MiB.
func judgedRun(t *testing.T) document.Document {
	d := load(t, "allreduce")
	var rows []judge.Row
	for _, r := range d.Run.Results {
		rows = append(rows, judge.Row{Size: r.Size, BusBW: r.OutOfPlace.BusBW, Time: r.OutOfPlace.Time})
	}
	site := judge.Table{Version: judge.TableVersion, Entries: []judge.Reference{{ID: "site-ar", GPU: "H100", Link: "NVLink4",
		GPUsPerNode: 8, NodesMin: 1, Collective: "allreduce", MinBytes: 16 << 10, MaxBytes: 1 << 20, BusBW: 0.5,
		Conditions: "site", Source: "acceptance run", Date: "2026-11"}}}
	sys := judge.System{GPU: "NVIDIA H100 80GB HBM3", Link: "NVLink4 ×18", GPUsPerNode: 8, Nodes: 1}
	jd := judge.Judge("allreduce", rows, judge.Limit{GBps: 2, What: "memory copy", From: "measured"}, "", []judge.Table{site}, sys)
	d.Run.Judgement = &jd
	return d
}

// A judged run draws its wire limit over every size and the published
// figure over the sizes it judged; an unjudged run draws neither.
func TestGuidesFromRun(t *testing.T) {
	d := judgedRun(t)
	g := GuidesFromRun(d.Run, "")
	if len(g) != 2 {
		t.Fatalf("guides %+v, want the wire and one published figure", g)
	}
	if !g[0].Wire || g[0].BusBW != 2 || g[0].From != 0 || g[0].Label != "wire: memory copy: 2 GB/s per direction" {
		t.Errorf("wire guide %+v", g[0])
	}
	if g[1].Wire || g[1].BusBW != 0.5 || g[1].From != 16<<10 || g[1].To != 1<<20 || g[1].Label != "published: 0.5 GB/s (site-ar)" {
		t.Errorf("published guide %+v", g[1])
	}
	if g := GuidesFromRun(load(t, "allreduce").Run, ""); len(g) != 0 {
		t.Errorf("an unjudged run has guides %+v", g)
	}
	var b bytes.Buffer
	if err := Render(&b, "svg", FromDocument(d, ""), Options{Guides: g}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">wire: memory copy: 2 GB/s per direction<", ">published: 0.5 GB/s (site-ar)<"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	entries := []Entry{{Name: "a", Doc: d}, {Name: "b", Doc: load(t, "allreduce")}}
	if g := SelectGuides(entries, nil); len(g) != 2 || !strings.HasPrefix(g[0].Label, "a: wire") {
		t.Errorf("SelectGuides %+v, want run a's two, named", g)
	}
}

// The report page of a judged run has the judgement's line and, per
// result, its columns.
func TestReportJudged(t *testing.T) {
	var md bytes.Buffer
	err := WriteMarkdown(&md, "judged", []Entry{{Name: "run", Doc: judgedRun(t)}}, func(name string, svg []byte) (string, error) {
		if !bytes.Contains(svg, []byte(">wire: memory copy")) {
			t.Errorf("%s: the chart lacks the wire's line", name)
		}
		return name + ".svg", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"- **judgement**: peak ", "| wire | × published | verdict | × estimate |", "| 90.5 % | 3.62 | HIGH | - |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
}
