package machine

import (
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Link is how one GPU reaches another, in nvidia-smi topo's terms.
type Link struct {
	NVLinks int    `json:"nvlinks,omitempty"` // NVLink connections between the two
	Path    string `json:"path"`              // X, NV#, PIX, PXB, PHB, NODE or SYS
}

// pathLabel names a PCIe common-ancestor level as nvidia-smi topo -m does.
func pathLabel(l nvml.GpuTopologyLevel) string {
	switch l {
	case nvml.TOPOLOGY_INTERNAL:
		return "X"
	case nvml.TOPOLOGY_SINGLE:
		return "PIX"
	case nvml.TOPOLOGY_MULTIPLE:
		return "PXB"
	case nvml.TOPOLOGY_HOSTBRIDGE:
		return "PHB"
	case nvml.TOPOLOGY_NODE:
		return "NODE"
	}
	return "SYS"
}

// busKey normalises a PCI bus id for comparison: NVML writes an 8-digit
// domain ("00000000:18:00.0"), CUDA a 4-digit one.
func busKey(id string) string {
	id = strings.ToLower(strings.TrimSpace(id))
	if i := strings.IndexByte(id, ':'); i > 4 {
		id = id[i-4:]
	}
	return id
}

func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

// inspectNVML adds driver release, UUIDs, NVLink counts and the topology
// matrix. Nothing in NVML is called, not even Shutdown, unless Init
// succeeded: on a host without the library any other call ends the process.
func inspectNVML(r *Report) {
	lib := nvml.New()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		r.NVML.Error = "NVML unavailable: " + ret.Error()
		return
	}
	defer lib.Shutdown()
	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		r.NVML.Version = v
	}
	r.NVML.Path = "libnvidia-ml.so.1"
	byBus := map[string]int{}
	devs := make([]nvml.Device, len(r.GPUs))
	for i := range r.GPUs {
		byBus[busKey(r.GPUs[i].BusID)] = i
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		r.NVML.Error = "DeviceGetCount: " + ret.Error()
		return
	}
	for k := 0; k < n; k++ {
		d, ret := lib.DeviceGetHandleByIndex(k)
		if ret != nvml.SUCCESS {
			continue
		}
		pci, ret := d.GetPciInfo()
		if ret != nvml.SUCCESS {
			continue
		}
		if i, ok := byBus[busKey(cString(pci.BusId[:]))]; ok {
			devs[i] = d
			if u, ret := d.GetUUID(); ret == nvml.SUCCESS {
				r.GPUs[i].UUID = u
			}
			if g, ret := d.GetMaxPcieLinkGeneration(); ret == nvml.SUCCESS {
				r.GPUs[i].PCIeGen = g
			}
			if w, ret := d.GetCurrPcieLinkWidth(); ret == nvml.SUCCESS {
				r.GPUs[i].PCIeWidth = w
			}
		}
	}
	nv := make([][]int, len(devs))
	for i, d := range devs {
		nv[i] = make([]int, len(devs))
		if d == nil {
			continue
		}
		for link := 0; link < nvml.NVLINK_MAX_LINKS; link++ {
			state, ret := d.GetNvLinkState(link)
			if ret != nvml.SUCCESS || state != nvml.FEATURE_ENABLED {
				continue
			}
			r.GPUs[i].NVLinks++
			remote, ret := d.GetNvLinkRemotePciInfo(link)
			if ret != nvml.SUCCESS {
				continue
			}
			if j, ok := byBus[busKey(cString(remote.BusId[:]))]; ok {
				nv[i][j]++
			}
		}
	}
	r.Links = make([][]Link, len(devs))
	for i := range devs {
		r.Links[i] = make([]Link, len(devs))
		for j := range devs {
			r.Links[i][j] = link(devs[i], devs[j], i == j, nv[i][j])
		}
	}
}

func link(a, b nvml.Device, self bool, nvlinks int) Link {
	switch {
	case self:
		return Link{Path: "X"}
	case nvlinks > 0:
		return Link{NVLinks: nvlinks, Path: "NV" + itoa(nvlinks)}
	case a == nil || b == nil:
		return Link{Path: "?"}
	}
	lvl, ret := a.GetTopologyCommonAncestor(b)
	if ret != nvml.SUCCESS {
		return Link{Path: "?"}
	}
	return Link{Path: pathLabel(lvl)}
}

// NVMLDeviceCount is how many GPUs NVML sees: 0 where NVML cannot start
// (no library, no driver) or sees none. A machine whose NVML sees GPUs
// has them, whatever CUDA or NCCL make of them.
func NVMLDeviceCount() int {
	lib := nvml.New()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return 0
	}
	defer lib.Shutdown()
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return 0
	}
	return n
}
