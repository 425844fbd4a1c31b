package model

import (
	"fmt"
	"math"
	"sort"

	"github.com/collbench/collbench/bench"
)

// Training is one step's shape.
type Training struct {
	Seq         int     `json:"seq"`
	MicroBatch  int     `json:"micro_batch"`
	GlobalBatch int     `json:"global_batch"`
	Bytes       int     `json:"bytes"`        // bytes per parameter and activation element (2 for bf16)
	BucketBytes float64 `json:"bucket_bytes"` // gradient buckets of data-parallel sync (PyTorch DDP: 25 MiB)
}

// Strategy is how the ranks are divided.
type Strategy struct {
	DP   int  `json:"dp"`
	TP   int  `json:"tp"`
	PP   int  `json:"pp"`
	EP   int  `json:"ep"`   // expert parallel, inside the data-parallel group
	ZeRO int  `json:"zero"` // 0 none, 1 optimizer, 2 +gradients, 3 +parameters (FSDP)
	SP   bool `json:"sequence_parallel"`
}

// ForWorld completes the training for world ranks: a global batch of 0
// becomes 16 micro-batches per rank.
func (t Training) ForWorld(world int) Training {
	if t.GlobalBatch == 0 {
		t.GlobalBatch = 16 * world * t.MicroBatch
	}
	return t
}

// ForWorld completes the strategy for world ranks: a data-parallel size
// of 0 becomes the ranks that TP×PP leave.
func (s Strategy) ForWorld(world int) (Strategy, error) {
	if s.DP != 0 {
		return s, nil
	}
	if s.TP < 1 || s.PP < 1 || world%(s.TP*s.PP) != 0 {
		return s, fmt.Errorf("tp×pp = %d×%d does not divide the profile's %d ranks", s.TP, s.PP, world)
	}
	s.DP = world / (s.TP * s.PP)
	return s, nil
}

func (s Strategy) String() string {
	out := fmt.Sprintf("dp=%d tp=%d pp=%d", s.DP, s.TP, s.PP)
	if s.EP > 1 {
		out += fmt.Sprintf(" ep=%d", s.EP)
	}
	if s.ZeRO > 0 {
		out += fmt.Sprintf(" zero=%d", s.ZeRO)
	}
	if s.SP {
		out += " sp"
	}
	return out
}

// Validate checks the strategy against the model, the step and the world.
func (s Strategy) Validate(world int, m Transformer, t Training) error {
	switch {
	case s.DP < 1 || s.TP < 1 || s.PP < 1 || s.EP < 1:
		return fmt.Errorf("dp, tp, pp and ep must be at least 1 (%s)", s)
	case s.DP*s.TP*s.PP != world:
		return fmt.Errorf("dp×tp×pp = %d×%d×%d = %d, not the %d ranks", s.DP, s.TP, s.PP, s.DP*s.TP*s.PP, world)
	case s.ZeRO < 0 || s.ZeRO > 3:
		return fmt.Errorf("ZeRO stage must be 0, 1, 2 or 3 (got %d)", s.ZeRO)
	case s.DP%s.EP != 0:
		return fmt.Errorf("ep=%d must divide dp=%d (experts are spread inside the data-parallel group)", s.EP, s.DP)
	case s.EP > 1 && m.Experts < 2:
		return fmt.Errorf("ep=%d needs a model with experts", s.EP)
	case s.EP > 1 && m.Experts%s.EP != 0:
		return fmt.Errorf("ep=%d does not divide the %d experts", s.EP, m.Experts)
	case m.Layers%s.PP != 0:
		return fmt.Errorf("pp=%d does not divide the %d layers", s.PP, m.Layers)
	case m.Heads > 0 && m.Heads%s.TP != 0:
		return fmt.Errorf("tp=%d does not divide the %d attention heads", s.TP, m.Heads)
	case s.SP && s.TP < 2:
		return fmt.Errorf("sequence parallelism needs tp of 2 or more")
	case t.Seq < 1 || t.MicroBatch < 1 || t.GlobalBatch < 1 || t.Bytes < 1:
		return fmt.Errorf("sequence, micro-batch, global batch and bytes must be positive")
	case t.GlobalBatch%(s.DP*t.MicroBatch) != 0:
		return fmt.Errorf("global batch %d is not a multiple of dp×micro-batch = %d", t.GlobalBatch, s.DP*t.MicroBatch)
	}
	return nil
}

// Network gives the measured curve of a collective at a group size and
// layout.
type Network interface {
	Curve(op string, n int, layout string) (*Curve, error)
}

// RoutedAllToAll names, for Network.Curve, an all-to-all measured with a
// mixture-of-experts layer's routed traffic (collbench profile --moe);
// expert-parallel traffic uses it where the network has one.
const RoutedAllToAll = "alltoallv:routed"

