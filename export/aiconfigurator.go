package export

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/model/profiled"
)

// aiconfiguratorOps are the collectives AIConfigurator's NCCL table
// holds, by its op names.
var aiconfiguratorOps = []struct{ name, coll string }{
	{"all_gather", "allgather"}, {"alltoall", "alltoall"}, {"reduce_scatter", "reducescatter"}, {"all_reduce", "allreduce"},
}

// AIConfiguratorOp is AIConfigurator's name for collbench's collective
// coll, "" where its NCCL table holds none.
func AIConfiguratorOp(coll string) string {
	for _, op := range aiconfiguratorOps {
		if op.coll == coll {
			return op.name
		}
	}
	return ""
}

// aiconfiguratorMin and aiconfiguratorMax are the sizes its collector
// measures (collect_nccl.py: 512 B to 512 MiB, each twice the last), in
// bytes.
const aiconfiguratorMin, aiconfiguratorMax = 512, 512 << 20

// aiconfiguratorFiles renders nccl_perf.txt, the NCCL table NVIDIA
// AIConfigurator reads (its collector's CSV: framework, version, device,
// op_name, kernel_source, nccl_dtype, num_gpus, message_size in elements,
// latency in ms). Each row is the curve every consumer charges, at the
// collector's sizes, over consecutive groups of each size the profile
// measured. AIConfigurator charges a size between two rows by linear
// interpolation, and beyond the last two by their line; the rows are the
// curve's times at sizes twice apart, which hold every size of the
// profile's own table (sizes a power of two apart), so within the table
// the charge is the curve's own, and beyond it the fit's line.
//
// The table is AIConfigurator's "half" one: message_size counts 2-byte
// elements of the bytes measured, whatever type the profile moved.
func aiconfiguratorFiles(p *document.Profile) ([]exportFile, error) {
	var b strings.Builder
	b.WriteString("framework,version,device,op_name,kernel_source,nccl_dtype,num_gpus,message_size,latency\n")
	version, device, source := p.Meta.NCCLVersion, p.Backend, "NCCL"
	if version == "" {
		version = p.Backend
	}
	if len(p.Meta.Devices) > 0 && p.Meta.Devices[0].Info != "" {
		device = p.Meta.Devices[0].Info
	}
	if p.Backend != "nccl" {
		source = "collbench-" + p.Backend
	}
	world := p.Meta.WorldSize
	for _, op := range aiconfiguratorOps {
		for _, n := range halvings(world) {
			c, err := p.Curve(op.coll, n, "consecutive")
			if err != nil {
				if n == world {
					return nil, err
				}
				continue // a smaller group the profile left out
			}
			m, err := profiled.Curve(c)
			if err != nil {
				return nil, err
			}
			for s := int64(aiconfiguratorMin); s <= aiconfiguratorMax; s *= 2 {
				fmt.Fprintf(&b, "TRTLLM,%s,%s,%s,%s,half,%d,%d,%s\n", csvField(version), csvField(device), op.name, csvField(source), n, s/2,
					strconv.FormatFloat(m.Time(float64(s))/1e3, 'g', -1, 64))
			}
		}
	}
	return []exportFile{{name: "nccl_perf.txt", data: []byte(b.String())}}, nil
}

// csvField quotes a field that holds a comma, a quote or a line break,
// as Python's csv module reads it.
func csvField(s string) string {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
