package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/collbench/collbench/setting"
)

// Traffic is who sends how many bytes to whom in an uneven all-to-all,
// as nccl-tests' alltoallv defines it: generated from the sweep size by a
// distance-weighted spread, or read from a matrix.
type Traffic struct {
	// Spread blends a uniform split of each rank's bytes (0) with one
	// weighted by the distance to the receiver in rank order (1).
	Spread float64
	// Matrix, when set, holds the bytes rank i sends rank j at
	// Matrix[i*Dim+j], scaled and rounded down to 16 bytes. It replaces
	// the generated pattern, and the sweep size no longer matters.
	Matrix []int64
	// Draws, when set, hold one such matrix per call instead (Dim = the
	// communicator's size): call k of a batch follows Draws[k mod
	// len(Draws)], as a mixture-of-experts layer routes its tokens
	// afresh at every step.
	Draws [][]int64
	// Routed, when set, spreads each rank's total as a routing's draws
	// split its tokens, on any number of ranks: the traffic of a
	// mixture-of-experts layer at every size of a sweep.
	Routed *Routing
	routed routedShares
	Dim    int
	Scale  float64 // applied to the file's values, reported in the summary
	Source string  // the matrix file, for messages
}

// DefaultTraffic is nccl-tests' default: fully distance-weighted.
var DefaultTraffic = Traffic{Spread: 1, Scale: 1}

// Generated reports whether the pattern comes from the spread rather than
// from a matrix.
func (t *Traffic) Generated() bool { return t.Matrix == nil && t.Draws == nil && t.Routed == nil }

// perRankTotal says whether the sweep size is each rank's total, split by
// the pattern (the generated and routed patterns), rather than ignored.
func (t *Traffic) perRankTotal() bool { return t.Matrix == nil && t.Draws == nil }

// String describes the pattern in a few words, for documents.
func (t *Traffic) String() string {
	switch {
	case t.Routed != nil:
		r := t.Routed
		return fmt.Sprintf("moe %d experts top-%d, routing %s, seed %d, %d draws of %d tokens per rank", r.Experts, r.TopK, r.Name, r.Seed, t.routed.draws, r.Tokens)
	case t.Draws != nil:
		return fmt.Sprintf("%d routing draws of %s", len(t.Draws), t.Source)
	case t.Matrix != nil:
		return fmt.Sprintf("matrix %s ×%g", t.Source, t.Scale)
	}
	return fmt.Sprintf("spread %g", t.Spread)
}

// PeerBytes is what rank i sends rank j among n ranks when each rank
// sends total bytes in all (total is ignored for a matrix), in a batch's
// first call. Each share is rounded down to 16 bytes, as nccl-tests does.
func (t *Traffic) PeerBytes(i, j, n int, total int64) int64 { return t.PeerBytesAt(0, i, j, n, total) }

// PeerBytesAt is PeerBytes for a batch's call number call.
func (t *Traffic) PeerBytesAt(call, i, j, n int, total int64) int64 {
	if t.Draws != nil {
		return t.Draws[call%len(t.Draws)][i*t.Dim+j]
	}
	if t.Matrix != nil {
		return t.Matrix[i*t.Dim+j]
	}
	if t.Routed != nil {
		f := t.routed.of(t.Routed, n)
		return int64(f[call%len(f)][i*n+j]*float64(total)) &^ 15
	}
	if n == 1 {
		return total &^ 15
	}
	distance := (j - i + n) % n
	sumDistances := float64(int64(n) * int64(n-1) / 2)
	uniform := float64(total) / float64(n)
	weighted := float64(distance) * float64(total) / sumDistances
	return int64((1-t.Spread)*uniform+t.Spread*weighted) &^ 15
}

// RankBytes returns the bytes rank sends and receives in all in a
// batch's first call.
func (t *Traffic) RankBytes(rank, n int, total int64) (send, recv int64) {
	return t.RankBytesAt(0, rank, n, total)
}

// RankBytesAt is RankBytes for call number call.
func (t *Traffic) RankBytesAt(call, rank, n int, total int64) (send, recv int64) {
	for p := 0; p < n; p++ {
		send += t.PeerBytesAt(call, rank, p, n, total)
		recv += t.PeerBytesAt(call, p, rank, n, total)
	}
	return send, recv
}

// counts is alltoallv's accounting: the count argument is the per-peer
// base of a generated pattern (0 for a matrix) and the buffers hold the
// busiest rank's elements.
func (t *Traffic) counts(count int64, elt, n int) Counts {
	var c Counts
	if t.perRankTotal() {
		c.Param = perRankBase(count, elt, n)
	}
	total := c.Param * int64(n) * int64(elt)
	calls := 1
	switch {
	case t.Draws != nil:
		calls = len(t.Draws)
	case t.Routed != nil:
		calls = len(t.routed.of(t.Routed, n))
	}
	for k := 0; k < calls; k++ {
		for r := 0; r < n; r++ {
			// Every share is whole elements (16-byte multiples; routed
			// draws are made in the element size), so the totals divide
			// as nccl-tests divides each share.
			send, recv := t.RankBytesAt(k, r, n, total)
			c.Send, c.Recv = max(c.Send, send/int64(elt)), max(c.Recv, recv/int64(elt))
			if t.Generated() {
				break // every rank sends and receives the same in a generated pattern
			}
		}
	}
	return c
}

