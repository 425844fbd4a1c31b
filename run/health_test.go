package run

import (
	"math"
	"strings"
	"testing"
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
