package server_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// produceKeys produces n records keyed key-<i mod keys>, adding them to want.
func (e *env) produceKeys(topic string, from, n, keys int, want map[string]int64) {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		k := "key-" + strconv.Itoa((from+i)%keys)
		want[k]++
		rs[i] = &kgo.Record{Key: []byte(k), Value: []byte("x")}
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		e.t.Fatalf("produce: %v", err)
	}
}

// buildCount builds stream(in) -> group_by_key -> count -> to_stream -> to(out).
func (h *testHost) buildCount(in, out string) {
	s := h.mustBuild(&pb.StreamOp{Topics: []string{in}, KeySerde: "string"})
	g := h.mustBuild(&pb.GroupByKeyOp{Input: s.Id})
	c := h.mustBuild(&pb.CountOp{Input: g.Id})
	ts := h.mustBuild(&pb.ToStreamOp{Input: c.Id})
	h.mustBuild(&pb.ToOp{Input: ts.Id, Topic: out})
}

func (h *testHost) restoreProgress() *pb.RestoreProgress {
	h.t.Helper()
	resp, err := h.cl.GetState(context.Background(), connectReq(&pb.GetStateRequest{SessionId: h.session}))
	if err != nil {
		h.t.Fatal(err)
	}
	if resp.Msg.State != pb.State_STATE_RUNNING {
		return nil
	}
	return resp.Msg.Restore
}

// num.standby.replicas: an instance keeps warm copies of the stores of
// tasks it does not own by tailing their changelogs (Kafka Streams'
// StandbyTask), so that when such a task moves to it, its restore starts
// from the warm copy. Engine a counts alone, then b joins and takes half
// the tasks, keeping the other half's stores as standbys while more records
// flow; a stops, and b's restore of a's tasks reads far fewer records than
// their changelogs hold. Without standbys (the control) it reads them all.
// Both ways the counts stay exactly once.
func TestStandbyReplicasShortenTheTakeoverRestore(t *testing.T) {
	for _, standbys := range []int{0, 1} {
		t.Run("num.standby.replicas="+strconv.Itoa(standbys), func(t *testing.T) {
			e := newEnv(t, "events", "event-counts")
			o := e.another()
			config := map[string]string{
				"processing.guarantee":           "exactly_once_v2",
				"session.timeout.ms":             "6000",
				"num.standby.replicas":           strconv.Itoa(standbys),
				"polystreams.bundle.max.records": "500",
			}
			want := map[string]int64{}
			const keys = 400
			e.produceKeys("events", 0, 8000, keys, want)
			ha := e.open("standby", config)
			ha.buildCount("events", "event-counts")
			ha.start()
			doneA := ha.serveAsync()
			waitExactlyOnce(t, e, "event-counts", want)
			hb := o.open("standby", config)
			hb.buildCount("events", "event-counts")
			hb.start()
			doneB := hb.serveAsync()
			waitFor(t, "b to run its share", 60*time.Second, func() bool {
				p := hb.restoreProgress()
				return p != nil && p.TotalPartitions == 2
			})
			e.produceKeys("events", 8000, 8000, keys, want)
			waitExactlyOnce(t, e, "event-counts", want)
			changelog := "standby-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog"
			if standbys > 0 {
				// b's standbys have read a's changelog partitions to their
				// (committed) ends.
				waitFor(t, "b's standbys to catch up", 60*time.Second, func() bool {
					sb := o.srv.Standbys()["standby"]
					var at int64
					var parts []int32
					for _, p := range sb {
						at += p.Position
						parts = append(parts, p.Partition)
					}
					return len(sb) == 2 && at >= changelogSize(t, e, changelog, parts...)
				})
			}
			moved := o.srv.Standbys()["standby"]
			ha.stopServing(doneA)
			waitFor(t, "b to take over all four tasks", 60*time.Second, func() bool {
				p := hb.restoreProgress()
				return p != nil && p.TotalPartitions == 4 && p.RestoringPartitions == 0
			})
			p := hb.restoreProgress()
			size := changelogSize(t, e, changelog, 0, 1, 2, 3)
			t.Logf("b restored %d changelog records on taking over (the changelog holds %d)", p.TotalRecords, size)
			if standbys > 0 {
				if p.TotalRecords*10 > size {
					t.Errorf("with a standby of each task, the takeover restore read %d records of the changelog's %d (standbys %v)", p.TotalRecords, size, moved)
				}
			} else if p.TotalRecords*3 < size {
				t.Errorf("without standbys, the takeover restore read only %d records of the changelog's %d: the control shows nothing", p.TotalRecords, size)
			}
			e.produceKeys("events", 16000, 2000, keys, want)
			waitExactlyOnce(t, e, "event-counts", want)
			hb.stopServing(doneB)
		})
	}
}

// changelogSize sums the last stable offsets of topic's partitions parts.
func changelogSize(t *testing.T, e *env, topic string, parts ...int32) int64 {
	t.Helper()
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ends, err := adm.ListCommittedOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, p := range parts {
		if o, ok := ends.Lookup(topic, p); ok {
			n += o.Offset
		}
	}
	return n
}
