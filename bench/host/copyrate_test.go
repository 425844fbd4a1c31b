package host

import "testing"

// The copy rate is a rate: positive and below what any memory moves.
func TestCopyRate(t *testing.T) {
	if r := CopyRate(); !(r > 0.05 && r < 10000) {
		t.Errorf("copy rate %v GB/s", r)
	}
}
