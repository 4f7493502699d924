package server_test

// Behaviours of Apache Kafka that kfake does not show, found by running the
// suites against a real broker (docs/kafka.md), pinned here on kfake with
// its request interception so that `make test-go` keeps them fixed.

import (
	"bytes"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Apache Kafka answers CreateTopics once the controller committed the
// topic; the broker's metadata shows it a moment later. A source topic
// created just before Start is not missing: the first metadata answers
// that do not know it (UNKNOWN_TOPIC_OR_PARTITION, as Kafka's would be)
// do not fail the start.
func TestSourceTopicShownLateInMetadataIsNotMissing(t *testing.T) {
	needKfake(t)
	e := newEnv(t, "late", "late-out")
	host, p, _ := net.SplitHostPort(e.broker.Addr())
	port, _ := strconv.Atoi(p)
	namesLate := func(req kmsg.Request) bool {
		for _, rt := range req.(*kmsg.MetadataRequest).Topics {
			if rt.Topic != nil && *rt.Topic == "late" {
				return true
			}
		}
		return false
	}
	e.produce("late", "a", "b")
	h := e.open("late", map[string]string{"commit.interval.ms": "100"})
	up := h.register("upper", valueFn(func(v []byte) ([]byte, error) { return bytes.ToUpper(v), nil }))
	s := h.mustBuild(&pb.StreamOp{Topics: []string{"late"}, ValueSerde: "string"})
	m := h.mustBuild(&pb.MapValuesOp{Input: s.Id, Token: up})
	h.mustBuild(&pb.ToOp{Input: m.Id, Topic: "late-out"})
	// Installed now: the producer above would have absorbed the answers.
	f := answerEvery(kfakeCluster(t, e.broker), kmsg.Metadata, 1, 3, namesLate, func(r kmsg.Request) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.MetadataResponse)
		resp.SetVersion(r.GetVersion())
		resp.ControllerID = 0
		resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 0, Host: host, Port: int32(port)}}
		topic := "late"
		resp.Topics = []kmsg.MetadataResponseTopic{{Topic: &topic, ErrorCode: kerr.UnknownTopicOrPartition.Code}}
		return resp, nil
	})
	h.start()
	done := h.serveAsync()
	waitFor(t, "A and B in late-out", 30*time.Second, func() bool {
		var got []string
		e.readTopic("late-out", false, func(r *kgo.Record) { got = append(got, string(r.Value)) })
		slices.Sort(got)
		return slices.Equal(got, []string{"A", "B"})
	})
	h.stopServing(done)
	f.assertFired(t, "metadata not knowing the topic yet")
}

// Apache Kafka answers ListOffsets for a partition of a topic created a
// moment ago with NOT_LEADER_OR_FOLLOWER until its replica is set up. A
// changelog created at start is restored once the broker answers, not
// failed ("no end offset"): the first answers for it are that error here.
func TestChangelogOffsetsNotYetServedAreAskedAgain(t *testing.T) {
	needKfake(t)
	e := newEnv(t, "lines", "word-counts")
	ls, want := lines(200, 0)
	e.produce("lines", ls...)
	h := e.open("fresh-changelog", nil)
	h.buildWordCount("lines", "word-counts")
	namesChangelog := func(req kmsg.Request) bool {
		for _, rt := range req.(*kmsg.ListOffsetsRequest).Topics {
			if strings.HasSuffix(rt.Topic, "-changelog") {
				return true
			}
		}
		return false
	}
	f := answerEvery(kfakeCluster(t, e.broker), kmsg.ListOffsets, 1, 3, namesChangelog, func(r kmsg.Request) (kmsg.Response, error) {
		req := r.(*kmsg.ListOffsetsRequest)
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		resp.SetVersion(req.GetVersion())
		for _, rt := range req.Topics {
			st := kmsg.ListOffsetsResponseTopic{Topic: rt.Topic}
			for _, rp := range rt.Partitions {
				st.Partitions = append(st.Partitions, kmsg.ListOffsetsResponseTopicPartition{Partition: rp.Partition, ErrorCode: kerr.NotLeaderForPartition.Code, Offset: -1, Timestamp: -1})
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	})
	h.start()
	done := h.serveAsync()
	waitCounts(t, e, "word-counts", want)
	h.stopServing(done)
	f.assertFired(t, "ListOffsets of a changelog not served yet")
}
