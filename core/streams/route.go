package streams

import "github.com/polystreams/polystreams/core/internal/topology"

// StreamPartitioner is Kafka Streams' StreamPartitioner.partitions: the
// partitions of topic (which has n) that a record goes to. ok false leaves
// the record to Kafka's default partitioner (murmur2 of the serialized
// key); an empty set drops the record; several partitions multicast it. A
// partition outside [0, n) fails the record, naming node, topic and
// partition. Key and value are serialized, nil is null.
type StreamPartitioner func(topic string, key, value []byte, n int) (partitions []int, ok bool, err error)

// Partition is a StreamPartitioner's answer of one partition.
func Partition(p int) ([]int, bool, error) { return []int{p}, true, nil }

// Partitioner routes the records of To (Produced.streamPartitioner),
// ToExtractor, and Repartition (Repartitioned.withStreamPartitioner)
// with fn.
func Partitioner(fn StreamPartitioner) Option {
	return Option{kind: optPartitioner, partition: topology.StreamPartitionerFunc(fn)}
}

// RecordContext is what a TopicNameExtractor sees of a record besides
// its key and value: the topic, partition and offset of the input record
// it came from, and its timestamp.
type RecordContext = topology.RecordContext

// TopicNameExtractor is Kafka Streams' TopicNameExtractor.extract: the
// topic a record goes to.
type TopicNameExtractor func(key, value []byte, rc RecordContext) (string, error)

// ToExtractor writes each record to the topic fn names
// (KStream.to(TopicNameExtractor)); terminal. The topics must exist, or
// the brokers create them (auto.create.topics.enable), as for Kafka
// Streams, which does not create them. describe() prints the sink as
// "Sink: <name> (extractor class: <class>)", where Kafka Streams prints
// the extractor object's toString(). Options: KeySerde, ValueSerde, Name,
// Partitioner.
func (s *Stream) ToExtractor(fn TopicNameExtractor, class string, opts ...Option) error {
	o, err := parse("ToExtractor", opts, optName, optKeySerde, optValueSerde, optPartitioner)
	if err != nil {
		return err
	}
	f := topology.Function{Name: class, Native: topology.TopicNameExtractorFunc(fn)}
	return s.b.b.ToRouted(s.h.ID, "", o.keySerde, o.valueSerde, o.name, topology.Routing{Partitioner: o.partitioner, TopicExtractor: &f})
}
