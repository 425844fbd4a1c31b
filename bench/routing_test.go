package bench

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// chiSquare is Pearson's statistic of observed counts against expected.
func chiSquare(obs []int64, want []float64) float64 {
	var x float64
	for i, o := range obs {
		d := float64(o) - want[i]
		x += d * d / want[i]
	}
	return x
}

// A seeded top-1 Zipf draw matches its expected histogram: with one
// expert per rank, rank 0's row counts how often each expert was picked.
// The bound is the chi-square distribution's 99.9% point for 15 degrees
// of freedom (37.70); the draw is seeded, so the test is deterministic,
// and a sampler off by a few percent on one expert lands far above it.
func TestZipfDrawMatchesItsHistogram(t *testing.T) {
	const experts, tokens = 16, 40000
	for _, s := range []float64{0, 0.8, 1.5} {
		r := &Routing{Experts: experts, TopK: 1, Tokens: tokens, Hidden: 1, Weights: ZipfWeights(experts, s), Seed: 7}
		counts := r.Draw(experts, 0)
		want := make([]float64, experts)
		for e, w := range r.Weights {
			want[e] = tokens * w
		}
		if x := chiSquare(counts[:experts], want); x > 37.70 {
			t.Errorf("zipf %g: chi-square %.1f over 15 degrees of freedom (99.9%% point 37.70): %v", s, x, counts[:experts])
		}
		// The same statistic flags a histogram with one expert 5% off.
		skewed := slices.Clone(want)
		skewed[0] *= 1.05
		if s > 0 && chiSquare(counts[:experts], skewed) < 37.70 {
			t.Errorf("zipf %g: a 5%% error on expert 0 goes unnoticed", s)
		}
	}
}

// Top-k picks k distinct experts per token: with uniform weights each
// expert gets tokens·k/E picks on average, no expert more than once per
// token, and every rank routes exactly tokens·k pairs.
func TestTopKIsDistinct(t *testing.T) {
	const experts, tokens = 8, 30000
	r := &Routing{Experts: experts, TopK: 3, Tokens: tokens, Hidden: 1, Weights: UniformWeights(experts), Seed: 1}
	counts := r.Draw(experts, 0)
	want := make([]float64, experts)
	for e := range want {
		want[e] = tokens * 3 / experts
	}
	// 7 degrees of freedom, 99.9% point 24.32 (the multinomial bound is
	// conservative here: picks without replacement vary less).
	if x := chiSquare(counts[:experts], want); x > 24.32 {
		t.Errorf("chi-square %.1f: %v", x, counts[:experts])
	}
	// Heavily skewed and k = E: every token must still pick every expert once.
	all := &Routing{Experts: experts, TopK: experts, Tokens: 100, Hidden: 1, Weights: ZipfWeights(experts, 4), Seed: 3}
	for i, c := range all.Draw(experts, 0) {
		if c != 100 {
			t.Fatalf("pair %d: %d picks, want 100", i, c)
		}
	}
}

