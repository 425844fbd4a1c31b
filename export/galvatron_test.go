package export

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/collbench/collbench/internal/fixture"
	"github.com/collbench/collbench/model/profiled"
)

// Galvatron times every tensor-parallel call, with or without sequence
// parallelism, as an all-gather read from sp_time's allreduce keys
// halved (config_utils.py remap_config_for_latency, "allgather": factor
// 0.5; layer_cost.py estimate_tp_communication_time), and no code of its
// reads those keys as an all-reduce's time. So each key holds the group's
// all-gather plus its reduce-scatter at that size: half of it is then the
// mean of the two calls Megatron's tensor parallelism makes. Holding the
// all-reduce made the all-gather ×5.80 of the measured one where the
// two ops' latencies differ.
func TestGalvatronTPKeysHoldAllGatherAndReduceScatter(t *testing.T) {
	p := fixture.ProfileWith(t, 1, 4, opAlpha)
	dir := t.TempDir()
	if _, err := Write(context.Background(), p, "galvatron", dir, Options{}); err != nil {
		t.Fatal(err)
	}
	var sp map[string]float64
	readJSON(t, filepath.Join(dir, "sp_time_1nodes_4gpus_per_node.json"), &sp)
	at := func(op string, n int, bytes int64) float64 {
		c, err := p.Curve(op, n, "consecutive")
		if err != nil {
			t.Fatal(err)
		}
		return profiled.At(c.Fit, float64(bytes)) / 1e3
	}
	for _, n := range []int{2, 4} {
		for _, mib := range []int64{1, 32, 512} {
			b := mib << 20
			got := sp[fmt.Sprintf("allreduce_size_%d_%dMB_time", n, mib)]
			want := at("allgather", n, b) + at("reducescatter", n, b)
			if !within(got, want, 1e-5) {
				t.Errorf("n=%d %d MiB: %v ms, want all-gather + reduce-scatter %v ms (the all-reduce is %v ms)", n, mib, got, want, at("allreduce", n, b))
			}
		}
	}
}
