package run

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/collbench/collbench/document"
)

// healthNodes finds the job's nodes: processes are on one node when they
// share a host name and the address they reach the rendezvous from (two
// containers or network namespaces may share a host name, never an
// address). Nodes are in the order of their first rank. proc maps a
// global rank to its process.
func (j *Job) healthNodes(ctx context.Context) ([]document.HealthNode, error) {
	host, _ := os.Hostname()
	if i := strings.IndexByte(host, '.'); i >= 0 {
		host = host[:i]
	}
	mine := host + "\x00" + j.advertise()
	ids := []string{mine}
	if j.Multi() {
		parts, err := j.client.AllGather(ctx, []byte(mine))
		if err != nil {
			return nil, fmt.Errorf("finding the job's nodes: %w", err)
		}
		ids = ids[:0]
		for _, p := range parts {
			ids = append(ids, string(p))
		}
	}
	per := j.Settings.RanksPerProc
	index := map[string]int{}
	var nodes []document.HealthNode
	names := map[string]int{}
	for proc, id := range ids {
		n, ok := index[id]
		if !ok {
			n = len(nodes)
			index[id] = n
			name, addr, _ := strings.Cut(id, "\x00")
			nodes = append(nodes, document.HealthNode{Name: name, Addr: addr})
			names[name]++
		}
		for l := 0; l < per; l++ {
			nodes[n].Ranks = append(nodes[n].Ranks, proc*per+l)
		}
	}
	// Nodes that share a host name (containers, namespaces) go by their
	// address too.
	for i := range nodes {
		if names[nodes[i].Name] > 1 && nodes[i].Addr != "" {
			nodes[i].Name += "@" + nodes[i].Addr
		}
	}
	return nodes, nil
}
