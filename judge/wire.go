// Package judge says how a measured bus bandwidth stands three ways: as a
// share of the bottleneck link of the communicator's path (the wire), as
// a ratio to published figures for the same system (an embedded,
// versioned reference table), and as a ratio to NCCL's own estimate of the
// call. It reads topology it is given and the NICs in sysfs; it measures
// nothing itself.
package judge

import (
	"fmt"
	"strconv"
	"strings"
)

// GPU is one GPU of the communicator, as NVML and CUDA describe it.
type GPU struct {
	Bus       string // PCI bus id: ranks that share a GPU have the same
	Name      string // "NVIDIA H100 80GB HBM3"
	SM        string // compute capability, "9.0"
	NVLinks   int    // active NVLink links
	PCIeGen   int
	PCIeWidth int
}

// NIC is one network port of the node and its rate per direction.
type NIC struct {
	Name string  // "mlx5_0 port 1", "eth0"
	GBps float64 // per direction, 10⁹ B/s
	Rate string  // as sysfs gives it: "400 Gb/sec (4X NDR)", "25000 Mb/s"
}

// Topology is what the judgement knows of the job: how many nodes and
// ranks per node, this node's GPUs (nccl backend) and NICs, and for the
// host backend the rate at which this machine copies memory.
type Topology struct {
	Backend      string // "nccl" or "host"
	Nodes        int
	RanksPerNode int
	GPUs         []GPU
	NICs         []NIC
	MemcpyGBps   float64 // host backend, measured once; 0 unknown
}

// Limit is the bottleneck of a communicator's path: the rate no bus
// bandwidth can pass, what it is and where the figure came from.
type Limit struct {
	GBps float64 `json:"gbps"` // per direction
	What string  `json:"what"` // "NVLink4 ×18"
	From string  `json:"from"` // "NVML: 18 active links on sm_90"
}

func (l Limit) String() string {
	return fmt.Sprintf("%s: %s GB/s per direction", l.What, strconv.FormatFloat(l.GBps, 'f', -1, 64))
}

// nvlinkGen is the NVLink generation of a GPU architecture and one
// link's rate per direction (GB/s), from the compute capability's major
// version as NCCL reads it: P100 4×40 GB/s both ways, V100 6×50, A100
// 12×50, H100 18×50, B200 18×100.
func nvlinkGen(sm string) (gen int, perLink float64) {
	major, _, _ := strings.Cut(strings.TrimPrefix(sm, "sm_"), ".")
	switch major {
	case "6":
		return 1, 20
	case "7":
		return 2, 25
	case "8":
		return 3, 25
	case "9":
		return 4, 25
	case "10":
		return 5, 50
	}
	return 0, 0
}

// pcieLane is one PCIe lane's rate per direction (GB/s) after the
// line code: 8b/10b up to Gen2, 128b/130b for Gen3 to Gen5, FLIT for Gen6.
var pcieLane = map[int]float64{1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}

// WireLimit is the bottleneck rate of the communicator's path: within a
// node the slowest GPU's NVLink (all GPUs on NVLink) or PCIe link, across
// nodes also the node's network ports together (NCCL spreads its rings
// over every NIC, so the bus bandwidth of a job across nodes is at most
// their sum); for the host backend on one machine its memory copy rate.
// When no limit is known, why says so (one rank; ranks sharing a GPU,
// whose data stays in its memory; no figure from NVML or sysfs).
func WireLimit(t Topology) (l Limit, why string) {
	var limits []Limit
	if t.Nodes <= 1 && t.RanksPerNode <= 1 {
		return Limit{}, "one rank: no data crosses a link"
	}
	if t.RanksPerNode > 1 {
		switch t.Backend {
		case "nccl":
			if sharesGPU(t.GPUs) {
				if t.Nodes <= 1 {
					return Limit{}, "ranks share a GPU: their data stays in its memory, no link bounds it"
				}
			} else if l, ok := gpuLimit(t.GPUs); ok {
				limits = append(limits, l)
			}
		case "host":
			if t.MemcpyGBps > 0 {
				limits = append(limits, Limit{GBps: round(t.MemcpyGBps), What: "memory copy", From: "measured once on this machine"})
			}
		}
	}
	if t.Nodes > 1 {
		if l, ok := nicLimit(t.NICs); ok {
			limits = append(limits, l)
		}
	}
	if len(limits) == 0 {
		return Limit{}, "no figure for the links (NVML or sysfs gave none)"
	}
	low := limits[0]
	for _, l := range limits[1:] {
		if l.GBps < low.GBps {
			low = l
		}
	}
	return low, ""
}

// sharesGPU says whether two ranks of the node are on one GPU.
func sharesGPU(gpus []GPU) bool {
	seen := map[string]bool{}
	for _, g := range gpus {
		if g.Bus == "" {
			continue
		}
		if seen[g.Bus] {
			return true
		}
		seen[g.Bus] = true
	}
	return false
}

func gpuLimit(gpus []GPU) (Limit, bool) {
	if len(gpus) == 0 {
		return Limit{}, false
	}
	nv := true
	for _, g := range gpus {
		if gen, _ := nvlinkGen(g.SM); g.NVLinks == 0 || gen == 0 {
			nv = false
		}
	}
	if nv {
		slow := gpus[0]
		for _, g := range gpus[1:] {
			if g.NVLinks < slow.NVLinks {
				slow = g
			}
		}
		gen, per := nvlinkGen(slow.SM)
		return Limit{GBps: round(float64(slow.NVLinks) * per), What: fmt.Sprintf("NVLink%d ×%d", gen, slow.NVLinks),
			From: fmt.Sprintf("NVML: %d active links on sm_%s, %g GB/s each way per link", slow.NVLinks, strings.ReplaceAll(slow.SM, ".", ""), per)}, true
	}
	var best *Limit
	for _, g := range gpus {
		lane, ok := pcieLane[g.PCIeGen]
		if !ok || g.PCIeWidth <= 0 {
			return Limit{}, false
		}
		l := Limit{GBps: round(lane * float64(g.PCIeWidth)), What: fmt.Sprintf("PCIe Gen%d x%d", g.PCIeGen, g.PCIeWidth),
			From: "NVML: the GPU's PCIe link (highest generation, current width)"}
		if best == nil || l.GBps < best.GBps {
			best = &l
		}
	}
	return *best, true
}

func nicLimit(nics []NIC) (Limit, bool) {
	if len(nics) == 0 {
		return Limit{}, false
	}
	total := 0.0
	rates := map[string]int{}
	var order []string
	for _, n := range nics {
		total += n.GBps
		if rates[n.Rate] == 0 {
			order = append(order, n.Rate)
		}
		rates[n.Rate]++
	}
	var parts []string
	for _, r := range order {
		parts = append(parts, fmt.Sprintf("%d× %s", rates[r], r))
	}
	return Limit{GBps: round(total), What: "network " + strings.Join(parts, ", "), From: "sysfs: the node's active ports, together"}, true
}

// round keeps three significant decimals of a rate.
func round(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	return f
}