// Draws depend on the seed and the draw number alone, so every process
// computes the same traffic; combine is dispatch reversed.
func TestRoutingDeterminism(t *testing.T) {
	r := &Routing{Experts: 8, TopK: 2, Tokens: 512, Hidden: 64, Weights: ZipfWeights(8, 1.2), Seed: 42}
	if !slices.Equal(r.Draw(4, 3), r.Draw(4, 3)) {
		t.Fatal("the same draw differs")
	}
	if slices.Equal(r.Draw(4, 3), r.Draw(4, 4)) {
		t.Fatal("two draws are equal")
	}
	other := *r
	other.Seed = 43
	if slices.Equal(r.Draw(4, 0), other.Draw(4, 0)) {
		t.Fatal("two seeds give one draw")
	}
	d, err := r.Traffic(context.Background(), 4, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	c := d.Reversed()
	for k := 0; k < 3; k++ {
		counts := r.Draw(4, k)
		for i := 0; i < 4; i++ {
			for j := 0; j < 4; j++ {
				if want := counts[i*4+j] * 64 * 2; d.PeerBytesAt(k, i, j, 4, 0) != want || c.PeerBytesAt(k, j, i, 4, 0) != want {
					t.Fatalf("draw %d %d→%d: dispatch %d combine %d, want %d", k, i, j, d.PeerBytesAt(k, i, j, 4, 0), c.PeerBytesAt(k, j, i, 4, 0), want)
				}
			}
		}
	}
	// Zipf puts the popular experts on rank 0: it receives the most.
	if most, mean := d.load(0, 4); most/mean <= 1.2 {
		im := most / mean
		t.Errorf("zipf 1.2 imbalance %.2f", im)
	}
	uniform, err := (&Routing{Experts: 8, TopK: 2, Tokens: 4096, Hidden: 1, Weights: UniformWeights(8)}).Traffic(context.Background(), 4, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	most, mean := uniform.load(0, 4)
	if im := most / mean; math.Abs(im-1) > 0.05 {
		t.Errorf("uniform imbalance %.3f", im)
	}
}

func TestRoutingCheck(t *testing.T) {
	ok := Routing{Experts: 8, TopK: 2, Tokens: 16, Hidden: 4, Weights: UniformWeights(8)}
	if err := ok.Check(4); err != nil {
		t.Fatal(err)
	}
	for want, r := range map[string]Routing{
		"do not split evenly": ok,
		"more than the 8":     {Experts: 8, TopK: 9, Tokens: 16, Hidden: 4, Weights: UniformWeights(8)},
		"at least 1":          {Experts: 8, TopK: 2, Tokens: 0, Hidden: 4, Weights: UniformWeights(8)},
		"cover 4 experts":     {Experts: 8, TopK: 2, Tokens: 16, Hidden: 4, Weights: UniformWeights(4)},
		"fewer than top-k":    {Experts: 8, TopK: 2, Tokens: 16, Hidden: 4, Weights: []float64{1, 0, 0, 0, 0, 0, 0, 0}},
		"than can be counted": {Experts: 8, TopK: 2, Tokens: 4, Hidden: 1 << 61, Weights: UniformWeights(8)},
		"at most 65536":       {Experts: 1 << 17, TopK: 2, Tokens: 16, Hidden: 4, Weights: UniformWeights(8)},
		"at most 16777216":    {Experts: 8, TopK: 2, Tokens: MaxTokens + 1, Hidden: 4, Weights: UniformWeights(8)},
	} {
		n := 4
		if want == "do not split evenly" {
			n = 3
		}
		if err := r.Check(n); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v on %d ranks: %v, want %q", r, n, err, want)
		}
	}
}

func TestReadRoutingHistogram(t *testing.T) {
	w, err := ReadRoutingHistogram(strings.NewReader("# expert loads\n3 1\n0 4 # tail\n"), "h.txt")
	if err != nil || !slices.Equal(w, []float64{0.375, 0.125, 0, 0.5}) {
		t.Fatalf("%v, %v", w, err)
	}
	for _, bad := range []string{"", "0 0", "1 -1", "1 x"} {
		if _, err := ReadRoutingHistogram(strings.NewReader(bad), "h.txt"); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// A histogram longer than any layer stops being read at the bound
	// instead of filling memory.
	if _, err := ReadRoutingHistogram(io.LimitReader(onesForever{}, 1<<30), "big.txt"); err == nil || !strings.Contains(err.Error(), "more than 65536 experts") {
		t.Errorf("an endless histogram gave %v", err)
	}
}

// onesForever reads as "1\n1\n1\n…" without end.
type onesForever struct{}

func (onesForever) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = "1\n"[i%2]
	}
	return len(p) &^ 1, nil
}