// P2POps are the curves a point-to-point cost is read from, best first:
// the pipeline chain (what pipeline parallelism and Galvatron's probe
// send), else, in a profile taken without it, send/recv's ring, which
// moves the same bytes per link.
var P2POps = []string{"pipeline", "sendrecv"}

// Machine is what a prediction knows of the hardware: the network, the
// slowdowns when compute and communication overlap, and the compute rate.
type Machine struct {
	Net             Network
	CommSlowdown    float64 // ≥ 1 in practice; 1 if unknown
	ComputeSlowdown float64
	FLOPS           float64 // achieved FLOP/s per GPU; 0 = unknown (no overlap estimate)
}

// Traffic is one kind of call of one parallel dimension in a step.
type Traffic struct {
	Dim     string  `json:"dim"` // DP, EDP (expert data parallel), TP, PP, EP
	Coll    string  `json:"collective"`
	Group   int     `json:"group_size"`
	Layout  string  `json:"layout"`
	Calls   float64 `json:"calls"`                   // per step
	Bytes   float64 `json:"bytes"`                   // per call, as nccl-tests counts the size
	Volume  float64 `json:"volume"`                  // bytes each GPU sends per step (bus bytes)
	Time    float64 `json:"time_us"`                 // per step, alone
	Hidden  string  `json:"overlaps_with,omitempty"` // backward or forward compute, or none
	Exposed float64 `json:"exposed_us"`              // per step, with overlap
}

// Memory is the model state per GPU for mixed-precision Adam: 2 bytes of
// weights, 2 of gradients and 12 of fp32 master weights and moments per
// parameter, divided as each ZeRO stage divides them. Activations are not
// included.
type Memory struct {
	Weights   float64 `json:"weights_bytes"`
	Grads     float64 `json:"grads_bytes"`
	Optimizer float64 `json:"optimizer_bytes"`
	Total     float64 `json:"total_bytes"`
}

// Prediction is one strategy's communication per training step.
type Prediction struct {
	Model         Transformer `json:"model"`
	Training      Training    `json:"training"`
	Strategy      Strategy    `json:"strategy"`
	Params        float64     `json:"params"`
	ParamsPerGPU  float64     `json:"params_per_gpu"`
	MicroBatches  int         `json:"micro_batches"`
	Traffic       []Traffic   `json:"traffic"`
	CommTime      float64     `json:"comm_us"`         // every call alone, one after another
	Exposed       float64     `json:"exposed_comm_us"` // with overlap; equal to CommTime without a compute rate
	Compute       float64     `json:"compute_us"`      // per step per GPU, with the pipeline bubble; 0 = unknown
	StepNoOverlap float64     `json:"step_no_overlap_us"`
	StepOverlap   float64     `json:"step_overlap_us"`
	Memory        Memory      `json:"memory"`
}

// groupLayout is the profile layout of a group of n ranks stride apart,
// in Megatron's rank order (TP innermost, then DP, then PP: rank = t +
// TP·(d + DP·p)). A group that is neither of the profile's layouts cannot
// be timed from it, and saying so beats timing it on other ranks' curve.
func groupLayout(world int, dim string, n, stride int) (string, error) {
	if n < 2 {
		return "consecutive", nil
	}
	l, ok := LayoutOf(world, n, stride)
	if !ok {
		return "", fmt.Errorf("the %s groups are %d ranks %d apart, and a profile times only consecutive groups and groups %d apart; choose a strategy whose %s groups are one of these",
			dim, n, stride, world/n, dim)
	}
	return l, nil
}

