package cluster

import (
	"fmt"
	"strconv"
	"strings"
)

// maxHosts bounds a nodelist's expansion, so a malformed or hostile value
// cannot make collbench allocate without limit.
const maxHosts = 1 << 16

// ExpandNodelist expands Slurm's compressed host list, as in
// SLURM_JOB_NODELIST: "gpu[01-03,07],login1" is gpu01 gpu02 gpu03 gpu07
// login1. Several bracket groups in one name multiply out
// ("r[1-2]n[1-2]"), and a range keeps the zero padding of its start.
func ExpandNodelist(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty node list")
	}
	var out []string
	items, err := splitTop(s)
	if err != nil {
		return nil, err
	}
	for _, item := range items {
		if item == "" {
			return nil, fmt.Errorf("node list %q has an empty entry", s)
		}
		names, err := expandName(item, maxHosts-len(out))
		if err != nil {
			return nil, fmt.Errorf("node list %q: %w", s, err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitTop splits at the commas that are outside brackets.
func splitTop(s string) ([]string, error) {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
			if depth > 1 {
				return nil, fmt.Errorf("node list %q nests brackets", s)
			}
		case ']':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("node list %q has an unmatched ]", s)
			}
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("node list %q has an unclosed [", s)
	}
	return append(parts, s[start:]), nil
}

// expandName expands the bracket groups of one name, at most limit names.
func expandName(name string, limit int) ([]string, error) {
	open := strings.IndexByte(name, '[')
	if open < 0 {
		if strings.ContainsAny(name, "]") {
			return nil, fmt.Errorf("unmatched ] in %q", name)
		}
		if limit < 1 {
			return nil, fmt.Errorf("more than %d hosts", maxHosts)
		}
		return []string{name}, nil
	}
	end := strings.IndexByte(name[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("unclosed [ in %q", name)
	}
	end += open
	prefix, body, rest := name[:open], name[open+1:end], name[end+1:]
	suffixes, err := expandName(rest, limit)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(body, ",") {
		nums, err := expandRange(r, limit)
		if err != nil {
			return nil, err
		}
		for _, n := range nums {
			for _, suf := range suffixes {
				if len(out) >= limit {
					return nil, fmt.Errorf("more than %d hosts", maxHosts)
				}
				out = append(out, prefix+n+suf)
			}
		}
	}
	return out, nil
}

// expandRange expands "7" or "01-03" into numbers padded like the start.
func expandRange(r string, limit int) ([]string, error) {
	lo, hi, isRange := strings.Cut(r, "-")
	if !digits(lo) || (isRange && !digits(hi)) {
		return nil, fmt.Errorf("bad range %q", r)
	}
	if !isRange {
		return []string{lo}, nil
	}
	a, errA := strconv.Atoi(lo)
	b, errB := strconv.Atoi(hi)
	if errA != nil || errB != nil || b < a {
		return nil, fmt.Errorf("bad range %q", r)
	}
	if b-a >= limit {
		return nil, fmt.Errorf("range %q gives more than %d hosts", r, maxHosts)
	}
	out := make([]string, 0, b-a+1)
	for n := a; n <= b; n++ {
		out = append(out, fmt.Sprintf("%0*d", len(lo), n))
	}
	return out, nil
}

func digits(s string) bool {
	if s == "" || len(s) > 9 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ExpandTaskCounts expands Slurm's tasks-per-node list, e.g. "4(x2),3" is
// 4, 4, 3.
func ExpandTaskCounts(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		count, rep := part, "1"
		if i := strings.Index(part, "(x"); i >= 0 && strings.HasSuffix(part, ")") {
			count, rep = part[:i], part[i+2:len(part)-1]
		}
		if !digits(count) || !digits(rep) {
			return nil, fmt.Errorf("bad task count %q in %q", part, s)
		}
		n, _ := strconv.Atoi(count)
		r, _ := strconv.Atoi(rep)
		if r < 1 || len(out)+r > maxHosts {
			return nil, fmt.Errorf("bad repeat in %q", part)
		}
		for k := 0; k < r; k++ {
			out = append(out, n)
		}
	}
	return out, nil
}