// Routed traffic splits each rank's total in the proportions of the
// draws' routing, on any number of ranks: every rank sends (up to the
// 16-byte rounding) its total, and Zipf routing loads rank 0.
func TestRoutedTraffic(t *testing.T) {
	r := &Routing{Experts: 8, TopK: 2, Tokens: 4096, Hidden: 1, Weights: ZipfWeights(8, 1.2), Seed: 9, Name: "zipf:1.2"}
	tr := RoutedTraffic(r, 3)
	if got := tr.String(); got != "moe 8 experts top-2, routing zipf:1.2, seed 9, 3 draws of 4096 tokens per rank" {
		t.Errorf("String() = %q", got)
	}
	for _, n := range []int{2, 4, 8} {
		c := tr.counts(1<<20/4, 4, n)
		total := c.Total(4, n)
		for k := 0; k < 3; k++ {
			for rank := 0; rank < n; rank++ {
				send, _ := tr.RankBytesAt(k, rank, n, total)
				if send > total || send < total-int64(16*n) {
					t.Errorf("n=%d draw %d rank %d sends %d of %d", n, k, rank, send, total)
				}
			}
		}
		_, recv0 := tr.RankBytesAt(0, 0, n, total)
		if busiest := max(c.Send, c.Recv) * 4; busiest < recv0 || float64(recv0) < 1.2*float64(total) {
			t.Errorf("n=%d: rank 0 receives %d of a mean %d (buffers %d)", n, recv0, total, busiest)
		}
	}
	if err := tr.check(3, Sweep{}); err == nil || !strings.Contains(err.Error(), "do not split evenly") {
		t.Errorf("3 ranks: %v", err)
	}
}

// Drawing a layer far beyond any device (a billion tokens a rank) stops
// as soon as its context ends, instead of holding the command for minutes.
func TestTrafficStopsWithItsContext(t *testing.T) {
	r := &Routing{Experts: 8, TopK: 2, Tokens: 1e9, Hidden: 1, Weights: UniformWeights(8)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	start := time.Now()
	tr, err := r.Traffic(ctx, 4, 4, 1<<20)
	if !errors.Is(err, context.Canceled) || tr != nil {
		t.Fatalf("got %v, %v; want the context's error", tr, err)
	}
	// The bound is what one check interval of 4096 tokens can take on a
	// loaded machine, against the minutes the whole draw would take.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("stopped %v after the cancel", d)
	}
}

// Routed traffic prepared under a context that ends gives the context's
// error and caches nothing; prepared under a live one, its uses read the
// same shares as an unprepared traffic computes.
func TestPrepareRoutedTraffic(t *testing.T) {
	huge := RoutedTraffic(&Routing{Experts: 8, TopK: 2, Tokens: MaxTokens, Hidden: 4, Weights: UniformWeights(8)}, 4)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := huge.Prepare(ctx, 4); !errors.Is(err, context.Canceled) || len(huge.routed.by) != 0 {
		t.Fatalf("got %v with %d sizes cached", err, len(huge.routed.by))
	}
	r := &Routing{Experts: 8, TopK: 2, Tokens: 64, Hidden: 4, Weights: ZipfWeights(8, 1), Seed: 3}
	prepared, lazy := RoutedTraffic(r, 3), RoutedTraffic(r, 3)
	if err := prepared.Prepare(context.Background(), 4); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 3; k++ {
		for i := 0; i < 4; i++ {
			for j := 0; j < 4; j++ {
				if a, b := prepared.PeerBytesAt(k, i, j, 4, 1<<20), lazy.PeerBytesAt(k, i, j, 4, 1<<20); a != b {
					t.Fatalf("draw %d %d→%d: prepared %d, lazy %d", k, i, j, a, b)
				}
			}
		}
	}
	if err := (*Traffic)(nil).Prepare(ctx, 4); err != nil {
		t.Errorf("nil traffic: %v", err)
	}
}

// A routed all-to-all sizes no buffers, and prepares no draws, for a
// communicator its experts do not split over: it will not run there.
func TestRoutedTrafficOnRanksItDoesNotFit(t *testing.T) {
	r := &Routing{Experts: 8, TopK: 2, Tokens: 64, Hidden: 4, Weights: UniformWeights(8)}
	coll, err := Collectives[AllToAllV].WithTraffic(RoutedTraffic(r, 2))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{3, 16} {
		if err := coll.Fits(n); err == nil {
			t.Fatalf("8 experts fit %d ranks", n)
		}
		if err := coll.Traffic.Prepare(context.Background(), n); err != nil {
			t.Errorf("prepare on %d ranks: %v", n, err)
		}
		if got := coll.BufferBytes(1<<20, 4, n); got != 1<<20 {
			t.Errorf("buffers on %d ranks: %d, want the size", n, got)
		}
	}
	if got := coll.BufferBytes(1<<20, 4, 4); got < 1<<20 {
		t.Errorf("buffers on 4 ranks: %d", got)
	}
}

