// Package cluster is the job across processes, without linking MPI: where
// a process stands (its rank, the job's size and the ranks that share its
// host) from the environment the usual launchers set (OpenMPI,
// MPICH/Hydra and PMI, Slurm srun, torchrun and compatible tools), and the
// TCP rendezvous that rank 0 hosts: a store with a shared token, the
// all-gather and barrier the engine needs between measurements, and the
// watch that reports a lost or stalled process.
package cluster

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/collbench/collbench/setting"
)

// Job is this process's place in the job.
type Job struct {
	Launcher  string // "openmpi", "pmi", "slurm", "torchrun", "collbench launch" or "single"
	Rank      int    // this process, 0..Size-1
	Size      int    // processes in the job
	LocalRank int    // this process among those on its host
	LocalSize int    // processes on this host; 0 when the launcher does not say
	// MasterAddr and MasterPort are the rendezvous the environment names
	// (MASTER_ADDR/MASTER_PORT, as torchrun sets); empty and 0 otherwise.
	MasterAddr string
	MasterPort int
	// AgentStore says torchrun's elastic agent holds MASTER_PORT with its
	// own store (TORCHELASTIC_USE_AGENT_STORE=True), so MasterPort is the
	// port after it.
	AgentStore bool
	// Nodes are the job's hosts in order, when the launcher lists them
	// (Slurm's SLURM_JOB_NODELIST).
	Nodes []string
}

// source is one launcher's variable names.
type source struct {
	name                             string
	rank, size, localRank, localSize string
}

