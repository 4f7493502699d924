package state

import "sync"

// The bookkeeping of restores: which store partitions of this instance's
// tasks are restored from their changelogs, and how far (the engine reads
// the changelogs: engine/restore.go).

// RestoreProgress says how far restoring stores from their changelogs has
// come, over the store partitions of the tasks assigned at the last
// rebalance (a rebalance forgets the partitions restored before it).
type RestoreProgress struct {
	// RestoredRecords counts the changelog offsets read so far (records,
	// and the transaction markers and compacted-away records between them);
	// TotalRecords what the restores had to read when each began: changelog
	// end offset minus checkpoint. A store partition counts toward
	// TotalRecords once its end offset is known, so the total may grow
	// while partitions are starting; when all are done, both are equal.
	RestoredRecords, TotalRecords int64
	// RestoringPartitions are store partitions not restored yet (waiting to
	// start or reading their changelog), of TotalPartitions.
	RestoringPartitions, TotalPartitions int
}

// Done reports whether no store partition is restoring.
func (p RestoreProgress) Done() bool { return p.RestoringPartitions == 0 }

// StorePartition names one partition of one store.
type StorePartition struct {
	Store     string
	Partition int32
}

// RestoreEntry is one store partition's restore.
type RestoreEntry struct {
	restored, total int64
	done            bool
}

// Restores tracks the restores of the store partitions of the tasks
// assigned at the last rebalance. Safe for concurrent use: restores run in
// the tasks' goroutines, reads come from the server's handlers.
type Restores struct {
	mu    sync.Mutex // guards parts
	parts map[StorePartition]*RestoreEntry
}

// Assign begins a rebalance's count: partitions restored before it are
// forgotten, those still restoring stay, and sps are added as waiting.
func (r *Restores) Assign(sps []StorePartition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for sp, e := range r.parts {
		if e.done {
			delete(r.parts, sp)
		}
	}
	if r.parts == nil {
		r.parts = map[StorePartition]*RestoreEntry{}
	}
	for _, sp := range sps {
		r.parts[sp] = &RestoreEntry{}
	}
}

// Drop forgets the store partitions of tasks taken away.
func (r *Restores) Drop(sps []StorePartition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sp := range sps {
		delete(r.parts, sp)
	}
}

// Begin records that sp's restore has total offsets to read. The entry it
// returns is nil when sp is not tracked (its task was taken away); the
// methods below accept nil.
func (r *Restores) Begin(sp StorePartition, total int64) *RestoreEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.parts[sp]
	if e != nil {
		e.total, e.restored = total, 0
	}
	return e
}

// Advance records that restored of the entry's offsets are read.
func (r *Restores) Advance(e *RestoreEntry, restored int64) {
	if e == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e.restored = min(restored, e.total)
}

// Finish records that the entry's restore is complete.
func (r *Restores) Finish(e *RestoreEntry) {
	if e == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e.restored, e.done = e.total, true
}

// Restored reports whether sp, a store partition of a current task, is
// restored: its entry is done, or gone (a rebalance forgot it as done).
func (r *Restores) Restored(sp StorePartition) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.parts[sp]
	return e == nil || e.done
}

// Progress sums the store partitions tracked.
func (r *Restores) Progress() RestoreProgress {
	r.mu.Lock()
	defer r.mu.Unlock()
	var p RestoreProgress
	for _, e := range r.parts {
		p.TotalPartitions++
		if !e.done {
			p.RestoringPartitions++
		}
		p.RestoredRecords += e.restored
		p.TotalRecords += e.total
	}
	return p
}