// Total is each rank's byte total that a call with these counts spreads.
func (c Counts) Total(elt, n int) int64 { return c.Param * int64(n) * int64(elt) }

// check refuses what nccl-tests refuses: a matrix smaller than the
// communicator, a sweep over a matrix, or buffers (-e) too small for it.
func (t *Traffic) check(n int, s Sweep) error {
	if t.Routed != nil {
		return t.Routed.Check(n)
	}
	if t.Generated() {
		if t.Spread < 0 || t.Spread > 1 || math.IsNaN(t.Spread) {
			return fmt.Errorf("alltoallv spread must be between 0 and 1 (got %g)", t.Spread)
		}
		return nil
	}
	if t.Draws != nil && n != t.Dim {
		return fmt.Errorf("routed traffic was drawn for %d ranks, not %d", t.Dim, n)
	}
	if n > t.Dim {
		return fmt.Errorf("traffic matrix %s is %dx%d, smaller than the %d ranks", t.Source, t.Dim, t.Dim, n)
	}
	if s.Min != s.Max {
		return setting.Errorf("a traffic matrix sets every size: give {MinBytes} and {MaxBytes} the same value (e.g. {MinBytes} 32M {MaxBytes} 32M)")
	}
	need := t.counts(0, 1, n).Bytes(1)
	if s.Max < need {
		return setting.Errorf("{MaxBytes} must be at least %d bytes for traffic matrix %s (got %d)", need, t.Source, s.Max)
	}
	return nil
}

// ReadTrafficMatrix reads a square matrix of whitespace-separated byte
// counts (row i: what rank i sends each rank), multiplies every value by
// scale and rounds it down to 16 bytes, as nccl-tests'
// NCCL_TESTS_ALLTOALLV_MATRIX_FILE and _MATRIX_SCALE do.
func ReadTrafficMatrix(r io.Reader, scale float64, source string) (*Traffic, error) {
	if scale < 0 || math.IsNaN(scale) || math.IsInf(scale, 0) {
		return nil, fmt.Errorf("traffic matrix scale must be a finite number ≥ 0 (got %g)", scale)
	}
	var vals []int64
	cols := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for row := 0; sc.Scan(); {
		fields := splitFields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if row == 0 {
			cols = len(fields)
		} else if len(fields) != cols {
			return nil, fmt.Errorf("traffic matrix %s: row %d has %d values, the first row %d", source, row+1, len(fields), cols)
		}
		for c, f := range fields {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				return nil, fmt.Errorf("traffic matrix %s: row %d column %d: %q is not a byte count", source, row+1, c+1, f)
			}
			scaled := v * scale
			if scaled >= math.MaxInt64/2 {
				return nil, fmt.Errorf("traffic matrix %s: row %d column %d: %g×%g bytes is too large", source, row+1, c+1, v, scale)
			}
			vals = append(vals, int64(scaled)&^15)
		}
		row++
		if row > cols {
			break
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("traffic matrix %s: a line is longer than 64 MiB", source)
		}
		return nil, fmt.Errorf("traffic matrix %s: %w", source, err)
	}
	rows := 0
	if cols > 0 {
		rows = len(vals) / cols
	}
	switch {
	case cols == 0:
		return nil, fmt.Errorf("traffic matrix %s is empty", source)
	case rows != cols:
		return nil, fmt.Errorf("traffic matrix %s must be square (got %d rows of %d values)", source, rowsIn(sc, rows), cols)
	}
	// A rank's bytes are a row's or a column's sum; past 2^62 they
	// would wrap around in the byte counts.
	sent, received := make([]float64, cols), make([]float64, cols)
	for i, v := range vals {
		sent[i/cols] += float64(v)
		received[i%cols] += float64(v)
	}
	for r := range cols {
		if sent[r] > 1<<62 || received[r] > 1<<62 {
			return nil, fmt.Errorf("traffic matrix %s: rank %d sends or receives more bytes than can be counted", source, r+1)
		}
	}
	return &Traffic{Matrix: vals, Dim: cols, Scale: scale, Source: source}, nil
}

// rowsIn counts the remaining non-empty lines after the ones read, for the
// message about a matrix with too many rows.
func rowsIn(sc *bufio.Scanner, read int) int {
	for sc.Scan() {
		if len(splitFields(sc.Text())) > 0 {
			read++
		}
	}
	return read
}

// splitFields splits a line at C's whitespace (space, tab, CR, VT, FF).
func splitFields(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		space := i == len(s) || s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\v' || s[i] == '\f'
		switch {
		case space && start >= 0:
			out = append(out, s[start:i])
			start = -1
		case !space && start < 0:
			start = i
		}
	}
	return out
}
