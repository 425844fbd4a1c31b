package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
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

// MaxExperts bounds a layer's experts: its weights and every draw's
// alias table hold one entry per expert. Routed models use far fewer
// (DeepSeek-V3 256, Switch-C 2048).
const MaxExperts = 1 << 16

// MaxDraws bounds a layer's routing draws: each is a table of n×n byte
// counts for dispatch and one for combine, and a run cycles through them.
const MaxDraws = 1 << 16

// MaxTokens bounds a layer's tokens per rank per step: 16M, a step of
// 2048 sequences of 8192 tokens.
const MaxTokens = 1 << 24

const (
	// maxDrawBytes bounds the memory of a run's draws: 1 GiB of tables.
	maxDrawBytes = 1 << 30
	// maxPicks bounds the work of a run's draws, in experts picked for
	// tokens: at some tens of nanoseconds each, about a minute.
	maxPicks = 1 << 32
)

// CheckDraws says why draws routing draws for n ranks are more than a run
// makes, or nil: at least 1 and at most MaxDraws; their tables (two of
// n×n counts each) within 1 GiB; their picks (n × tokens × top-k per draw,
// none when every expert is picked) within 2^32. It is the check to make
// before any draw.
func (r *Routing) CheckDraws(n, draws int) error {
	picks := float64(draws) * float64(n) * float64(r.Tokens) * float64(r.TopK)
	if r.TopK == r.Experts {
		picks = 0
	}
	switch tables := float64(draws) * float64(n) * float64(n) * 16; {
	case draws < 1:
		return fmt.Errorf("routing draws must be at least 1 (got %d)", draws)
	case draws > MaxDraws:
		return fmt.Errorf("at most %d draws (got %d)", MaxDraws, draws)
	case tables > maxDrawBytes:
		return fmt.Errorf("%d draws on %d ranks take %.1f GiB of tables, more than 1 GiB (fewer draws)", draws, n, tables/(1<<30))
	case picks > maxPicks:
		return fmt.Errorf("%d draws of %d ranks × %d tokens × top-k %d are %.3g token picks, more than %d (fewer draws or tokens, or a smaller top-k)",
			draws, n, r.Tokens, r.TopK, picks, int64(maxPicks))
	}
	return nil
}

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
	case r.Tokens > MaxTokens:
		return fmt.Errorf("at most %d tokens per rank (got %d)", MaxTokens, r.Tokens)
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

// checkEvery is how many expert picks a draw makes between looks at its
// context: a few milliseconds of work.
const checkEvery = 1 << 16

// draw is Draw, given up with ctx's error when ctx ends: a draw takes
// time in proportion to ranks × tokens × top-k, which a user may set far
// beyond what any device holds, so the context is checked by work done.
func (r *Routing) draw(ctx context.Context, n, k int) ([]int64, error) {
	perRank := r.Experts / n
	counts := make([]int64, n*n)
	if r.TopK == r.Experts {
		// Every token picks every expert: nothing to draw.
		for i := range counts {
			counts[i] = r.Tokens * int64(perRank)
		}
		return counts, ctx.Err()
	}
	rng := rand.New(rand.NewPCG(r.Seed, uint64(k)))
	p := newPicker(r.Weights)
	chosen := make([]int, 0, r.TopK)
	work := 0
	for i := 0; i < n; i++ {
		for t := int64(0); t < r.Tokens; t++ {
			if work += r.TopK; work >= checkEvery {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				work = 0
			}
			chosen = p.topK(rng, r.TopK, chosen[:0])
			for _, e := range chosen {
				counts[i*n+e/perRank]++
			}
		}
	}
	return counts, nil
}

// picker draws a token's top-k distinct experts, each next one in
// proportion to the weights of those not yet chosen. While most of the
// weight is left, a draw from all experts (alias) that is redrawn on a
// repeat is cheap; past half, repeats would dominate, and the rest are
// drawn from a Fenwick tree of the weights with the chosen ones taken
// out, in logarithmic time each.
type picker struct {
	w     []float64
	alias *alias
	tree  []uint64 // Fenwick tree of the weights in fixed point (1-based)
	fixed []uint64 // each expert's weight in the tree's units
	total uint64
	mark  []uint32 // mark[e] == stamp: e is chosen in this token
	stamp uint32
}

func newPicker(w []float64) *picker {
	p := &picker{w: w, alias: newAlias(w), tree: make([]uint64, len(w)+1), fixed: make([]uint64, len(w)), mark: make([]uint32, len(w))}
	for e, x := range w {
		if x > 0 {
			// 2^52 units for the whole weight: exact sums, no drift as
			// weights go out and back in; a positive weight keeps at
			// least one unit.
			p.fixed[e] = max(1, uint64(x*(1<<52)))
			p.add(e, p.fixed[e])
			p.total += p.fixed[e]
		}
	}
	return p
}

// add adds v (two's complement: also subtracts) to expert e's weight.
func (p *picker) add(e int, v uint64) {
	for i := e + 1; i < len(p.tree); i += i & -i {
		p.tree[i] += v
	}
}

// find is the expert at which the running sum of the weights passes u
// (u below the tree's total).
func (p *picker) find(u uint64) int {
	pos := 0
	for step := 1 << (bits.Len(uint(len(p.tree)-1)) - 1); step > 0; step >>= 1 {
		if next := pos + step; next < len(p.tree) && p.tree[next] <= u {
			pos = next
			u -= p.tree[next]
		}
	}
	return pos // 0-based expert = the 1-based position after pos, less one
}

func (p *picker) topK(rng *rand.Rand, k int, chosen []int) []int {
	if p.stamp++; p.stamp == 0 { // wrapped: clear the marks of 2^32 tokens ago
		clear(p.mark)
		p.stamp = 1
	}
	var mass float64
	for len(chosen) < k && mass < 0.5 {
		e := p.alias.draw(rng)
		if p.mark[e] == p.stamp {
			continue
		}
		p.mark[e] = p.stamp
		mass += p.w[e]
		chosen = append(chosen, e)
	}
	if len(chosen) == k {
		return chosen
	}
	left := p.total
	for _, e := range chosen {
		p.add(e, -p.fixed[e])
		left -= p.fixed[e]
	}
	for len(chosen) < k {
		e := p.find(rng.Uint64N(left))
		p.mark[e] = p.stamp
		p.add(e, -p.fixed[e])
		left -= p.fixed[e]
		chosen = append(chosen, e)
	}
	for _, e := range chosen { // back in for the next token
		p.add(e, p.fixed[e])
	}
	return chosen
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

// CheckDraws says why routed traffic's draws for communicators of n
// ranks are more than a run makes (Routing.CheckDraws); other traffic,
// and a size the routing cannot run on, need none.
func (t *Traffic) CheckDraws(n int) error {
	if t == nil || t.Routed == nil || t.Routed.Check(n) != nil {
		return nil
	}
	return t.Routed.CheckDraws(n, t.routed.draws)
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
