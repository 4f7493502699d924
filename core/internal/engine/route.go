package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// Routing at a sink: a TopicNameExtractor names each record's topic and a
// StreamPartitioner its partitions (Produced.streamPartitioner,
// Repartitioned.withStreamPartitioner), as Kafka Streams'
// RecordCollectorImpl.send does: no answer (null) leaves the record to
// Kafka's default partitioner (murmur2 of the serialized key), a set of
// partitions multicasts it, an empty set drops it. Host functions cross
// once per bundle of a batch's records (per topic, for the partitioner,
// which is given the topic and its partition count).

// routes is what a sink's routing made of a batch's records, by index.
type routes struct {
	topics []string // each record's topic; nil: the sink's topic
	skip   []bool   // failed, or dropped by an empty partition set
	parts  [][]int  // each record's partitions; nil: the default partitioner
}

// routeStep is the one-step host chain running a sink's routing function
// f as op, or nil when f is absent or a Go function.
func routeStep(n *topology.Node, f *topology.Function, op pb.Operation) *step {
	if f == nil || f.Token == 0 {
		return nil
	}
	in := n.Predecessors[0]
	return &step{
		node: n, chain: []*topology.Node{n},
		steps: []*pb.Step{{Token: f.Token, Operation: op, Node: n.Name, Metadata: pb.Metadata(f.Metadata)}},
		inKey: in.KeySerde, inValue: in.ValueSerde, outKey: in.KeySerde, outValue: in.ValueSerde,
	}
}

func (o *sinkOp) route(ctx context.Context, recs []rec) (*routes, error) {
	s, t, n := o.s, o.t, o.s.node
	rt := &routes{skip: make([]bool, len(recs))}
	fail := func(i int, err error) error {
		rt.skip[i] = true
		return t.recordFailed(recs[i], n.Name, kindOf(err), err)
	}
	if n.TopicExtractor != nil {
		rt.topics = make([]string, len(recs))
		if f, ok := n.TopicExtractor.Native.(topology.TopicNameExtractorFunc); ok {
			for i, r := range recs {
				topic, err := f(r.key, r.value, recordContext(r))
				if err == nil && topic == "" {
					err = fmt.Errorf("the topic name extractor %s named no topic", n.ExtractorClass())
				}
				if err != nil {
					if err := fail(i, err); err != nil {
						return nil, err
					}
					continue
				}
				rt.topics[i] = topic
			}
		} else if err := o.extract(ctx, recs, rt, fail); err != nil {
			return nil, err
		}
	}
	if n.Partitioner == nil {
		return rt, nil
	}
	rt.parts = make([][]int, len(recs))
	var order []string
	byTopic := map[string][]int{}
	for i := range recs {
		if rt.skip[i] {
			continue
		}
		topic := s.topic
		if rt.topics != nil {
			topic = rt.topics[i]
		}
		if _, ok := byTopic[topic]; !ok {
			order = append(order, topic)
		}
		byTopic[topic] = append(byTopic[topic], i)
	}
	for _, topic := range order {
		idx := byTopic[topic]
		np, err := t.app.partitionCount(ctx, topic, t.id)
		if err != nil {
			for _, i := range idx {
				if err := fail(i, err); err != nil {
					return nil, err
				}
			}
			continue
		}
		// set takes record i's answer: ps, or the default partitioner
		// when !ok.
		set := func(i int, ps []int, ok bool) error {
			if !ok {
				return nil
			}
			if len(ps) == 0 {
				rt.skip[i] = true // Kafka Streams logs "Skipping record as partitioner returned empty partitions" and counts it dropped
				t.app.dropped.Add(1)
				return nil
			}
			for _, p := range ps {
				if p < 0 || p >= np {
					return fail(i, fmt.Errorf("the stream partitioner chose partition %d of topic %q, which has %d partitions (Kafka's producer: Invalid partition given with record: %d is not in the range [0...%d].)", p, topic, np, p, np-1))
				}
			}
			slices.Sort(ps)
			rt.parts[i] = slices.Compact(ps) // a set
			return nil
		}
		if f, ok := n.Partitioner.Native.(topology.StreamPartitionerFunc); ok {
			for _, i := range idx {
				ps, ok, err := f(topic, recs[i].key, recs[i].value, np)
				if err == nil {
					err = set(i, ps, ok)
				} else {
					err = fail(i, err)
				}
				if err != nil {
					return nil, err
				}
			}
			continue
		}
		if err := o.partition(ctx, recs, idx, topic, np, set, rt); err != nil {
			return nil, err
		}
	}
	return rt, nil
}

