package profiled_test

import (
	"reflect"
	"testing"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/fixture"
	"github.com/collbench/collbench/model/profiled"
)

// A curve is fitted from its samples; one of fewer than two sizes has
// no fit to record.
func TestCurveAndFit(t *testing.T) {
	p := fixture.Profile(t, 2, 4)
	c := &p.Curves[0]
	m, err := profiled.Curve(c)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(m.Points()), len(c.Samples); got != want {
		t.Errorf("%d points from %d samples", got, want)
	}
	if f := profiled.Fit(c); f == nil || !reflect.DeepEqual(*f, *c.Fit) {
		t.Errorf("fit %+v, the profile records %+v", f, c.Fit)
	}
	one := *c
	one.Samples = one.Samples[:1]
	if f := profiled.Fit(&one); f != nil {
		t.Errorf("a curve of one size fitted: %+v", f)
	}
}

// An uneven all-to-all is modelled against each rank's mean bytes
// (count × ranks × element size), not the busiest rank's size column.
func TestRoutedCurveReadsMeanBytes(t *testing.T) {
	c := &document.ProfileCurve{Op: "alltoallv", Type: "float", Group: document.CurveGroup{Size: 4, Layout: "consecutive"},
		BusFactor: 0.75, Traffic: "moe 8,2 uniform", Samples: []document.Sample{{Bytes: 4096, Count: 100, TimeUs: 10}, {Bytes: 8192, Count: 200, TimeUs: 20}}}
	m, err := profiled.Curve(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Points()[0].Bytes; got != 100*4*4 {
		t.Errorf("first point at %g bytes, want 1600 (100 elements × 4 ranks × 4 bytes)", got)
	}
}

// The network fits each curve once, however often a prediction asks;
// the machine takes the planners' probe and a given compute rate.
func TestNetworkAndMachine(t *testing.T) {
	p := fixture.Profile(t, 2, 4)
	m := profiled.Machine(p, 0)
	c := p.Curves[0]
	first, err := m.Net.Curve(c.Op, c.Group.Size, c.Group.Layout)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := m.Net.Curve(c.Op, c.Group.Size, c.Group.Layout)
	if first != again {
		t.Error("the curve was fitted again")
	}
	probe, err := p.PlannerProbe()
	if err != nil {
		t.Fatal(err)
	}
	if m.CommSlowdown != probe.CommSlowdown || m.ComputeSlowdown != probe.ComputeSlowdown || !(m.FLOPS > 0) {
		t.Errorf("machine %+v; the planners' probe %+v", m, probe)
	}
	if got := profiled.Machine(p, 100).FLOPS; got != 100e12 {
		t.Errorf("--tflops 100 gives %g FLOP/s", got)
	}
}
