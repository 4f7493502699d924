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

// StopTasks stops every task as a revocation does (without its commit):
// the tasks close their processors while the engine runs on.
func StopTasks(a *App) {
	a.mu.Lock()
	tasks := make([]*task, 0, len(a.tasks))
	for id, t := range a.tasks {
		tasks = append(tasks, t)
		delete(a.tasks, id)
	}
	a.mu.Unlock()
	stopTasks(tasks)
}
