package engine

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
)

// The soft limit follows the running applications' budgets and is given
// back after the last; a limit set before (GOMEMLIMIT, the embedding
// program) stands.
func TestSoftMemoryLimitFollowsBudgets(t *testing.T) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		t.Skip("GOMEMLIMIT is set: the engine sets no limit")
	}
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	debug.SetMemoryLimit(math.MaxInt64)

	var s softLimits
	a := s.hold(100 << 20)
	if got, want := debug.SetMemoryLimit(-1), int64(100<<20+softLimitBase); got != want {
		t.Fatalf("one application of 100 MiB: limit %d, want %d", got, want)
	}
	b := s.hold(50 << 20)
	if got, want := debug.SetMemoryLimit(-1), int64(150<<20+softLimitBase); got != want {
		t.Fatalf("two applications, 150 MiB: limit %d, want %d", got, want)
	}
	a()
	a() // a second release changes nothing
	if got, want := debug.SetMemoryLimit(-1), int64(50<<20+softLimitBase); got != want {
		t.Fatalf("after the first stopped: limit %d, want %d", got, want)
	}
	b()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("after the last stopped: limit %d, want none (%d)", got, int64(math.MaxInt64))
	}

	debug.SetMemoryLimit(300 << 20) // the embedding program's own
	c := s.hold(100 << 20)
	if got := debug.SetMemoryLimit(-1); got != 300<<20 {
		t.Fatalf("with a limit set before: %d, want it kept (%d)", got, 300<<20)
	}
	c()
	if got := debug.SetMemoryLimit(-1); got != 300<<20 {
		t.Fatalf("after: %d, want %d", got, 300<<20)
	}
}
