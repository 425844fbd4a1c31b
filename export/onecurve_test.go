package export

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/collbench/collbench/internal/fixture"
	"github.com/collbench/collbench/model/profiled"
)

// One profile, one curve: with a wild outlier injected (16 MiB of the
// 4-rank all-reduce at twice its time), predict's network and every
// export charge the same time for the same call. predict's table holds
// the curve's time at each size, the outlier given the fit's, and
// Galvatron's bandwidth there is the curve's; the single-line formats (ASTRA-sim, SimAI's -nv,
// Calculon's all-reduce bandwidth) hold the curve's one line.
func TestOneCurveEverywhere(t *testing.T) {
	p := fixture.ProfileWith(t, 1, 4, opAlpha)
	c, err := p.Curve("allreduce", 4, "consecutive")
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Samples {
		if c.Samples[i].Bytes == 16<<20 {
			c.Samples[i].TimeUs *= 2
		}
	}
	p = reread(t, p)
	c, _ = p.Curve("allreduce", 4, "consecutive")
	curve, err := profiled.Curve(c)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := curve.Time(16<<20), curve.Fit.At(16<<20); math.Abs(got-want) > 1e-9*want {
		t.Fatalf("the curve keeps the outlier: %v µs at 16 MiB, the fit says %v", got, want)
	}
	predicted, err := profiled.Machine(p, 0).Net.Curve("allreduce", 4, "consecutive")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, target := range []string{"galvatron", "calculon", "astra-sim", "simai"} {
		if _, err := Write(context.Background(), p, target, dir, Options{GalvatronBW: "point:16M"}); err != nil {
			t.Fatalf("%s: %v", target, err)
		}
	}
	for _, mib := range []float64{1, 8, 16, 32, 64} {
		s := mib * (1 << 20)
		want := curve.Time(s)
		if got := predicted.Time(s); math.Abs(got-want) > 1e-9*want {
			t.Errorf("%g MiB: predict charges %v µs, the curve %v", mib, got, want)
		}
	}
	var ar map[string]float64
	readJSON(t, filepath.Join(dir, "allreduce_bandwidth_1nodes_4gpus_per_node.json"), &ar)
	if got, want := ar["allreduce_size_4_consec_1"], mibPerMs(curve.BusBW(16<<20)); !within(got, want, 1e-5) {
		t.Errorf("Galvatron's bandwidth at the outlier's size: %v MiB/ms, the curve's %v", got, want)
	}

	line, busbw := curve.Line, curve.LineBusBW()
	var astra struct {
		Dimensions []struct {
			Alpha float64 `json:"allreduce_alpha_us"`
			BusBW float64 `json:"allreduce_busbw_GBps"`
		}
	}
	readJSON(t, filepath.Join(dir, "astra_network.json"), &astra)
	if d := astra.Dimensions[0]; !within(d.Alpha, line.Alpha, 1e-6) || !within(d.BusBW, busbw, 1e-6) {
		t.Errorf("ASTRA-sim's line α %v µs, busbw %v GB/s; the curve's %v, %v", d.Alpha, d.BusBW, line.Alpha, busbw)
	}
	args, _ := os.ReadFile(filepath.Join(dir, "simai_analytical.args"))
	f := strings.Fields(string(args))
	for i := range f {
		if f[i] == "-nv" {
			nv, _ := strconv.ParseFloat(f[i+1], 64)
			if !within(nv*(1<<30)/1e9, busbw, 1e-5) {
				t.Errorf("SimAI's -nv is %v GB/s; the curve's line %v", nv*(1<<30)/1e9, busbw)
			}
		}
	}
	var calc struct {
		Networks []struct{ Bandwidth, Latency float64 }
	}
	readJSON(t, filepath.Join(dir, "calculon_networks.json"), &calc)
	if n := calc.Networks[0]; !within(n.Bandwidth, busbw, 1e-9) {
		t.Errorf("Calculon's all-reduce: %v GB/s; the curve's line %v", n.Bandwidth, busbw)
	}
}
