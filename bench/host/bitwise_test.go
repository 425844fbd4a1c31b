package host

import (
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
)

// flipComm flips one bit of what one local rank reads back from its
// receive buffer, at its read-th read: a call that did not repeat.
type flipComm struct {
	bench.Comm
	local, read  int
	elt, bit, sz int64
	reads        map[int]int
}

func (c *flipComm) Read(local int, buf bench.BufKind, off int64, dst []byte) error {
	if err := c.Comm.Read(local, buf, off, dst); err != nil || buf != bench.RecvBuf {
		return err
	}
	n := c.reads[local]
	c.reads[local]++
	if local == c.local && n == c.read {
		at := c.elt*c.sz + c.bit/8
		dst[at] ^= 1 << (c.bit % 8)
	}
	return nil
}

// A difference injected at a known repeat, rank, element and bit is
// found there, and only there; one injected into the reference shows in
// every repeat. With -c 0 the reads of a rank's receive buffer are the
// out-of-place reference, its repeats, then the in-place ones.
func TestBitwiseFindsAnInjectedFlip(t *testing.T) {
	ar, _ := bench.LookupCollective("allreduce")
	const repeats = 3
	cases := []struct {
		name        string
		local, read int
		elt, bit    int64
		place       string // where it shows
		want        bench.Bitwise
	}{
		{"repeat 1, rank 2", 2, 2, 37, 13, "out-of-place",
			bench.Bitwise{Repeats: repeats, Elements: 1, Bits: 1, FirstRepeat: 1, FirstRank: 2, FirstElement: 37, FirstBit: 13, FirstULPs: 1 << 13, MaxULPs: 1 << 13}},
		// A flipped sign moves a value of magnitude bits m by 2m+1 steps,
		// an odd count that the check below reads off the result.
		{"the sign bit, in place", 3, repeats + 1 + 3, 255, 31, "in-place",
			bench.Bitwise{Repeats: repeats, Elements: 1, Bits: 1, FirstRepeat: 2, FirstRank: 3, FirstElement: 255, FirstBit: 31}},
		{"the reference", 1, 0, 0, 0, "out-of-place",
			bench.Bitwise{Repeats: repeats, Elements: repeats, Bits: repeats, FirstRepeat: 0, FirstRank: 1, FirstElement: 0, FirstBit: 0, FirstULPs: 1, MaxULPs: 1}},
	}
	for _, c := range cases {
		comm := &flipComm{Comm: open(t, 4, 1<<20), local: c.local, read: c.read, elt: c.elt, bit: c.bit, sz: 4, reads: map[int]int{}}
		sum, rows := runEngine(t, comm, 4, bench.Options{Coll: ar, Sweep: bench.Sweep{Min: 1 << 10, Max: 1 << 10, Factor: 2},
			Iters: 1, Warmup: 0, Agg: 1, Cycles: 1, Check: 0, Bitwise: repeats, Types: []numeric.DataType{numeric.Float32}, Ops: []numeric.RedOp{numeric.Sum}, Root: -1})
		if len(rows) != 1 {
			t.Fatalf("%s: %d rows", c.name, len(rows))
		}
		found, clean := rows[0].OutOfPlace.Bitwise, rows[0].InPlace.Bitwise
		if c.place == "in-place" {
			found, clean = clean, found
		}
		if found != nil && c.want.FirstBit == 31 {
			if found.FirstULPs%2 != 1 || found.MaxULPs != found.FirstULPs {
				t.Errorf("%s: %d ULPs first, %d at most; a flipped sign moves a value an odd count of steps", c.name, found.FirstULPs, found.MaxULPs)
			}
			c.want.FirstULPs, c.want.MaxULPs = found.FirstULPs, found.MaxULPs
		}
		if found == nil || *found != c.want {
			t.Errorf("%s: %s found %+v, want %+v", c.name, c.place, found, c.want)
		}
		if clean == nil || !clean.Repeated() || clean.FirstRepeat != -1 || clean.FirstRank != -1 {
			t.Errorf("%s: the other placement found %+v, want nothing", c.name, clean)
		}
		if sum.BitwiseCases != 1 {
			t.Errorf("%s: %d bitwise cases, want 1", c.name, sum.BitwiseCases)
		}
	}
}

// Without -B no placement carries a bitwise check, and with it a host
// sweep of every collective repeats bit for bit.
func TestBitwiseRepeatsOnTheHost(t *testing.T) {
	for _, name := range []string{"allreduce", "reducescatter", "allgather", "alltoall", "broadcast", "reduce", "sendrecv"} {
		c, _ := bench.LookupCollective(name)
		o := bench.Options{Coll: c, Sweep: bench.Sweep{Min: 1 << 10, Max: 64 << 10, Factor: 8}, Iters: 1, Warmup: 0, Agg: 1, Cycles: 1, Check: 1,
			Types: []numeric.DataType{numeric.Float32}, Ops: []numeric.RedOp{numeric.Sum}, Root: 0}
		_, rows := runEngine(t, open(t, 3, 1<<20), 3, o)
		if rows[0].OutOfPlace.Bitwise != nil {
			t.Errorf("%s without -B: %+v", name, rows[0].OutOfPlace.Bitwise)
		}
		o.Bitwise = 2
		sum, rows := runEngine(t, open(t, 3, 1<<20), 3, o)
		for _, r := range rows {
			for _, b := range []*bench.Bitwise{r.OutOfPlace.Bitwise, r.InPlace.Bitwise} {
				if b == nil || b.Repeats != 2 || !b.Repeated() || b.FirstRepeat != -1 {
					t.Errorf("%s %d: %+v", name, r.Size, b)
				}
			}
		}
		if sum.BitwiseCases != 0 {
			t.Errorf("%s: %d bitwise cases", name, sum.BitwiseCases)
		}
	}
}
