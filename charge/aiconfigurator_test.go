package charge

import (
	"math"
	"os"
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

// Current AIConfigurator (095f58a51) looks a size up in its NCCL table by
// LeafAxisCurve::query: a row's own latency at its size, the line
// between the rows around a size, and outside the rows the nearest row's
// latency in proportion to the size; the first of two rows of one key
// wins. Each figure is that code's (axis_curve.rs and perf_interp.rs,
// compiled unchanged), on a small table and on the kept H100 profile's
// export as arrow-rs reads its parquet table.
func TestAIConfiguratorChargesAsItsEngine(t *testing.T) {
	dir := t.TempDir()
	table := "framework,version,device,op_name,kernel_source,nccl_dtype,num_gpus,message_size,latency\n" +
		"TRTLLM,2.29.2,GPU,all_gather,NCCL,half,2,256,0.00531\n" +
		"TRTLLM,2.29.2,GPU,all_gather,NCCL,half,2,512,0.00524\n" +
		"TRTLLM,2.29.2,GPU,all_gather,NCCL,half,2,1024,0.00514\n" +
		"TRTLLM,2.29.2,GPU,all_gather,NCCL,half,2,4096,0.00584\n" +
		"TRTLLM,2.29.2,GPU,all_gather,NCCL,half,2,4096,0.1\n"
	if err := os.WriteFile(filepath.Join(dir, "nccl_perf.txt"), []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	small, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h100 := exported(t, h100Kept, "aiconfigurator")["aiconfigurator"]
	for _, c := range []struct {
		pl    Planner
		coll  string
		bytes float64
		us    float64
	}{
		{small[0], "allgather", 200, 2.07421874999999967},   // below the rows: in proportion to the first
		{small[0], "allgather", 768, 5.27500000000000017},   // between two rows
		{small[0], "allgather", 1537, 5.18990234374999953},  // a fraction of an element
		{small[0], "allgather", 2048, 5.13999999999999960},  // a row
		{small[0], "allgather", 4096, 5.37333333333333326},  // between rows 2 and 4 KiB elements apart
		{small[0], "allgather", 20000, 14.2578124999999979}, // beyond the rows: the first of the duplicate rows, in proportion
		{h100, "allreduce", 1, 14.1013409830729134},
		{h100, "allreduce", 2, 28.2026819661458233},
		{h100, "allreduce", 3145729, 52.2666743164062544},
		{h100, "alltoall", 6000000, 93.3632888835782271},
		{h100, "reducescatter", 64 << 30, 123572.748579757260},
		{h100, "allgather", 100 << 30, 217668.550539196502},
	} {
		got, err := c.pl.Charge(Call{Coll: c.coll, Group: 2, Layout: "consecutive", Bytes: c.bytes})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-c.us) > 1e-12*c.us {
			t.Errorf("%s of %v bytes: charged %v µs, AIConfigurator's engine %v", c.coll, c.bytes, got, c.us)
		}
	}
}

// Whatever nccl_perf.txt holds, reading it and charging from it ends in a
// charge or an error, never a panic.
func FuzzReadAIConfigurator(f *testing.F) {
	seed, err := os.ReadFile("../export/testdata/export-aiconfigurator-nccl_perf.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(seed))
	f.Add("op_name,nccl_dtype,num_gpus,message_size,latency\nall_reduce,half,2,-9223372036854775808,NaN\nall_reduce,half,2,9223372036854775807,1\n")
	f.Add("op_name,nccl_dtype,num_gpus,message_size,latency\nall_gather,fp8,2,4,0\n")
	f.Fuzz(func(t *testing.T, table string) {
		path := filepath.Join(t.TempDir(), "nccl_perf.txt")
		if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
		pl, err := readAIConfigurator(path)
		if err != nil {
			return
		}
		for _, coll := range []string{"allreduce", "allgather", "reducescatter", "alltoall"} {
			for _, bytes := range []float64{0, 1, 3, 1 << 20, 1e300} {
				_, _ = pl.Charge(Call{Coll: coll, Group: 2, Bytes: bytes}) // only a panic fails
			}
		}
	})
}
