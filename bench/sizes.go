package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/collbench/collbench/setting"
)

// ParseSize reads a byte count as nccl-tests does: a decimal number with an
// optional binary suffix K, M or G (either case), e.g. "8", "1.5M", "16G".
// The result is truncated to whole bytes; negative, non-finite and
// over-large values are errors.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty size")
	}
	mult := 1.0
	switch t[len(t)-1] {
	case 'K', 'k':
		mult = 1 << 10
	case 'M', 'm':
		mult = 1 << 20
	case 'G', 'g':
		mult = 1 << 30
	}
	if mult != 1 {
		t = strings.TrimSpace(t[:len(t)-1])
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("invalid size %q (use bytes with an optional K, M or G suffix)", s)
	}
	v *= mult
	if v < 0 {
		return 0, fmt.Errorf("invalid size %q: sizes cannot be negative", s)
	}
	if v >= 1<<62 {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return int64(v), nil
}

// FormatSize renders a byte count with the largest binary suffix that
// divides it exactly, so ParseSize(FormatSize(n)) == n.
func FormatSize(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n != 0 && n%u.v == 0 {
			return strconv.FormatInt(n/u.v, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}

// Sweep is a range of message sizes, stepped as nccl-tests steps them.
type Sweep struct {
	Min, Max int64
	Factor   int64 // multiplicative step when > 1
	Step     int64 // additive step otherwise
}

// Sizes lists the sizes of the sweep: Min, then ×Factor (or +Step) while
// not above Max.
func (s Sweep) Sizes() []int64 {
	var out []int64
	for size := s.Min; size <= s.Max; {
		out = append(out, size)
		next := size + s.Step
		if s.Factor > 1 {
			if size > math.MaxInt64/s.Factor {
				break
			}
			next = size * s.Factor
		}
		if next <= size {
			break
		}
		size = next
	}
	return out
}

// WarmupSizes are the sizes nccl-tests warms up at: Min doubling to Max,
// whatever the step.
func (s Sweep) WarmupSizes() []int64 {
	return Sweep{Min: s.Min, Max: s.Max, Factor: 2}.Sizes()
}

// Validate reports a sweep that is empty or would never end.
func (s Sweep) Validate() error {
	switch {
	case s.Min <= 0:
		return fmt.Errorf("minimum size must be positive (got %d)", s.Min)
	case s.Max <= 0:
		return fmt.Errorf("maximum size must be positive (got %d)", s.Max)
	case s.Min > s.Max:
		return fmt.Errorf("minimum size %d is larger than maximum size %d", s.Min, s.Max)
	case s.Factor <= 1 && s.Step <= 0:
		return setting.Errorf("step must be positive when the step factor is 1 (got {StepBytes} %d)", s.Step)
	}
	return nil
}
