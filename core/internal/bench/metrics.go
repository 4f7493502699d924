package main

import (
	"fmt"
	"slices"
	"time"
)

// compareMetrics runs arms (b) (Go map_values in the engine) and (a)
// (Python map_values) with polystreams.metrics.enabled on and off, rounds
// times each, alternating which goes first, and prints the median
// records/s of each and the ratio off/on.
func (bn *bench) compareMetrics(rounds int, stateDir string) {
	in := bn.seed("metrics-in", *partitions, *records)
	type arm struct {
		name    string
		run     func(on bool) time.Duration
		on, off []float64
	}
	arms := []*arm{
		{name: "(b) Go map_values in the engine", run: func(on bool) time.Duration {
			return bn.nativeArmWith(in, *records, 2000, stateDir, on)
		}},
		{name: "(a) Python map_values", run: func(on bool) time.Duration {
			return bn.hostArm("python", in, *records, 2000, "--metrics", fmt.Sprint(on))
		}},
	}
	for r := range rounds {
		for _, a := range arms {
			order := []bool{true, false}
			if r%2 == 1 {
				order = []bool{false, true}
			}
			for _, on := range order {
				rate := float64(*records) / a.run(on).Seconds()
				if on {
					a.on = append(a.on, rate)
				} else {
					a.off = append(a.off, rate)
				}
			}
		}
	}
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		if len(s)%2 == 1 {
			return s[len(s)/2]
		}
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	fmt.Printf("Metrics on vs off (polystreams.metrics.enabled), %d records, %d rounds each, medians:\n\n", *records, rounds)
	fmt.Println("| arm | metrics on | metrics off | on / off | runs on | runs off |")
	fmt.Println("|---|---:|---:|---:|---|---|")
	for _, a := range arms {
		on, off := median(a.on), median(a.off)
		list := func(xs []float64) string {
			out := ""
			for i, x := range xs {
				if i > 0 {
					out += ", "
				}
				out += human(x)
			}
			return out
		}
		fmt.Printf("| %s | %s | %s | %.1f%% | %s | %s |\n", a.name, human(on), human(off), 100*on/off, list(a.on), list(a.off))
	}
	fmt.Println()
}