// sources are tried in order; the first whose rank variable is set wins.
// MPI launchers come before Slurm because mpirun inside an allocation
// also inherits SLURM_* variables that describe the allocation, not the
// MPI ranks.
var sources = []source{
	{"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
	{"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
	{"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", ""}, // local size: slurmExtras
	{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
}

// FromEnv reads the job from the environment (getenv is os.Getenv outside
// tests). With no launcher variables it is a job of one process.
func FromEnv(getenv func(string) string) (Job, error) {
	batch := false
	for _, s := range sources {
		if getenv(s.rank) == "" {
			continue
		}
		if s.name == "slurm" && getenv("SLURM_STEP_ID") == "" && getenv("SLURM_STEPID") == "" {
			// A batch script's own shell: Slurm sets SLURM_PROCID=0 and
			// the allocation's SLURM_NTASKS there too, but only srun
			// starts the tasks (each with its step). Another launcher
			// inside the script (torchrun) is read instead.
			batch = true
			continue
		}
		j := Job{Launcher: s.name}
		if s.name == "torchrun" && getenv(LaunchedVar) == "1" {
			j.Launcher = "collbench launch" // torchrun's variables, set by collbench's own launcher
		}
		var err error
		if j.Rank, err = intVar(getenv, s.rank, true); err != nil {
			return j, err
		}
		if j.Size, err = intVar(getenv, s.size, true); err != nil {
			return j, err
		}
		if j.LocalRank, err = intVar(getenv, s.localRank, false); err != nil {
			return j, err
		}
		if j.LocalSize, err = intVar(getenv, s.localSize, false); err != nil {
			return j, err
		}
		if s.name == "slurm" {
			if err := slurmExtras(getenv, &j); err != nil {
				return j, err
			}
		}
		if err := j.master(getenv); err != nil {
			return j, err
		}
		return j, j.check(s)
	}
	if batch {
		return Job{}, fmt.Errorf("this is a Slurm batch script's own process (SLURM_PROCID is set, but no SLURM_STEP_ID): "+
			"start collbench with srun (srun collbench …, as scripts/slurm.sbatch does), which starts the allocation's %s task(s); "+
			"alone it would wait for tasks nobody starts", getenv("SLURM_NTASKS"))
	}
	return Job{Launcher: "single", Size: 1, LocalSize: 1}, nil
}

// master reads MASTER_ADDR and MASTER_PORT, which torchrun sets and which
// users of other launchers may export too. Under torchrun, whose elastic
// agent serves its own TCP store on MASTER_PORT, the rendezvous is the
// next port.
func (j *Job) master(getenv func(string) string) error {
	j.MasterAddr = getenv("MASTER_ADDR")
	var err error
	if j.MasterPort, err = intVar(getenv, "MASTER_PORT", false); err != nil {
		return err
	}
	if j.MasterPort > 65535 {
		return fmt.Errorf("MASTER_PORT=%d is not a TCP port", j.MasterPort)
	}
	if strings.EqualFold(getenv("TORCHELASTIC_USE_AGENT_STORE"), "true") && j.MasterPort > 0 {
		if j.MasterPort == 65535 {
			return setting.Errorf("MASTER_PORT=65535 is torchrun's agent store, and there is no port above it for the rendezvous; pass {Rendezvous}")
		}
		j.AgentStore = true
		j.MasterPort++
	}
	return nil
}

// slurmExtras reads the node list and this node's task count from the
// step's tasks per node ("4(x2),3": four on each of two nodes, then three)
// at SLURM_NODEID.
func slurmExtras(getenv func(string) string, j *Job) error {
	if nl := getenv("SLURM_JOB_NODELIST"); nl != "" {
		nodes, err := ExpandNodelist(nl)
		if err != nil {
			return fmt.Errorf("SLURM_JOB_NODELIST: %w", err)
		}
		j.Nodes = nodes
	}
	name := "SLURM_STEP_TASKS_PER_NODE"
	tpn := getenv(name)
	if tpn == "" {
		name, tpn = "SLURM_TASKS_PER_NODE", getenv("SLURM_TASKS_PER_NODE")
	}
	if tpn == "" {
		return nil
	}
	counts, err := ExpandTaskCounts(tpn)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	node, err := intVar(getenv, "SLURM_NODEID", false)
	if err != nil {
		return err
	}
	if node >= len(counts) {
		return fmt.Errorf("SLURM_NODEID=%d but %s=%q lists %d node(s)", node, name, tpn, len(counts))
	}
	j.LocalSize = counts[node]
	return nil
}

func (j Job) check(s source) error {
	switch {
	case j.Size < 1:
		return fmt.Errorf("%s=%d: a job needs at least one process", s.size, j.Size)
	case j.Rank >= j.Size:
		return fmt.Errorf("%s=%d is outside a job of %s=%d", s.rank, j.Rank, s.size, j.Size)
	case j.LocalSize > 0 && j.LocalRank >= j.LocalSize:
		return fmt.Errorf("%s=%d is outside %s=%d", s.localRank, j.LocalRank, s.localSize, j.LocalSize)
	}
	return nil
}

// intVar reads a non-negative integer variable; an unset optional one is 0.
func intVar(getenv func(string) string, name string, required bool) (int, error) {
	v := getenv(name)
	if v == "" {
		if required {
			return 0, fmt.Errorf("%s is not set", name)
		}
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q is not a non-negative integer", name, v)
	}
	if n > math.MaxInt32 {
		// The rendezvous carries ranks and sizes in 32 bits; a larger
		// value would arrive as another number.
		return 0, fmt.Errorf("%s=%d is more than the rendezvous can number (at most %d)", name, n, math.MaxInt32)
	}
	return n, nil
}

// ListenerFDVar names the descriptor on which rank 0 finds the rendezvous
// listener its launcher opened for it (collbench launch does).
const ListenerFDVar = "COLLBENCH_RENDEZVOUS_FD"

// LaunchedVar, set to 1, tells a rank that collbench launch started it
// (with torchrun's variables), so that it names its launcher right.
const LaunchedVar = "COLLBENCH_LAUNCHED"

// HeldVar, set to 1, tells every rank that the rendezvous listener was
// open before any rank started (DialConfig.Held).
const HeldVar = "COLLBENCH_RENDEZVOUS_HELD"

// Vars lists every variable the job is read from, so that a launcher
// starting ranks inside another launcher's job can clear them first.
func Vars() []string {
	out := []string{"MASTER_ADDR", "MASTER_PORT", "COLLBENCH_TOKEN", LaunchedVar, "SLURM_JOB_NODELIST",
		"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NODEID", "SLURM_STEP_ID"}
	for _, s := range sources {
		for _, v := range []string{s.rank, s.size, s.localRank, s.localSize} {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	for _, id := range jobIDs {
		out = append(out, id.name)
	}
	return out
}
