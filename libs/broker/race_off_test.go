//go:build !race

package broker

// raceEnabled is true under the race detector.
const raceEnabled = false
