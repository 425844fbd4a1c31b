package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/internal/golden"
	"github.com/collbench/collbench/judge"
)

// A command's help groups its flags (a collective's into nccl-tests' own,
// collbench's additions, the job's and the output's) and wraps them to the
// width asked (testdata/help_*.golden, at 80 and 60 columns).
func TestHelpGroupedAndWrapped(t *testing.T) {
	for _, c := range []struct {
		name  string
		flags *healthFlags
		cols  int
	}{{"allreduce", nil, 80}, {"health", newHealthFlags(), 80}, {"allreduce", nil, 60}} {
		var b bytes.Buffer
		if c.flags != nil {
			writeHelp(&b, "collbench health [flags]", c.flags.fs, false, c.cols)
		} else {
			coll, _ := bench.LookupCollective(c.name)
			writeHelp(&b, "collbench allreduce [flags]", newFlags(coll).fs, true, c.cols)
		}
		for i, line := range strings.Split(b.String(), "\n") {
			if n := len([]rune(line)); n > c.cols {
				t.Errorf("%s at %d columns: line %d is %d wide: %q", c.name, c.cols, i+1, n, line)
			}
		}
		golden.Check(t, fmt.Sprintf("help_%s_%d.golden", c.name, c.cols), b.Bytes())
	}
	t.Setenv("COLUMNS", "72")
	code, out, _ := runCLI("allreduce", "-h")
	if code != exitOK || !strings.Contains(out, "\nnccl-tests' flags:\n") || !strings.Contains(out, "\ncollbench's additions:\n") ||
		!strings.Contains(out, "\nJob and backend:\n") || !strings.Contains(out, "\nOutput:\n") {
		t.Errorf("allreduce -h: exit %d:\n%s", code, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if len([]rune(line)) > 72 {
			t.Errorf("COLUMNS=72, yet a line of %d: %q", len([]rune(line)), line)
		}
	}
}

// The reference table lists each figure in a short line, its system,
// conditions and source wrapped under it, within 80 columns
// (testdata/references_80.golden), where it was about 230 wide.
func TestReferencesFitTheWidth(t *testing.T) {
	var b bytes.Buffer
	writeReferences(&b, []judge.Table{judge.Builtin()}, 80)
	for i, line := range strings.Split(b.String(), "\n") {
		if n := len([]rune(line)); n > 80 {
			t.Errorf("line %d is %d wide: %q", i+1, n, line)
		}
	}
	golden.Check(t, "references_80.golden", b.Bytes())
}

// Every command's usage line is the command table's: the synopsis is
// written once.
func TestUsageLineFromTheCommandTable(t *testing.T) {
	for _, c := range commands() {
		if c.run == nil || c.name == "help" || c.name == "version" {
			continue
		}
		code, out, errOut := runCLI(c.name, "-h")
		first, _, _ := strings.Cut(out, "\n")
		if code != exitOK || first != "Usage: collbench "+c.synopsis {
			t.Errorf("%s -h: exit %d, first line %q, want the table's %q %s", c.name, code, first, c.synopsis, errOut)
		}
	}
	code, out, _ := runCLI("allreduce", "-h")
	if first, _, _ := strings.Cut(out, "\n"); code != exitOK || first != "Usage: collbench allreduce [flags]" {
		t.Errorf("allreduce -h: exit %d, first line %q", code, first)
	}
}
