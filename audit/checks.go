package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/collbench/collbench/audit/kept"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
)

// found is one rank's side of a comparison, made by the process that
// holds the rank's files: the case, what it was held against, and what
// differed.
type found struct {
	Kind, Setting, Against string
	Case                   kept.Case
	AgainstSize            int64
	Diff                   kept.Diff
}

// key is the comparison a finding belongs to, whatever its rank.
func (f found) key() string {
	c := f.Case
	c.Rank = 0
	return fmt.Sprintf("%s\x00%s\x00%s\x00%+v\x00%d", f.Kind, f.Setting, f.Against, c, f.AgainstSize)
}

// sizeOrdered are the collectives whose element i of the output reduces
// element i of every rank's input at every size, so that a call of one
// size can be held against a call of another element by element.
var sizeOrdered = []string{"allreduce", "reduce"}

// localFindings compares what this process's ranks kept: the library's
// own choice against its second run (fresh processes), every setting
// against the library's own choice, and every setting's calls against
// its calls of the next smaller size.
func (a *auditing) localFindings() ([]found, error) {
	own := a.settings[0]
	var out []found
	add := func(kind, setting, against, got, ref string, sizes bool) error {
		f, err := compareDir(kind, setting, against, got, ref, sizes)
		out = append(out, f...)
		return err
	}
	if len(own.dirs) == 2 {
		if err := add(document.AuditFresh, own.Label, "its first run", own.dirs[1], own.dirs[0], false); err != nil {
			return nil, err
		}
	}
	for i, s := range a.settings {
		if len(s.dirs) == 0 {
			continue
		}
		if i > 0 && len(own.dirs) > 0 {
			if err := add(document.AuditSettings, s.Label, OwnLabel, s.dirs[0], own.dirs[0], false); err != nil {
				return nil, err
			}
		}
		if slices.Contains(sizeOrdered, a.coll.Name) {
			if err := add(document.AuditSizes, s.Label, "the next smaller size", s.dirs[0], "", true); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// compareDir compares every case kept in got with the same case in ref,
// or, with sizes, with the same case of the next smaller size in got
// itself (its first elements).
func compareDir(kind, setting, against, got, ref string, sizes bool) ([]found, error) {
	cases, err := kept.List(got)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(cases, func(x, y kept.Case) int { return strings.Compare(sortKey(x), sortKey(y)) })
	var theirs []kept.Case
	if !sizes {
		if theirs, err = kept.List(ref); err != nil {
			return nil, err
		}
	}
	var out []found
	for i, c := range cases {
		t, err := numeric.ParseDataType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.File(), err)
		}
		f := found{Kind: kind, Setting: setting, Against: against, Case: c}
		refPath, n := filepath.Join(ref, c.File()), c.Count
		if sizes {
			if i == 0 || !sameCall(cases[i-1], c) {
				continue
			}
			smaller := cases[i-1]
			refPath, n, f.AgainstSize = filepath.Join(got, smaller.File()), smaller.Count, smaller.Size
			f.Case.Count = n
		} else if !slices.Contains(theirs, c) {
			continue // the other turn kept no such case: nothing to hold it against
		}
		if f.Diff, err = kept.CompareFiles(filepath.Join(got, c.File()), refPath, t, n); err != nil {
			return nil, fmt.Errorf("comparing %s: %w", c.File(), err)
		}
		out = append(out, f)
	}
	return out, nil
}

// sameCall says two cases differ in size at most.
func sameCall(x, y kept.Case) bool {
	x.Size, x.Count, y.Size, y.Count = 0, 0, 0, 0
	return x == y
}

// sortKey orders cases by everything but the size, then by size.
func sortKey(c kept.Case) string {
	return fmt.Sprintf("%s %s %s %d %t %d %020d", c.Coll, c.Type, c.Op, c.Root, c.InPlace, c.Rank, c.Count)
}

// compareAll makes every comparison: run to run from each setting's
// record (rank 0's), the rest from the kept outputs, each process its own
// ranks', gathered and merged on rank 0.
func (a *auditing) compareAll(ctx context.Context) error {
	mine, err := a.localFindings()
	if err != nil {
		return fmt.Errorf("comparing the kept outputs: %w", err)
	}
	all, err := a.gather(ctx, mine)
	if err != nil || a.o.Rank != 0 {
		return err
	}
	for _, s := range a.settings {
		a.rec.Checks = append(a.rec.Checks, runToRun(s.Label, s.doc)...)
	}
	a.rec.Checks = append(a.rec.Checks, merge(all)...)
	return nil
}

// gather hands every process's findings to rank 0.
func (a *auditing) gather(ctx context.Context, mine []found) ([]found, error) {
	if a.o.Size <= 1 {
		return mine, nil
	}
	raw, err := json.Marshal(mine)
	if err != nil {
		return nil, err
	}
	parts, err := a.o.Group.AllGather(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("gathering the comparisons: %w", err)
	}
	var all []found
	for i, p := range parts {
		var theirs []found
		if err := json.Unmarshal(p, &theirs); err != nil {
			return nil, fmt.Errorf("process %d's comparisons: %w", i, err)
		}
		all = append(all, theirs...)
	}
	return all, nil
}

// merge sums each comparison's findings over its ranks: the first
// difference is the lowest rank's.
func merge(all []found) []document.AuditCheck {
	slices.SortStableFunc(all, func(x, y found) int { return x.Case.Rank - y.Case.Rank })
	var order []string
	checks := map[string]*document.AuditCheck{}
	for _, f := range all {
		k := f.key()
		c, ok := checks[k]
		if !ok {
			c = &document.AuditCheck{Kind: f.Kind, Setting: f.Setting, Against: f.Against, Type: f.Case.Type, RedOp: f.Case.Op,
				Root: f.Case.Root, InPlace: f.Case.InPlace, Size: f.Case.Size, Count: f.Case.Count, AgainstSize: f.AgainstSize}
			checks[k] = c
			order = append(order, k)
		}
		d := f.Diff
		c.Elements += d.Elements
		c.Bits += d.Bits
		c.MaxULPs = max(c.MaxULPs, d.MaxULPs)
		if d.Differs() && c.First == nil {
			c.First = &document.AuditFirst{Rank: int64(f.Case.Rank), Element: d.FirstElement, Bit: d.FirstBit, ULPs: d.FirstULPs}
		}
	}
	out := make([]document.AuditCheck, 0, len(order))
	for _, k := range order {
		out = append(out, *checks[k])
	}
	return out
}

// sortChecks orders checks by kind, setting (in the order settings ran:
// order gives each label's index), case and size.
func sortChecks(checks []document.AuditCheck, order map[string]int) {
	slices.SortStableFunc(checks, func(x, y document.AuditCheck) int {
		if kindOrder[x.Kind] != kindOrder[y.Kind] {
			return kindOrder[x.Kind] - kindOrder[y.Kind]
		}
		if order[x.Setting] != order[y.Setting] {
			return order[x.Setting] - order[y.Setting]
		}
		return strings.Compare(checkKey(x), checkKey(y))
	})
}

// kindOrder is the order checks are listed in.
var kindOrder = map[string]int{document.AuditRunToRun: 0, document.AuditFresh: 1, document.AuditSizes: 2, document.AuditSettings: 3}

// checkKey orders the checks of one kind and setting by case and size.
func checkKey(c document.AuditCheck) string {
	return fmt.Sprintf("%s %s %d %020d %t", c.Type, c.RedOp, c.Root, c.Size, c.InPlace)
}

// runToRun reads the bitwise checks of a setting's first run: each
// case's calls against its reference call.
func runToRun(label string, doc *document.Run) []document.AuditCheck {
	if doc == nil {
		return nil
	}
	var out []document.AuditCheck
	for _, res := range doc.Results {
		for _, pl := range []struct {
			m       document.Measure
			inPlace bool
		}{{res.OutOfPlace, false}, {res.InPlace, true}} {
			b := pl.m.Bitwise
			if b == nil {
				continue
			}
			c := document.AuditCheck{Kind: document.AuditRunToRun, Setting: label, Against: "its reference call", Type: res.Type,
				RedOp: res.RedOp, Root: res.Root, InPlace: pl.inPlace, Size: res.Size, Count: res.Count,
				Elements: b.Elements, Bits: b.Bits, MaxULPs: b.MaxULPs}
			if b.FirstRepeat != nil && b.FirstRank != nil && b.FirstElement != nil && b.FirstBit != nil {
				c.First = &document.AuditFirst{Call: *b.FirstRepeat, Rank: *b.FirstRank, Element: *b.FirstElement, Bit: *b.FirstBit, ULPs: b.FirstULPs}
			}
			out = append(out, c)
		}
	}
	return out
}