// A layer whose tokens pick nearly every expert (top-k near the expert
// count) stops within moments of its context ending: the draw checks the
// context by work done, not once every 4096 tokens, which here took
// seconds each.
func TestNearAllTopKStopsWithItsContext(t *testing.T) {
	r := &Routing{Experts: 1024, TopK: 1023, Tokens: 1 << 20, Hidden: 1, Weights: ZipfWeights(1024, 1.2)}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	if _, err := r.Traffic(ctx, 2, 4, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the context's", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("stopped %v after the start", d)
	}
}

// Picking the last experts of a token follows the weights of those left,
// as picking the first does: the sampler that takes over once most of a
// token's weight is chosen draws what a plain walk over the remaining
// weights draws (two-sample chi-square over 8 experts, 7 degrees of
// freedom, 99.9% point 24.32; seeded, so deterministic).
func TestNearAllTopKFollowsTheWeights(t *testing.T) {
	const experts, k, tokens = 8, 6, 20000
	w := ZipfWeights(experts, 1.5)
	r := &Routing{Experts: experts, TopK: k, Tokens: tokens, Hidden: 1, Weights: w, Seed: 5}
	got := r.Draw(experts, 0)[:experts] // rank 0's picks, one expert per rank
	// The reference: each pick a walk over the weights not yet chosen.
	rng := rand.New(rand.NewPCG(99, 1))
	ref := make([]int64, experts)
	for tok := 0; tok < tokens; tok++ {
		left := slices.Clone(w)
		for p := 0; p < k; p++ {
			var sum float64
			for _, x := range left {
				sum += x
			}
			u := rng.Float64() * sum
			e := 0
			for ; e < experts-1 && (left[e] == 0 || u >= left[e]); e++ {
				u -= left[e]
			}
			ref[e]++
			left[e] = 0
		}
	}
	var x float64
	for e := range got {
		if n := float64(got[e] + ref[e]); n > 0 {
			d := float64(got[e] - ref[e])
			x += d * d / n
		}
	}
	if x > 24.32 {
		t.Errorf("chi-square %.1f: drawn %v, reference %v", x, got, ref)
	}
}

// Every token of a layer with top-k equal to the experts picks all of
// them, with no sampling at all: a million tokens draw at once.
func TestAllExpertsDrawAtOnce(t *testing.T) {
	r := &Routing{Experts: 1024, TopK: 1024, Tokens: 1 << 20, Hidden: 1, Weights: ZipfWeights(1024, 1.2)}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tr, err := r.Traffic(ctx, 4, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range tr.Draws[1] {
		if c != 1<<20*256 {
			t.Fatalf("counts %v, want every token's 256 experts on each rank", tr.Draws[1])
		}
	}
}

// The draws a run may ask for are bounded before any is made: their
// number, the memory their tables take on n ranks, and the picks they
// cost.
func TestCheckDraws(t *testing.T) {
	r := &Routing{Experts: 64, TopK: 2, Tokens: 4096, Hidden: 1, Weights: UniformWeights(64)}
	if err := r.CheckDraws(8, 20); err != nil {
		t.Fatal(err)
	}
	near := *r
	near.Experts, near.TopK, near.Weights = 1024, 1023, UniformWeights(1024)
	all := near
	all.TopK = 1024
	for _, c := range []struct {
		r     *Routing
		n     int
		draws int
		want  string
	}{
		{r, 8, 0, "at least 1"},
		{r, 8, MaxDraws + 1, "at most 65536 draws"},
		{r, 1024, 1000, "GiB of tables"},
		{&near, 64, 1000, "token picks"},
	} {
		if err := c.r.CheckDraws(c.n, c.draws); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d ranks, %d draws: %v, want %q", c.n, c.draws, err, c.want)
		}
	}
	if err := all.CheckDraws(64, 1000); err != nil {
		t.Errorf("all experts cost no picks: %v", err)
	}
}
