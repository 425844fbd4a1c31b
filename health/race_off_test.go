//go:build !race

package health

// raceEnabled says the tests run under the race detector.
const raceEnabled = false
