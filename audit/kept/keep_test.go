package kept

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
)

// A run of several cycles keeps each cycle's outputs in a folder of its
// own; a run of one keeps them in the folder itself, where audit reads
// them.
func TestKeepPerCycle(t *testing.T) {
	dir := t.TempDir()
	ar, _ := bench.LookupCollective("allreduce")
	op := bench.Op{Coll: ar, Type: numeric.Float32, RedOp: numeric.Sum, Root: -1, Counts: ar.Counts(10, 4, 1)}
	keep := Keep(dir, true)
	for cycle := range 2 {
		if err := keep(bench.Kept{Op: op, Cycle: cycle, Output: make([]byte, 40)}); err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
	}
	for _, c := range []string{"cycle1", "cycle2"} {
		if cases, err := List(filepath.Join(dir, c)); err != nil || len(cases) != 1 {
			t.Errorf("%s: %v, %v", c, cases, err)
		}
	}
}

// Prepare makes a missing folder and takes an empty one; anything else is
// refused before a run measures.
func TestPrepare(t *testing.T) {
	dir := t.TempDir()
	if err := Prepare(filepath.Join(dir, "new", "deeper")); err != nil {
		t.Errorf("a new folder: %v", err)
	}
	if err := Prepare(t.TempDir()); err != nil {
		t.Errorf("an empty folder: %v", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o600)
	loop := filepath.Join(dir, "loop")
	os.Symlink(loop, loop)
	for path, want := range map[string]string{file: "is not a folder", fifo: "is not a folder", loop: "too many levels",
		dir: "entries already", filepath.Join(file, "x"): "not a directory"} {
		if err := Prepare(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}

// An output that does not fit (a full disk) fails the keep and leaves no
// half-written file behind. The full disk is a 16 KiB tmpfs, where this
// process may mount one.
func TestKeepFullDiskLeavesNoPartialFile(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=16k"); err != nil {
		t.Skipf("cannot mount a small tmpfs here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	ar, _ := bench.LookupCollective("allreduce")
	n := int64(64 << 10 / 4)
	op := bench.Op{Coll: ar, Type: numeric.Float32, RedOp: numeric.Sum, Root: -1, Counts: ar.Counts(n, 4, 1)}
	err := Keep(dir, false)(bench.Kept{Op: op, Output: make([]byte, 4*n)})
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("a 64 KiB output on a 16 KiB disk: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}
