package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/cluster"
	"github.com/collbench/collbench/fileio"
)

// perProcessFlags may differ between a job's processes: where each one
// writes or shows what it writes, how it finds its own GPUs and
// libraries, and where it meets the others.
var perProcessFlags = []string{"output", "output_file", "export-dir", "logs", "heatmap", "galvatron", "measured",
	"keep-outputs", "rendezvous", "devices", "nccl-lib", "otlp-endpoint", "format", "columns", "quiet", "help"}

// agreedSettings are what every process of a job must have been started
// with alike: the command, collbench's version, every other flag's value,
// and for a flag that names files, their contents (the path may differ
// from host to host; what is read there may not). The rendezvous compares
// them with rank 0's before anything runs.
func agreedSettings(fs *pflag.FlagSet) []cluster.Setting {
	out := []cluster.Setting{{Name: "collbench version", Value: version}, {Name: "the command", Value: fs.Name()}}
	out = append(out, agreedEnvironment(os.Getenv)...)
	fs.VisitAll(func(f *pflag.Flag) {
		if slices.Contains(perProcessFlags, f.Name) {
			return
		}
		name := "--" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand
		}
		if contents, ok := fileContents(f); ok {
			out = append(out, cluster.Setting{Name: "the contents of " + name, Value: contents})
			return
		}
		out = append(out, cluster.Setting{Name: name, Value: f.Value.String()})
	})
	return out
}

// agreedVariables change what every call runs as much as a flag does:
// the host backend's algorithm, segment, model and tuner file, NCCL's
// algorithm, protocol and tuner file. Ranks that differ in them would time
// two algorithms as one result, or fail the check as if the library were
// wrong. Variables that say where a process logs or finds its devices are
// its own (COLLBENCH_HOST_TUNING_LOG, NCCL_DEBUG_FILE, NCCL_SOCKET_IFNAME).
var agreedVariables = []struct {
	name string
	file bool // names a file: its contents are agreed, not its path
}{
	{host.AlgoVar, false}, {host.SegmentVar, false}, {host.DoublingMaxVar, false}, {host.TunerFileVar, true},
	{"NCCL_ALGO", false}, {"NCCL_PROTO", false}, {"NCCL_TUNER_CONFIG_FILE", true},
}

// agreedEnvironment is the agreed variables this process was started with,
// each under its own name; one that is unset is left out, so a rank that
// lacks it is named as started without it.
func agreedEnvironment(getenv func(string) string) []cluster.Setting {
	var out []cluster.Setting
	for _, v := range agreedVariables {
		value := getenv(v.name)
		if value == "" {
			continue
		}
		if fi, err := os.Stat(value); v.file && err == nil && fi.Mode().IsRegular() {
			if sum := contentsDigest(value); sum != "" {
				out = append(out, cluster.Setting{Name: "the contents of " + v.name, Value: sum})
				continue
			}
		}
		out = append(out, cluster.Setting{Name: v.name, Value: value})
	}
	return out
}

// fileContents stands for a string flag whose values name regular files:
// each file's digest in their order; ok is false when a value names none.
func fileContents(f *pflag.Flag) (string, bool) {
	var values []string
	switch v := f.Value.(type) {
	case pflag.SliceValue:
		values = v.GetSlice()
	default:
		if f.Value.Type() != "string" {
			return "", false
		}
		values = []string{f.Value.String()}
	}
	if len(values) == 0 {
		return "", false
	}
	sums := make([]string, len(values))
	for i, p := range values {
		fi, err := os.Stat(p)
		if p == "" || err != nil || !fi.Mode().IsRegular() {
			return "", false
		}
		if sums[i] = contentsDigest(p); sums[i] == "" {
			return "", false
		}
	}
	return strings.Join(sums, ","), true
}

// contentsDigest is a short digest of a file's first fileio.MaxInput
// bytes; "" when it cannot be read.
func contentsDigest(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, fileio.MaxInput)); err != nil {
		return ""
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
}
