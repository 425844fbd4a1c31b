package run

import (
	"fmt"
	"strings"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/judge"
	"github.com/collbench/collbench/machine"
)

// JudgeSpec asks for a run's numbers to be judged: against the wire,
// the reference tables (the built-in one and a site's) and NCCL's estimate.
type JudgeSpec struct {
	Tables []judge.Table
}

// judger prepares, on rank 0, the judgement of a run of coll: the
// topology of rank 0's node (its GPUs through NVML, its network ports in
// sysfs, or for the host backend its memory copy rate, measured here
// before the sweep), the job's nodes and ranks per node from the devices.
// Nodes are taken to be alike.
func (j *Job) judger(s *Session, spec *JudgeSpec, coll string) *judge.Judger {
	return runJudger(s.Topology(j.Settings.NCCLLib), spec.Tables, coll)
}

// runJudger judges a run of coll on topo: against the bottleneck of the
// job's path, and the references for its system (judge.SystemOf).
func runJudger(topo judge.Topology, tables []judge.Table, coll string) *judge.Judger {
	limit, why := judge.WireLimit(topo)
	return judge.NewJudger(coll, limit, why, tables, judge.SystemOf(topo))
}

// JudgeRow is what the judgement reads of a row: its out-of-place bus
// bandwidth, time and NCCL estimate.
func JudgeRow(r bench.Row) judge.Row {
	return judge.Row{Size: r.Size, BusBW: r.OutOfPlace.BusBW, Time: r.OutOfPlace.Time, Estimate: r.OutOfPlace.Estimate}
}

// judgeDoc judges a finished run's results as JudgeRow reads a row.
func judgeDoc(jd *judge.Judger, doc *document.Run) *judge.Judgement {
	var rows []judge.Row
	for _, r := range doc.Results {
		row := judge.Row{Size: r.Size, BusBW: r.OutOfPlace.BusBW, Time: r.OutOfPlace.Time}
		if r.OutOfPlace.NCCLEstimate != nil {
			row.Estimate = *r.OutOfPlace.NCCLEstimate
		}
		rows = append(rows, row)
	}
	out := jd.Judge(rows)
	return &out
}

// Topology is what the judgement knows of the session's job, its NCCL
// loaded from ncclLib where the run names one.
func (s *Session) Topology(ncclLib string) judge.Topology {
	t := judge.Topology{Backend: s.Backend.Name(), NICs: judge.ReadNICs("/")}
	hosts := map[string]bool{}
	var mine []bench.Device
	for _, d := range s.Devices {
		hosts[d.Hostname] = true
		if len(s.Devices) > 0 && d.Hostname == s.Devices[0].Hostname {
			mine = append(mine, d)
		}
	}
	t.Nodes, t.RanksPerNode = len(hosts), len(mine)
	if !s.OnGPU() {
		if t.RanksPerNode > 1 {
			t.MemcpyGBps = host.CopyRate()
		}
		return t
	}
	inv, _ := machine.Inspect(machine.Options{NCCLLib: ncclLib})
	if inv == nil {
		return t
	}
	for _, d := range mine {
		bus := fmt.Sprintf("%04x:%02x:%02x", d.BusID[0], d.BusID[1], d.BusID[2])
		for _, g := range inv.GPUs {
			if strings.HasSuffix(strings.ToLower(strings.TrimSuffix(g.BusID, ".0")), bus) {
				t.GPUs = append(t.GPUs, judge.GPU{Bus: bus, Name: g.Name, SM: strings.TrimPrefix(g.SM, "sm_"), NVLinks: g.NVLinks,
					PCIeGen: g.PCIeGen, PCIeWidth: g.PCIeWidth})
				break
			}
		}
	}
	return t
}
