package nccl

import (
	"encoding/binary"
	"math"
)

// Unset leaves a config field to NCCL's default (NCCL_CONFIG_UNDEF_INT).
const Unset = math.MinInt32

// configMagic is NCCL_API_MAGIC, which NCCL checks in every config.
const configMagic = 0xcafebeef

// Config is ncclConfig_t. Fields left Unset (or "") keep NCCL's defaults;
// fields the loaded NCCL predates are not sent at all. Start from
// DefaultConfig: the zero value sets every integer to 0.
type Config struct {
	Blocking            int
	CGAClusterSize      int
	MinCTAs             int
	MaxCTAs             int
	NetName             string
	SplitShare          int
	TrafficClass        int
	CommName            string
	CollnetEnable       int
	CTAPolicy           int
	ShrinkShare         int
	NvlsCTAs            int
	NChannelsPerNetPeer int
	NvlinkCentricSched  int
	GraphUsageMode      int
	NumRmaCtx           int
	MaxP2pPeers         int
	GraphStreamOrdering int
}

// DefaultConfig is NCCL_CONFIG_INITIALIZER: everything unset.
func DefaultConfig() Config {
	return Config{Unset, Unset, Unset, Unset, "", Unset, Unset, "", Unset, Unset, Unset, Unset, Unset, Unset, Unset, Unset, Unset, Unset}
}

// configField is one member of ncclConfig_t and the release that added it.
// The struct only grows at the end, and NCCL resets members newer than the
// version a caller states, so an older layout is sent with its own version.
type configField struct {
	name  string
	since Version
	ptr   bool // const char*
	get   func(*Config) (int, string)
}

var configFields = []configField{
	{"blocking", V(2, 14, 0), false, func(c *Config) (int, string) { return c.Blocking, "" }},
	{"cgaClusterSize", V(2, 17, 0), false, func(c *Config) (int, string) { return c.CGAClusterSize, "" }},
	{"minCTAs", V(2, 17, 0), false, func(c *Config) (int, string) { return c.MinCTAs, "" }},
	{"maxCTAs", V(2, 17, 0), false, func(c *Config) (int, string) { return c.MaxCTAs, "" }},
	{"netName", V(2, 17, 0), true, func(c *Config) (int, string) { return 0, c.NetName }},
	{"splitShare", V(2, 18, 0), false, func(c *Config) (int, string) { return c.SplitShare, "" }},
	{"trafficClass", V(2, 25, 0), false, func(c *Config) (int, string) { return c.TrafficClass, "" }},
	{"commName", V(2, 27, 0), true, func(c *Config) (int, string) { return 0, c.CommName }},
	{"collnetEnable", V(2, 27, 0), false, func(c *Config) (int, string) { return c.CollnetEnable, "" }},
	{"CTAPolicy", V(2, 27, 0), false, func(c *Config) (int, string) { return c.CTAPolicy, "" }},
	{"shrinkShare", V(2, 27, 0), false, func(c *Config) (int, string) { return c.ShrinkShare, "" }},
	{"nvlsCTAs", V(2, 27, 0), false, func(c *Config) (int, string) { return c.NvlsCTAs, "" }},
	{"nChannelsPerNetPeer", V(2, 28, 0), false, func(c *Config) (int, string) { return c.NChannelsPerNetPeer, "" }},
	{"nvlinkCentricSched", V(2, 28, 0), false, func(c *Config) (int, string) { return c.NvlinkCentricSched, "" }},
	{"graphUsageMode", V(2, 29, 0), false, func(c *Config) (int, string) { return c.GraphUsageMode, "" }},
	{"numRmaCtx", V(2, 29, 0), false, func(c *Config) (int, string) { return c.NumRmaCtx, "" }},
	{"maxP2pPeers", V(2, 30, 0), false, func(c *Config) (int, string) { return c.MaxP2pPeers, "" }},
	{"graphStreamOrdering", V(2, 30, 5), false, func(c *Config) (int, string) { return c.GraphStreamOrdering, "" }},
}

// ConfigLayout is ncclConfig_t as one NCCL release defines it, on LP64.
type ConfigLayout struct {
	Version Version        // the release whose layout this is, sent as config.version
	Size    int            // sizeof(ncclConfig_t)
	Offsets map[string]int // byte offset of every member
	fields  []configField
}

// LayoutFor returns the newest layout that a library of version have
// understands, or ok=false before 2.14, which has no config.
func LayoutFor(have Version) (l ConfigLayout, ok bool) {
	if have < V(2, 14, 0) {
		return l, false
	}
	l.Offsets = map[string]int{"size": 0, "magic": 8, "version": 12}
	off := 16
	for _, f := range configFields {
		if f.since > have {
			break
		}
		align := 4
		if f.ptr {
			align = 8
		}
		off = (off + align - 1) &^ (align - 1)
		l.Offsets[f.name] = off
		off += align
		l.fields = append(l.fields, f)
		l.Version = f.since
	}
	l.Size = (off + 7) &^ 7
	return l, true
}

// Encode lays the config out in l's format. The returned strings go into
// the pointer members at the given offsets; the caller stores C copies
// there (a Go byte slice cannot hold C pointers).
func (l ConfigLayout) Encode(c Config) (buf []byte, strs map[int]string) {
	buf = make([]byte, l.Size)
	binary.LittleEndian.PutUint64(buf[0:], uint64(l.Size))
	binary.LittleEndian.PutUint32(buf[8:], configMagic)
	binary.LittleEndian.PutUint32(buf[12:], uint32(l.Version))
	strs = map[int]string{}
	for _, f := range l.fields {
		off := l.Offsets[f.name]
		n, s := f.get(&c)
		if f.ptr {
			if s != "" {
				strs[off] = s
			}
			continue // NULL is the unset pointer
		}
		binary.LittleEndian.PutUint32(buf[off:], uint32(int32(n)))
	}
	return buf, strs
}
