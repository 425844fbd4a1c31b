//go:build race

package main

// raceEnabled says the tests run under the race detector, which makes
// the host backend's copies several times slower.
const raceEnabled = true
