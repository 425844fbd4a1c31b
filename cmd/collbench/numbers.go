package main

import (
	"strconv"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/run"
)

// finiteFlags refuses NaN and infinities in every floating-point flag that
// was set. A NaN compares false with everything, so a NaN threshold or
// floor silently turns its check off, and an infinite time never ends.
func finiteFlags(fs *pflag.FlagSet) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err != nil || f.Value.Type() != "float64" {
			return
		}
		if v, perr := strconv.ParseFloat(f.Value.String(), 64); perr == nil && !run.Finite(v) {
			err = usagef("--%s must be a finite number (got %s)", f.Name, f.Value.String())
		}
	})
	return err
}
