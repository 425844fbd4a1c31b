package compare

import (
	"fmt"
	"sort"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/judge"
)

// Standing is one row as the two runs' judgements (--judge) see it: its
// share of the wire and its ratio to the published figure with the
// verdict, in each run; nil where a run was not judged at that row.
type Standing struct {
	Key       string // type, reduction and root, as Runs names a row
	Size      int64
	Base, New *judge.RowJudgement
}

// Fell says the new run is below the published figure where the base
// run was not (or was not judged against one).
func (s Standing) Fell() bool {
	return s.New != nil && s.New.Verdict == judge.Low && (s.Base == nil || s.Base.Verdict != judge.Low)
}

// Standings pairs the judged rows of two runs by type, reduction, root
// and size, in that order; none when neither run was judged.
func Standings(base, next *document.Run) []Standing {
	type key struct {
		name string
		size int64
	}
	byKey := map[key]*Standing{}
	add := func(r *document.Run, isBase bool) {
		jd := r.Judgement
		if jd == nil || len(jd.Rows) != len(r.Results) {
			return // judged rows follow the results one for one
		}
		for i, res := range r.Results {
			k := key{fmt.Sprintf("%s %s", res.Type, res.RedOp), res.Size}
			if res.Root >= 0 {
				k.name += fmt.Sprintf(" root %d", res.Root)
			}
			s, ok := byKey[k]
			if !ok {
				s = &Standing{Key: k.name, Size: k.size}
				byKey[k] = s
			}
			row := jd.Rows[i]
			if isBase {
				s.Base = &row
			} else {
				s.New = &row
			}
		}
	}
	add(base, true)
	add(next, false)
	out := make([]Standing, 0, len(byKey))
	for _, s := range byKey {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].Size < out[j].Size
	})
	return out
}
