package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// gateRestore makes the broker serve fetches of topic one record batch at a
// time and hold every fetch past offset 0 until the returned release is
// called: a restore from the start reads one batch of each partition, then
// waits. So a test sees a restore in progress without depending on timing.
func (e *env) gateRestore(topic string) (release func()) {
	e.t.Helper()
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer adm.Close()
	details, err := adm.ListTopics(context.Background(), topic)
	if err != nil || details[topic].Err != nil {
		e.t.Fatalf("gateRestore: metadata of %s: %v %v", topic, err, details[topic].Err)
	}
	id := details[topic].ID
	open := make(chan struct{})
	var once sync.Once
	c := kfakeCluster(e.t, e.broker)
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		held := false
		for i := range req.(*kmsg.FetchRequest).Topics {
			rt := &req.(*kmsg.FetchRequest).Topics[i]
			if rt.Topic != topic && rt.TopicID != id {
				continue
			}
			for j := range rt.Partitions {
				rt.Partitions[j].PartitionMaxBytes = 1 // one batch per fetch
				held = held || rt.Partitions[j].FetchOffset > 0
			}
		}
		if held {
			c.SleepControl(func() { <-open })
		}
		return nil, nil, false
	})
	release = func() { once.Do(func() { close(open) }) }
	e.t.Cleanup(release)
	return release
}

func (h *testHost) getState() *pb.GetStateResponse {
	h.t.Helper()
	resp, err := h.cl.GetState(context.Background(), connect.NewRequest(&pb.GetStateRequest{SessionId: h.session}))
	if err != nil {
		h.t.Fatalf("GetState: %v", err)
	}
	return resp.Msg
}

