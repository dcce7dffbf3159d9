//go:build linux && race

package e2e

func init() { raceEnabled = true }
