package state

import "testing"

// Restore progress sums the store partitions of the tasks assigned at the
// last rebalance: waiting ones count as restoring, a rebalance forgets the
// finished ones, and taken-away ones leave at once.
func TestRestoreProgressFollowsAssignments(t *testing.T) {
	var r Restores
	a0, a1, b0 := StorePartition{"a", 0}, StorePartition{"a", 1}, StorePartition{"b", 0}
	check := func(what string, want RestoreProgress) {
		t.Helper()
		if got := r.Progress(); got != want {
			t.Errorf("%s: progress %+v, want %+v", what, got, want)
		}
	}
	check("before any assignment", RestoreProgress{})
	if !r.Progress().Done() {
		t.Errorf("no partitions: not done")
	}
	r.Assign([]StorePartition{a0, a1})
	check("assigned, not begun", RestoreProgress{RestoringPartitions: 2, TotalPartitions: 2})
	e0 := r.Begin(a0, 100)
	e1 := r.Begin(a1, 0)
	r.Finish(e1)
	check("a0 begun", RestoreProgress{TotalRecords: 100, RestoringPartitions: 1, TotalPartitions: 2})
	r.Advance(e0, 40)
	check("a0 at 40", RestoreProgress{RestoredRecords: 40, TotalRecords: 100, RestoringPartitions: 1, TotalPartitions: 2})
	r.Advance(e0, 130) // offsets past the end (not expected) do not overshoot
	check("a0 past its end", RestoreProgress{RestoredRecords: 100, TotalRecords: 100, RestoringPartitions: 1, TotalPartitions: 2})
	if r.Progress().Done() {
		t.Errorf("a0 still restoring, but done")
	}
	// A rebalance while a0 restores: a1 (finished) is forgotten, a0 stays.
	r.Assign([]StorePartition{b0})
	check("rebalanced", RestoreProgress{RestoredRecords: 100, TotalRecords: 100, RestoringPartitions: 2, TotalPartitions: 2})
	r.Finish(e0)
	r.Drop([]StorePartition{b0})
	check("a0 finished, b0 taken away", RestoreProgress{RestoredRecords: 100, TotalRecords: 100, TotalPartitions: 1})
	// The restore of a partition taken away reports into nothing.
	if e := r.Begin(b0, 10); e != nil {
		t.Errorf("begin of an untracked partition returned an entry")
	} else {
		r.Advance(e, 5)
		r.Finish(e)
	}
	check("after an untracked restore", RestoreProgress{RestoredRecords: 100, TotalRecords: 100, TotalPartitions: 1})
}
