package tuner

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Choice is an algorithm, protocol and channel count, in a tuner file's
// words (ring, ll128, …; the host backend's segment as its protocol).
type Choice struct {
	Algorithm string `json:"algorithm"`
	Protocol  string `json:"protocol"`
	Channels  int    `json:"channels"`
}

// String is the choice as tables print it: ring/ll/2ch.
func (c Choice) String() string {
	return c.Algorithm + "/" + c.Protocol + "/" + strconv.Itoa(c.Channels) + "ch"
}

// Logged is what a library did with the calls of one collective and
// size, as its log says.
type Logged struct {
	Collective string
	Bytes      uint64 // as the tuner counts them: the nccl-tests size
	Choice
}

// tuningLine is NCCL's rank 0 line for each call it plans, logged with
// NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING (src/enqueue.cc), and the
// host backend's with COLLBENCH_HOST_TUNING_LOG:
// "AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..3}".
var tuningLine = regexp.MustCompile(`\b(AllReduce|AllGather|ReduceScatter|Broadcast|Reduce): (\d+) Bytes -> Algo (\S+) proto (\S+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}`)

// logNames maps NCCL's log names of the collectives to a tuner file's.
var logNames = map[string]string{"AllReduce": "allreduce", "AllGather": "allgather", "ReduceScatter": "reducescatter",
	"Broadcast": "broadcast", "Reduce": "reduce"}

// ReadLog reads the TUNING lines of a log: per collective and size, the
// choice most of its calls got. NCCL logs a call's count times its
// element size, which for all-gather and reduce-scatter is one rank's
// share: those are multiplied by ranks, to the bytes a tuner is asked
// about. The algorithm and NCCL's protocols are written as a tuner file
// writes them (RING as ring, LL128 as ll128); another protocol (the host
// backend's segment) stays as it is.
func ReadLog(data []byte, ranks int) []Logged {
	type key struct {
		coll  string
		bytes uint64
	}
	counts := map[key]map[Choice]int{}
	for _, m := range tuningLine.FindAllStringSubmatch(string(data), -1) {
		coll := logNames[m[1]]
		bytes, err1 := strconv.ParseUint(m[2], 10, 64)
		lo, err2 := strconv.Atoi(m[5])
		hi, err3 := strconv.Atoi(m[6])
		if err1 != nil || err2 != nil || err3 != nil || hi < lo {
			continue
		}
		if coll == "allgather" || coll == "reducescatter" {
			bytes *= uint64(ranks)
		}
		proto := m[4]
		if lower := strings.ToLower(proto); lower == "ll" || lower == "ll128" || lower == "simple" {
			proto = lower
		}
		c := Choice{Algorithm: strings.ToLower(m[3]), Protocol: proto, Channels: hi - lo + 1}
		k := key{coll, bytes}
		if counts[k] == nil {
			counts[k] = map[Choice]int{}
		}
		counts[k][c]++
	}
	var out []Logged
	for k, cs := range counts {
		best, n := Choice{}, 0
		for c, m := range cs {
			if m > n || (m == n && c.String() < best.String()) {
				best, n = c, m
			}
		}
		out = append(out, Logged{Collective: k.coll, Bytes: k.bytes, Choice: best})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Collective != out[j].Collective {
			return out[i].Collective < out[j].Collective
		}
		return out[i].Bytes < out[j].Bytes
	})
	return out
}
