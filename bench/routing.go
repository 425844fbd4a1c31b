package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Routing is how a mixture-of-experts layer sends its tokens: each of
// Tokens tokens on every rank picks TopK distinct experts, drawn from
// Weights, and the experts sit in equal consecutive blocks on the ranks
// (expert e on rank e/(Experts/n)). Dispatch sends every token's hidden
// vector to each expert it picked; combine sends the results back.
type Routing struct {
	Experts, TopK int
	Tokens        int64 // per rank per step
	Hidden        int64 // elements per token
	// Weights is each expert's popularity, summing to 1.
	Weights []float64
	Name    string // how the weights were made, for the report
	Seed    uint64
}

// UniformWeights gives every expert the same popularity.
func UniformWeights(experts int) []float64 {
	w := make([]float64, experts)
	for i := range w {
		w[i] = 1 / float64(experts)
	}
	return w
}

// ZipfWeights gives expert e a popularity proportional to 1/(e+1)^s:
// expert 0 is the most popular, and s = 0 is uniform.
func ZipfWeights(experts int, s float64) []float64 {
	w := make([]float64, experts)
	var sum float64
	for i := range w {
		w[i] = math.Pow(float64(i+1), -s)
		sum += w[i]
	}
	for i := range w {
		w[i] /= sum
	}
	return w
}

// ReadRoutingHistogram reads a recorded routing histogram: one
// non-negative count (or weight) per expert, separated by white space, in
// expert order. It returns the weights, normalised.
func ReadRoutingHistogram(r io.Reader, source string) ([]float64, error) {
	var w []float64
	var sum float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		for _, f := range splitFields(text) {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				return nil, fmt.Errorf("routing histogram %s: line %d: %q is not a count", source, line, f)
			}
			if w = append(w, v); len(w) > MaxExperts {
				return nil, fmt.Errorf("routing histogram %s: more than %d experts", source, MaxExperts)
			}
			sum += v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("routing histogram %s: %w", source, err)
	}
	if len(w) == 0 || sum <= 0 || math.IsInf(sum, 0) {
		return nil, fmt.Errorf("routing histogram %s has no counts", source)
	}
	for i := range w {
		w[i] /= sum
	}
	return w, nil
}

// ReadRoutingFile reads a routing histogram from the file at path, as
// ReadRoutingHistogram.
func ReadRoutingFile(path string) ([]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadRoutingHistogram(f, path)
}

// MaxExperts bounds a layer's experts: its weights and every draw's
// alias table hold one entry per expert. Routed models use far fewer
// (DeepSeek-V3 256, Switch-C 2048).
const MaxExperts = 1 << 16

// CheckShape says why experts and top-k cannot make a layer, or nil. It
// is the check to make before anything is sized by the experts.
func CheckShape(experts, topK int) error {
	switch {
	case experts < 1 || topK < 1:
		return fmt.Errorf("experts and top-k must be at least 1 (got %d,%d)", experts, topK)
	case experts > MaxExperts:
		return fmt.Errorf("at most %d experts (got %d)", MaxExperts, experts)
	case topK > experts:
		return fmt.Errorf("top-k %d is more than the %d experts", topK, experts)
	}
	return nil
}

// Check says why the routing cannot run on n ranks, or nil.
func (r *Routing) Check(n int) error {
	if err := CheckShape(r.Experts, r.TopK); err != nil {
		return err
	}
	switch {
	case r.Experts%n != 0:
		return fmt.Errorf("%d experts do not split evenly over %d ranks", r.Experts, n)
	case r.Tokens < 1 || r.Hidden < 1:
		return fmt.Errorf("tokens and hidden size must be at least 1 (got %d, %d)", r.Tokens, r.Hidden)
	case float64(n)*float64(r.Tokens)*float64(r.TopK)*float64(r.Hidden)*8 > 1<<62:
		// What a rank receives is at most n·T·K·H elements of up to 8
		// bytes; beyond 2^62 the byte counts would wrap around.
		return fmt.Errorf("%d ranks × %d tokens × top-k %d × hidden %d is more bytes than can be counted", n, r.Tokens, r.TopK, r.Hidden)
	case len(r.Weights) != r.Experts:
		return fmt.Errorf("the routing weights cover %d experts, not %d", len(r.Weights), r.Experts)
	}
	positive := 0
	for _, w := range r.Weights {
		if w > 0 {
			positive++
		}
	}
	if positive < r.TopK {
		return fmt.Errorf("only %d experts are ever chosen, fewer than top-k %d", positive, r.TopK)
	}
	return nil
}

// Draw routes one step's tokens on n ranks with the random source of
// draw number k (the same on every process for the same seed) and
// returns, at [i·n+j], how many (token, expert) pairs rank i sends to
// experts on rank j.
func (r *Routing) Draw(n, k int) []int64 {
	counts, _ := r.draw(context.Background(), n, k)
	return counts
}

// draw is Draw, given up with ctx's error when ctx ends: a draw takes
// time in proportion to ranks × tokens × top-k, which a user may set
// far beyond what any device holds.
func (r *Routing) draw(ctx context.Context, n, k int) ([]int64, error) {
	rng := rand.New(rand.NewPCG(r.Seed, uint64(k)))
	pick := newAlias(r.Weights)
	perRank := r.Experts / n
	counts := make([]int64, n*n)
	chosen := make([]int, 0, r.TopK)
	for i := 0; i < n; i++ {
		for t := int64(0); t < r.Tokens; t++ {
			if t%4096 == 0 && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			chosen = r.topK(rng, pick, chosen[:0])
			for _, e := range chosen {
				counts[i*n+e/perRank]++
			}
		}
	}
	return counts, nil
}

