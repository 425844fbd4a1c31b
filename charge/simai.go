package charge

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/collbench/collbench/export"
)

// simai is what current SimAI's analytical simulator reads from the
// files collbench exported for it: SimAI_analytical's flags (GPUs and
// NICs per server, -nv and -nic in 2^30 B/s) and the three ratio tables.
type simai struct {
	gps, nps        int
	nv, nic         float64
	nicT, nvT, ataT [][]float64 // rows: size, then the columns
	haveNV, haveNIC bool
}

func (simai) Name() string { return "simai" }

func readSimAI(path string) (Planner, error) {
	s, err := readSimAIArgs(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	for _, t := range []struct {
		name string
		into *[][]float64
	}{{"nic_ratio.csv", &s.nicT}, {"nvlink_ratio.csv", &s.nvT}, {"ata_ratio.csv", &s.ataT}} {
		if *t.into, err = readRatioCSV(filepath.Join(dir, export.SimAIRatioDir, t.name)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// readSimAIArgs reads simai_analytical.args, SimAI_analytical's flags:
// the GPUs and NICs per server, and -nv and -nic where given.
func readSimAIArgs(path string) (simai, error) {
	data, err := readExport(path)
	if err != nil {
		return simai{}, err
	}
	s := simai{}
	f := strings.Fields(string(data))
	for i := 0; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i+1], 64)
		if err != nil {
			return simai{}, fmt.Errorf("%s %q is not a number", f[i], f[i+1])
		}
		switch f[i] {
		case "-g_p_s":
			s.gps = int(v)
		case "-n_p_s":
			s.nps = int(v)
		case "-nv":
			s.nv, s.haveNV = v, true
		case "-nic":
			s.nic, s.haveNIC = v, true
		}
	}
	if s.gps < 1 || s.nps < 1 {
		return simai{}, fmt.Errorf("no -g_p_s and -n_p_s")
	}
	return s, nil
}

// readRatioCSV reads a ratio table as readCSV does: the first line
// skipped, empty cells 1.
func readRatioCSV(path string) ([][]float64, error) {
	data, err := readExport(path)
	if err != nil {
		return nil, err
	}
	var rows [][]float64
	sc := bufio.NewScanner(bytes.NewReader(data))
	for first := true; sc.Scan(); first = false {
		if first || strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var row []float64
		for _, cell := range strings.Split(sc.Text(), ",") {
			cell = strings.TrimSpace(cell)
			if cell == "" {
				cell = "1"
			}
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is not a number", path, cell)
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s has no rows", path)
	}
	return rows, sc.Err()
}

// ratioValue is getValue (calbusbw.cc): the column of nnode nodes at the
// size, interpolated between rows, divided by the last row's value.
func ratioValue(rows [][]float64, size float64, nnode int) (float64, error) {
	col := map[int]int{1: 1, 2: 2, 4: 3, 8: 4, 16: 5, 32: 6, 64: 7, 128: 8, 9: 9}[nnode]
	if col == 0 {
		col = 5
	}
	if size == 0 {
		return 1, nil
	}
	last := rows[len(rows)-1]
	for _, r := range rows {
		if len(r) <= col {
			return 0, fmt.Errorf("a ratio row has %d columns, SimAI reads column %d", len(r), col)
		}
	}
	if size < rows[0][0] {
		return rows[0][col] / last[col], nil
	}
	for i := 0; i+1 < len(rows); i++ {
		a, b := rows[i], rows[i+1]
		if size >= a[0] && size <= b[0] {
			return (a[col] + (b[col]-a[col])*(size-a[0])/(b[0]-a[0])) / last[col], nil
		}
	}
	return 0, fmt.Errorf("%.0f bytes is beyond the ratio table (SimAI stops: data size out of range)", size)
}

// busbw is cal_busbw (calbusbw.cc) for the ring algorithm SimAI_analytical
// asks for: the bus bandwidth in 2^30 B/s of a group of nodeCount nodes
// of gpn GPUs and nics NICs each, and whether NVLink is its bottleneck.
func (s simai) busbw(nics float64, nodeCount int, coll string, gpn int) (float64, bool, error) {
	nvlink, nic := s.nv, s.nic
	if !s.haveNV || !s.haveNIC {
		return 0, false, fmt.Errorf("simai_analytical.args holds no -nv or -nic, and SimAI's defaults are no measurement")
	}
	if nvlink <= 0 || nic <= 0 || gpn < 1 || int(nics) < 1 || nodeCount < 1 || gpn*nodeCount == 1 {
		return 0, false, fmt.Errorf("SimAI computes no bus bandwidth for %d node(s) of %d GPU(s) and %g NIC(s)", nodeCount, gpn, nics)
	}
	crossNIC := nics*nic > nvlink
	isNVLink := false
	var ag float64
	switch {
	case nodeCount == 1:
		ag = nvlink
	case gpn == 1:
		ag = nic * nics
	case crossNIC:
		if a := nvlink * float64(gpn) / float64(gpn-1); a < nic*nics {
			ag, isNVLink = a, true
		} else {
			ag = nic * nics
		}
	default:
		if nvlink < nic*nics {
			ag, isNVLink = nvlink, true
		} else {
			ag = nic * nics
		}
	}
	if coll != "alltoall" {
		return ag, isNVLink, nil
	}
	if nodeCount == 1 {
		return nvlink, true, nil
	}
	nranks := nodeCount * gpn
	return nic * nics / float64(gpn) * float64(nranks-1) / float64((nodeCount-1)*gpn), isNVLink, nil
}

// Charge is Layer::compute_time (workload/Layer.cc, aliyun/SimAI
// cef83f9d) for the call in its group: fixed latencies below 1 MiB, else
// S·f/(ratio·busbw), f = (n−1)/n (twice that for an all-reduce), with the
// bus bandwidth cal_busbw gives the group as compute_time describes it
// to it (a DP group's ranks as nodes) and the ratio cal_ratio reads
// (TP all-gather and reduce-scatter, TP and EP all-to-all; 1 otherwise).
// The plan's tensor- and expert-parallel sizes are the workload's. SimAI
// times the pipeline's sends as 0 unless its -pp_o is below 1, and no file
// of collbench's gives it their bandwidth.
func (s simai) Charge(c Call) (float64, error) {
	group := map[string]string{"TP": "tp", "EP": "ep", "DP": "dp", "EDP": "dp_ep"}[c.Dim]
	coll := c.Coll
	if coll == "alltoallv" {
		coll = "alltoall"
	}
	switch coll {
	case "allreduce", "allgather", "reducescatter", "alltoall":
	default:
		return 0, fmt.Errorf("current SimAI times no %s (the pipeline's sends are 0 unless -pp_o is below 1)", c.Coll)
	}
	if group == "" {
		return 0, fmt.Errorf("current SimAI times no %s group", c.Dim)
	}
	size := math.Floor(c.Bytes) // the workload's sizes are whole bytes
	n, tp, ep, gps, nps := c.Group, max(c.TP, 1), max(c.EP, 1), s.gps, s.nps
	if size > 1 && size < 1<<20 {
		return map[int]float64{2: 10, 4: 12, 8: 15, 16: 66, 32: 135, 64: 200, 128: 320}[n], nil
	}
	var bw float64
	var isNVLink bool
	var err error
	switch {
	case group == "tp" && tp <= gps:
		bw, isNVLink, err = s.busbw(float64(nps), 1, coll, tp)
	case group == "tp":
		bw, isNVLink, err = s.busbw(float64(nps), tp/gps, coll, gps)
	case group == "ep" && tp*n <= gps:
		bw, isNVLink, err = s.busbw(float64(nps), 1, coll, gps/tp)
	case group == "ep":
		nics := float64(nps / tp)
		if tp > gps {
			nics = float64(nps / gps)
		}
		bw, isNVLink, err = s.busbw(nics, tp*n/gps, coll, max(gps/tp, 1))
	case group == "dp" && tp <= gps:
		bw, isNVLink, err = s.busbw(float64(nps/tp), n, coll, gps/tp)
	case group == "dp":
		bw, isNVLink, err = s.busbw(float64(nps/gps), n, coll, 1)
	case tp*ep <= gps: // dp_ep
		bw, isNVLink, err = s.busbw(float64(nps/(tp*ep)), n, coll, gps/(tp*ep))
	default:
		bw, isNVLink, err = s.busbw(float64(nps/gps), n, coll, 1)
	}
	if err != nil {
		return 0, err
	}
	ratio := 1.0
	switch {
	case group == "tp" && (coll == "allgather" || coll == "reducescatter"):
		table := s.nicT
		if isNVLink {
			table = s.nvT
		}
		ratio, err = ratioValue(table, size, max(1, tp/gps))
	case group == "ep" && coll == "alltoall":
		nnode := 1
		if tp*n > gps {
			nnode = 9
			if tp < gps {
				nnode = tp * n / gps
			}
		}
		ratio, err = ratioValue(s.ataT, size, nnode)
	case group == "tp" && coll == "alltoall":
		ratio, err = ratioValue(s.ataT, size, max(1, tp/gps))
	}
	if err != nil {
		return 0, err
	}
	f := float64(n-1) / float64(n)
	if coll == "allreduce" {
		f *= 2
	}
	// compute_time returns a Tick: whole nanoseconds, truncated.
	return math.Floor(size/(1<<30)/(ratio*bw)*1e9*f) / 1e3, nil
}
