package charge

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
)

// simai11 is what SimAI 1.0 and 1.1's analytical simulator reads from the
// files collbench exported for it: busbw.yaml's bus bandwidths in
// 2^30 B/s per group and op (TP, DP, EP) and the pipeline's, and the GPUs
// per server its -g_p_s is given (simai_analytical.args says how many).
type simai11 struct {
	gps int
	// bw holds each section's values by op (allreduce, allgather,
	// reducescatter, alltoall; PP's busbw), -1 where the file says null,
	// as SimAI keeps its default.
	bw map[string]map[string]float64
}

func (simai11) Name() string { return "simai-1.1" }

// readSimAI11 reads busbw.yaml as UserParam::parseYaml (system/
// AstraParamParse.hh, aliyun/SimAI 03613a7a) does: its first line is
// the name; "SECTION:" opens a section; "key,: value" sets the key
// before its comma; a null is no value. The GPUs per server come from
// simai_analytical.args beside it.
func readSimAI11(path string) (Planner, error) {
	data, err := readExport(path)
	if err != nil {
		return nil, err
	}
	s := simai11{bw: map[string]map[string]float64{}}
	for _, sec := range []string{"TP", "DP", "EP", "PP"} {
		s.bw[sec] = map[string]float64{"allreduce": -1, "allgather": -1, "reducescatter": -1, "alltoall": -1, "busbw": -1}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	section := ""
	for first := true; sc.Scan(); first = false {
		line := strings.Trim(sc.Text(), " ")
		if first || line == "" || line[0] == '#' {
			continue
		}
		if strings.HasSuffix(line, ":") {
			section = strings.TrimSuffix(line, ":")
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		value = strings.TrimSpace(value)
		if !ok || value == "" || value == "null" {
			continue
		}
		key, _, _ = strings.Cut(strings.TrimRight(key, " "), ",")
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 32)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a number", key, value)
		}
		if m, ok := s.bw[section]; ok {
			if _, known := m[key]; known {
				m[key] = v // a float, as std::stof reads it
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	args, err := readSimAIArgs(filepath.Join(filepath.Dir(path), "simai_analytical.args"))
	if err != nil {
		return nil, fmt.Errorf("the GPUs per server SimAI 1.1 is run with: %w", err)
	}
	s.gps = args.gps
	return s, nil
}

// Charge is SimAI 1.1's Layer::compute_time (workload/Layer.cc,
// aliyun/SimAI 03613a7a) in its analytical mode: S/busbw·f, f = (n−1)/n
// (twice that for an all-reduce), in whole ns, with the busbw its
// branches pick by the call's group and place. A tensor- or
// expert-parallel group lies inside a server where TP fits one; a data-
// parallel one where the whole job is one server. Inside, every all-
// reduce is TP's, a TP gather or all-to-all TP's, an EP all-to-all EP's,
// and anything else 0; across servers a DP call is DP's (its all-gather
// for reduce-scatter and all-to-all too) and an expert-data-parallel
// one EP's. The pipeline's sends are 0 unless SimAI is run with -pp_o
// below 1.
func (s simai11) Charge(c Call) (float64, error) {
	op := map[string]string{"allreduce": "allreduce", "allgather": "allgather", "reducescatter": "reducescatter", "alltoall": "alltoall", "alltoallv": "alltoall"}[c.Coll]
	if op == "" {
		return 0, fmt.Errorf("SimAI 1.1 times no %s (the pipeline's sends are 0 unless -pp_o is below 1)", c.Coll)
	}
	group := map[string]string{"TP": "TP", "EP": "EP", "DP": "DP", "EDP": "DP_EP"}[c.Dim]
	if group == "" {
		return 0, fmt.Errorf("SimAI 1.1 times no %s group", c.Dim)
	}
	tp, world := max(c.TP, 1), c.World
	if world < 1 {
		return 0, fmt.Errorf("SimAI 1.1 needs the plan's number of GPUs")
	}
	inside := false
	switch group {
	case "TP", "EP":
		inside = tp <= s.gps
	default:
		inside = world == s.gps && tp <= s.gps
	}
	// TP's values time a TP group wherever it lies, and every all-reduce
	// inside a server; the reduce-scatter takes the all-gather's. Across
	// servers a DP or DP_EP all-reduce takes its own section's all-reduce,
	// and its other collectives that section's all-gather.
	var sec, key string
	switch {
	case group == "TP" || inside && op == "allreduce":
		sec, key = "TP", op
		if op == "reducescatter" {
			key = "allgather"
		}
	case inside && group == "EP" && op == "alltoall":
		sec, key = "EP", "alltoall"
	case inside || group == "EP":
		return 0, nil // compute_time has no branch for it: 0
	default:
		sec, key = map[string]string{"DP": "DP", "DP_EP": "EP"}[group], "allgather"
		if op == "allreduce" {
			key = "allreduce"
		}
	}
	bw := s.bw[sec][key]
	switch {
	case bw == -1:
		return 0, fmt.Errorf("busbw.yaml holds no %s %s, which SimAI 1.1 reads as -1: a negative time", sec, key)
	case !(bw > 0):
		return 0, fmt.Errorf("busbw.yaml's %s %s is %v, no bandwidth SimAI 1.1 can time a call with", sec, key, bw)
	}
	n := float64(c.Group)
	// The workload's size passes through a float (it is scaled by its
	// comm_scale, a float, Workload.cc), then the expression's own order
	// in double, truncated to a whole Tick.
	size := float64(uint64(float32(math.Floor(c.Bytes))))
	t := size * 1.0 / (1024 * 1024 * 1024) / bw * 1e9
	if op == "allreduce" {
		t *= 2
	}
	t = t * (n - 1) / (n / 1.0)
	return math.Trunc(t) / 1e3, nil
}

// SimAIPoint is the call whose size SimAI's bandwidths should be
// exported at (export's SimAIBW "point:SIZE"): SimAI 1.x times every call
// from a bandwidth and current SimAI its all-reduces from 1 MiB, with no
// latency, so each is right at one size only. It is the call, of those a
// SimAI export charges off from a bandwidth, that weighs most in a step
// (its calls per step × its time); none where no such call is off.
func SimAIPoint(rows []Row) (call Call, ok bool) {
	return heaviestOff(rows, func(r Row, c Charged) bool {
		return c.Planner == "simai-1.1" && c.Us > 0 ||
			c.Planner == "simai" && r.Coll == "allreduce" && r.Bytes >= 1<<20
	})
}