// After the state directory is deleted, the engine restores the count store
// from its changelog (50,000 records) and says so: STATE_RESTORING with
// progress that only grows, up to the total, then STATE_RUNNING, in GetState
// and in Exchange; the restored store equals the store before.
func TestRestoreProgressIsReported(t *testing.T) {
	needKfake(t)
	e := newEnv(t, "lines", "word-counts")
	const app = "restore"
	changelog := app + "-" + wcStore + "-changelog"
	total := map[string]int64{}
	h := e.open(app, nil)
	h.buildWordCount("lines", "word-counts")
	h.start()
	done := h.serveAsync()
	// 25,000 words, counted twice: a batch writes each word it changed to
	// the changelog once, so 50,000 changelog records. Two rounds, the
	// second after the first is counted: every changelog partition gets
	// more than one record batch.
	for range 2 {
		ls := make([]string, 0, 5000)
		for i := range 5000 {
			ws := make([]string, 5)
			for j := range ws {
				ws[j] = fmt.Sprintf("k%05d", i*5+j)
				total[ws[j]]++
			}
			ls = append(ls, strings.Join(ws, " "))
		}
		e.produce("lines", ls...)
		waitCounts(t, e, "word-counts", total)
	}
	var before []kv
	waitFor(t, "the store to hold every word's count", 60*time.Second, func() bool {
		before, _ = h.query(wcStore, &pb.QueryRequest{Query: &pb.QueryRequest_All{All: true}})
		return len(before) == len(total)
	})
	// A rebalance right after the first assignment shows as REBALANCING for
	// a moment (seen on a loaded machine): wait for RUNNING first.
	waitFor(t, "the application to run", 60*time.Second, func() bool { return h.getState().State == pb.State_STATE_RUNNING })
	if p := h.getState(); p.State != pb.State_STATE_RUNNING || p.Restore.GetRestoringPartitions() != 0 || p.Restore.GetTotalPartitions() != 4 {
		t.Fatalf("before the restart: %v with %v, want STATE_RUNNING, 4 store partitions, none restoring", p.State, p.Restore)
	}
	h.stop()
	<-done
	e.stopEngine()

	var changelogEnd int64
	ends := e.endOffsets(changelog)
	for _, end := range ends {
		changelogEnd += end
	}
	if changelogEnd < 50000 {
		t.Fatalf("changelog %s has %d records, want at least 50,000 (one per counted word)", changelog, changelogEnd)
	}
	if err := os.RemoveAll(filepath.Join(e.stateDir, app)); err != nil {
		t.Fatal(err)
	}
	release := e.gateRestore(changelog)
	e.startEngine()
	h = e.open(app, nil)
	h.buildWordCount("lines", "word-counts")
	h.start()

	// Poll until running; every distinct observation is kept. Once one
	// shows a restore in progress, the gate opens.
	type seen struct {
		state                    pb.State
		restored, total          int64
		restoring, allPartitions int32
	}
	var obs []seen
	intermediate := false
	deadline := time.Now().Add(90 * time.Second)
	for {
		m := h.getState()
		o := seen{m.State, m.Restore.GetRestoredRecords(), m.Restore.GetTotalRecords(), m.Restore.GetRestoringPartitions(), m.Restore.GetTotalPartitions()}
		if len(obs) == 0 || obs[len(obs)-1] != o {
			obs = append(obs, o)
		}
		if !intermediate && o.state == pb.State_STATE_RESTORING && o.restored > 0 && o.restored < o.total {
			intermediate = true
			// Exchange says the same, to a host.
			ex, err := h.cl.Exchange(context.Background(), connect.NewRequest(&pb.ExchangeRequest{SessionId: h.session, WorkerId: "observer"}))
			if err != nil {
				t.Fatalf("Exchange: %v", err)
			}
			if ex.Msg.Restore.GetRestoredRecords() == 0 || ex.Msg.Restore.GetRestoringPartitions() == 0 {
				t.Errorf("Exchange while restoring: restore %v, want progress with partitions restoring", ex.Msg.Restore)
			}
			release()
		}
		if o.state == pb.State_STATE_RUNNING || o.state == pb.State_STATE_ERROR {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not running within 90s of the restart; seen %+v", obs)
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("observed %d distinct states; first %+v, last %+v", len(obs), obs[0], obs[len(obs)-1])
	if !intermediate {
		t.Fatalf("never saw STATE_RESTORING with 0 < restored < total; seen %+v", obs)
	}
	last := obs[len(obs)-1]
	if last.state != pb.State_STATE_RUNNING {
		t.Fatalf("ended in %v, want STATE_RUNNING", last.state)
	}
	if last.restored != changelogEnd || last.total != changelogEnd || last.restoring != 0 || last.allPartitions != 4 {
		t.Errorf("once running: %+v, want %d of %d records restored, 0 of 4 partitions restoring", last, changelogEnd, changelogEnd)
	}
	var prev seen
	for i, o := range obs {
		switch {
		case o.state != pb.State_STATE_REBALANCING && o.state != pb.State_STATE_RESTORING && i < len(obs)-1:
			t.Errorf("observation %d: %v before running, want only STATE_REBALANCING or STATE_RESTORING; seen %+v", i, o.state, obs)
		case o.restored < prev.restored || o.total < prev.total || o.restored > o.total:
			t.Errorf("observation %d: restored %d of %d after %d of %d: progress must only grow, up to the total", i, o.restored, o.total, prev.restored, prev.total)
		case o.state == pb.State_STATE_RESTORING && o.restoring == 0:
			t.Errorf("observation %d: STATE_RESTORING with no partition restoring", i)
		}
		prev = o
	}

	done = h.serveAsync()
	defer func() { h.stop(); <-done }()
	after, err := h.query(wcStore, &pb.QueryRequest{Query: &pb.QueryRequest_All{All: true}})
	if err != nil {
		t.Fatalf("query after the restore: %v", err)
	}
	if digest(after) != digest(before) {
		t.Fatalf("store after the restore differs from before: %d entries, %d before; %s", len(after), len(before), firstDiff(before, after))
	}
}

// endOffsets returns the end offset of each partition of topic.
func (e *env) endOffsets(topic string) map[int32]int64 {
	e.t.Helper()
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(e.broker.Addr()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer adm.Close()
	ends, err := adm.ListEndOffsets(context.Background(), topic)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			e.t.Fatalf("end offset of %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out
}

func firstDiff(want, got []kv) string {
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			return fmt.Sprintf("entry %d is %v, want %v", i, got[i], want[i])
		}
	}
	return "one is a prefix of the other"
}
