package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

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
