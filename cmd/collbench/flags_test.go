package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/healthcheck"
	"github.com/collbench/collbench/run"
)

// Every floating-point flag and variable refuses NaN and infinities, and
// the small range mistakes a user makes are one usage line, not a silent
// default.
func TestNonFiniteAndRangeRefused(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"compare threshold NaN", nil, []string{"compare", "--threshold", "NaN", "a.json", "b.json"}, "--threshold must be a finite number"},
		{"compare alpha NaN", nil, []string{"compare", "--alpha", "nan", "a.json", "b.json"}, "--alpha must be a finite number"},
		{"compare floor NaN", nil, []string{"compare", "--min-busbw", "NaN", "a.json", "b.json"}, "--min-busbw must be a finite number"},
		{"compare floor Inf", nil, []string{"compare", "--min-busbw", "+Inf", "a.json", "b.json"}, "--min-busbw must be a finite number"},
		{"env floor NaN", map[string]string{"NCCL_TESTS_MIN_BW": "NaN"}, []string{"compare", "a.json", "b.json"}, "NCCL_TESTS_MIN_BW=\"NaN\" is not a finite number"},
		{"overlap target NaN", nil, []string{"overlap", "--target", "NaN"}, "--target must be a finite number"},
		{"overlap cover Inf", nil, []string{"overlap", "--cover", "Inf"}, "--cover must be a finite number"},
		{"profile overlap target NaN", nil, []string{"profile", "--overlap-target", "NaN"}, "--overlap-target must be a finite number"},
		{"profile power window NaN", nil, []string{"profile", "--power-window", "NaN"}, "--power-window must be a finite number"},
		{"profile power window negative", nil, []string{"profile", "--backend", "host", "-g", "2", "--power-window", "-1"}, "--power-window must be 0 (not read) or between 0.1 and 60 seconds"},
		{"profile power window too short to sample", nil, []string{"profile", "--backend", "host", "-g", "2", "--power-window", "1e-300"}, "--power-window must be 0 (not read) or between 0.1 and 60 seconds (got 1e-300)"},
		{"profile power window on the host", nil, []string{"profile", "--backend", "host", "-g", "2", "-b", "1K", "-e", "4K", "--power-window", "1"},
			"--power-window reads the GPUs' power draw from NVML; the host backend drives no GPU"},
		{"predict tflops NaN", nil, []string{"predict", "--tflops", "NaN", "--profile", "p.json"}, "--tflops must be a finite number"},
		{"launch grace NaN", nil, []string{"launch", "--grace", "NaN", "-n", "2", "allreduce"}, "--grace must be a finite number"},
		{"timeout NaN", nil, []string{"allreduce", "-T", "NaN"}, "--timeout must be a finite number"},
		{"timeout Inf", nil, []string{"allreduce", "-T", "Inf"}, "--timeout must be a finite number"},
		{"timeout huge", nil, []string{"allreduce", "-T", "1e300"}, "-T 1e+300 is too long"},
		{"timeout negative", nil, []string{"allreduce", "-T", "-1"}, "-T cannot be negative"},
		{"launch grace huge", nil, []string{"launch", "--grace", "1e300", "-n", "2", "allreduce"}, "--grace 1e+300 is too long"},
		{"per-iteration timing 2", nil, []string{"allreduce", "-I", "2"}, "-I must be 0 or 1"},
		{"cpu time 5", nil, []string{"allreduce", "-C", "5"}, "-C must be 0 or 1"},
		{"step factor 0", nil, []string{"allreduce", "-f", "0"}, "-f must be at least 1"},
		{"step factor negative", nil, []string{"allreduce", "-f", "-2"}, "-f must be at least 1"},
		{"version with a flag", nil, []string{"version", "--bogus"}, "unexpected argument \"--bogus\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			expectUsageError(t, tt.args, tt.want)
		})
	}
}

// The flags' defaults are the libraries': a command line without flags
// asks for what a Go program gets from run's Default*Request.
func TestFlagDefaultsAreTheLibrarys(t *testing.T) {
	allreduce, _ := bench.LookupCollective("allreduce")
	f := newFlags(allreduce)
	if err := f.fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.SweepRequest, run.DefaultSweepRequest()) {
		t.Errorf("a collective's flags default to %+v; the library's defaults are %+v", f.SweepRequest, run.DefaultSweepRequest())
	}
	for name, job := range map[string]run.JobRequest{"allreduce": f.JobRequest, "health": newHealthFlags().JobRequest,
		"overlap": newOverlapFlags().JobRequest, "profile": newProfileFlags().JobRequest} {
		if job != run.DefaultJobRequest() {
			t.Errorf("%s's job flags default to %+v; the library's defaults are %+v", name, job, run.DefaultJobRequest())
		}
	}
	if h := newHealthFlags(); !reflect.DeepEqual(h.Request, healthcheck.DefaultRequest()) {
		t.Errorf("health's flags default to %+v; the library's defaults are %+v", h.Request, healthcheck.DefaultRequest())
	}
	if o := newOverlapFlags(); !reflect.DeepEqual(o.OverlapRequest, run.DefaultOverlapRequest()) {
		t.Errorf("overlap's flags default to %+v; the library's defaults are %+v", o.OverlapRequest, run.DefaultOverlapRequest())
	}
	if p := newProfileFlags(); !reflect.DeepEqual(p.ProfileRequest, run.DefaultProfileRequest()) {
		t.Errorf("profile's flags default to %+v; the library's defaults are %+v", p.ProfileRequest, run.DefaultProfileRequest())
	}
	alltoallv, _ := bench.LookupCollective("alltoallv")
	if v := newFlags(alltoallv); v.Traffic == nil || !reflect.DeepEqual(*v.Traffic, run.DefaultTrafficRequest()) {
		t.Errorf("alltoallv's traffic flags default to %+v; the library's defaults are %+v", v.Traffic, run.DefaultTrafficRequest())
	}
}

// A setting is spelled as the running command's flag: the reduction op
// is -o in the sweeps and overlap (nccl-tests' letter) and --op in
// profile, whose -o is its output; a sweep's -o that names a file points
// at -J.
func TestOpSpelledPerCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"profile", "--op", "foo"}, `collbench profile: --op: unknown reduction op "foo"`},
		{[]string{"allreduce", "-o", "out.json"}, `collbench allreduce: -o "out.json": unknown reduction op "out.json" (want one of sum, prod, max, min, avg, mulsum, or all); -o is the reduction op, as in nccl-tests: to write the results to a file, give -J out.json`},
		{[]string{"allreduce", "-o", "foo"}, `collbench allreduce: unknown reduction op "foo"`},
	} {
		code, out, errOut := runCLI(c.args...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want one usage line starting %q", c.args, code, errOut, c.want)
		}
	}
	if got := spell(newProfileFlags().fs)("Op"); got != "--op" {
		t.Errorf("profile spells Op %q, want --op", got)
	}
	if got := spell(newOverlapFlags().fs)("Op"); got != "-o" {
		t.Errorf("overlap spells Op %q, want -o", got)
	}
}
