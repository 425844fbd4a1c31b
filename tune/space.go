package tune

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/tuner"
)

// Space is what a tuning varies: algorithms and protocols in a tuner
// file's words (on the host backend its algorithms, and its segment as
// the protocol), and channel counts.
type Space struct {
	Algorithms []string // empty: every one the backend has for the collective
	Protocols  []string // empty: NCCL's three; on the host backend the default segment
	Channels   []int    // empty: the library's own count only
}

// The backends a tuning knows, as a run document names them.
const (
	backendNCCL = "nccl"
	backendHost = "host"
)

// ncclAlgo and ncclProto are the values NCCL_ALGO and NCCL_PROTO take
// for a tuner file's names (src/init.cc's ncclAlgoStr and ncclProtoStr).
var (
	ncclAlgo = map[string]string{"tree": "Tree", "ring": "Ring", "collnet_direct": "CollNetDirect", "collnet_chain": "CollNetChain",
		"nvls": "NVLS", "nvls_tree": "NVLSTree", "pat": "PAT"}
	ncclProto = map[string]string{"ll": "LL", "ll128": "LL128", "simple": "Simple"}
)

// point is one setting of the space.
type point struct {
	tuner.Choice // Channels 0: the library's own count
}

// label names the setting in tables: ring/ll, ring/ll/8ch.
func (s point) label() string {
	l := s.Algorithm + "/" + s.Protocol
	if s.Channels > 0 {
		l += "/" + strconv.Itoa(s.Channels) + "ch"
	}
	return l
}

// env is what the setting adds to an arm's environment on backend.
func (s point) env(backend string) []string {
	if backend == backendHost {
		return []string{host.AlgoVar + "=" + s.Algorithm, host.SegmentVar + "=" + s.Protocol}
	}
	env := []string{"NCCL_ALGO=" + ncclAlgo[s.Algorithm], "NCCL_PROTO=" + ncclProto[s.Protocol]}
	if s.Channels > 0 {
		c := strconv.Itoa(s.Channels)
		env = append(env, "NCCL_MIN_NCHANNELS="+c, "NCCL_MAX_NCHANNELS="+c)
	}
	return env
}

// vocabulary is the tuner file's reader on backend.
func vocabulary(backend string) tuner.Vocabulary {
	if backend == backendHost {
		return host.Vocabulary
	}
	return tuner.Plugin
}

// Check refuses a space the backend's vocabulary does not know.
func (sp Space) Check(backend string) error {
	v := vocabulary(backend)
	for _, a := range sp.Algorithms {
		if !slices.Contains(v.Algorithms, a) {
			return fmt.Errorf("%s has no algorithm %q (%s)", v.Name, a, join(v.Algorithms))
		}
	}
	for _, p := range sp.Protocols {
		if v.Protocol != nil {
			if err := v.Protocol(p); err != nil {
				return err
			}
		} else if !slices.Contains(v.Protocols, p) {
			return fmt.Errorf("%s has no protocol %q (%s)", v.Name, p, join(v.Protocols))
		}
	}
	for _, c := range sp.Channels {
		switch {
		case backend == backendHost:
			return fmt.Errorf("the host backend runs one channel; it has no channel count to tune")
		case c < 1 || c > 64:
			return fmt.Errorf("%d channels: NCCL runs 1 to 64", c)
		}
	}
	return nil
}

// settings is the grid of the space for coll on backend, for groups of
// ranks: every algorithm the backend has for the collective (recursive
// doubling on power-of-two groups only) with every protocol and channel
// count, the first algorithm varying slowest.
func (sp Space) settings(backend string, coll *bench.Collective, ranks int) []point {
	algos, protos, chans := sp.Algorithms, sp.Protocols, sp.Channels
	if backend == backendHost {
		if len(algos) == 0 {
			algos = host.Algorithms(coll.ID)
		} else {
			algos = slices.DeleteFunc(slices.Clone(algos), func(a string) bool { return !slices.Contains(host.Algorithms(coll.ID), a) })
		}
		if ranks&(ranks-1) != 0 {
			algos = slices.DeleteFunc(slices.Clone(algos), func(a string) bool { return a == host.AlgoDoubling })
		}
		if len(protos) == 0 {
			protos = []string{bench.FormatSize(host.DefaultSegment)}
		}
		chans = nil
	} else {
		if len(algos) == 0 {
			algos = tuner.Plugin.Algorithms
		}
		if len(protos) == 0 {
			protos = tuner.Plugin.Protocols
		}
	}
	if len(chans) == 0 {
		chans = []int{0}
	}
	var out []point
	for _, a := range algos {
		for _, p := range protos {
			for _, c := range chans {
				out = append(out, point{tuner.Choice{Algorithm: a, Protocol: p, Channels: c}})
			}
		}
	}
	return out
}

func join(list []string) string {
	s := ""
	for i, v := range list {
		if i > 0 {
			s += ", "
		}
		s += v
	}
	return s
}

// Setting is one point of a space as an arm runs it: how tables name it,
// what it forces, and what it adds to the arm's environment.
type Setting struct {
	Label  string
	Choice tuner.Choice
	Env    []string
}

// Settings is the space's grid for coll on backend over groups of ranks,
// each point as an arm runs it: the settings a tuning tries, for another
// measurement to try too (an audit of which of them repeat).
func (sp Space) Settings(backend string, coll *bench.Collective, ranks int) []Setting {
	var out []Setting
	for _, p := range sp.settings(backend, coll, ranks) {
		out = append(out, Setting{Label: p.label(), Choice: p.Choice, Env: p.env(backend)})
	}
	return out
}
