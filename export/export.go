// Package export writes a profile in the formats planners and simulators
// read (Galvatron, Calculon, ASTRA-sim, SimAI, AIConfigurator), fitting the cost
// models each needs from the profile's curves. docs/exports.md says what
// every file holds and which versions read it.
package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/fileio"
	"github.com/collbench/collbench/model/profiled"
	"github.com/collbench/collbench/setting"
)

// Targets are the planners and simulators a profile exports to.
var Targets = []string{"galvatron", "calculon", "astra-sim", "simai", "aiconfigurator"}

// dropped are targets collbench no longer writes, and why: asking for one
// says so instead of calling it unknown.
var dropped = map[string]string{
	"alpa": "the alpa export was dropped: Alpa is archived and its cost model cannot read a profile right (docs/exports.md, \"Alpa\")",
}

// Options tune the exports; docs/exports.md explains each.
type Options struct {
	// GalvatronBW is what Galvatron's bandwidth files hold: "point:SIZE"
	// (bus bandwidth at SIZE bytes, interpolated; Galvatron's own probe
	// is 32 MiB), "asymptotic" (the fit's busbw∞) or "average" (the mean
	// over the measured sizes, as nccl-tests' "Avg bus bandwidth").
	GalvatronBW string
	// SimAIBW is what SimAI's bandwidths hold (busbw.yaml's values,
	// SimAI_analytical's -nv and -nic), the same choices: its default,
	// "asymptotic", is the curve's line's busbw. SimAI 1.x charges every
	// call S/busbw and current SimAI its all-reduces, with no latency, so
	// a point makes calls of that size exact.
	SimAIBW string
	// TP, DP, EP and PP are the group sizes SimAI's sections describe;
	// 0 picks the defaults (TP = ranks per node, DP = world/TP, EP = DP,
	// PP = 2).
	TP, DP, EP, PP int
	Name           string // SimAI's first line
	// Keep are files no export may replace: the profile it was made from.
	// An export file that is one of them fails its target, unwritten.
	Keep []string
}

// ParseTargets reads a comma-separated list of targets, or "all"; empty
// is none.
func ParseTargets(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	if s == "all" {
		return Targets, nil
	}
	var out []string
	for _, t := range strings.Split(s, ",") {
		t = strings.TrimSpace(t)
		if why, ok := dropped[t]; ok {
			return nil, errors.New(why)
		}
		if !slices.Contains(Targets, t) {
			return nil, fmt.Errorf("unknown export target %q (want %s or all)", t, strings.Join(Targets, ", "))
		}
		out = append(out, t)
	}
	return out, nil
}

// Request is the exports a person asks for: the targets by name
// (comma-separated, or all), the folder and the tuning.
type Request struct {
	Targets, Dir string
	Options
}

// Check reads the targets and the tuning.
func (r *Request) Check() error {
	if _, err := ParseTargets(r.Targets); err != nil {
		return err
	}
	if err := CheckBandwidthRef(r.GalvatronBW); err != nil {
		return setting.Errorf("{GalvatronBW}: %w", err)
	}
	if r.SimAIBW != "" {
		if err := CheckBandwidthRef(r.SimAIBW); err != nil {
			return setting.Errorf("{SimAIBW}: %w", err)
		}
	}
	for _, g := range []struct {
		name string
		n    int
	}{{"TP", r.TP}, {"DP", r.DP}, {"EP", r.EP}, {"PP", r.PP}} {
		if g.n < 0 {
			return fmt.Errorf("a SimAI %s group size cannot be negative (got %d)", g.name, g.n)
		}
		if g.n > maxGroup {
			return fmt.Errorf("a SimAI %s group size of %d is more ranks than any job has (at most %d)", g.name, g.n, maxGroup)
		}
	}
	if strings.ContainsFunc(r.Name, unicode.IsControl) {
		return setting.Errorf("{SimAIName} %q holds a control character (a new line would start a key of its own in busbw.yaml)", r.Name)
	}
	return nil
}

// maxGroup bounds a SimAI group size: far above any job's ranks.
const maxGroup = 1 << 20

// CheckDir makes sure, when there are targets, that the folder takes
// files, creating it if missing.
func (r *Request) CheckDir() error {
	if r.Targets == "" {
		return nil
	}
	return CheckDir(r.Dir)
}

// Write exports p to every target as WriteAll does.
func (r *Request) Write(ctx context.Context, p *document.Profile) ([]string, error) {
	targets, err := ParseTargets(r.Targets)
	if err != nil {
		return nil, err
	}
	return WriteAll(ctx, p, targets, r.Dir, r.Options)
}

