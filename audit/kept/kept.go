// Package kept writes and compares the outputs a run keeps of its bitwise
// check's reference calls: one file per case and rank, named by the case,
// in a folder on the rank's own host, so that two runs' outputs of one
// case meet by name and compare element by element where they were
// written.
package kept

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
)

// Case is one call a turn kept the output of: the collective, type,
// operator, root (-1 rootless), placement, the call's size as nccl-tests
// counts it (bytes), the output's element count and the rank whose output
// it is. Files are named by it, so that two turns'
// outputs of one case meet by name.
type Case struct {
	Coll, Type, Op string
	Root           int
	InPlace        bool
	Size, Count    int64
	Rank           int
}

// caseOf is the case of a kept output.
func caseOf(k bench.Kept) Case {
	return Case{Coll: k.Op.Coll.Name, Type: k.Op.Type.String(), Op: k.Op.RedOp.String(), Root: k.Op.Root,
		InPlace: k.Op.InPlace, Size: k.Op.Counts.Bytes(k.Op.Type.Size()), Count: k.Op.Counts.Recv, Rank: k.Rank}
}

// place names the placement as nccl-tests' table does.
func (c Case) place() string {
	if c.InPlace {
		return "in-place"
	}
	return "out-of-place"
}

// File is the case's file name: every field, dot-separated.
func (c Case) File() string {
	return fmt.Sprintf("%s.%s.%s.root%d.%s.%dB.%d.rank%d.out", c.Coll, c.Type, c.Op, c.Root, c.place(), c.Size, c.Count, c.Rank)
}

// Parse reads a file name written by file; ok is false for any
// other name.
func Parse(name string) (c Case, ok bool) {
	f := strings.Split(strings.TrimSuffix(name, ".out"), ".")
	if len(f) != 8 || !strings.HasSuffix(name, ".out") || !strings.HasPrefix(f[3], "root") || !strings.HasSuffix(f[5], "B") || !strings.HasPrefix(f[7], "rank") {
		return c, false
	}
	root, err1 := strconv.Atoi(strings.TrimPrefix(f[3], "root"))
	size, err2 := strconv.ParseInt(strings.TrimSuffix(f[5], "B"), 10, 64)
	count, err3 := strconv.ParseInt(f[6], 10, 64)
	rank, err4 := strconv.Atoi(strings.TrimPrefix(f[7], "rank"))
	if errors.Join(err1, err2, err3, err4) != nil || (f[4] != "in-place" && f[4] != "out-of-place") {
		return c, false
	}
	c = Case{Coll: f[0], Type: f[1], Op: f[2], Root: root, InPlace: f[4] == "in-place", Size: size, Count: count, Rank: rank}
	return c, c.File() == name // a number written another way (+1, 01) names no case
}

// Prepare makes dir ready for a run's outputs before the run measures
// anything: made if missing, and then an empty folder. A file, a FIFO or a
// link loop in its place, or a folder another run has kept outputs in, is
// refused now rather than after minutes of timed calls. Every process of
// a job prepares its own folder before the job meets, so none has written
// yet.
func Prepare(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(dir, 0o755); err == nil {
			st, err = os.Stat(dir)
		}
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a folder", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s holds %d entries already: give an empty or new folder, one a run", dir, len(entries))
	}
	return nil
}

// Keep is a bench.Options.Reference that writes every reference output
// into dir, one file per case and rank; with perCycle (a run of several
// cycles, -N), each cycle's into its own folder dir/cycle1, dir/cycle2, ….
// A file already there is refused, never overwritten: a folder holds one
// run's outputs. A file whose write fails (a full disk) is removed, not
// left half-written.
func Keep(dir string, perCycle bool) func(bench.Kept) error {
	return func(k bench.Kept) error {
		into := dir
		if perCycle {
			into = filepath.Join(dir, CycleDir(k.Cycle))
		}
		if err := os.MkdirAll(into, 0o755); err != nil {
			return err
		}
		path := filepath.Join(into, caseOf(k).File())
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s is there already: give a folder no run has kept its outputs in", path)
		}
		if err != nil {
			return err
		}
		_, err = f.Write(k.Output)
		if serr := f.Sync(); err == nil {
			err = serr
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
			return fmt.Errorf("writing %s: %w", path, err)
		}
		return nil
	}
}

// CycleDir is the folder, inside a run's --keep-outputs folder, of the
// outputs of its cycle from 0 when it runs several.
func CycleDir(cycle int) string { return "cycle" + strconv.Itoa(cycle+1) }

// List lists the cases a folder holds.
func List(dir string) ([]Case, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // this process held no rank that kept an output
	}
	if err != nil {
		return nil, err
	}
	var out []Case
	for _, e := range entries {
		if c, ok := Parse(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, c)
		}
	}
	return out, nil
}

// Diff is how one output differs from another of the same case, or from
// the same elements of a case of another size: the elements and bits
// that differ, the first differing element and bit (from the least
// significant; -1 when none) and how far apart the values are there and
// at most, in steps of the type.
type Diff struct {
	Elements, Bits         int64
	FirstElement, FirstBit int64
	FirstULPs, MaxULPs     uint64
}

// Differs says whether any bit did.
func (d Diff) Differs() bool { return d.Bits > 0 }

// chunkElements is how many elements a comparison reads at a time.
const chunkElements = 1 << 18

// CompareFiles compares the first n elements of type t in two files, a
// chunk at a time; got is compared against ref.
func CompareFiles(got, ref string, t numeric.DataType, n int64) (Diff, error) {
	d := Diff{FirstElement: -1, FirstBit: -1}
	fg, err := os.Open(got)
	if err != nil {
		return d, err
	}
	defer fg.Close()
	fr, err := os.Open(ref)
	if err != nil {
		return d, err
	}
	defer fr.Close()
	size := int64(t.Size())
	bg, br := make([]byte, chunkElements*size), make([]byte, chunkElements*size)
	for at := int64(0); at < n; at += chunkElements {
		m := min(chunkElements, n-at)
		if _, err := io.ReadFull(fg, bg[:m*size]); err != nil {
			return d, fmt.Errorf("%s: %w", filepath.Base(got), err)
		}
		if _, err := io.ReadFull(fr, br[:m*size]); err != nil {
			return d, fmt.Errorf("%s: %w", filepath.Base(ref), err)
		}
		g, r := bg[:m*size], br[:m*size]
		c := bench.CompareBits(g, r, int(size))
		if c.First < 0 {
			continue
		}
		d.Elements, d.Bits = d.Elements+c.Elements, d.Bits+c.Bits
		d.MaxULPs = max(d.MaxULPs, bench.MaxULPs(t, g, r))
		if d.FirstElement < 0 {
			elem := c.First / (8 * size)
			d.FirstElement, d.FirstBit, d.FirstULPs = at+elem, c.First%(8*size), numeric.ULPs(t, g, r, int(elem))
		}
	}
	return d, nil
}
