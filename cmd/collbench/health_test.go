package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/collbench/collbench/document"
)

// fabric is hosts as network namespaces, each joined to a bridge in a
// "switch" namespace by a veth pair: host i is 10.78.<n>.<i+1>, its end
// h<i>, the switch's end s<i>.
type fabric struct {
	t      *testing.T
	hosts  []string // namespace names
	sw     string
	subnet int
}

func newFabric(t *testing.T, hosts int) *fabric {
	t.Helper()
	newNetnsPair(t) // the same preconditions (root, iproute2); its pair goes unused
	pid := os.Getpid()
	f := &fabric{t: t, sw: fmt.Sprintf("cbSw%d", pid), subnet: pid%200 + 1}
	ip(t, "netns", "add", f.sw)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", f.sw).Run() })
	ip(t, "-n", f.sw, "link", "add", "br0", "type", "bridge")
	ip(t, "-n", f.sw, "link", "set", "br0", "up")
	for i := 0; i < hosts; i++ {
		ns := fmt.Sprintf("cbH%d_%d", i, pid)
		ip(t, "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
		h, s := fmt.Sprintf("h%d", i), fmt.Sprintf("s%d", i)
		ip(t, "link", "add", h, "netns", ns, "type", "veth", "peer", "name", s, "netns", f.sw)
		ip(t, "-n", f.sw, "link", "set", s, "master", "br0")
		ip(t, "-n", f.sw, "link", "set", s, "up")
		ip(t, "-n", ns, "addr", "add", f.addr(i)+"/24", "dev", h)
		ip(t, "-n", ns, "link", "set", h, "up")
		ip(t, "-n", ns, "link", "set", "lo", "up")
		f.hosts = append(f.hosts, ns)
	}
	return f
}

func (f *fabric) addr(host int) string { return fmt.Sprintf("10.78.%d.%d", f.subnet, host+1) }

// slowHost limits everything host sends and receives with tbf.
func (f *fabric) slowHost(host int, rate string) {
	for _, side := range []struct{ ns, dev string }{{f.hosts[host], fmt.Sprintf("h%d", host)}, {f.sw, fmt.Sprintf("s%d", host)}} {
		if !tc(f.t, side.ns, "qdisc", "add", "dev", side.dev, "root", "tbf", "rate", rate, "burst", "64kb", "latency", "2s") {
			f.t.Skip("this kernel has no tbf")
		}
	}
}

// slowLink limits only the traffic between hosts a and b: on each side,
// an htb class that a u32 filter sends the other's address to, with a
// tbf under it; other traffic passes untouched.
func (f *fabric) slowLink(a, b int, rate string) {
	for _, end := range [][2]int{{a, b}, {b, a}} {
		ns, dev := f.hosts[end[0]], fmt.Sprintf("h%d", end[0])
		for _, args := range [][]string{
			{"qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "20"},
			{"class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb", "rate", "10gbit"},
			{"class", "add", "dev", dev, "parent", "1:", "classid", "1:20", "htb", "rate", "10gbit"},
			{"qdisc", "add", "dev", dev, "parent", "1:10", "handle", "10:", "tbf", "rate", rate, "burst", "64kb", "latency", "2s"},
			{"filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32", "match", "ip", "dst", f.addr(end[1]) + "/32", "flowid", "1:10"},
		} {
			if !tc(f.t, ns, args...) {
				f.t.Skip("this kernel lacks htb or tbf")
			}
		}
	}
}

// health runs collbench health with per processes on every host, rank 0
// on host 0 hosting the rendezvous, and returns rank 0's exit code, its
// output and the record it wrote.
func (f *fabric) health(per int, args ...string) (int, string, *document.Health) {
	t := f.t
	t.Helper()
	dir := t.TempDir()
	rec := filepath.Join(dir, "health.json")
	env := []string{"MASTER_ADDR=" + f.addr(0), "MASTER_PORT=" + strconv.Itoa(29700+f.subnet), "COLLBENCH_TOKEN=fabric"}
	size := per * len(f.hosts)
	var procs []*rankProc
	for r := 0; r < size; r++ {
		argv := append([]string{"health", "-q"}, args...)
		if r == 0 {
			argv = append(argv, "-J", rec)
		}
		procs = append(procs, startRank(t, r, size, env, []string{"ip", "netns", "exec", f.hosts[r/per]}, argv...))
	}
	waitAll(t, 180*time.Second, procs...)
	for r, p := range procs[1:] {
		if p.code != procs[0].code {
			t.Fatalf("rank %d exited %d, rank 0 %d: %s", r+1, p.code, procs[0].code, p.err.String())
		}
	}
	out := procs[0].out.String() + procs[0].err.String()
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatalf("no record: %v\n%s", err, out)
	}
	doc, err := document.DecodeHealth(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	return procs[0].code, out, doc
}

// kinds lists the findings' kinds and nodes, e.g. "node[2]".
func kinds(d *document.Health) []string {
	var out []string
	for _, f := range d.Findings {
		out = append(out, fmt.Sprintf("%s%v", f.Kind, f.Nodes))
	}
	return out
}

// collbench health on four "hosts" joined through a bridge: a healthy
// fabric flags nothing, run after run; a host whose link is rate-limited
// is named as a node (not as its three links); one slow path between two
// hosts is named as that link and neither host.
func TestHealthFabric(t *testing.T) {
	f := newFabric(t, 4)
	small := []string{"--pair-size", "1M", "--allreduce-size", "1M", "-n", "10", "-w", "2"}
	t.Run("healthy", func(t *testing.T) {
		runs := 10
		if testing.Short() {
			runs = 2
		}
		for i := 0; i < runs; i++ {
			code, out, d := f.health(1, small...)
			if code != 0 || !d.Healthy || len(d.Inter) != 6 || d.Job == nil {
				t.Fatalf("run %d of %d: exit %d, findings %v, %d node pairs:\n%s", i+1, runs, code, kinds(d), len(d.Inter), out)
			}
		}
	})
	t.Run("slow host", func(t *testing.T) {
		f.slowHost(2, "200mbit")
		defer func() {
			tc(t, f.hosts[2], "qdisc", "del", "dev", "h2", "root")
			tc(t, f.sw, "qdisc", "del", "dev", "s2", "root")
		}()
		code, out, d := f.health(2, append(small, "--bisect")...)
		got := kinds(d)
		if code != 1 || !slices.Contains(got, "node[2]") || slices.ContainsFunc(got, func(k string) bool {
			return k != "node[2]" && k != "block[2 3]"
		}) {
			t.Fatalf("exit %d, findings %v; want exit 1, node[2] and at most the bisection's block[2 3]:\n%s", code, got, out)
		}
		if !slices.Contains(got, "block[2 3]") {
			t.Errorf("the bisection did not narrow the slowness to the half holding host 2: %v\n%s", got, out)
		}
		if len(d.Intra) != 4 || len(d.NodeAR) != 4 {
			t.Errorf("with 2 ranks per host: %d GPU pairs, %d node all-reduces; want 4 and 4", len(d.Intra), len(d.NodeAR))
		}
		t.Logf("\n%s", out)
	})
	t.Run("slow link", func(t *testing.T) {
		f.slowLink(0, 3, "200mbit")
		defer func() {
			tc(t, f.hosts[0], "qdisc", "del", "dev", "h0", "root")
			tc(t, f.hosts[3], "qdisc", "del", "dev", "h3", "root")
		}()
		code, out, d := f.health(1, small...)
		if got := kinds(d); code != 1 || !slices.Equal(got, []string{"link[0 3]"}) {
			t.Fatalf("exit %d, findings %v; want exit 1 and link[0 3] only:\n%s", code, got, out)
		}
		t.Logf("\n%s", out)
	})
}
