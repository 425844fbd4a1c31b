package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collbench/collbench/internal/tier"
)

// netnsPair makes two network namespaces joined by a veth pair, standing
// in for two hosts: 10.77.<n>.1 and 10.77.<n>.2.
type netnsPair struct {
	a, b   string // namespace names
	ipA    string
	ipB    string
	vethA  string
	vethB  string
	t      *testing.T
	subnet int
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func newNetnsPair(t *testing.T) *netnsPair {
	t.Helper()
	tier.System(t, "network namespaces")
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("network namespaces need root")
		}
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ip is missing; .ci/run installs iproute2")
		}
		t.Skip("ip (iproute2) not installed")
	}
	n := os.Getpid() % 200
	p := &netnsPair{t: t, a: fmt.Sprintf("cbA%d", os.Getpid()), b: fmt.Sprintf("cbB%d", os.Getpid()), subnet: n,
		ipA: fmt.Sprintf("10.77.%d.1", n), ipB: fmt.Sprintf("10.77.%d.2", n)}
	vethA, vethB := fmt.Sprintf("cbva%d", os.Getpid()), fmt.Sprintf("cbvb%d", os.Getpid())
	p.vethA, p.vethB = vethA, vethB
	ip(t, "netns", "add", p.a)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", p.a).Run() })
	ip(t, "netns", "add", p.b)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", p.b).Run() })
	ip(t, "link", "add", vethA, "netns", p.a, "type", "veth", "peer", "name", vethB, "netns", p.b)
	for _, side := range []struct{ ns, dev, addr string }{{p.a, vethA, p.ipA}, {p.b, vethB, p.ipB}} {
		ip(t, "-n", side.ns, "addr", "add", side.addr+"/24", "dev", side.dev)
		ip(t, "-n", side.ns, "link", "set", side.dev, "up")
		ip(t, "-n", side.ns, "link", "set", "lo", "up")
	}
	return p
}

// run starts a 4-rank job, ranks 0-1 in namespace a (rank 0 hosts the
// rendezvous at its veth address) and ranks 2-3 in b, and returns rank
// 0's output.
func (p *netnsPair) run(args ...string) string {
	t := p.t
	t.Helper()
	env := []string{"MASTER_ADDR=" + p.ipA, "MASTER_PORT=" + strconv.Itoa(29600+p.subnet), "COLLBENCH_TOKEN=netns"}
	var procs []*rankProc
	for r := 0; r < 4; r++ {
		ns := p.a
		if r >= 2 {
			ns = p.b
		}
		procs = append(procs, startRank(t, r, 4, env, []string{"ip", "netns", "exec", ns}, args...))
	}
	waitAll(t, 120*time.Second, procs...)
	for r, pr := range procs {
		if pr.code != 0 {
			t.Fatalf("rank %d: exit %d: %s", r, pr.code, pr.err.String())
		}
	}
	return procs[0].out.String()
}

// firstRow returns the out-of-place time (µs) and algorithm bandwidth
// (GB/s) of the first result row.
func firstRow(t *testing.T, out string) (us, algbw float64) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rowRE.MatchString(line) {
			f := strings.Fields(line)
			us, err1 := strconv.ParseFloat(f[5], 64)
			bw, err2 := strconv.ParseFloat(f[6], 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("unreadable row %q", line)
			}
			return us, bw
		}
	}
	t.Fatalf("no row in:\n%s", out)
	return 0, 0
}

// tc runs tc inside namespace ns; it reports false when the kernel lacks
// the queueing discipline.
func tc(t *testing.T, ns string, args ...string) bool {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns, "tc"}, args...)...).CombinedOutput()
	if err != nil && strings.Contains(string(out), "qdisc kind is unknown") {
		return false
	}
	if err != nil {
		t.Fatalf("tc %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return true
}

// Ranks on two "hosts" (network namespaces over a veth pair) run every
// collective correctly, and the link's shaping shows in the figures: 5 ms
// of netem delay in the latency column, or, on kernels built without
// sch_netem, a tbf rate limit in the bandwidth column.
func TestNetnsHosts(t *testing.T) {
	p := newNetnsPair(t)
	for _, coll := range []string{"allreduce", "alltoall", "broadcast"} {
		out := p.run(coll, "-b", "8", "-e", "256K", "-f", "8", "-n", "3")
		checkTable(t, "netns "+coll, out)
		// Ranks of one namespace share memory, as ranks of one host do;
		// between the namespaces they talk TCP over the veth pair.
		if strings.Count(out, "host CPU (shared memory, TCP)") != 4 || strings.Contains(out, "loopback") {
			t.Errorf("%s: ranks did not talk over the veth link:\n%s", coll, out)
		}
	}
	t.Run("netem delay", func(t *testing.T) {
		small := []string{"sendrecv", "-b", "8", "-e", "8", "-n", "10", "-c", "0"}
		base, _ := firstRow(t, p.run(small...))
		if !tc(t, p.b, "qdisc", "add", "dev", p.vethB, "root", "netem", "delay", "5ms") {
			t.Skip("this kernel has no sch_netem; the rate-limit test below shapes the link instead")
		}
		defer tc(t, p.b, "qdisc", "del", "dev", p.vethB, "root")
		slow, _ := firstRow(t, p.run(small...))
		t.Logf("sendrecv 8 B: %.1f µs without delay, %.1f µs with 5 ms netem", base, slow)
		if slow < base+5000 {
			t.Errorf("5 ms of netem delay raised the latency from %.1f to only %.1f µs", base, slow)
		}
	})
	t.Run("tbf rate", func(t *testing.T) {
		large := []string{"sendrecv", "-b", "1M", "-e", "1M", "-n", "3", "-w", "1", "-c", "0"}
		_, free := firstRow(t, p.run(large...))
		// 80 Mbit/s is 0.01 GB/s on each direction of the link; the ring
		// crosses it both ways, so every call waits for 1 MiB at that rate.
		for _, side := range []struct{ ns, dev string }{{p.a, p.vethA}, {p.b, p.vethB}} {
			if !tc(t, side.ns, "qdisc", "add", "dev", side.dev, "root", "tbf", "rate", "80mbit", "burst", "64kb", "latency", "2s") {
				t.Skip("this kernel has no tbf")
			}
			defer tc(t, side.ns, "qdisc", "del", "dev", side.dev, "root")
		}
		_, shaped := firstRow(t, p.run(large...))
		t.Logf("sendrecv 1 MiB algbw: %.3f GB/s free, %.3f GB/s through an 80 Mbit/s tbf", free, shaped)
		if shaped > 0.0125 || shaped >= free/2 {
			t.Errorf("an 80 Mbit/s (0.01 GB/s) limit left %.3f GB/s (free link: %.3f)", shaped, free)
		}
	})
}
