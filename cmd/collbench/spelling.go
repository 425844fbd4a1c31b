package main

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/collbench/collbench/setting"
	"github.com/spf13/pflag"
)

// settingFlags are the command line's spellings of the settings that the
// libraries' messages name ({Name}, package setting): a library names what
// a Go program sets, the command line says the flag that sets it.
var settingFlags = map[string]string{
	"ARBytes":       "--allreduce-size",
	"Agg":           "-m",
	"AllPairs":      "--all-pairs",
	"Average":       "-a",
	"Backend":       "--backend",
	"Baseline":      "--baseline",
	"Blocking":      "-z",
	"Budget":        "--budget",
	"CPUTime":       "-C",
	"CTAPolicy":     "-x",
	"Check":         "-c",
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
	"Op":            "-o",
	"Output":        "-o",
	"OverlapGEMMs":  "--overlap-gemm",
	"OverlapTarget": "--overlap-target",
	"PairBytes":     "--pair-size",
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

// flagOf spells a setting as its flag; a name with none stays the name.
func flagOf(name string) string {
	if f, ok := settingFlags[name]; ok {
		return f
	}
	return name
}

// changed says whether the flag that spells a setting was given on fs:
// the libraries ask by the setting's name.
func changed(fs *pflag.FlagSet) func(name string) bool {
	return func(name string) bool {
		f, ok := settingFlags[name]
		switch {
		case !ok:
			return false
		case strings.HasPrefix(f, "--"):
			return fs.Changed(f[2:])
		}
		flag := fs.ShorthandLookup(f[1:])
		return flag != nil && flag.Changed
	}
}

// errText is an error as the command line prints it: every setting its
// messages name spelled as the flag, and an interruption called one (Go's
// "context canceled" says nothing to whoever pressed Ctrl-C).
func errText(err error) string {
	text := setting.Spell(err, flagOf)
	if errors.Is(err, context.Canceled) {
		text = strings.ReplaceAll(text, context.Canceled.Error(), "interrupted")
	}
	return text
}

// spelling is a writer that spells the settings named in each write as
// flags: for the reports and the doctor's text, which name settings in
// whole lines written at once.
type spelling struct{ w io.Writer }

func (s spelling) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, setting.Marks(string(p), flagOf)); err != nil {
		return 0, err
	}
	return len(p), nil
}
