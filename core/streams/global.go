package streams

import "github.com/polystreams/polystreams/core/internal/topology"

// GlobalTable is a table of every partition of its topic, kept on every
// engine instance (GlobalKTable): a stream joins it through a key mapper,
// with no co-partitioning. It is restored before any record is processed
// and then follows its topic, which is its store's changelog.
type GlobalTable struct {
	b *Builder
	h *topology.Handle
}

// KeySerde is the serde of the global table's keys.
func (g *GlobalTable) KeySerde() string { return g.h.KeySerde }

// ValueSerde is the serde of the global table's values.
func (g *GlobalTable) ValueSerde() string { return g.h.ValueSerde }

// Store is the name of the global table's store (always queryable).
func (g *GlobalTable) Store() string { return g.h.Node.Stores[0] }

// GlobalTable reads every partition of topic as a global table
// (StreamsBuilder.globalTable): each record upserts its key, a nil value
// deletes it. Options: KeySerde, ValueSerde (default bytes), Name
// (Consumed.as: the source node "<name>-source" and the processor name),
// Store (default "<topic>-STATE-STORE-<n>"), StoreSerdes.
func (b *Builder) GlobalTable(topic string, opts ...Option) (*GlobalTable, error) {
	o, err := parse("GlobalTable", opts, optName, optKeySerde, optValueSerde, optStore, optStoreSerdes, optOffsetReset)
	if err != nil {
		return nil, err
	}
	h, err := b.b.GlobalTable(topology.GlobalTableOptions{Topic: topic, KeySerde: o.keySerde, ValueSerde: o.valueSerde, Name: o.name, Materialized: o.mat, OffsetReset: o.offsetReset})
	if err != nil {
		return nil, err
	}
	return &GlobalTable{b: b, h: h}, nil
}

// JoinGlobal joins each record with the value the global table holds for
// the key keyMapper maps the record to (KStream.join(GlobalKTable,
// KeyValueMapper, ValueJoiner)); records whose mapped key the table does
// not hold, or maps to nil, are dropped. The output keeps the record's
// key. Options: ValueSerde (of the joined values; default the stream's),
// Name (Named.as).
func (s *Stream) JoinGlobal(global *GlobalTable, keyMapper KeyValueMapper, joiner ValueJoinerFunc, opts ...Option) (*Stream, error) {
	return s.joinGlobal("JoinGlobal", global, keyMapper, joiner, false, opts)
}

// LeftJoinGlobal is JoinGlobal that keeps every record whose mapped key is
// not nil: the joiner gets a nil value for a key the global table does not
// hold (KStream.leftJoin(GlobalKTable, KeyValueMapper, ValueJoiner)).
func (s *Stream) LeftJoinGlobal(global *GlobalTable, keyMapper KeyValueMapper, joiner ValueJoinerFunc, opts ...Option) (*Stream, error) {
	return s.joinGlobal("LeftJoinGlobal", global, keyMapper, joiner, true, opts)
}

func (s *Stream) joinGlobal(op string, global *GlobalTable, keyMapper KeyValueMapper, joiner ValueJoinerFunc, left bool, opts []Option) (*Stream, error) {
	o, err := parse(op, opts, optName, optValueSerde)
	if err != nil {
		return nil, err
	}
	return s.b.stream(s.b.b.GlobalJoin(s.h.ID, global.h.ID, native("key mapper", keyMapper), joinerFunction("join", joiner), left, o.valueSerde, o.name))
}
