package streams

import (
	"fmt"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// ValueTransformerWithKey is KTable.TransformValues' transformer (Kafka
// Streams' ValueTransformerWithKey): the engine makes one per task, calls
// Init before the task's first record with a context whose stores and
// punctuators work and whose Forward fails (the result is the returned
// value), Transform per value in order, and Close when the task closes.
// Transform gets a tombstone's nil value too; a nil result is null (a
// delete in a materialized table). An error fails the record under
// processing.exception.handler.
type ValueTransformerWithKey interface {
	Init(ctx ProcessorContext) error
	Transform(key, value []byte) ([]byte, error)
	Close() error
}

// TransformValues transforms each value of the table with a transformer
// that may keep state in stores (KTable.transformValues): newT makes one
// per task. Each change's new value is transformed; when an operator
// downstream needs old values (a GroupBy), its old value is transformed
// too, after it, unless the result is materialized, whose store then
// gives the old values. Options: Stores (added by AddStateStore) the
// transformer uses, Store (Materialized.as: the result is queryable),
// StoreSerdes, ChangelogConfig, ValueSerde (default the input's), Name
// (default KTABLE-TRANSFORMVALUES-<n>). A join of a table transformed
// without Store is refused: Kafka Streams would run the transformer on
// each lookup, which this engine does not.
func (t *Table) TransformValues(newT func() ValueTransformerWithKey, opts ...Option) (*Table, error) {
	o, err := parse("TransformValues", opts, optName, optValueSerde, optStores, optStore, optStoreSerdes, optChangelogConfig)
	if err != nil {
		return nil, err
	}
	return t.b.table(t.b.b.TableTransformValues(t.h.ID, transformerSupplier(newT), topology.TransformValuesOptions{
		Stores: o.stores, Materialized: o.mat, ValueSerde: o.valueSerde, Name: o.name,
	}))
}

// transformerSupplier wraps newT as a fixed-key processor supplier whose
// processors forward each transformed value.
func transformerSupplier(newT func() ValueTransformerWithKey) topology.Function {
	if newT == nil {
		return topology.Function{Name: "TransformValues", Native: topology.NewProcessorFunc(nil)}
	}
	return topology.Function{Name: "TransformValues", Native: topology.NewProcessorFunc(func() topology.NativeProcessor {
		tr := newT()
		if tr == nil {
			return nil
		}
		return transformerProcessor{tr}
	})}
}

// transformerProcessor runs a ValueTransformerWithKey as a processor.
type transformerProcessor struct{ tr ValueTransformerWithKey }

func (p transformerProcessor) Init(ctx topology.NativeContext) error {
	return p.tr.Init(noForwardContext{processorContext{ctx}})
}

func (p transformerProcessor) Process(ctx topology.NativeContext, r topology.NativeRecord) error {
	v, err := p.tr.Transform(r.Key, r.Value)
	if err != nil {
		return err
	}
	return ctx.Forward(topology.NativeRecord{Key: r.Key, Value: v, Timestamp: r.Timestamp, Headers: r.Headers}, "")
}

func (p transformerProcessor) Close() error { return p.tr.Close() }

// noForwardContext is Kafka Streams' ForwardingDisabledProcessorContext.
type noForwardContext struct{ processorContext }

func (c noForwardContext) Forward(Record) error { return c.refuse() }

func (c noForwardContext) ForwardTo(string, Record) error { return c.refuse() }

func (c noForwardContext) refuse() error {
	return fmt.Errorf("forward: node %s is a transform_values node: its transformer returns the new value and cannot forward (ProcessorContext#forward() is not supported from this context)", c.Node())
}
