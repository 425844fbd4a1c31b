package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// alltoallv across four processes: generated patterns set by flag and by
// nccl-tests' variable, and a matrix file, every result right; with the
// summary asked for, each row is preceded by both placements' per-rank
// lines.
func TestLaunchAllToAllV(t *testing.T) {
	selfEnv(t)
	matrix, err := filepath.Abs("../../bench/testdata/traffic5.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string // in the output
	}{
		{"spread0", nil, []string{"--spread", "0", "-d", "all"}, "  uint64    none"},
		{"spread0.5 env", map[string]string{"NCCL_TESTS_ALLTOALLV_SPREAD": "0.5"}, nil, "float    none"},
		{"spread1", nil, []string{"--spread", "1", "-d", "half"}, "half    none"},
		{"matrix env", map[string]string{"NCCL_TESTS_ALLTOALLV_MATRIX_FILE": matrix, "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE": "2",
			"NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY": "1"}, []string{"-b", "8K", "-e", "8K"}, "mode=matrix nranks=4 matrix_dim=5 scale=2.000"},
		{"matrix flag", nil, []string{"--matrix", matrix, "-b", "8K", "-e", "8K", "--rank-summary", "-d", "double"},
			"#   rank=2 send_bytes=1616 recv_bytes=400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := append([]string{"launch", "-n", "4", "--", "alltoallv", "-b", "1K", "-e", "64K", "-f", "8", "-n", "2"}, tc.args...)
			code, out, errOut := runCLI(args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errOut)
			}
			checkTable(t, tc.name, out)
			if !strings.Contains(out, tc.want) {
				t.Errorf("%q missing:\n%s", tc.want, out)
			}
			if summaries := strings.Count(out, "# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY:"); strings.Contains(tc.want, "rank") != (summaries == 2) {
				t.Errorf("%d summaries:\n%s", summaries, out)
			}
		})
	}
}

// Patterns that cannot run are refused in one line, exit 2, as are
// hypercubes of a size that is not a power of two.
func TestTrafficRefusals(t *testing.T) {
	matrix := "../../bench/testdata/traffic5.txt"
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"spread above 1", nil, []string{"alltoallv", "--spread", "2"}, "--spread must be between 0 and 1"},
		{"spread env", map[string]string{"NCCL_TESTS_ALLTOALLV_SPREAD": "wide"}, []string{"alltoallv"}, "is not a finite number"},
		{"summary env", map[string]string{"NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY": "yes"}, []string{"alltoallv"}, "is not an integer"},
		{"no file", nil, []string{"alltoallv", "--matrix", "/nonexistent/m.txt"}, "no such file"},
		{"sweep", nil, []string{"alltoallv", "--matrix", matrix, "-b", "1K", "-e", "8K"}, "give -b and -e the same value"},
		{"small -e", nil, []string{"alltoallv", "--matrix", matrix, "-b", "1K", "-e", "1K", "-g", "4"}, "-e must be at least 1616 bytes"},
		{"more ranks", nil, []string{"alltoallv", "--matrix", matrix, "-b", "64K", "-e", "64K", "-g", "6"}, "smaller than the 6 ranks"},
		{"negative scale", map[string]string{"NCCL_TESTS_ALLTOALLV_MATRIX_SCALE": "-1"}, []string{"alltoallv", "--matrix", matrix}, "scale must be"},
		{"hypercube", nil, []string{"hypercube", "-g", "6"}, "power-of-two number of ranks (got 6)"},
		{"spread elsewhere", nil, []string{"alltoall", "--spread", "0.5"}, "unknown flag: --spread"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, out, errOut := runCLI(append(tc.args, "-n", "1")...)
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if code != 2 || len(lines) != 1 || !strings.Contains(errOut, tc.want) || strings.Contains(out, "#  Rank") {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line with %q", code, errOut, tc.want)
			}
		})
	}
}
