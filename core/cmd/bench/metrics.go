package main

import (
	"fmt"
	"slices"
	"syscall"
	"time"
)

// compareMetrics runs arms (b) (Go map_values in the engine) and (a)
// (Python map_values) with polystreams.metrics.enabled on and off, rounds
// times each, alternating which goes first, and prints the median
// records/s of each and the ratio off/on.
func (bn *bench) compareMetrics(rounds int, stateDir string) {
	in := bn.seed("metrics-in", *partitions, *records)
	type arm struct {
		name          string
		run           func(on bool) time.Duration
		on, off       []float64 // records/s
		cpuOn, cpuOff []float64 // CPU µs per record: the engine and broker (this process) and the host
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
				cpu0 := cpuTime()
				rate := float64(*records) / a.run(on).Seconds()
				cpu := float64((cpuTime() - cpu0).Microseconds()) / float64(*records)
				if on {
					a.on, a.cpuOn = append(a.on, rate), append(a.cpuOn, cpu)
				} else {
					a.off, a.cpuOff = append(a.off, rate), append(a.cpuOff, cpu)
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
	fmt.Println("| arm | metrics on | metrics off | on / off | CPU µs/record on | off | on / off | runs on | runs off |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---|---|")
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
		cOn, cOff := median(a.cpuOn), median(a.cpuOff)
		fmt.Printf("| %s | %s | %s | %.1f%% | %.2f | %.2f | %.1f%% | %s | %s |\n", a.name, human(on), human(off), 100*on/off, cOn, cOff, 100*cOn/cOff, list(a.on), list(a.off))
	}
	fmt.Println()
}

// cpuTime is the CPU time (user + system) of this process (engine and
// broker) and of its children that ended (the host processes).
func cpuTime() time.Duration {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano())
}
