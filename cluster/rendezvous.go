package cluster

import (
	"fmt"
	"hash/fnv"
	"net"
	"strconv"

	"github.com/collbench/collbench/setting"
)

// derivedLow and derivedHigh bound the ports derived from a job id: below
// Linux's ephemeral range (32768 and up), so that the port is not one the
// kernel has already handed to some process's outgoing connection.
const derivedLow, derivedHigh = 20000, 32767

// DefaultPort is the rendezvous port when nothing names one and the
// launcher gives no job id to derive one from.
const DefaultPort = 29511

// jobIDs are the variables that identify a job, in order of preference:
// they make the token that keeps other jobs and strangers out, and pick a
// port so that jobs sharing a host do not collide.
var jobIDs = []struct{ name, label string }{
	{"OMPI_MCA_ess_base_jobid", "OpenMPI job id"},
	{"PMIX_NAMESPACE", "PMIx namespace"},
	{"SLURM_JOB_ID", "Slurm job id"},
	{"TORCHELASTIC_RUN_ID", "torchrun run id"},
}

// JobID returns an identifier shared by every rank of this job and what it
// is; empty when the launcher sets none.
func JobID(getenv func(string) string) (id, label string) {
	for _, v := range jobIDs {
		id = getenv(v.name)
		if id == "" || id == "none" { // torchrun's placeholder run id
			continue
		}
		if v.name == "SLURM_JOB_ID" {
			if step := getenv("SLURM_STEP_ID"); step != "" {
				id += "." + step
			}
		}
		return id, v.label
	}
	return "", ""
}

// Token is the secret every rank presents at the rendezvous:
// COLLBENCH_TOKEN (which collbench launch sets), else the launcher's job
// id, else one made from the rendezvous address, which only keeps apart
// jobs that use different addresses. source says which.
func Token(getenv func(string) string, addr string) (token, source string) {
	if t := getenv("COLLBENCH_TOKEN"); t != "" {
		return t, "COLLBENCH_TOKEN"
	}
	if id, label := JobID(getenv); id != "" {
		return "job:" + id, label
	}
	return "addr:" + addr, "the rendezvous address (set COLLBENCH_TOKEN to keep strangers out)"
}

// Rendezvous returns host:port of the job's store, which rank 0 hosts:
// the explicit --rendezvous value, else MASTER_ADDR and MASTER_PORT, else
// the first Slurm node, else this host's loopback when all ranks are on
// one host (an error when the launcher says they are not).
// A missing port is MASTER_PORT, or one derived from the job id, or
// DefaultPort.
func (j Job) Rendezvous(explicit string, getenv func(string) string) (string, error) {
	host, port := j.MasterAddr, j.MasterPort
	if explicit != "" {
		h, p, err := net.SplitHostPort(explicit)
		if err != nil {
			h, p = explicit, ""
		}
		host = h
		if p != "" {
			n, err := Port(p)
			if err != nil {
				return "", setting.Errorf("{Rendezvous} %q: %w", explicit, err)
			}
			port = n
		}
	}
	if host == "" && len(j.Nodes) > 0 {
		host = j.Nodes[0]
	}
	if host == "" {
		if j.LocalSize > 0 && j.LocalSize < j.Size {
			return "", setting.Errorf("the job's %d ranks span several hosts (%d on this one) but nothing names the rendezvous; set MASTER_ADDR to rank 0's host or pass {Rendezvous} host:port", j.Size, j.LocalSize)
		}
		host = "127.0.0.1"
	}
	if port == 0 {
		port = DefaultPort
		if id, _ := JobID(getenv); id != "" {
			h := fnv.New32a()
			h.Write([]byte(id))
			port = derivedLow + int(h.Sum32()%(derivedHigh-derivedLow+1))
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// Port reads a TCP port number, 1 to 65535.
func Port(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("%q is not a TCP port", s)
	}
	return n, nil
}