// extract runs a host TopicNameExtractor over recs in bundles.
func (o *sinkOp) extract(ctx context.Context, recs []rec, rt *routes, fail func(int, error) error) error {
	t, ps := o.t, o.s.extractor
	bounds := t.bundleBounds(len(recs), func(i int) int { return len(recs[i].key) + len(recs[i].value) })
	for j := range len(bounds) - 1 {
		start, end := bounds[j], bounds[j+1]
		out, res, fails, err := t.crossOnce(ctx, ps, recs[start:end])
		if err != nil {
			return err
		}
		for _, f := range fails {
			rt.skip[start+f.index] = true
		}
		if err := t.applyFailures(recs[start:end], fails); err != nil {
			return err
		}
		k := 0
		for i, c := range res.OutputCounts {
			if rt.skip[start+i] {
				k += int(c)
				continue
			}
			if c != 1 || len(out[k].value) == 0 {
				if err := fail(start+i, fmt.Errorf("the topic name extractor %s named no topic (%d answers)", o.s.node.ExtractorClass(), c)); err != nil {
					return err
				}
				k += int(c)
				continue
			}
			rt.topics[start+i] = string(out[k].value)
			k++
		}
	}
	return nil
}

// partition runs a host StreamPartitioner over the records idx of recs,
// all going to topic (np partitions), in bundles; set takes each answer.
func (o *sinkOp) partition(ctx context.Context, recs []rec, idx []int, topic string, np int, set func(int, []int, bool) error, rt *routes) error {
	t, ps := o.t, o.s.partitioner
	sub := make([]rec, len(idx))
	for j, i := range idx {
		sub[j] = recs[i]
	}
	bounds := t.bundleBounds(len(sub), func(i int) int { return len(sub[i].key) + len(sub[i].value) })
	for j := range len(bounds) - 1 {
		start, end := bounds[j], bounds[j+1]
		b := encodeBundle(ps, sub[start:end])
		b.SinkTopic, b.SinkPartitions = topic, int32(np)
		out, res, fails, err := t.cross(ctx, ps, sub[start:end], b)
		if err != nil {
			return err
		}
		failed := map[int]bool{}
		for _, f := range fails {
			failed[f.index] = true
			rt.skip[idx[start+f.index]] = true
		}
		if err := t.applyFailures(sub[start:end], fails); err != nil {
			return err
		}
		k := 0
		for i, c := range res.OutputCounts {
			answers := out[k : k+int(c)]
			k += int(c)
			if failed[i] {
				continue
			}
			var parts []int
			dflt := c == 1 && answers[0].value == nil
			for _, a := range answers {
				if dflt {
					break
				}
				if len(a.value) != 4 {
					return fmt.Errorf("engine: task %s: node %s: the host answered a stream partition of %d bytes (want 4, big-endian)", t.id, o.s.node.Name, len(a.value))
				}
				parts = append(parts, int(int32(binary.BigEndian.Uint32(a.value))))
			}
			if err := set(idx[start+i], parts, !dflt); err != nil {
				return err
			}
		}
	}
	return nil
}

