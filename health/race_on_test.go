//go:build race

package health

// raceEnabled says the tests run under the race detector, which makes
// the simulations several times slower.
const raceEnabled = true
