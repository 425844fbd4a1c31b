package healthcheck

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/health"
	"github.com/collbench/collbench/run"
)

// nodesOf finds the job's nodes: processes are on one node when they
// share a host name and the address they reach the rendezvous from (two
// containers or network namespaces may share a host name, never an
// address). Nodes are in the order of their first rank. proc maps a
// global rank to its process.
//
// Each node's rack is what racks says of it (by its name, its host name or
// the SLURM_TOPOLOGY_ADDR its first process saw); a rack is kept only when
// every node has one, and unracked names the nodes that kept the others
// from theirs.
func nodesOf(ctx context.Context, j *run.Job, racks health.RackOf) (nodes []document.HealthNode, unracked []string, err error) {
	host, _ := os.Hostname()
	if i := strings.IndexByte(host, '.'); i >= 0 {
		host = host[:i]
	}
	mine := host + "\x00" + j.Advertise() + "\x00" + os.Getenv("SLURM_TOPOLOGY_ADDR")
	ids := []string{mine}
	if j.Multi() {
		parts, err := j.AllGather(ctx, []byte(mine))
		if err != nil {
			return nil, nil, fmt.Errorf("finding the job's nodes: %w", err)
		}
		ids = ids[:0]
		for _, p := range parts {
			ids = append(ids, string(p))
		}
	}
	per := j.Settings.RanksPerProc
	index := map[string]int{}
	names := map[string]int{}
	slurm := map[int]string{} // node: its first process's topology address
	for proc, id := range ids {
		name, rest, _ := strings.Cut(id, "\x00")
		addr, topo, _ := strings.Cut(rest, "\x00")
		key := name + "\x00" + addr
		n, ok := index[key]
		if !ok {
			n = len(nodes)
			index[key] = n
			nodes = append(nodes, document.HealthNode{Name: name, Addr: addr})
			names[name]++
			slurm[n] = topo
		}
		for l := 0; l < per; l++ {
			nodes[n].Ranks = append(nodes[n].Ranks, proc*per+l)
		}
	}
	// Nodes that share a host name (containers, namespaces) go by their
	// address too.
	for i := range nodes {
		host := nodes[i].Name
		if names[host] > 1 && nodes[i].Addr != "" {
			nodes[i].Name += "@" + nodes[i].Addr
		}
		nodes[i].Rack = racks.Rack(nodes[i].Name, slurm[i])
		if nodes[i].Rack == "" && nodes[i].Name != host {
			nodes[i].Rack = racks.Rack(host, "")
		}
	}
	if slices.ContainsFunc(nodes, func(n document.HealthNode) bool { return n.Rack == "" }) {
		// Racks asked for (a file, a pattern) or found for some nodes
		// but not all: say which nodes lack one, since rack judgement is
		// then off.
		asked := len(racks.Labels) > 0 || racks.Pattern != nil ||
			slices.ContainsFunc(nodes, func(n document.HealthNode) bool { return n.Rack != "" })
		for i := range nodes {
			if asked && nodes[i].Rack == "" {
				unracked = append(unracked, nodes[i].Name)
			}
			nodes[i].Rack = ""
		}
	}
	return nodes, unracked, nil
}