// Predict estimates the communication of one training step of m under s
// on machine mc.
func Predict(m Transformer, t Training, s Strategy, mc Machine) (Prediction, error) {
	world := s.DP * s.TP * s.PP
	if err := m.Validate(); err != nil {
		return Prediction{}, err
	}
	if err := s.Validate(world, m, t); err != nil {
		return Prediction{}, err
	}
	p := Prediction{Model: m, Training: t, Strategy: s, Params: m.Params(), MicroBatches: t.GlobalBatch / (s.DP * t.MicroBatch)}
	L := float64(m.Layers)
	dense := L*m.AttentionParams() + m.EmbeddingParams()
	var experts float64
	if m.Experts > 1 {
		experts = L * float64(m.Experts) * m.ExpertParams()
	} else {
		dense += L * m.ExpertParams()
	}
	shard := float64(s.TP * s.PP)
	localDense, localExperts := dense/shard, experts/(shard*float64(s.EP))
	p.ParamsPerGPU = localDense + localExperts
	layers := L / float64(s.PP)
	mb := float64(p.MicroBatches)
	act := float64(t.MicroBatch) * float64(t.Seq) * float64(m.Hidden) * float64(t.Bytes)
	// Megatron's groups: DP stride TP; EP groups take EP consecutive DP
	// ranks (stride TP), so the ranks holding the same experts (EDP) are
	// TP·EP apart; PP is stride TP·DP, the strided layout.
	dpLayout, err := groupLayout(world, "DP", s.DP, s.TP)
	if err != nil {
		return Prediction{}, err
	}
	edpLayout, err := groupLayout(world, "expert-data-parallel", s.DP/s.EP, s.TP*s.EP)
	if err != nil {
		return Prediction{}, err
	}
	epLayout, err := groupLayout(world, "EP", s.EP, s.TP)
	if err != nil {
		return Prediction{}, err
	}

	add := func(tr Traffic) {
		if tr.Group > 1 && tr.Calls > 0 && tr.Bytes > 0 {
			p.Traffic = append(p.Traffic, tr)
		}
	}
	grads := func(dim string, params float64, n int, layout string) {
		bytes := params * float64(t.Bytes)
		if n < 2 || bytes <= 0 {
			return
		}
		if s.ZeRO == 3 {
			// FSDP gathers each layer's weights before its forward and
			// backward, and reduce-scatters its gradients after backward.
			per := bytes / layers
			add(Traffic{Dim: dim, Coll: "allgather", Group: n, Layout: layout, Calls: layers, Bytes: per, Hidden: "forward"})
			add(Traffic{Dim: dim, Coll: "allgather", Group: n, Layout: layout, Calls: layers, Bytes: per, Hidden: "backward"})
			add(Traffic{Dim: dim, Coll: "reducescatter", Group: n, Layout: layout, Calls: layers, Bytes: per, Hidden: "backward"})
			return
		}
		buckets := 1.0
		if t.BucketBytes > 0 {
			buckets = math.Ceil(bytes / t.BucketBytes)
		}
		per := bytes / buckets
		if s.ZeRO == 0 {
			add(Traffic{Dim: dim, Coll: "allreduce", Group: n, Layout: layout, Calls: buckets, Bytes: per, Hidden: "backward"})
			return
		}
		// ZeRO-1/2: gradients reduce-scattered during backward, the
		// updated weights all-gathered after the optimizer step.
		add(Traffic{Dim: dim, Coll: "reducescatter", Group: n, Layout: layout, Calls: buckets, Bytes: per, Hidden: "backward"})
		add(Traffic{Dim: dim, Coll: "allgather", Group: n, Layout: layout, Calls: buckets, Bytes: per})
	}
	grads("DP", localDense, s.DP, dpLayout)
	grads("EDP", localExperts, s.DP/s.EP, edpLayout)
	if s.TP > 1 {
		// Megatron: two all-reduces of the layer's activations in forward
		// and two in backward; with sequence parallelism each becomes an
		// all-gather and a reduce-scatter of the same tensor.
		calls := 4 * mb * layers
		if s.SP {
			add(Traffic{Dim: "TP", Coll: "allgather", Group: s.TP, Layout: "consecutive", Calls: calls, Bytes: act})
			add(Traffic{Dim: "TP", Coll: "reducescatter", Group: s.TP, Layout: "consecutive", Calls: calls, Bytes: act})
		} else {
			add(Traffic{Dim: "TP", Coll: "allreduce", Group: s.TP, Layout: "consecutive", Calls: calls, Bytes: act})
		}
	}
	if s.PP > 1 {
		// Every micro-batch crosses each stage boundary twice: its
		// activations forward, their gradients backward.
		bytes := act
		if s.SP {
			bytes /= float64(s.TP)
		}
		add(Traffic{Dim: "PP", Coll: P2POps[0], Group: s.PP, Layout: "strided", Calls: 2 * mb, Bytes: bytes})
	}
	if s.EP > 1 {
		// Dispatch and combine in forward, and again in backward.
		add(Traffic{Dim: "EP", Coll: "alltoall", Group: s.EP, Layout: epLayout, Calls: 4 * mb * layers, Bytes: act * float64(m.TopK)})
	}
	for i := range p.Traffic {
		tr := &p.Traffic[i]
		coll, err := bench.LookupCollective(tr.Coll)
		if err != nil {
			return p, err
		}
		// Bus bytes, as nccl-tests counts them: what each GPU sends.
		tr.Volume = tr.Calls * tr.Bytes * coll.BusFactor(tr.Group)
		c, err := mc.Net.Curve(tr.Coll, tr.Group, tr.Layout)
		if tr.Coll == "alltoall" {
			// A profile that measured the layer's routed traffic times
			// dispatch and combine with its skew, not balanced.
			if routed, rerr := mc.Net.Curve(RoutedAllToAll, tr.Group, tr.Layout); rerr == nil {
				c, err, tr.Coll = routed, nil, "alltoallv"
			}
		}
		if err != nil && tr.Coll == P2POps[0] {
			for _, op := range P2POps[1:] {
				if other, oerr := mc.Net.Curve(op, tr.Group, tr.Layout); oerr == nil {
					c, err, tr.Coll = other, nil, op
					break
				}
			}
		}
		if err != nil {
			return p, fmt.Errorf("%s %s: %w", tr.Dim, tr.Coll, err)
		}
		tr.Time = tr.Calls * c.Time(tr.Bytes)
		tr.Exposed = tr.Time
		p.CommTime += tr.Time
	}
	p.Memory = memory(p.ParamsPerGPU, localExperts, s)
	overlap(&p, m, t, s, mc)
	return p, nil
}

