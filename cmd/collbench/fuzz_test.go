package main

import (
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
)

// FuzzFlags feeds arbitrary command lines to the flag parser and option
// builder: they must return an error or a valid configuration, never panic.
func FuzzFlags(f *testing.F) {
	for _, s := range []string{
		"-b 8 -e 128M -f 2 -g 4", "-r -1 -d all -o all", "-b 1.5K -e 0x10", "-n 0x10 -z 3 -G 1",
		"--minbytes=1G --maxbytes=1K", "-T -1", "-d f8e4m3 -o mulsum -a 3", "-- -b",
	} {
		f.Add("broadcast", s)
	}
	f.Fuzz(func(t *testing.T, coll, line string) {
		c, err := bench.LookupCollective(coll)
		if err != nil {
			c = bench.Collectives[0]
		}
		fl := newFlags(c)
		if err := parseMeasuring(fl, strings.Fields(line)); err != nil {
			return
		}
		o, err := fl.options(c)
		if err != nil {
			return
		}
		if o, err = o.Validate(fl.NGPUs); err != nil {
			return
		}
		if o.Sweep.Min <= 0 || o.Sweep.Min > o.Sweep.Max || o.Iters < 1 || len(o.Types) == 0 {
			t.Fatalf("invalid options accepted from %q: %+v", line, o)
		}
	})
}
