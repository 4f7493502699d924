package engine

import (
	"context"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// An operator runs one step of a plan in one task: a type per operator
// kind, holding that task's state of the step (its stores, stream time,
// buffers), made when the task first pushes records (task.op). The task
// drives it through process and keeps what every operator shares: the
// record queue and the order records are pushed in, the store batch and
// transaction, the record cache, the outputs and the commit.
//
// An operator runs only on its task's goroutine: it is not safe for
// concurrent use, and needs no lock.
type operator interface {
	// process runs recs (a run of records of one source, in order)
	// through the step and returns what it forwards to all of the step's
	// children; the task forwards them (or caches them: cache.go). An
	// operator that forwards to one child only pushes to it itself
	// (branchOp), as Kafka Streams' forward(record, To.child(name)). A
	// record that fails goes to the task's policy (task.recordFailed); an
	// error returned fails the batch.
	process(ctx context.Context, recs []rec) ([]rec, error)
}

// A reviver is an operator that keeps state in memory across batches. An
// aborted transaction revives it (task.settleTxn): it drops that state
// and loads it again from its stores on next use, as Kafka Streams
// revives a task whose transaction aborted.
type reviver interface {
	revive()
}

// opener makes a step's operator for a task. compile sets one per step
// (step.open); the operator's file defines it.
type opener func(t *task, s *step) operator

// op returns step s's operator in t, making the task's operators on first
// use: after its stores are open.
func (t *task) op(s *step) operator {
	if t.ops == nil {
		t.ops = make([]operator, len(t.plan.steps))
		for i, ps := range t.plan.steps {
			t.ops[i] = ps.open(t, ps)
		}
	}
	return t.ops[s.index]
}

// opBase is what an operator holds: the task it runs in, its step and,
// when the step has one, the store it owns or reads (taken when the
// operator is made: task.op).
type opBase struct {
	t  *task
	s  *step
	tx *storeTx
}

// baseOf is the base of an operator of step s in t reading or writing
// store st (nil: none).
func baseOf(t *task, s *step, st *topology.Store) opBase {
	return opBase{t: t, s: s, tx: t.storeOf(st)}
}

// storeOf returns st's partition in the task (nil for a nil st).
func (t *task) storeOf(st *topology.Store) *storeTx {
	if st == nil {
		return nil
	}
	return t.stores[st.Name]
}
