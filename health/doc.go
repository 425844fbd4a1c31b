// Package health decides what collbench health measures and what its
// figures mean: the rounds of disjoint pairs that cover every pair of
// nodes (or of GPUs in a node) in O(N) rounds, the blocks of a
// bisection, and the judgement of each figure against its peers with
// robust statistics (median and MAD), which tells a slow node from a
// slow link. It measures nothing and knows no backend, file or output.
package health
