package main

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/collbench/collbench/setting"
	"github.com/spf13/pflag"
)

// settingFlags are the command line's spellings of the settings that the
// libraries' messages name ({Name}, package setting): a library names what
// a Go program sets, the command line says the flag that sets it. A
// setting whose flag differs between commands lists each spelling, "|"
// between them, the one the running command registers chosen (spell).
var settingFlags = map[string]string{
	"ARBytes":       "--allreduce-size",
	"Agg":           "-m",
	"Alpha":         "--alpha",
	"AllPairs":      "--all-pairs",
	"Average":       "-a",
	"Backend":       "--backend",
	"Baseline":      "--baseline",
	"Blocking":      "-z",
	"Budget":        "--budget",
	"Partial":       "--partial",
	"CPUTime":       "-C",
	"CTAPolicy":     "-x",
	"Check":         "-c",
	"Bitwise":       "-B",
	"Repeats":       "--repeats",
	"OrderInputs":   "--order-inputs",
	"KeepOutputs":   "--keep-outputs",
	"Coll":          "--coll",
	"Colls":         "--colls",
	"CommPriority":  "--comm-priority",
	"CommType":      "--comm-type",
	"Copies":        "--copy",
	"Cover":         "--cover",
	"Cycles":        "-N",
	"DType":         "--dtype",
	"DataType":      "-d",
	"Devices":       "--devices",
	"Draws":         "--draws",
	"Expect":        "--expect",
	"Format":        "--format",
	"GEMMs":         "--gemm",
	"GalvatronBW":   "--galvatron-bw",
	"SimAIBW":       "--simai-bw",
	"Graph":         "-G",
	"GroupSize":     "--group-size",
	"GroupSizes":    "--group-sizes",
	"Hidden":        "--hidden",
	"Isolated":      "--isolated",
	"IterSkip":      "-K",
	"IterTiming":    "-I",
	"Iters":         "-n",
	"JSON":          "--json",
	"JSONFile":      "-J",
	"Judge":         "--judge",
	"Layers":        "--layers",
	"Layout":        "--layout",
	"Layouts":       "--layouts",
	"Matrix":        "--matrix",
	"MaxBytes":      "-e",
	"MaxCTAs":       "--nccl-max-ctas",
	"MemoryReport":  "-M",
	"Metric":        "--metric",
	"MinBytes":      "-b",
	"MinCTAs":       "--nccl-min-ctas",
	"MinDrop":       "--min-drop",
	"MinIters":      "--min-iters",
	"MoE":           "--moe",
	"Model":         "--model",
	"NCCLLib":       "--nccl-lib",
	"NoOverlap":     "--no-overlap",
	"OTLPEndpoint":  "--otlp-endpoint",
	"Only":          "--only",
	"Op":            "-o|--op", // the sweeps' and overlap's -o (nccl-tests'); profile's --op, as its -o is its output
	"Output":        "-o",
	"OverlapGEMMs":  "--overlap-gemm",
	"OverlapTarget": "--overlap-target",
	"PairBytes":     "--pair-size",
	"PowerWindow":   "--power-window",
	"Parallel":      "-p",
	"Passes":        "--passes",
	"Preset":        "--preset",
	"RankSummary":   "--rank-summary",
	"RanksPerProc":  "-g",
	"Register":      "-R",
	"Rendezvous":    "--rendezvous",
	"Root":          "-r",
	"Routing":       "--routing",
	"Scale":         "--matrix-scale",
	"ScreenRounds":  "--screen-rounds",
	"ScreenSeed":    "--screen-seed",
	"SimAIName":     "--simai-name",
	"Spread":        "--spread",
	"StepBytes":     "-i",
	"StepFactor":    "-f",
	"StreamNull":    "-y",
	"TFLOPS":        "--tflops",
	"Target":        "--target",
	"Threads":       "-t",
	"Timeout":       "-T",
	"Timestamps":    "-S",
	"Tokens":        "--tokens",
	"Transport":     "--transport",
	"Unalign":       "-u",
	"Warmup":        "-w",
	"Z":             "--z",
}

// spellings are a setting's flags, in settingFlags' order; none for a
// setting with no flag.
func spellings(name string) []string {
	f, ok := settingFlags[name]
	if !ok {
		return nil
	}
	return strings.Split(f, "|")
}

// defines says whether fs registers the flag f ("--name" or "-x").
func defines(fs *pflag.FlagSet, f string) *pflag.Flag {
	if fs == nil {
		return nil
	}
	if strings.HasPrefix(f, "--") {
		return fs.Lookup(f[2:])
	}
	return fs.ShorthandLookup(f[1:])
}

// spell spells a setting as the flag fs registers for it (the first of
// its spellings without fs, or when fs registers none); a name with no
// flag stays the name.
func spell(fs *pflag.FlagSet) func(name string) string {
	return func(name string) string {
		all := spellings(name)
		for _, f := range all {
			// With several spellings, a letter counts only as the
			// shorthand of one of them: profile's -o is its output.
			if flag := defines(fs, f); flag != nil && (len(all) == 1 || slices.Contains(all, "--"+flag.Name)) {
				return f
			}
		}
		if len(all) > 0 {
			return all[0]
		}
		return name
	}
}

// flagOf spells a setting as its flag, for text no command's flags apply
// to; a name with none stays the name.
func flagOf(name string) string { return spell(nil)(name) }

// changed says whether the flag that spells a setting was given on fs:
// the libraries ask by the setting's name.
func changed(fs *pflag.FlagSet) func(name string) bool {
	return func(name string) bool {
		all := spellings(name)
		for _, f := range all {
			if flag := defines(fs, f); flag != nil && flag.Changed && (len(all) == 1 || slices.Contains(all, "--"+flag.Name)) {
				return true
			}
		}
		return false
	}
}

// errText is an error as the command line prints it: every setting its
// messages name spelled as the flag, and an interruption called one (Go's
// "context canceled" says nothing to whoever pressed Ctrl-C).
func errText(err error) string { return errTextIn(nil, err) }

// errTextIn is errText with each setting spelled as the flag fs, the
// running command's, registers for it.
func errTextIn(fs *pflag.FlagSet, err error) string {
	text := setting.Spell(err, spell(fs))
	if errors.Is(err, context.Canceled) {
		text = strings.ReplaceAll(text, context.Canceled.Error(), "interrupted")
	}
	return text
}

// spelling is a writer that spells the settings named in each write as
// flags (of fs, the command's, where set): for the reports and the
// doctor's text, which name settings in whole lines written at once.
type spelling struct {
	w  io.Writer
	fs *pflag.FlagSet
}

func (s spelling) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, setting.Marks(string(p), spell(s.fs))); err != nil {
		return 0, err
	}
	return len(p), nil
}