// recordContext is r's RecordContext for a TopicNameExtractor.
func recordContext(r rec) topology.RecordContext {
	rc := topology.RecordContext{Timestamp: r.ts}
	if r.in != nil {
		rc.Topic, rc.Partition, rc.Offset = r.in.Topic, r.in.Partition, r.in.Offset
	}
	return rc
}

// partitionCount is topic's partition count, from the brokers' metadata
// the first time (a topic that does not exist is an error, as Kafka
// Streams' "Could not get partition information").
func (a *App) partitionCount(ctx context.Context, topic string, task taskID) (int, error) {
	if a.cfg.TestDriver {
		// TopologyTestDriver's producer gives every topic one partition
		// (its MockProducer.partitionsFor), existing or not.
		return 1, nil
	}
	if n, ok := a.sinkParts.Load(topic); ok {
		return n.(int), nil
	}
	details, err := a.listExisting(ctx, []string{topic})
	if err != nil {
		return 0, fmt.Errorf("reading the partition count of topic %q for the stream partitioner: %w", topic, err)
	}
	d, ok := details[topic]
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		return 0, fmt.Errorf("topic %q does not exist: a stream partitioner needs its partition count (Kafka Streams: Could not get partition information for topic %s for task %s. This can happen if the topic does not exist.)", topic, topic, task)
	}
	a.sinkParts.Store(topic, len(d.Partitions))
	return len(d.Partitions), nil
}

// chosenPartition marks a record whose partition a stream partitioner
// chose (kgo.Record.Context): the producer's partitioner keeps it.
var chosenPartition = context.WithValue(context.Background(), chosenKey{}, true)

type chosenKey struct{}

// chosen wraps a topic's partitioner: a record a stream partitioner
// routed keeps its partition, the others go to the partitioner wrapped.
type chosen struct{ kgo.TopicPartitioner }

func (p chosen) RequiresConsistency(r *kgo.Record) bool {
	return r.Context == chosenPartition || p.TopicPartitioner.RequiresConsistency(r)
}

func (p chosen) Partition(r *kgo.Record, n int) int {
	if r.Context == chosenPartition {
		return int(r.Partition)
	}
	return p.TopicPartitioner.Partition(r, n)
}

// chosenBackup is chosen over a partitioner partitioning by backup (Kafka's
// default: uniform bytes, murmur2 for keyed records).
type chosenBackup struct {
	chosen
	b kgo.TopicBackupPartitioner
}

func (p chosenBackup) PartitionByBackup(r *kgo.Record, n int, it kgo.TopicBackupIter) int {
	if r.Context == chosenPartition {
		return int(r.Partition)
	}
	return p.b.PartitionByBackup(r, n, it)
}

// keepChosen wraps tp with chosen.
func keepChosen(tp kgo.TopicPartitioner) kgo.TopicPartitioner {
	if b, ok := tp.(kgo.TopicBackupPartitioner); ok {
		return chosenBackup{chosen{tp}, b}
	}
	return chosen{tp}
}

// extractsTopics says whether a sink of topo names its topics at run time.
func extractsTopics(topo *topology.Topology) bool {
	for _, sub := range topo.Subtopologies {
		for _, n := range sub.Nodes {
			if n.Type == topology.Sink && n.TopicExtractor != nil {
				return true
			}
		}
	}
	return false
}

// ExtractedSerdes are the key and value serdes the topology's
// TopicNameExtractor sinks write (both empty when two differ); ok false
// when it has none. In test driver mode any topic not internal may be
// one of theirs.
func (a *App) ExtractedSerdes() (serdes [2]string, ok bool) {
	for _, sub := range a.topo.Subtopologies {
		for _, n := range sub.Nodes {
			if n.Type != topology.Sink || n.TopicExtractor == nil {
				continue
			}
			s := [2]string{n.KeySerde, n.ValueSerde}
			if ok && s != serdes {
				s = [2]string{}
			}
			serdes, ok = s, true
		}
	}
	return serdes, ok
}
