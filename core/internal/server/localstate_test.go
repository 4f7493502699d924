package server_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// activeTasks returns the partitions of appID's active tasks on e's engine.
func (e *env) activeTasks(appID string) []int32 {
	e.t.Helper()
	var out []int32
	for _, a := range e.srv.Status().Applications {
		if a.ApplicationID != appID {
			continue
		}
		for _, task := range a.Tasks {
			_, p, _ := strings.Cut(task.ID, "_")
			n, err := strconv.Atoi(p)
			if err != nil {
				e.t.Fatalf("task id %q", task.ID)
			}
			out = append(out, int32(n))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// A restarted instance (same state directory) gets back the tasks whose
// stores it still holds, and restores them from its checkpoints: it reads
// only what the changelog gained while it was away, not the whole
// changelog. Engines a and b share four tasks; a stops (checkpointing its
// two), b takes all four over and counts more records; a restarts with an
// empty assignment but its checkpoints in its state directory, reported
// in its JoinGroup metadata. b must give up two tasks for balance and gives
// up those a has state for. Kafka Streams does the same through the
// taskOffsetSums of SubscriptionInfo and HighAvailabilityTaskAssignor
// (ClientState.lagFor). Without the local state (the balancer before this),
// b kept tasks 0, 1 and a restored 2, 3 from scratch, failing both checks.
// Under at_least_once the checkpoints are those a clean stop (or a
// revoke) writes; under exactly_once_v2 every commit moves them.
func TestRestartedInstanceGetsBackTheTasksItHasStateFor(t *testing.T) {
	for _, guarantee := range []string{"exactly_once_v2", "at_least_once"} {
		t.Run(guarantee, func(t *testing.T) { testRestartedInstance(t, guarantee) })
	}
}

func testRestartedInstance(t *testing.T, guarantee string) {
	e := newEnv(t, "events", "event-counts")
	o := e.another()
	config := map[string]string{
		"processing.guarantee":           guarantee,
		"session.timeout.ms":             "6000",
		"polystreams.bundle.max.records": "500",
	}
	const app, keys = "restart", 8000 // one changelog record per key and bundle: many keys, a long changelog
	changelog := app + "-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog"
	want := map[string]int64{}
	ha := e.open(app, config)
	ha.buildCount("events", "event-counts")
	ha.start()
	doneA := ha.serveAsync()
	waitFor(t, "a to run all four tasks", 60*time.Second, func() bool {
		p := ha.restoreProgress()
		return p != nil && p.TotalPartitions == 4
	})
	hb := o.open(app, config)
	hb.buildCount("events", "event-counts")
	hb.start()
	doneB := hb.serveAsync()
	waitFor(t, "a and b to run two tasks each", 60*time.Second, func() bool {
		pa, pb := ha.restoreProgress(), hb.restoreProgress()
		return pa != nil && pb != nil && pa.TotalPartitions == 2 && pb.TotalPartitions == 2
	})
	e.produceKeys("events", 0, 8000, keys, want)
	waitExactlyOnce(t, e, "event-counts", want)
	before := e.activeTasks(app)
	if len(before) != 2 {
		t.Fatalf("a runs tasks %v, want two", before)
	}
	ha.stopServing(doneA)
	e.stopEngine() // the instance goes away; its state directory stays

	waitFor(t, "b to take over all four tasks", 60*time.Second, func() bool {
		p := hb.restoreProgress()
		return p != nil && p.TotalPartitions == 4 && p.RestoringPartitions == 0
	})
	e.produceKeys("events", 8000, 1000, keys, want)
	waitExactlyOnce(t, e, "event-counts", want)

	e.startEngine() // same state directory
	ha = e.open(app, config)
	ha.buildCount("events", "event-counts")
	ha.start()
	doneA = ha.serveAsync()
	waitFor(t, "a to run two tasks again, restored", 60*time.Second, func() bool {
		p := ha.restoreProgress()
		return p != nil && p.TotalPartitions == 2 && p.RestoringPartitions == 0
	})
	after := e.activeTasks(app)
	if !slices.Equal(after, before) {
		t.Errorf("the restarted instance runs tasks %v, want %v, whose state it holds", after, before)
	}
	p := ha.restoreProgress()
	size := changelogSize(t, e, changelog, after...)
	t.Logf("a restored %d changelog records on restart (its tasks' changelog partitions hold %d)", p.TotalRecords, size)
	if p.TotalRecords*3 > size {
		t.Errorf("the restarted instance restored %d records of its tasks' changelog's %d: not from its checkpoints", p.TotalRecords, size)
	}
	e.produceKeys("events", 9000, 1000, keys, want)
	waitExactlyOnce(t, e, "event-counts", want)
	ha.stopServing(doneA)
	hb.stopServing(doneB)
}
