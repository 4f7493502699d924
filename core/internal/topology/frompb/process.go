package frompb

import (
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// The Processor API's operators (docs/design/processor.md): stores,
// process / process_values, and the Topology calls.

var storeTypes = map[pb.StoreType]topology.StoreType{
	pb.StoreType_STORE_TYPE_KEY_VALUE:             topology.StoreTypeKeyValue,
	pb.StoreType_STORE_TYPE_TIMESTAMPED_KEY_VALUE: topology.StoreTypeTimestampedKeyValue,
	pb.StoreType_STORE_TYPE_WINDOW:                topology.StoreTypeWindow,
	pb.StoreType_STORE_TYPE_TIMESTAMPED_WINDOW:    topology.StoreTypeTimestampedWindow,
	pb.StoreType_STORE_TYPE_VERSIONED_KEY_VALUE:   topology.StoreTypeVersioned,
}

// addStateStore applies AddStateStoreOp.
func (c *call) addStateStore(v *pb.AddStateStoreOp) error {
	t, ok := storeTypes[v.Type]
	if !ok {
		return c.invalid("store %q has type %v; give key-value, timestamped key-value, window, timestamped window or versioned key-value", v.Name, v.Type)
	}
	switch {
	case t == topology.StoreTypeVersioned && v.Versioned == nil:
		return c.invalid("versioned store %q has no history retention (AddStateStoreOp.versioned)", v.Name)
	case t != topology.StoreTypeVersioned && v.Versioned != nil:
		return c.invalid("store %q is a %s; a history retention (AddStateStoreOp.versioned) is for versioned stores", v.Name, t)
	}
	return c.b.AddStateStore(topology.StoreBuilder{
		Name: v.Name, Type: t, KeySerde: v.KeySerde, ValueSerde: v.ValueSerde,
		Retention: v.RetentionMs, WindowSize: v.WindowSizeMs, RetainDuplicates: v.RetainDuplicates,
		LoggingDisabled: v.LoggingDisabled, ChangelogConfig: v.ChangelogConfig, Caching: v.Caching,
		HistoryRetention: v.GetVersioned().GetHistoryRetentionMs(), SegmentInterval: v.GetVersioned().GetSegmentIntervalMs(),
	}, v.Processors...)
}

// process applies ProcessOp (KStream.process / processValues).
func (c *call) process(v *pb.ProcessOp) (*topology.Handle, error) {
	f, err := c.fn(v.Token)
	if err != nil {
		return nil, err
	}
	return c.b.Process(v.Input, f, topology.ProcessOptions{
		Stores: v.Stores, ValuesOnly: v.ValuesOnly, KeySerde: v.KeySerde, ValueSerde: v.ValueSerde, Name: v.Name,
	})
}

// addSource applies AddSourceOp (Topology.addSource).
func (c *call) addSource(v *pb.AddSourceOp) error {
	return c.b.AddSource(v.Name, v.Topics, v.KeySerde, v.ValueSerde)
}

// addProcessor applies AddProcessorOp (Topology.addProcessor).
func (c *call) addProcessor(v *pb.AddProcessorOp) error {
	f, err := c.fn(v.Token)
	if err != nil {
		return err
	}
	return c.b.AddProcessor(v.Name, f, v.Parents, v.Stores, v.KeySerde, v.ValueSerde)
}

// addSink applies AddSinkOp (Topology.addSink).
func (c *call) addSink(v *pb.AddSinkOp) error {
	return c.b.AddSink(v.Name, v.Topic, v.Parents, v.KeySerde, v.ValueSerde)
}
