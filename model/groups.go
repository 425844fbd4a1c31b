package model

import "fmt"

// Groups is every group of ranks the dimension's calls run over, in
// Megatron's rank order (rank = t + TP·(d + DP·p)): TP consecutive blocks;
// DP the ranks that share t and p; PP those that share t and d; EP blocks
// of EP consecutive DP ranks; EDP the ranks holding the same experts, one
// from each EP block. Predict's layouts are these groups' strides.
func (s Strategy) Groups(dim string) ([][]int, error) {
	if s.DP < 1 || s.TP < 1 || s.PP < 1 || s.EP < 1 || s.DP%s.EP != 0 {
		return nil, fmt.Errorf("no groups for %s", s)
	}
	rank := func(t, d, p int) int { return t + s.TP*(d+s.DP*p) }
	var out [][]int
	each := func(outer, inner int, member func(o, i int) int) {
		for o := 0; o < outer; o++ {
			g := make([]int, inner)
			for i := range g {
				g[i] = member(o, i)
			}
			out = append(out, g)
		}
	}
	switch dim {
	case "TP":
		each(s.DP*s.PP, s.TP, func(o, i int) int { return rank(i, o%s.DP, o/s.DP) })
	case "DP":
		each(s.TP*s.PP, s.DP, func(o, i int) int { return rank(o%s.TP, i, o/s.TP) })
	case "PP":
		each(s.TP*s.DP, s.PP, func(o, i int) int { return rank(o%s.TP, o/s.TP, i) })
	case "EP":
		blocks := s.DP / s.EP
		each(s.TP*s.PP*blocks, s.EP, func(o, i int) int {
			t, b, p := o%s.TP, o/s.TP%blocks, o/(s.TP*blocks)
			return rank(t, b*s.EP+i, p)
		})
	case "EDP":
		each(s.TP*s.PP*s.EP, s.DP/s.EP, func(o, i int) int {
			t, e, p := o%s.TP, o/s.TP%s.EP, o/(s.TP*s.EP)
			return rank(t, i*s.EP+e, p)
		})
	default:
		return nil, fmt.Errorf("no parallel dimension %q (want DP, EDP, TP, PP or EP)", dim)
	}
	return out, nil
}
