package healthcheck

import (
	"math"
	"strings"
	"testing"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/health"
)

// A wave with a zero, NaN or infinite figure is an error naming its
// ranks, never a figure the judgement would compare.
func TestHealthRefusesUnmeasuredFigures(t *testing.T) {
	wave := []unit{{groups: [][]int{{0, 1}}}, {groups: [][]int{{2, 3}}}}
	if err := measured("GPU pairs", wave, []float64{0.5, 0.6}); err != nil {
		t.Fatalf("measured figures refused: %v", err)
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		err := measured("GPU pairs", wave, []float64{0.5, bad})
		if err == nil || !strings.Contains(err.Error(), "[[2 3]]") || !strings.Contains(err.Error(), "timed nothing") {
			t.Errorf("figure %v: got %v, want an error naming ranks [[2 3]]", bad, err)
		}
	}
}

// Node pairs are screened from health.ScreenFrom nodes on, or when asked,
// and every pair is measured below it, on request, or when a round robin
// takes no more rounds than the screening would.
func TestScreenRounds(t *testing.T) {
	for _, c := range []struct {
		nodes, asked int
		all          bool
		want         int
	}{
		{4, 0, false, 0}, {21, 0, false, 0}, {22, 0, false, 20}, {1000, 0, false, 20},
		{1000, 0, true, 0}, {8, 3, false, 3}, {8, 7, false, 0}, {1000, 5, false, 5},
	} {
		s := Spec{ScreenRounds: c.asked, AllPairs: c.all}
		if got := s.screenRounds(c.nodes); got != c.want {
			t.Errorf("%d nodes, --screen-rounds %d, --all-pairs %v: %d rounds, want %d", c.nodes, c.asked, c.all, got, c.want)
		}
	}
}

// A figure short of its expectation is flagged only beyond the level's
// noise as well (the summary's "only slowdowns beyond about N% can be told
// from it"), and against "expect" or "baseline" by where the level's
// expectation came from.
func TestExpectationsJudged(t *testing.T) {
	for _, c := range []struct {
		name    string
		noise   float64
		bw      float64
		fromBas bool
		want    string // against; "" for no finding
	}{
		{"14 % short, 20 % noise", 0.20, 86, false, ""},
		{"14 % short, 2 % noise", 0.02, 86, false, "expect"},
		{"80 % short, 20 % noise, from the baseline", 0.20, 20, true, "baseline"},
		{"5 % short, no noise", 0, 95, false, ""},
	} {
		spec := Spec{Criteria: health.DefaultCriteria, Expect: map[string]float64{"inter": 100}, fromBaseline: map[string]bool{"inter": c.fromBas}}
		hc := &healthCheck{spec: spec, doc: &document.Health{Noise: map[string]float64{"inter": c.noise}}}
		hc.expect("inter", 1, func(int) (document.Finding, float64) { return document.Finding{Kind: "link"}, c.bw })
		got := ""
		if len(hc.doc.Findings) == 1 {
			got = hc.doc.Findings[0].Against
		}
		if len(hc.doc.Findings) > 1 || got != c.want {
			t.Errorf("%s: findings %+v, want one against %q", c.name, hc.doc.Findings, c.want)
		}
	}
}