// topK picks TopK distinct experts: each next one from the weights of
// those not yet chosen, by redrawing a repeat (falling back to an exact
// walk over the remaining weights when repeats keep coming).
func (r *Routing) topK(rng *rand.Rand, pick *alias, chosen []int) []int {
	for len(chosen) < r.TopK {
		e := -1
		for try := 0; try < 32 && e < 0; try++ {
			if c := pick.draw(rng); !contains(chosen, c) {
				e = c
			}
		}
		if e < 0 {
			e = r.remaining(rng, chosen)
		}
		chosen = append(chosen, e)
	}
	return chosen
}

// remaining draws one expert from the weights of those not in chosen.
func (r *Routing) remaining(rng *rand.Rand, chosen []int) int {
	var left float64
	for e, w := range r.Weights {
		if !contains(chosen, e) {
			left += w
		}
	}
	u := rng.Float64() * left
	last := -1
	for e, w := range r.Weights {
		if contains(chosen, e) || w <= 0 {
			continue
		}
		if last = e; u < w {
			return e
		}
		u -= w
	}
	return last
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// alias is Vose's alias table: one uniform draw picks an index with the
// given probabilities in constant time.
type alias struct {
	prob  []float64
	alias []int
}

func newAlias(w []float64) *alias {
	n := len(w)
	a := &alias{prob: make([]float64, n), alias: make([]int, n)}
	scaled := make([]float64, n)
	var small, large []int
	for i, p := range w {
		scaled[i] = p * float64(n)
		if scaled[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		a.prob[s], a.alias[s] = scaled[s], l
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, i := range append(small, large...) {
		a.prob[i], a.alias[i] = 1, i
	}
	return a
}

func (a *alias) draw(rng *rand.Rand) int {
	i := rng.IntN(len(a.prob))
	if rng.Float64() < a.prob[i] {
		return i
	}
	return a.alias[i]
}

// Traffic turns draws of the routing into the dispatch exchange's
// traffic (each token's hidden vector to its experts' ranks) for n ranks
// and elements of elt bytes; Reversed is combine. It stops with ctx's
// error when ctx ends.
func (r *Routing) Traffic(ctx context.Context, n, elt, draws int) (*Traffic, error) {
	t := &Traffic{Dim: n, Draws: make([][]int64, 0, min(draws, 1024)), Source: r.Name}
	for k := 0; k < draws; k++ {
		counts, err := r.draw(ctx, n, k)
		if err != nil {
			return nil, err
		}
		for i := range counts {
			counts[i] *= r.Hidden * int64(elt)
		}
		t.Draws = append(t.Draws, counts)
	}
	return t, nil
}

// Reversed is drawn traffic run backwards, every draw transposed: what
// rank i sent rank j, rank j sends rank i (a layer's combine, each
// expert's results back to the token's rank).
func (t *Traffic) Reversed() *Traffic {
	n := t.Dim
	out := &Traffic{Dim: n, Draws: make([][]int64, len(t.Draws)), Source: t.Source}
	for k, m := range t.Draws {
		rm := make([]int64, n*n)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				rm[j*n+i] = m[i*n+j]
			}
		}
		out.Draws[k] = rm
	}
	return out
}

// RoutedTraffic is the traffic of r's layer at any size: call k splits
// each rank's total over the ranks in the proportions draw k mod draws
// routes its tokens (dispatch), drawn afresh for each communicator size.
func RoutedTraffic(r *Routing, draws int) *Traffic {
	rr := *r
	rr.Hidden = 1 // the sweep size sets the bytes; only the proportions count
	return &Traffic{Routed: &rr, routed: routedShares{draws: max(draws, 1), mu: &sync.Mutex{}, by: map[int][][]float64{}}}
}

// routedShares caches, per communicator size, each draw's share of a
// rank's bytes that goes to each rank. Ranks of one process read it at
// once, so it is guarded.
type routedShares struct {
	draws int
	mu    *sync.Mutex
	by    map[int][][]float64
}

func (s *routedShares) of(r *Routing, n int) [][]float64 {
	f, _ := s.ofCtx(context.Background(), r, n)
	return f
}

// ofCtx is of, given up with ctx's error when ctx ends (nothing is
// cached then).
func (s *routedShares) ofCtx(ctx context.Context, r *Routing, n int) ([][]float64, error) {
	if s.mu == nil {
		panic("routed traffic made without RoutedTraffic")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.by[n]; ok {
		return f, nil
	}
	f := make([][]float64, s.draws)
	perRank := float64(r.Tokens) * float64(r.TopK)
	for k := range f {
		counts, err := r.draw(ctx, n, k)
		if err != nil {
			return nil, err
		}
		f[k] = make([]float64, n*n)
		for i, c := range counts {
			f[k][i] = float64(c) / perRank
		}
	}
	s.by[n] = f
	return f, nil
}

// Prepare makes routed traffic's draws for communicators of n ranks
// ahead of their first use, giving up with ctx's error when ctx ends:
// a draw takes time in proportion to n × tokens × top-k, and the uses
// (sizing buffers, counting bytes) cannot be interrupted. Other traffic,
// and a size the routing cannot run on (Routing.Check refuses it where it
// matters), need nothing prepared.
func (t *Traffic) Prepare(ctx context.Context, n int) error {
	if t == nil || t.Routed == nil || t.Routed.Check(n) != nil {
		return nil
	}
	_, err := t.routed.ofCtx(ctx, t.Routed, n)
	return err
}
