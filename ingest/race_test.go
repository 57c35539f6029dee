//go:build race

package ingest

// raceEnabled: the test binary runs under the race detector, which makes
// the exhaustive tests slow; they sample instead.
const raceEnabled = true
