//go:build !race

package larder

const raceEnabled = false
