package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// Punctuation (docs/design/processor.md, "Punctuation"): a task's
// processors schedule punctuators against stream time or wall-clock time;
// the task keeps the schedules (Kafka Streams' PunctuationQueue per task
// and type) and calls the due ones: stream-time ones after each run of
// records (the test driver's runs are one record, so after each, as
// TopologyTestDriver does), wall-clock ones when the wall clock passes
// their time (App.PunctuateWallClock; the test driver's AdvanceWallClock).

// schedule is one punctuator of a processor in a task.
type schedule struct {
	op punctuator
	// hostID is the host's id of a host processor's schedule.
	hostID   uint64
	typ      topology.PunctuationType
	interval int64
	next     int64 // due when the time reaches it
	fn       func(ts int64) error
	canceled bool
}

// punctuator is a processor operator that runs a schedule's punctuator.
type punctuator interface {
	punctuate(ctx context.Context, s *schedule, now int64) error
}

// Cancel stops the schedule (Cancellable.cancel).
func (s *schedule) Cancel() { s.canceled = true }

// advance is PunctuationSchedule.next: the next due time after now,
// skipping the intervals missed.
func (s *schedule) advance(now int64) {
	missed := (now - s.next) / s.interval
	s.next += (missed + 1) * s.interval
}

// addSchedule registers a schedule of o; stream-time schedules are
// aligned to 0 (due as soon as stream time is known), wall-clock ones due
// one interval from now (StreamTask.schedule).
func (t *task) addSchedule(s *schedule) {
	switch s.typ {
	case topology.WallClockTime:
		s.next = t.app.wallClock() + s.interval
	default:
		s.next = 0
	}
	t.schedules = append(t.schedules, s)
}

// dropSchedules forgets o's schedules (its instance closed).
func (t *task) dropSchedules(o punctuator) {
	t.schedules = slices.DeleteFunc(t.schedules, func(s *schedule) bool { return s.op == o })
}

// punctuate calls each schedule of type typ due at now, in the order they
// were made, and pushes what they forward.
func (t *task) punctuate(ctx context.Context, typ topology.PunctuationType, now int64) error {
	if now < 0 {
		return nil
	}
	// A punctuator may schedule or cancel: walk a copy.
	for _, s := range slices.Clone(t.schedules) {
		if s.canceled || s.typ != typ || s.next > now {
			continue
		}
		s.advance(now)
		if err := s.op.punctuate(ctx, s, now); err != nil {
			return err
		}
	}
	t.schedules = slices.DeleteFunc(t.schedules, func(s *schedule) bool { return s.canceled })
	return nil
}

// punctuatorFailed applies processing.exception.handler to a punctuator
// that failed: under fail the task fails naming node and time; else it is
// logged and counted as dropped (Kafka Streams records droppedRecordsSensor
// on CONTINUE). There is no input record, so no dead letter.
func (t *task) punctuatorFailed(node string, typ topology.PunctuationType, now int64, err error) error {
	at := "stream time"
	if typ == topology.WallClockTime {
		at = "wall-clock time"
	}
	wrapped := fmt.Errorf("engine: punctuator of node %s at %s %d failed: %w", node, at, now, err)
	if t.app.cfg.ProcessingPolicy == config.PolicyFail {
		return wrapped
	}
	t.app.dropped.Add(1)
	t.app.stats.failed.Add(1)
	t.app.log.Warn("punctuator failed, continuing", "policy", t.app.cfg.ProcessingPolicy.String(), "task", t.id.String(), "error", wrapped.Error())
	return nil
}

// wallClockDue reports whether a wall-clock schedule is due at now.
func (t *task) wallClockDue(now int64) bool {
	for _, s := range t.schedules {
		if !s.canceled && s.typ == topology.WallClockTime && s.next <= now {
			return true
		}
	}
	return false
}

// nextWallClock is when the earliest wall-clock schedule is due (false:
// none).
func (t *task) nextWallClock() (int64, bool) {
	var next int64
	found := false
	for _, s := range t.schedules {
		if !s.canceled && s.typ == topology.WallClockTime && (!found || s.next < next) {
			next, found = s.next, true
		}
	}
	return next, found
}

// punctuateWallClock runs the task's due wall-clock punctuators as a batch
// of their own: their writes and forwards are committed as a batch's.
func (t *task) punctuateWallClock(ctx context.Context) error {
	t.applyRevivals()
	now := t.app.wallClock()
	if !t.wallClockDue(now) {
		return nil
	}
	t.begin()
	if err := t.punctuate(ctx, topology.WallClockTime, now); err != nil {
		return err
	}
	if err := t.finish(); err != nil {
		return err
	}
	if t.cacheBytes == 0 {
		t.settleOffsets()
	}
	return nil
}

// wallTimer is how long until the task's earliest wall-clock schedule is
// due, for the run loop's timer (false: none).
func (t *task) wallTimer() (time.Duration, bool) {
	next, ok := t.nextWallClock()
	if !ok {
		return 0, false
	}
	return time.Duration(max(0, next-t.app.wallClock())) * time.Millisecond, true
}

// PunctuateWallClock runs every task's due wall-clock punctuators and
// commits what they did (TopologyTestDriver.advanceWallClockTime); the
// test driver calls it after moving its clock.
func (a *App) PunctuateWallClock(ctx context.Context) error {
	a.mu.Lock()
	tasks := make([]*task, 0, len(a.tasks))
	for _, t := range a.tasks {
		tasks = append(tasks, t)
	}
	a.mu.Unlock()
	for _, t := range tasks {
		if !t.restored.Load() {
			continue
		}
		reply := make(chan error, 1)
		select {
		case t.punctReq <- reply:
			select {
			case err := <-reply:
				if err != nil {
					return err
				}
			case <-t.done:
			case <-ctx.Done():
				return fmt.Errorf("engine: waiting for task %s's wall-clock punctuation: %w", t.id, ctx.Err())
			}
		case <-t.done:
		case <-ctx.Done():
			return fmt.Errorf("engine: waiting for task %s to take its wall-clock punctuation: %w", t.id, ctx.Err())
		}
	}
	return nil
}

// SetWallClock sets the clock wall-clock punctuators run by (epoch ms;
// default the system's). The test driver sets its virtual clock before
// Start.
func (a *App) SetWallClock(now func() int64) { a.wallNow = now }

func (a *App) wallClock() int64 {
	if a.wallNow != nil {
		return a.wallNow()
	}
	return time.Now().UnixMilli()
}
