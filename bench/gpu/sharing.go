package gpu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/collbench/collbench/bench"
)

// ncclMaxChannels is NCCL's ceiling on a communicator's channels
// (MAXCHANNELS, and the default maxCTAs, since 2.19: 64). Each channel of
// a collective runs as one CTA.
const ncclMaxChannels = 64

// placement is what a process tells the others before the communicators
// open: the NCCL id (from the process that holds rank 0) and the physical
// GPU behind each of its ranks, so that every process can count the ranks
// that share a GPU.
type placement struct {
	ID    []byte    `json:"id,omitempty"`
	Host  string    `json:"host"`  // the machine (machineID)
	First int       `json:"first"` // global rank of its local rank 0
	GPUs  []gpuSeat `json:"gpus"`  // one per local rank
}

// gpuSeat is the GPU one rank runs on.
type gpuSeat struct {
	Bus     string `json:"bus"` // PCI address
	Ordinal int    `json:"ordinal"`
	SMs     int    `json:"sms"` // multiprocessors
}

// machineID names the machine whose GPUs a process sees: the kernel's
// boot id, which every container and namespace on one machine shares and
// no two machines do, so that ranks on one GPU are counted together even
// where they pose as hosts of their own (NCCL_HOSTID, or host names of
// their own: NCCL tells hosts apart by name and boot id). Without a boot
// id, the host name.
func machineID() string {
	if boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil && len(strings.TrimSpace(string(boot))) > 0 {
		return "boot:" + strings.TrimSpace(string(boot))
	}
	host, _ := os.Hostname()
	return "host:" + host
}

// exchangePlacements gives every process's placement to every process,
// in process order, with the id of the process holding rank 0 in each.
// A job of one process has only its own.
func exchangePlacements(ctx context.Context, s bench.Setup, mine placement) ([]placement, error) {
	if s.Exchange == nil {
		return []placement{mine}, nil
	}
	b, err := json.Marshal(mine)
	if err != nil {
		return nil, err
	}
	parts, err := s.Exchange(ctx, b)
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, errors.New("the exchange returned nothing")
	}
	all := make([]placement, len(parts))
	for i, p := range parts {
		if err := json.Unmarshal(p, &all[i]); err != nil {
			return nil, fmt.Errorf("process %d's placement: %w", i, err)
		}
	}
	return all, nil
}

// sharedGPU is one physical GPU that several ranks of the job run on.
type sharedGPU struct {
	host, bus string
	ordinal   int // on the first rank that names it
	sms       int
	ranks     []int // global ranks, ascending
}

// sharedGPUs finds the GPUs that more than one rank of the job runs on,
// in the order of their lowest rank.
func sharedGPUs(all []placement) []*sharedGPU {
	byKey := map[string]*sharedGPU{}
	var out []*sharedGPU
	for _, p := range all {
		for i, g := range p.GPUs {
			key := p.Host + "|" + g.Bus
			sg := byKey[key]
			if sg == nil {
				sg = &sharedGPU{host: p.Host, bus: g.Bus, ordinal: g.Ordinal, sms: g.SMs}
				byKey[key] = sg
				out = append(out, sg)
			}
			sg.ranks = append(sg.ranks, p.First+i)
		}
	}
	shared := out[:0]
	for _, sg := range out {
		if len(sg.ranks) > 1 {
			sort.Ints(sg.ranks)
			shared = append(shared, sg)
		}
	}
	sort.Slice(shared, func(a, b int) bool { return shared[a].ranks[0] < shared[b].ranks[0] })
	return shared
}

// spareSMs are left out of the ranks' shares, for the copies and other
// kernels that run beside the collectives.
const spareSMs = 4

// ctaShare is the CTA limit that lets k ranks' channels fit a GPU of sms
// multiprocessors together: NCCL runs each channel as a CTA that spins on
// its peers, one per multiprocessor, so ranks of one GPU whose CTAs cannot
// all be resident at once wait on each other for ever (NCCL's
// NCCL_MULTI_RANK_GPU_ENABLE documentation: about 2 ranks fit by default).
func ctaShare(sms, k int) int {
	return max(1, min(ncclMaxChannels, (sms-spareSMs)/max(k, 1)))
}

// ctaPlan is each local rank's maxCTAs (0: NCCL's default) and the
// preamble lines that say why.
type ctaPlan struct {
	limits []int
	notes  []string
	shared []*sharedGPU
}

// planCTAs bounds the CTAs of every local rank whose GPU other ranks of
// the job share, unless a limit was asked for (asked, the setup's maxCTAs)
// or NCCL_MAX_CTAS (env) sets it, which NCCL applies over its config. A
// minimum above the share raises the limit to it.
func planCTAs(all []placement, me, asked, minCTAs int, env string) ctaPlan {
	plan := ctaPlan{limits: make([]int, len(all[me].GPUs)), shared: sharedGPUs(all)}
	for _, sg := range plan.shared {
		k := len(sg.ranks)
		share := ctaShare(sg.sms, k)
		where := fmt.Sprintf("%s share GPU %d (%s, %d SMs)", bench.RankNames(sg.ranks), sg.ordinal, sg.bus, sg.sms)
		switch {
		case env != "":
			plan.notes = append(plan.notes, fmt.Sprintf("%s: NCCL_MAX_CTAS=%s from the environment limits each rank's CTAs", where, env))
			continue
		case asked > 0:
			fit := ""
			if asked*k > sg.sms {
				fit = fmt.Sprintf("; together they may need %d CTAs, more than the GPU runs at once (%d each would fit)", asked*k, share)
			}
			plan.notes = append(plan.notes, fmt.Sprintf("%s: each rank's CTAs limited to %d as asked%s", where, asked, fit))
			continue
		}
		limit := max(share, minCTAs)
		note := fmt.Sprintf("%s: each rank's CTAs limited to %d so that together they fit", where, limit)
		if limit > share {
			note = fmt.Sprintf("%s: each rank's CTAs limited to %d, its minimum, above the %d that would fit", where, limit, share)
		}
		plan.notes = append(plan.notes, note)
		for i, g := range all[me].GPUs {
			if all[me].Host == sg.host && g.Bus == sg.bus {
				plan.limits[i] = limit
			}
		}
	}
	return plan
}

// stallCause says what most likely holds up ranks that stopped making
// progress: ranks crowding one GPU, or else a peer that has gone.
func (p ctaPlan) stallCause() string {
	if len(p.shared) == 0 {
		return "a peer stopped, left or cannot be reached"
	}
	var parts []string
	for _, sg := range p.shared {
		parts = append(parts, fmt.Sprintf("%d ranks share GPU %d", len(sg.ranks), sg.ordinal))
	}
	return strings.Join(parts, ", ") + ": their channels may not fit the GPU together (a lower CTA limit per rank, or fewer ranks per GPU)"
}
