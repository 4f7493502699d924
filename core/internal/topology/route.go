package topology

import "github.com/polystreams/polystreams/core/internal/serde"

// RecordContext is what a TopicNameExtractor sees of the record besides
// its key and value (Kafka's RecordContext): where the record came from
// and its timestamp.
type RecordContext struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp int64
}

// Routing is where a sink sends each record beyond its topic and Kafka's
// default partitioner: Produced.streamPartitioner and a
// TopicNameExtractor (KStream.to(TopicNameExtractor)). The zero Routing
// is a plain sink.
type Routing struct {
	// Partitioner: a StreamPartitionerFunc or a host function; nil is
	// Kafka's default partitioner (murmur2 of the serialized key).
	Partitioner *Function
	// TopicExtractor: a TopicNameExtractorFunc or a host function; nil
	// writes the sink's topic.
	TopicExtractor *Function
}

// ExtractorClass is what describe() prints of a sink's TopicNameExtractor
// ("extractor class: ..."): Kafka Streams prints the extractor object's
// toString(); polystreams the function's name, or this when it has none.
const ExtractorClass = "TopicNameExtractor"

// ToRouted adds KStream.to with Routing: topic is empty when r has an
// extractor, which then names each record's topic.
func (b *Builder) ToRouted(input uint64, topic, keySerde, valueSerde, name string, r Routing) error {
	c := b.begin("to")
	in := c.input(input, KindStream)
	if r.TopicExtractor != nil {
		if topic != "" {
			c.invalid("to: topic %q and a topic name extractor are exclusive", topic)
		}
		c.routingFn("topic name extractor", r.TopicExtractor, func(f any) bool { _, ok := f.(TopicNameExtractorFunc); return ok })
	} else {
		c.validName("topic", topic)
	}
	if r.Partitioner != nil {
		c.routingFn("stream partitioner", r.Partitioner, func(f any) bool { _, ok := f.(StreamPartitionerFunc); return ok })
	}
	c.topicSerde("key", keySerde)
	c.topicSerde("value", valueSerde)
	if in != nil {
		c.encodable("key", keySerde, in.handle.KeySerde)
		c.encodable("value", valueSerde, in.handle.ValueSerde)
	}
	nodeName := c.processorName(name, prefixSink)
	if err := c.done(); err != nil {
		return err
	}
	n := &Node{
		Name: nodeName, Type: Sink, Topic: topic,
		KeySerde: serde.Carried(serde.Or(keySerde, in.handle.KeySerde)), ValueSerde: serde.Carried(serde.Or(valueSerde, in.handle.ValueSerde)),
		KeyWire: wire(keySerde), ValueWire: wire(valueSerde),
		Partitioner: r.Partitioner, TopicExtractor: r.TopicExtractor,
	}
	b.hang(in, n)
	return nil
}

// routingFn checks a sink's function: a host function (a token) or a Go
// function of the type it says.
func (c *call) routingFn(what string, f *Function, native func(any) bool) {
	if f.Token == 0 && (f.Native == nil || !native(f.Native)) {
		c.invalid("to: the %s is neither a registered function nor a Go function of its type (%T)", what, f.Native)
	}
}

// ExtractorClass is what describe() prints as the class of the sink's
// TopicNameExtractor: its function's name, else ExtractorClass.
func (n *Node) ExtractorClass() string {
	if n.TopicExtractor == nil || n.TopicExtractor.Name == "" {
		return ExtractorClass
	}
	return n.TopicExtractor.Name
}
