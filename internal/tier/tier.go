// Package tier sorts collbench's tests into two tiers. The fast tier,
// `go test -race -short ./...`, is what a developer runs between changes:
// every package's own tests and the command's, with the largest case
// matrices cut to a subset that still takes every path. The system tier
// is everything, the README's test command and CI's: beside the fast
// tier, the tests that start real peers (OpenMPI, MPICH, Slurm,
// torchrun), network namespaces and shaped links, ab's, tune's and
// audit's rounds, and the scripts, each of which takes from seconds to
// minutes.
package tier

import "testing"

// System skips t in the fast tier; why says what makes it a system test
// ("network namespaces", "ab rounds", ...).
func System(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("system tier (%s); runs without -short", why)
	}
}

// Cases is all in the system tier and fast in the fast tier: a subset of
// a test's matrix that still takes each path once.
func Cases[T any](all, fast []T) []T {
	if testing.Short() {
		return fast
	}
	return all
}