// memory divides the 16 bytes per parameter of mixed-precision Adam as
// the ZeRO stage does: over the data-parallel group, or for expert
// weights over the expert-data-parallel group.
func memory(local, localExperts float64, s Strategy) Memory {
	denseP := local - localExperts
	div := func(stage int) float64 {
		if s.ZeRO < stage {
			return local
		}
		return denseP/float64(s.DP) + localExperts/float64(s.DP/s.EP)
	}
	mem := Memory{Weights: 2 * div(3), Grads: 2 * div(2), Optimizer: 12 * div(1)}
	mem.Total = mem.Weights + mem.Grads + mem.Optimizer
	return mem
}

// overlap estimates what the step costs when the calls marked as hidden
// run beside the compute they overlap with. Within such a region both
// sides slow down by the measured factors: if the communication outlasts
// the compute, the region lasts compute·sp + (comm − compute·sp/sc),
// else comm·sc + (compute − comm·sc/sp); what the region adds over the
// compute alone is exposed. Galvatron's formula is the case sc = sp.
func overlap(p *Prediction, m Transformer, t Training, s Strategy, mc Machine) {
	p.Exposed = p.CommTime
	if mc.FLOPS <= 0 {
		return
	}
	world := float64(s.DP * s.TP * s.PP)
	tokens := float64(t.GlobalBatch) * float64(t.Seq)
	compute := m.StepFLOPs(tokens, float64(t.Seq)) / world / mc.FLOPS * 1e6 // µs
	bubble := float64(s.PP-1) / float64(p.MicroBatches)
	p.Compute = compute * (1 + bubble)
	sc, sp := max(mc.CommSlowdown, 1), max(mc.ComputeSlowdown, 1)
	regions := map[string]float64{"forward": compute / 3, "backward": 2 * compute / 3}
	p.Exposed = 0
	for phase, comp := range regions {
		var comm float64
		for _, tr := range p.Traffic {
			if tr.Hidden == phase {
				comm += tr.Time
			}
		}
		if comm == 0 {
			continue
		}
		exposed := Overlapped(comm, comp, sc, sp) - comp
		for i := range p.Traffic {
			if tr := &p.Traffic[i]; tr.Hidden == phase {
				tr.Exposed = exposed * tr.Time / comm
			}
		}
	}
	for _, tr := range p.Traffic {
		p.Exposed += tr.Exposed
	}
	p.StepNoOverlap = p.Compute + p.CommTime
	p.StepOverlap = p.Compute + p.Exposed
}

// Overlapped is the length of a region where comm and comp (each timed
// alone) run together, slowed by sc and sp while both run.
func Overlapped(comm, comp, sc, sp float64) float64 {
	if comm*sc >= comp*sp {
		return comp*sp + (comm - comp*sp/sc)
	}
	return comm*sc + (comp - comm*sc/sp)
}

// Rank predicts every (dp, tp, pp) split of world for m, keeping base's
// ZeRO stage, sequence parallelism and expert parallelism where they
// apply, and sorts them by exposed communication. Splits the model or the
// profile cannot take are returned as skipped, with the reason.
func Rank(world int, m Transformer, t Training, base Strategy, mc Machine) (ranked []Prediction, skipped map[string]string) {
	skipped = map[string]string{}
	for tp := 1; tp <= world; tp++ {
		for pp := 1; tp*pp <= world; pp++ {
			if world%(tp*pp) != 0 {
				continue
			}
			s := Strategy{DP: world / (tp * pp), TP: tp, PP: pp, EP: base.EP, ZeRO: base.ZeRO, SP: base.SP && tp > 1}
			if s.EP > 1 && s.DP%s.EP != 0 {
				s.EP = 1
			}
			p, err := Predict(m, t, s, mc)
			if err != nil {
				skipped[s.String()] = err.Error()
				continue
			}
			ranked = append(ranked, p)
		}
	}
	sort.SliceStable(ranked, func(i, j int) bool {
		if ranked[i].Exposed != ranked[j].Exposed {
			return ranked[i].Exposed < ranked[j].Exposed
		}
		return ranked[i].CommTime < ranked[j].CommTime
	})
	return ranked, skipped
}
