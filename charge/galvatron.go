package charge

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// mib is Galvatron's MB: its sizes are bytes / 1024 / 1024.
const mib = 1 << 20

// galvatron is what Galvatron's search engine loads from the hardware
// files collbench exported: the data-parallel bandwidths, the pipeline's,
// and the all-gather latency table it makes from sp_time.
type galvatron struct {
	world int
	dp    map[string]float64 // "n_1" consecutive, "n_0" strided: MiB/ms
	pp    map[int]float64    // pp_size_n: MiB/ms
	ag    map[int]map[int]float64
}

func (galvatron) Name() string { return "galvatron" }

// readGalvatron reads the three files of dir the cost model draws on
// (read_allreduce_bandwidth_config, read_p2p_bandwidth_config and
// remap_config_for_latency in config_utils.py).
func readGalvatron(dir string) (Planner, error) {
	var files [3]map[string]float64
	for i, prefix := range []string{"allreduce_bandwidth_", "p2p_bandwidth_", "sp_time_"} {
		path, err := only(dir, prefix+"*nodes_*gpus_per_node.json")
		if err != nil {
			return nil, err
		}
		data, err := readExport(path)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &files[i]); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	g := galvatron{dp: map[string]float64{}, pp: map[int]float64{}, ag: map[int]map[int]float64{}}
	for k, v := range files[0] {
		var n, consec int
		if _, err := fmt.Sscanf(k, "allreduce_size_%d_consec_%d", &n, &consec); err != nil || v <= 0 {
			return nil, fmt.Errorf("allreduce bandwidth key %s = %v is not Galvatron's", k, v)
		}
		g.dp[fmt.Sprintf("%d_%d", n, consec)] = v
		g.world = max(g.world, n)
	}
	for k, v := range files[1] {
		n, err := strconv.Atoi(strings.TrimPrefix(k, "pp_size_"))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("p2p bandwidth key %s = %v is not Galvatron's", k, v)
		}
		g.pp[n] = v
	}
	for k, v := range files[2] {
		// remap_config_for_latency: split('_')[-3] the group, [-2][:-2] the MB.
		parts := strings.Split(k, "_")
		if !strings.HasPrefix(k, "allreduce_size") || len(parts) < 3 {
			continue
		}
		n, err1 := strconv.Atoi(parts[len(parts)-3])
		size, err2 := strconv.Atoi(strings.TrimSuffix(parts[len(parts)-2], "MB"))
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("sp_time key %s is not Galvatron's", k)
		}
		if g.ag[n] == nil {
			g.ag[n] = map[int]float64{}
		}
		g.ag[n][size] = v * 0.5 // "allgather": the all-reduce key halved
	}
	return g, nil
}

// only is the one file in dir that matches pattern.
func only(dir, pattern string) (string, error) {
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	switch {
	case err != nil:
		return "", err
	case len(m) != 1:
		return "", fmt.Errorf("%d files match %s, want one", len(m), filepath.Join(dir, pattern))
	}
	return m[0], nil
}

// Charge is TimeCostModelBase's (layer_cost.py) for one call:
//   - tensor parallelism: every call is priced as an all-gather, read from
//     the group's table at the call's MB or, between its sizes, from the
//     least-squares line through all of them (curve_fit of m·x + c); an
//     all-reduce is two such calls;
//   - data parallelism: the bus MB (2(n−1)/n of the size for an
//     all-reduce, half that for ZeRO's all-gather or reduce-scatter) at
//     the group's bandwidth, with no latency (allreduce_latency_per_MB_dict,
//     keyed _1 for consecutive ranks, _0 for strided ones, the world's
//     both);
//   - pipeline: the message's MB at pp_size_n's bandwidth.
//
// It times no expert-parallel all-to-all: its all-to-all table is Ulysses
// sequence parallelism's, which a plan here does not make.
func (g galvatron) Charge(c Call) (float64, error) {
	mb := c.Bytes / mib
	switch c.Dim {
	case "TP":
		table, ok := g.ag[c.Group]
		if !ok {
			return 0, fmt.Errorf("Galvatron's sp_time has no tensor-parallel table of %d ranks", c.Group)
		}
		ms := tableTime(table, mb)
		switch c.Coll {
		case "allgather", "reducescatter":
			return ms * 1e3, nil
		case "allreduce":
			return 2 * ms * 1e3, nil
		}
	case "DP", "EDP":
		consec := map[string]int{"consecutive": 1, "strided": 0}[c.Layout]
		if c.Group == g.world {
			consec = 1
		}
		bw, ok := g.dp[fmt.Sprintf("%d_%d", c.Group, consec)]
		if !ok {
			return 0, fmt.Errorf("Galvatron's allreduce bandwidths have none of %d %s ranks", c.Group, c.Layout)
		}
		bus := 2 * float64(c.Group-1) / float64(c.Group) * mb
		switch c.Coll {
		case "allreduce":
			return bus / bw * 1e3, nil
		case "allgather", "reducescatter":
			return bus / 2 / bw * 1e3, nil
		}
	case "PP":
		bw, ok := g.pp[c.Group]
		if !ok {
			return 0, fmt.Errorf("Galvatron's p2p bandwidths have no pp_size_%d", c.Group)
		}
		return mb / bw * 1e3, nil
	}
	return 0, fmt.Errorf("Galvatron's cost model times no %s %s", c.Dim, c.Coll)
}

// tableTime is the table's entry at mb, else its least-squares line's
// time there, as estimate_tp_communication_time reads it (ms).
func tableTime(table map[int]float64, mb float64) float64 {
	if mb == float64(int(mb)) {
		if t, ok := table[int(mb)]; ok {
			return t
		}
	}
	var n, sx, sy, sxx, sxy float64
	for x, y := range table {
		fx := float64(x)
		n, sx, sy, sxx, sxy = n+1, sx+fx, sy+y, sxx+fx*fx, sxy+fx*y
	}
	m := (n*sxy - sx*sy) / (n*sxx - sx*sx)
	return m*mb + (sy-m*sx)/n
}

// GalvatronPoint is the call of a plan whose size Galvatron's bandwidths
// should be taken at: they hold no latency, so each is right at one size
// only, and the export takes it where it is told (32 MiB unless). It is
// the data-parallel call (else the pipeline's send) that weighs most in
// the step among those Galvatron charges beyond Tolerance; ok is false
// when there is none.
func GalvatronPoint(rows []Row) (call Call, ok bool) {
	for _, pass := range []map[string]bool{{"DP": true, "EDP": true}, {"PP": true}} {
		if call, ok := heaviestOff(rows, func(r Row, c Charged) bool { return pass[r.Dim] && c.Planner == "galvatron" }); ok {
			return call, true
		}
	}
	return Call{}, false
}

// heaviestOff is the call that weighs most in a step (its calls per step
// × its time) among those a planner charges beyond Tolerance where take
// says so; ok is false when there is none.
func heaviestOff(rows []Row, take func(Row, Charged) bool) (call Call, ok bool) {
	best := -1.0
	for _, r := range rows {
		for _, c := range r.Charges {
			if c.Cannot == "" && c.Off && take(r, c) && r.PerStep*r.Us > best {
				call, best, ok = r.Call, r.PerStep*r.Us, true
			}
		}
	}
	return call, ok
}
