package main

import (
	"math"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// maxSeconds is the longest time a flag may give: what a time.Duration
// holds, so that a huge -T is refused instead of wrapping to a negative
// duration.
var maxSeconds = float64(math.MaxInt64) / float64(time.Second)

// finiteFlags refuses NaN and infinities in every floating-point flag that
// was set. A NaN compares false with everything, so a NaN threshold or
// floor silently turns its check off, and an infinite time never ends.
func finiteFlags(fs *pflag.FlagSet) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err != nil || f.Value.Type() != "float64" {
			return
		}
		if v, perr := strconv.ParseFloat(f.Value.String(), 64); perr == nil && !finite(v) {
			err = usagef("--%s must be a finite number (got %s)", f.Name, f.Value.String())
		}
	})
	return err
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// seconds turns a flag's seconds into a duration, refusing negative
// values and more than a duration holds; name is the flag as the user
// wrote it (-T, --grace).
func seconds(name string, v float64) (time.Duration, error) {
	switch {
	case !finite(v):
		return 0, usagef("%s must be a finite number of seconds (got %g)", name, v)
	case v < 0:
		return 0, usagef("%s cannot be negative (got %g)", name, v)
	case v >= maxSeconds:
		return 0, usagef("%s %g is too long (at most %.0f seconds)", name, v, maxSeconds)
	}
	return time.Duration(v * float64(time.Second)), nil
}

// parseEnvFloat reads a finite number from an environment variable.
func parseEnvFloat(name, v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !finite(f) {
		return 0, usagef("%s=%q is not a finite number", name, v)
	}
	return f, nil
}
