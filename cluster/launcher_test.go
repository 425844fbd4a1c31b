package cluster

import (
	"net"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  func(string) string
		want Job
	}{
		{"no launcher", envOf(), Job{Launcher: "single", Size: 1, LocalSize: 1}},
		{"openmpi", envOf("OMPI_COMM_WORLD_RANK", "5", "OMPI_COMM_WORLD_SIZE", "8", "OMPI_COMM_WORLD_LOCAL_RANK", "1",
			"OMPI_COMM_WORLD_LOCAL_SIZE", "4", "SLURM_PROCID", "0", "SLURM_NTASKS", "2"),
			Job{Launcher: "openmpi", Rank: 5, Size: 8, LocalRank: 1, LocalSize: 4}},
		{"mpich", envOf("PMI_RANK", "3", "PMI_SIZE", "4", "MPI_LOCALRANKID", "1", "MPI_LOCALNRANKS", "2"),
			Job{Launcher: "pmi", Rank: 3, Size: 4, LocalRank: 1, LocalSize: 2}},
		{"slurm", envOf("SLURM_PROCID", "6", "SLURM_NTASKS", "7", "SLURM_LOCALID", "2", "SLURM_NODEID", "1", "SLURM_STEP_ID", "0",
			"SLURM_STEP_TASKS_PER_NODE", "4,3", "SLURM_JOB_NODELIST", "gpu[07-08]"),
			Job{Launcher: "slurm", Rank: 6, Size: 7, LocalRank: 2, LocalSize: 3, Nodes: []string{"gpu07", "gpu08"}}},
		{"torchrun", envOf("RANK", "1", "WORLD_SIZE", "2", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "2",
			"MASTER_ADDR", "10.0.0.1", "MASTER_PORT", "29500"),
			Job{Launcher: "torchrun", Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, MasterAddr: "10.0.0.1", MasterPort: 29500}},
		// torchrun's elastic agent hosts its own store on MASTER_PORT (as
		// torchrun 1.13 from Debian sets it): the rendezvous takes the next.
		{"torchrun agent store", envOf("RANK", "0", "WORLD_SIZE", "4", "LOCAL_RANK", "0", "LOCAL_WORLD_SIZE", "4",
			"MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "29500", "TORCHELASTIC_USE_AGENT_STORE", "True"),
			Job{Launcher: "torchrun", Rank: 0, Size: 4, LocalRank: 0, LocalSize: 4, MasterAddr: "127.0.0.1", MasterPort: 29501, AgentStore: true}},
		// torchrun inside a Slurm batch script: the batch shell's
		// SLURM_PROCID (no step) is not the job's.
		{"torchrun in sbatch", envOf("SLURM_PROCID", "0", "SLURM_NTASKS", "4", "RANK", "1", "WORLD_SIZE", "2", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "2"),
			Job{Launcher: "torchrun", Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2}},
		// collbench launch sets torchrun's variables and says it did.
		{"collbench launch", envOf("RANK", "1", "WORLD_SIZE", "2", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "2",
			"MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "40000", LaunchedVar, "1"),
			Job{Launcher: "collbench launch", Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, MasterAddr: "127.0.0.1", MasterPort: 40000}},
	}
	for _, tt := range tests {
		got, err := FromEnv(tt.env)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %+v %v\nwant %+v", tt.name, got, err, tt.want)
		}
	}
}

func TestFromEnvErrors(t *testing.T) {
	tests := []struct {
		env  func(string) string
		want string
	}{
		{envOf("RANK", "2", "WORLD_SIZE", "2"), "RANK=2 is outside a job of WORLD_SIZE=2"},
		{envOf("RANK", "0", "WORLD_SIZE", "99999999999"), "WORLD_SIZE=99999999999 is more than the rendezvous can number (at most 2147483647)"},
		{envOf("RANK", "0"), "WORLD_SIZE is not set"},
		{envOf("PMI_RANK", "x", "PMI_SIZE", "2"), `PMI_RANK="x" is not a non-negative integer`},
		{envOf("RANK", "0", "WORLD_SIZE", "1", "MASTER_PORT", "70000"), "not a TCP port"},
		{envOf("RANK", "0", "WORLD_SIZE", "1", "MASTER_PORT", "65535", "TORCHELASTIC_USE_AGENT_STORE", "True"), "no port above it"},
		{envOf("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "0"), "at least one process"},
		{envOf("SLURM_PROCID", "0", "SLURM_NTASKS", "1", "SLURM_STEP_ID", "0", "SLURM_JOB_NODELIST", "n[1-"), "SLURM_JOB_NODELIST"},
		{envOf("SLURM_PROCID", "0", "SLURM_NTASKS", "1", "SLURM_STEPID", "0", "SLURM_NODEID", "3", "SLURM_TASKS_PER_NODE", "1(x2)"), "SLURM_NODEID=3"},
		// A batch script's own shell (the variables as sbatch from
		// Debian's slurm-wlm sets them): srun starts the tasks.
		{envOf("SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_JOB_ID", "1", "SLURM_LOCALID", "0"), "this is a Slurm batch script's own process (SLURM_PROCID is set, but no SLURM_STEP_ID): start collbench with srun (srun collbench …, as scripts/slurm.sbatch does), which starts the allocation's 4 task(s)"},
		{envOf("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_RANK", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "2"), "outside OMPI_COMM_WORLD_LOCAL_SIZE=2"},
	}
	for _, tt := range tests {
		_, err := FromEnv(tt.env)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("got %v, want %q", err, tt.want)
		}
	}
}

// A port derived from a job id stays below the kernel's ephemeral range,
// where an outgoing connection may already hold it.
func TestDerivedPortBelowEphemeral(t *testing.T) {
	for i := 0; i < 2000; i++ {
		j := Job{Launcher: "openmpi", Size: 4, LocalSize: 4}
		addr, err := j.Rendezvous("", envOf("OMPI_MCA_ess_base_jobid", strconv.Itoa(i*7919)))
		if err != nil {
			t.Fatal(err)
		}
		_, p, _ := net.SplitHostPort(addr)
		if n, _ := strconv.Atoi(p); n < 20000 || n >= 32768 {
			t.Fatalf("job %d: port %d", i*7919, n)
		}
	}
}
