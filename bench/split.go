package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// Split is nccl-tests' NCCL_TESTS_SPLIT (or _SPLIT_MASK): each process
// gets a colour from its number, and the processes of one colour form
// one communicator.
type Split struct {
	Op    byte // '&', '|', '%' or '/'
	Value int
	Text  string // as given, for messages
}

// ParseSplit reads NCCL_TESTS_SPLIT: an operator (AND or &, OR or |,
// MOD or %, DIV or /, any case) and an integer (decimal, 0x hex, 0 octal
// or 0b binary), as nccl-tests reads it.
func ParseSplit(s string) (Split, error) {
	sp := Split{Text: "NCCL_TESTS_SPLIT=" + strconv.Quote(s)}
	upper := strings.ToUpper(s)
	rest := ""
	for _, o := range []struct {
		name string
		op   byte
	}{{"AND", '&'}, {"&", '&'}, {"OR", '|'}, {"|", '|'}, {"MOD", '%'}, {"%", '%'}, {"DIV", '/'}, {"/", '/'}} {
		if strings.HasPrefix(upper, o.name) {
			sp.Op, rest = o.op, s[len(o.name):]
			break
		}
	}
	if sp.Op == 0 {
		return sp, fmt.Errorf("%s: want AND, OR, MOD or DIV (or &, |, %%, /) and a number", sp.Text)
	}
	rest = strings.TrimSpace(rest)
	base := 0
	if r := strings.ToLower(rest); strings.HasPrefix(r, "0b") {
		rest, base = rest[2:], 2
	}
	v, err := strconv.ParseUint(rest, base, 31)
	if err != nil {
		return sp, fmt.Errorf("%s: %q is not a number", sp.Text, rest)
	}
	sp.Value = int(v)
	if (sp.Op == '%' || sp.Op == '/') && sp.Value == 0 {
		return sp, fmt.Errorf("%s: cannot divide by 0", sp.Text)
	}
	return sp, nil
}

// ParseSplitMask reads NCCL_TESTS_SPLIT_MASK: a hexadecimal mask ANDed
// with the process number.
func ParseSplitMask(s string) (Split, error) {
	sp := Split{Op: '&', Text: "NCCL_TESTS_SPLIT_MASK=" + strconv.Quote(s)}
	t := strings.TrimSpace(s)
	if l := strings.ToLower(t); strings.HasPrefix(l, "0x") {
		t = t[2:]
	}
	v, err := strconv.ParseUint(t, 16, 31)
	if err != nil {
		return sp, fmt.Errorf("%s is not a hexadecimal mask", sp.Text)
	}
	sp.Value = int(v)
	return sp, nil
}

// Color is process proc's colour.
func (s Split) Color(proc int) int {
	switch s.Op {
	case '&':
		return proc & s.Value
	case '|':
		return proc | s.Value
	case '%':
		return proc % s.Value
	}
	return proc / s.Value
}

// Grouping maps the split of nprocs processes of perProc ranks each onto
// collbench's groups: equal groups of consecutive processes, or, with one
// rank per process, of processes a fixed stride apart. Other splits are
// refused, naming the groups they would make.
func (s Split) Grouping(nprocs, perProc int) (Grouping, error) {
	colors := map[int][]int{}
	var order []int
	for p := 0; p < nprocs; p++ {
		c := s.Color(p)
		if _, ok := colors[c]; !ok {
			order = append(order, c)
		}
		colors[c] = append(colors[c], p)
	}
	if len(order) == 1 {
		return Grouping{}, nil
	}
	world := nprocs * perProc
	size := len(colors[order[0]]) * perProc
	for _, g := range []Grouping{{Size: size}, {Size: size, Strided: true}} {
		if g.Validate(world) == nil && s.sameGroups(g, colors, world, perProc) {
			return g, nil
		}
	}
	var groups []string
	for _, c := range order {
		groups = append(groups, fmt.Sprint(colors[c]))
	}
	return Grouping{}, fmt.Errorf("%s splits the %d processes into %s; collbench forms equal groups of consecutive ranks, or strided ones with one rank per process",
		s.Text, nprocs, strings.Join(groups, " "))
}

// sameGroups reports whether g puts exactly the ranks of each colour's
// processes together.
func (s Split) sameGroups(g Grouping, colors map[int][]int, world, perProc int) bool {
	for _, procs := range colors {
		first, _, _ := g.Place(world, procs[0]*perProc)
		n := 0
		for _, p := range procs {
			for l := 0; l < perProc; l++ {
				if grp, _, _ := g.Place(world, p*perProc+l); grp != first {
					return false
				}
				n++
			}
		}
		if n != g.Of(world) {
			return false
		}
	}
	return true
}
