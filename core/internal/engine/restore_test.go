package engine

import "testing"

// Restore progress sums the store partitions of the tasks assigned at the
// last rebalance: waiting ones count as restoring, a rebalance forgets the
// finished ones, and taken-away ones leave at once.
func TestRestoreProgressFollowsAssignments(t *testing.T) {
	var r restores
	a0, a1, b0 := storePartition{"a", 0}, storePartition{"a", 1}, storePartition{"b", 0}
	check := func(what string, want RestoreProgress) {
		t.Helper()
		if got := r.progress(); got != want {
			t.Errorf("%s: progress %+v, want %+v", what, got, want)
		}
	}
	check("before any assignment", RestoreProgress{})
	if !r.progress().Done() {
		t.Errorf("no partitions: not done")
	}
	r.assign([]storePartition{a0, a1})
	check("assigned, not begun", RestoreProgress{RestoringPartitions: 2, TotalPartitions: 2})
	e0 := r.begin(a0, 100)
	e1 := r.begin(a1, 0)
	r.finish(e1)
	check("a0 begun", RestoreProgress{TotalRecords: 100, RestoringPartitions: 1, TotalPartitions: 2})
	r.advance(e0, 40)
	check("a0 at 40", RestoreProgress{RestoredRecords: 40, TotalRecords: 100, RestoringPartitions: 1, TotalPartitions: 2})
	r.advance(e0, 130) // offsets past the end (not expected) do not overshoot
	check("a0 past its end", RestoreProgress{RestoredRecords: 100, TotalRecords: 100, RestoringPartitions: 1, TotalPartitions: 2})
	if r.progress().Done() {
		t.Errorf("a0 still restoring, but done")
	}
	// A rebalance while a0 restores: a1 (finished) is forgotten, a0 stays.
	r.assign([]storePartition{b0})
	check("rebalanced", RestoreProgress{RestoredRecords: 100, TotalRecords: 100, RestoringPartitions: 2, TotalPartitions: 2})
	r.finish(e0)
	r.drop([]storePartition{b0})
	check("a0 finished, b0 taken away", RestoreProgress{RestoredRecords: 100, TotalRecords: 100, TotalPartitions: 1})
	// The restore of a partition taken away reports into nothing.
	if e := r.begin(b0, 10); e != nil {
		t.Errorf("begin of an untracked partition returned an entry")
	} else {
		r.advance(e, 5)
		r.finish(e)
	}
	check("after an untracked restore", RestoreProgress{RestoredRecords: 100, TotalRecords: 100, TotalPartitions: 1})
}
