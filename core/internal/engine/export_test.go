package engine

// ReviveOperators revives every task's operators as an aborted
// transaction does (task.settleTxn), for tests of what revival restores.
func ReviveOperators(a *App) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.tasks {
		for _, op := range t.ops {
			if r, ok := op.(reviver); ok {
				r.revive()
			}
		}
	}
}
