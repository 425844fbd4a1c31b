package bench

import (
	"reflect"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{"8", 8, false},
		{"1K", 1024, false},
		{"1k", 1024, false},
		{"32M", 32 << 20, false},
		{"2G", 2 << 30, false},
		{"1.5M", 3 << 19, false},
		{" 64 ", 64, false},
		{"0", 0, false},
		{"", 0, true},
		{"-8", 0, true},
		{"1T", 0, true},
		{"abc", 0, true},
		{"NaN", 0, true},
		{"inf", 0, true},
		{"1e30", 0, true},
		{"8MB", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"8", "1K", "32M", "1.5G", "-1", "", "1e3k", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d, a negative size", s, n)
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Fatalf("FormatSize(%d) = %q does not parse back (%d, %v)", n, FormatSize(n), back, err)
		}
	})
}

func TestSweep(t *testing.T) {
	tests := []struct {
		name   string
		s      Sweep
		sizes  []int64
		warmup []int64
	}{
		{"factor", Sweep{Min: 8, Max: 128, Factor: 2}, []int64{8, 16, 32, 64, 128}, []int64{8, 16, 32, 64, 128}},
		{"factor overshoots", Sweep{Min: 8, Max: 100, Factor: 4}, []int64{8, 32}, []int64{8, 16, 32, 64}},
		{"step", Sweep{Min: 1024, Max: 4096, Factor: 1, Step: 1024}, []int64{1024, 2048, 3072, 4096}, []int64{1024, 2048, 4096}},
		{"single", Sweep{Min: 32 << 20, Max: 32 << 20, Factor: 1, Step: 1 << 20}, []int64{32 << 20}, []int64{32 << 20}},
	}
	for _, tt := range tests {
		if got := tt.s.Sizes(); !reflect.DeepEqual(got, tt.sizes) {
			t.Errorf("%s: Sizes() = %v, want %v", tt.name, got, tt.sizes)
		}
		if got := tt.s.WarmupSizes(); !reflect.DeepEqual(got, tt.warmup) {
			t.Errorf("%s: WarmupSizes() = %v, want %v", tt.name, got, tt.warmup)
		}
	}
}

func TestSweepValidate(t *testing.T) {
	for _, s := range []Sweep{
		{Min: 0, Max: 8, Factor: 2},
		{Min: 16, Max: 8, Factor: 2},
		{Min: 8, Max: 16, Factor: 1, Step: 0},
		{Min: -1, Max: 16, Factor: 2},
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
	if err := (Sweep{Min: 8, Max: 8, Factor: 1, Step: 1}).Validate(); err != nil {
		t.Errorf("valid sweep refused: %v", err)
	}
}