// CheckDir makes sure dir takes files, creating it if missing, before
// anything is measured.
func CheckDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return fileio.Check(filepath.Join(dir, ".collbench-probe"))
}

// TargetError is an export target that could not be made, and why.
type TargetError struct {
	Target string
	Err    error
}

func (e *TargetError) Error() string { return e.Target + " export: " + e.Err.Error() }
func (e *TargetError) Unwrap() error { return e.Err }

// WriteAll writes every target's files into dir and returns their paths.
// Targets are independent: one that cannot be made (a curve missing, a
// file that cannot be written) is a *TargetError in the joined error and
// the others are still written. Only the end of ctx stops it early.
func WriteAll(ctx context.Context, p *document.Profile, targets []string, dir string, o Options) ([]string, error) {
	var all []string
	var failed []error
	for _, t := range targets {
		files, err := Write(ctx, p, t, dir, o)
		all = append(all, files...)
		if ctx.Err() != nil {
			return all, ctx.Err()
		}
		if err != nil {
			failed = append(failed, err)
		}
	}
	return all, errors.Join(failed...)
}

// Failures lists the targets WriteAll could not make.
func Failures(err error) []*TargetError {
	var out []*TargetError
	var one *TargetError
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			out = append(out, Failures(e)...)
		}
	} else if errors.As(err, &one) {
		out = append(out, one)
	}
	return out
}

// Write writes the files of target into dir and returns their paths.
// Every file is written whole or not at all; a failure is a *TargetError.
func Write(ctx context.Context, p *document.Profile, target, dir string, o Options) ([]string, error) {
	var files []exportFile
	var err error
	switch target {
	case "galvatron":
		files, err = galvatronFiles(p, o)
	case "calculon":
		files, err = calculonFiles(p)
	case "astra-sim":
		files, err = astraFiles(p)
	case "simai":
		if files, err = simaiFiles(p, o); err == nil {
			var current []exportFile
			current, err = simaiAnalyticalFiles(p, o)
			files = append(files, current...)
		}
	case "aiconfigurator":
		files, err = aiconfiguratorFiles(p)
	default:
		return nil, fmt.Errorf("unknown export target %q (want %s)", target, strings.Join(Targets, ", "))
	}
	if err != nil {
		return nil, &TargetError{target, err}
	}
	paths, err := writeFiles(ctx, files, dir, o.Keep)
	if err == nil {
		err = recordProvenance(ctx, dir, target, p, o.Keep)
	}
	if err != nil && ctx.Err() == nil {
		err = &TargetError{target, err}
	}
	return paths, err
}

// writeFiles writes the files into dir, each whole or not at all, after
// checking that none would overwrite a file of keep (fileio.Distinct).
func writeFiles(ctx context.Context, files []exportFile, dir string, keep []string) ([]string, error) {
	for _, f := range files {
		if err := fileio.Local(f.name); err != nil {
			return nil, err
		}
		if err := fileio.Distinct(filepath.Join(dir, f.name), keep); err != nil {
			return nil, err
		}
	}
	var paths []string
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return paths, context.Cause(ctx)
		}
		path := filepath.Join(dir, f.name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return paths, err
		}
		// The names are the planners', in a folder given for them: an
		// entry found under one (a link, a FIFO) is replaced, not
		// followed.
		if err := fileio.ReplaceEntry(path, f.data); err != nil {
			return paths, err
		}
		if f.exec {
			if err := os.Chmod(path, 0o755); err != nil {
				return paths, err
			}
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// exportFile is one file of an export, rendered.
type exportFile struct {
	name string
	data []byte
	exec bool
}

// field is one key of a JSON object written in a fixed order, so exports
// read like the planners' own files and golden tests stay stable.
type field struct {
	key string
	val any // float64, int, string, nil, []field (an object) or []any
}

// orderedJSON renders fields as an indented JSON object.
func orderedJSON(fields []field) []byte {
	var b bytes.Buffer
	writeObject(&b, fields, "")
	b.WriteByte('\n')
	return b.Bytes()
}

func writeObject(b *bytes.Buffer, fields []field, indent string) {
	if len(fields) == 0 {
		b.WriteString("{}")
		return
	}
	b.WriteString("{\n")
	for i, f := range fields {
		b.WriteString(indent + "    " + strconv.Quote(f.key) + ": ")
		writeValue(b, f.val, indent+"    ")
		if i < len(fields)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(indent + "}")
}

func writeValue(b *bytes.Buffer, v any, indent string) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case float64:
		b.WriteString(num(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		b.WriteString(strconv.Quote(x))
	case []field:
		writeObject(b, x, indent)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, e, indent)
		}
		b.WriteByte(']')
	default:
		panic(fmt.Sprintf("orderedJSON: unsupported %T", v))
	}
}

