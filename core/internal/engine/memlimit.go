package engine

import (
	"math"
	"os"
	"runtime/debug"
	"sync"
)

// The engine's soft memory limit: while applications run, Go's collector
// is told (runtime/debug.SetMemoryLimit) to keep the process's memory
// under the sum of their budgets (polystreams.memory.max.bytes) plus
// softLimitBase, so that the heap does not grow to twice what is live
// (GOGC=100) above what the applications were allowed. The budgets bound
// what the engine holds for each application; the base covers what they
// do not count (the batch being processed, its outputs, the client's
// fetch buffers, the topology, the runtime). GOMEMLIMIT, or a limit the
// embedding program set, stands instead: the engine then sets none.
// Go's limit is soft: near it the collector runs more often, at most half
// the CPU, and the heap may pass it rather than stall.
const softLimitBase = 64 << 20

var softLimit softLimits

type softLimits struct {
	mu sync.Mutex
	// budgets is the sum of the running applications' budgets, apps how
	// many they are.
	budgets int64
	apps    int
	// prior is the limit before the first application: restored after
	// the last. own reports whether the engine sets the limit at all.
	prior int64
	own   bool
}

// holdSoftLimit counts an application's budget in the soft limit until
// the returned release is called (once).
func holdSoftLimit(budget int64) (release func()) { return softLimit.hold(budget) }

func (s *softLimits) hold(budget int64) (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.apps == 0 {
		s.prior = debug.SetMemoryLimit(-1)
		_, env := os.LookupEnv("GOMEMLIMIT")
		s.own = !env && s.prior == math.MaxInt64
	}
	s.apps++
	s.budgets += budget
	s.apply()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.apps--
			s.budgets -= budget
			s.apply()
		})
	}
}

// apply sets the limit for the applications running; with none, the one
// before the first. Called with mu held.
func (s *softLimits) apply() {
	if !s.own {
		return
	}
	if s.apps == 0 {
		debug.SetMemoryLimit(s.prior)
		return
	}
	debug.SetMemoryLimit(s.budgets + softLimitBase)
}
