package nccl

import (
	"encoding/binary"
	"testing"
)

// TestConfigLayouts checks sizeof and member offsets of ncclConfig_t per
// release against the structs in those releases' nccl.h (LP64).
func TestConfigLayouts(t *testing.T) {
	tests := []struct {
		have    Version
		version Version
		size    int
		offsets map[string]int
		absent  []string
	}{
		{V(2, 14, 3), V(2, 14, 0), 24, map[string]int{"blocking": 16}, []string{"minCTAs"}},
		{V(2, 17, 1), V(2, 17, 0), 40, map[string]int{"cgaClusterSize": 20, "maxCTAs": 28, "netName": 32}, []string{"splitShare"}},
		{V(2, 21, 5), V(2, 18, 0), 48, map[string]int{"splitShare": 40}, []string{"trafficClass"}},
		{V(2, 26, 2), V(2, 25, 0), 48, map[string]int{"trafficClass": 44}, []string{"commName"}},
		{V(2, 27, 3), V(2, 27, 0), 72, map[string]int{"commName": 48, "collnetEnable": 56, "nvlsCTAs": 68}, []string{"nvlinkCentricSched"}},
		{V(2, 28, 3), V(2, 28, 0), 80, map[string]int{"nChannelsPerNetPeer": 72, "nvlinkCentricSched": 76}, []string{"graphUsageMode"}},
		{V(2, 29, 7), V(2, 29, 0), 88, map[string]int{"graphUsageMode": 80, "numRmaCtx": 84}, []string{"maxP2pPeers"}},
		{V(2, 30, 7), V(2, 30, 5), 96, map[string]int{"maxP2pPeers": 88, "graphStreamOrdering": 92}, nil},
		{V(2, 40, 0), V(2, 30, 5), 96, map[string]int{"graphStreamOrdering": 92}, nil},
	}
	for _, tt := range tests {
		l, ok := LayoutFor(tt.have)
		if !ok {
			t.Fatalf("%s: no layout", tt.have)
		}
		if l.Version != tt.version || l.Size != tt.size {
			t.Errorf("%s: layout %s of %d bytes, want %s of %d", tt.have, l.Version, l.Size, tt.version, tt.size)
		}
		for name, off := range tt.offsets {
			if got, ok := l.Offsets[name]; !ok || got != off {
				t.Errorf("%s: %s at %d (present %v), want %d", tt.have, name, got, ok, off)
			}
		}
		for _, name := range tt.absent {
			if _, ok := l.Offsets[name]; ok {
				t.Errorf("%s: %s is in the layout but that release lacks it", tt.have, name)
			}
		}
	}
	if _, ok := LayoutFor(V(2, 13, 4)); ok {
		t.Errorf("2.13 has no ncclConfig_t")
	}
}

func TestConfigEncode(t *testing.T) {
	l, _ := LayoutFor(V(2, 28, 3))
	cfg := DefaultConfig()
	cfg.NvlinkCentricSched = 1
	cfg.MaxCTAs = 16
	cfg.CommName = "dp"
	buf, strs := l.Encode(cfg)
	u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(buf[off:]) }
	if binary.LittleEndian.Uint64(buf) != 80 || u32(8) != 0xcafebeef || u32(12) != uint32(V(2, 28, 0)) {
		t.Errorf("header: size %d magic %#x version %d", binary.LittleEndian.Uint64(buf), u32(8), u32(12))
	}
	if u32(76) != 1 || u32(28) != 16 {
		t.Errorf("nvlinkCentricSched %d maxCTAs %d, want 1 and 16", u32(76), u32(28))
	}
	if int32(u32(16)) != Unset || int32(u32(24)) != Unset {
		t.Errorf("unset members must hold INT_MIN (NCCL_CONFIG_UNDEF_INT)")
	}
	if binary.LittleEndian.Uint64(buf[32:]) != 0 {
		t.Errorf("an unset netName must be NULL")
	}
	if len(strs) != 1 || strs[48] != "dp" {
		t.Errorf("strings %v, want commName at 48", strs)
	}
}
