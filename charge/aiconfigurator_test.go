package charge

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/collbench/collbench/export"
	"github.com/collbench/collbench/internal/fixture"
	"github.com/collbench/collbench/model/profiled"
)

// AIConfigurator charges what collbench measured, at every size from
// 256 B to 4 GiB, inside the collector's range and beyond it, for every
// op and consecutive group of the synthetic profile and of the kept host
// and H100 ones: their sizes are powers of two apart, each of them a row
// of the export, and their fits one line, which the rows' chords follow
// exactly below and above the measured sizes.
func TestAIConfiguratorChargesTheCurve(t *testing.T) {
	for _, path := range []string{"", hostKept, h100Kept} {
		name := "synthetic"
		if path != "" {
			name = filepath.Base(filepath.Dir(path))
		}
		t.Run(name, func(t *testing.T) {
			aic := exported(t, path, "aiconfigurator")["aiconfigurator"]
			p := fixture.Profile(t, 2, 4)
			if path != "" {
				p = fixture.Kept(t, path)
			}
			checked := 0
			for i := range p.Curves {
				c := &p.Curves[i]
				if export.AIConfiguratorOp(c.Op) == "" || c.Group.Layout != "consecutive" {
					continue
				}
				m, err := profiled.Curve(c)
				if err != nil {
					t.Fatal(err)
				}
				for bytes := int64(256); bytes <= 4<<30; bytes = bytes * 3 / 2 &^ 1 {
					got, err := aic.Charge(Call{Coll: c.Op, Group: c.Group.Size, Layout: "consecutive", Bytes: float64(bytes)})
					if err != nil {
						t.Fatal(err)
					}
					if want := m.Time(float64(bytes)); math.Abs(got-want) > 1e-9*want {
						t.Errorf("%s over %d, %d bytes: AIConfigurator charges %v µs, the curve %v", c.Op, c.Group.Size, bytes, got, want)
					}
					checked++
				}
			}
			if checked == 0 {
				t.Fatal("no curve checked")
			}
		})
	}
}