// num formats a figure with 6 significant digits, the precision the
// measurements carry.
func num(x float64) string {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return "0"
	}
	return strconv.FormatFloat(x, 'g', 6, 64)
}

// mibPerMs converts GB/s (1e9 B/s) to Galvatron's MiB/ms: 1 GB/s is
// 1e9/2^20/1e3 = 0.953674 MiB/ms.
func mibPerMs(gbps float64) float64 { return gbps * 1e9 / (1 << 20) / 1e3 }

// bandwidthRef is a parsed GalvatronBW choice: "asymptotic", "average"
// or "point" at size bytes.
type bandwidthRef struct {
	kind string
	size int64
}

func parseBandwidthRef(how string) (bandwidthRef, error) {
	switch {
	case how == "asymptotic" || how == "average":
		return bandwidthRef{kind: how}, nil
	case strings.HasPrefix(how, "point:"):
		size, err := bench.ParseSize(strings.TrimPrefix(how, "point:"))
		if err != nil || size <= 0 {
			return bandwidthRef{}, fmt.Errorf("bandwidth reference %q: want point:SIZE with a positive size", how)
		}
		return bandwidthRef{kind: "point", size: size}, nil
	}
	return bandwidthRef{}, fmt.Errorf("unknown bandwidth reference %q (want point:SIZE, asymptotic or average)", how)
}

// CheckBandwidthRef validates a GalvatronBW choice before anything runs.
func CheckBandwidthRef(how string) error {
	_, err := parseBandwidthRef(how)
	return err
}

// busbw is a curve's bus bandwidth under the reference, read from the
// curve every consumer charges (model.Curve: outliers replaced by the
// fit, made non-decreasing): at a point as it interpolates, its fit's
// busbw∞, or the mean over its sizes.
func (r bandwidthRef) busbw(c *document.ProfileCurve) (float64, error) {
	m, err := profiled.Curve(c)
	if err != nil {
		return 0, err
	}
	switch r.kind {
	case "asymptotic":
		return m.Fit.BusBWInf, nil
	case "average":
		var sum float64
		for _, b := range m.Bytes {
			sum += m.BusBW(b)
		}
		return sum / float64(len(m.Bytes)), nil
	}
	return m.BusBW(float64(r.size)), nil
}

// halvings lists n = world, world/2, … down to 2, the group sizes the
// planners sweep.
func halvings(world int) []int {
	var out []int
	for n := world; n >= 2 && world%n == 0; n /= 2 {
		out = append(out, n)
		if n%2 != 0 {
			break
		}
	}
	return out
}

// fileNames are the names (shell patterns, relative to the folder) each
// target writes, whatever the profile.
var fileNames = map[string][]string{
	"galvatron":      {"allreduce_bandwidth_*", "p2p_bandwidth_*", "sp_time_*", "overlap_coefficient.json"},
	"calculon":       {"calculon_networks.json"},
	"astra-sim":      {"astra_network.yml", "astra_network_congestion_aware.yml", "astra_system.json", "astra_remote_memory.json", "astra_network.json"},
	"simai":          {"busbw.yaml", "simai_analytical.args", SimAIRatioDir + "*"},
	"aiconfigurator": {"nccl_perf.txt", "comm/nccl/*/" + AIConfiguratorTable, "comm/nccl/*/collection_meta.yaml"},
}

// Collides says which of targets would write a file at path when exporting
// into dir ("" none): known before anything is measured, so that a
// profile is not written only to be replaced by its own export.
func Collides(targets []string, dir, path string) string {
	rel, err := relativeTo(dir, path)
	if err != nil {
		return ""
	}
	for _, t := range targets {
		if rel == ProvenanceFile {
			return t // every target records itself there
		}
		for _, pattern := range fileNames[t] {
			if ok, _ := filepath.Match(pattern, rel); ok {
				return t
			}
		}
	}
	return ""
}

// relativeTo is path's name inside dir, both made absolute (links in the
// folders followed where they exist).
func relativeTo(dir, path string) (string, error) {
	abs := func(p string) (string, error) {
		a, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		if r, err := filepath.EvalSymlinks(a); err == nil {
			return r, nil
		}
		return a, nil
	}
	d, err := abs(dir)
	if err != nil {
		return "", err
	}
	pd, err := abs(filepath.Dir(path))
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(d, filepath.Join(pd, filepath.Base(path)))
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("outside")
	}
	return rel, nil
}
