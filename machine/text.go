package machine

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

func itoa(n int) string { return strconv.Itoa(n) }

// WriteText renders the report for people.
func (r *Report) WriteText(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	line := func(label, value string) { p("%-15s%s\n", label+":", value) }
	line("host", r.Hostname)
	line("CUDA driver", describe(r.Driver, "CUDA "))
	if r.NVML.Version != "" {
		line("NVIDIA driver", r.NVML.Version)
	} else if r.NVML.Error != "" {
		line("NVML", r.NVML.Error)
	}
	line("NCCL", describe(r.NCCL, ""))
	line("GPUs", itoa(len(r.GPUs)))
	for _, g := range r.GPUs {
		p("  GPU %d  %s  bus %s  %.1f GiB  sm_%s", g.Index, g.Name, g.BusID, float64(g.MemoryBytes)/(1<<30), strings.ReplaceAll(g.SM, ".", ""))
		if g.NVLinks > 0 {
			p("  %d NVLinks", g.NVLinks)
		}
		p("\n")
	}
	if len(r.Links) > 1 {
		p("topology (X self, NV# NVLinks, PIX/PXB PCIe switch, PHB host bridge, NODE same NUMA node, SYS across sockets):\n")
		p("%8s", "")
		for j := range r.Links {
			p("%6s", "GPU"+itoa(j))
		}
		p("\n")
		for i, row := range r.Links {
			p("%8s", "GPU"+itoa(i))
			for _, l := range row {
				p("%6s", l.Path)
			}
			p("\n")
		}
	}
}

func describe(l Library, versionPrefix string) string {
	switch {
	case l.Error != "":
		return "not usable: " + l.Error
	case l.Version != "":
		return versionPrefix + l.Version + " (" + l.Path + ")"
	}
	return l.Path
}
