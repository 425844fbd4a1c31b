package export

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/collbench/collbench/charge"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/fixture"
	"github.com/collbench/collbench/model/profiled"
)

// AIConfigurator charges what collbench measured, at every size from
// 256 B to 4 GiB, inside the collector's range and beyond it, on the
// synthetic profile and on the kept host and H100 ones: their sizes are
// powers of two apart, each of them a row, and their fits one line,
// which the rows' chords follow exactly below and above the measured
// sizes. The charge is package charge's transcription of AIConfigurator's
// lookup, pinned there by figures from AIConfigurator's own code.
func TestAIConfiguratorChargesTheCurve(t *testing.T) {
	for _, path := range []string{"", "../docs/measured/host-2026-11-26/profile-4ranks.json", "../docs/measured/h100-2026-11-26/profile-g2-float.json"} {
		name := "synthetic"
		if path != "" {
			name = filepath.Base(filepath.Dir(path))
		}
		t.Run(name, func(t *testing.T) {
			p := fixture.Profile(t, 2, 4)
			if path != "" {
				p = readProfile(t, path)
			}
			dir := t.TempDir()
			if _, err := Write(context.Background(), p, "aiconfigurator", dir, Options{}); err != nil {
				t.Fatal(err)
			}
			planners, err := charge.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			aic := planners[0]
			checked := 0
			for _, op := range aiconfiguratorOps {
				for _, n := range halvings(p.Meta.WorldSize) {
					c, err := p.Curve(op.coll, n, "consecutive")
					if err != nil {
						continue
					}
					m, err := profiled.Curve(c)
					if err != nil {
						t.Fatal(err)
					}
					for bytes := int64(256); bytes <= 4<<30; bytes = bytes * 3 / 2 &^ 1 {
						got, err := aic.Charge(charge.Call{Coll: op.coll, Group: n, Layout: "consecutive", Bytes: float64(bytes)})
						if err != nil {
							t.Fatal(err)
						}
						if want := m.Time(float64(bytes)); !within(got, want, 1e-9) {
							t.Errorf("%s over %d, %d bytes: AIConfigurator charges %v µs, the curve %v", op.name, n, bytes, got, want)
						}
						checked++
					}
				}
			}
			if checked == 0 {
				t.Fatal("no curve checked")
			}
		})
	}
}

// readProfile reads a kept profile.
func readProfile(t *testing.T, path string) *document.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := document.DecodeProfile(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
