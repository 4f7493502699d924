package streams

import "github.com/polystreams/polystreams/core/internal/topology"

// Table is a changelog table, the latest value per key (KTable). Its
// records are changes: a new value per key, nil when the key is deleted (a
// tombstone). Table operators forward tombstones as Kafka Streams'
// KTableFilter and KTableMapValues do.
type Table struct {
	b *Builder
	h *topology.Handle
}

// GroupedTable is a table regrouped by Table.GroupBy, ready to aggregate
// (KGroupedTable): each change of the table removes its old value from one
// group (the subtractor) and then adds its new value to one (the adder).
type GroupedTable struct {
	b *Builder
	h *topology.Handle
}

// KeySerde is the serde of the table's keys.
func (t *Table) KeySerde() string { return t.h.KeySerde }

// ValueSerde is the serde of the table's values.
func (t *Table) ValueSerde() string { return t.h.ValueSerde }

// Store is the name of the store the table is kept in, or "" when it has
// none (yet: a later GroupBy materializes the table source above it).
func (t *Table) Store() string {
	if len(t.h.Node.Stores) == 1 {
		return t.h.Node.Stores[0]
	}
	return ""
}

// KeySerde is the serde of the grouped records' keys.
func (g *GroupedTable) KeySerde() string { return g.h.KeySerde }

// ValueSerde is the serde of the grouped records' values.
func (g *GroupedTable) ValueSerde() string { return g.h.ValueSerde }

// Table reads topic as a table (StreamsBuilder.table): each record upserts
// its key, a nil value deletes it, a record with a nil key is dropped.
// Options: KeySerde, ValueSerde (default bytes), Name (Consumed.as: the
// table source, and the source node "<name>-source"), Store (makes the table's store
// exist and be queryable; absent, it is "<topic>-STATE-STORE-<n>" and exists
// only when an operator downstream needs old values), StoreSerdes.
func (b *Builder) Table(topic string, opts ...Option) (*Table, error) {
	o, err := parse("Table", opts, optName, optKeySerde, optValueSerde, optStore, optStoreSerdes, optChangelogConfig, optOffsetReset, optVersioned, optSegmentInterval, optExtractor)
	if err != nil {
		return nil, err
	}
	return b.table(b.b.Table(topology.TableOptions{Topic: topic, KeySerde: o.keySerde, ValueSerde: o.valueSerde, Name: o.name, Materialized: o.mat, OffsetReset: o.offsetReset, Extractor: o.extractor}))
}

func (b *Builder) table(h *topology.Handle, err error) (*Table, error) {
	if err != nil {
		return nil, err
	}
	return &Table{b: b, h: h}, nil
}

// Filter keeps the rows fn accepts (KTable.filter): a row that does not pass
// is deleted, so a tombstone is forwarded for it. fn never sees a nil value.
// Options: Name, Store, StoreSerdes (keep the result in a store).
func (t *Table) Filter(fn PredicateFunc, opts ...Option) (*Table, error) {
	o, err := parse("Filter", opts, optName, optStore, optStoreSerdes, optChangelogConfig)
	if err != nil {
		return nil, err
	}
	return t.b.table(t.b.b.TableFilter(t.h.ID, native("filter", fn), o.mat, o.name))
}

// FilterNot deletes the rows fn accepts (KTable.filterNot). Options as for
// Filter.
func (t *Table) FilterNot(fn PredicateFunc, opts ...Option) (*Table, error) {
	o, err := parse("FilterNot", opts, optName, optStore, optStoreSerdes, optChangelogConfig)
	if err != nil {
		return nil, err
	}
	return t.b.table(t.b.b.TableFilterNot(t.h.ID, native("filter_not", fn), o.mat, o.name))
}

// MapValues maps each row's value (KTable.mapValues); a tombstone passes on
// as one without a call. Options: ValueSerde, Name, Store, StoreSerdes.
func (t *Table) MapValues(fn MapValuesFunc, opts ...Option) (*Table, error) {
	o, err := parse("MapValues", opts, optName, optValueSerde, optStore, optStoreSerdes, optChangelogConfig)
	if err != nil {
		return nil, err
	}
	return t.b.table(t.b.b.TableMapValues(t.h.ID, native("map_values", fn), o.valueSerde, o.mat, o.name))
}

// GroupBy regroups the table by the key and value fn maps each row to
// (KTable.groupBy); a pair with a nil key or value is skipped. Each change
// removes the row's old pair from its group before adding the new one, so
// the aggregations of a GroupedTable take a subtractor. Options: KeySerde,
// ValueSerde (of the mapped pairs), Name (Grouped.as: the select node and
// the repartition topic "<application.id>-<name>-repartition").
func (t *Table) GroupBy(fn MapFunc, opts ...Option) (*GroupedTable, error) {
	o, err := parse("GroupBy", opts, optName, optKeySerde, optValueSerde)
	if err != nil {
		return nil, err
	}
	h, err := t.b.b.TableGroupBy(t.h.ID, native("group_by", fn), o.keySerde, o.valueSerde, o.name)
	if err != nil {
		return nil, err
	}
	return &GroupedTable{b: t.b, h: h}, nil
}

// ToTable turns the stream into a table of its records as upserts
// (KStream.toTable): a nil value deletes its key, a record with a nil key is
// dropped. Node KSTREAM-TOTABLE-<n>; a stream whose key an upstream
// operator changed is repartitioned first. Options: Name, Store (the store
// exists and is queryable; unnamed, it exists only when a later operator
// needs it), StoreSerdes, ChangelogConfig.
func (s *Stream) ToTable(opts ...Option) (*Table, error) {
	o, err := parse("ToTable", opts, optName, optStore, optStoreSerdes, optChangelogConfig)
	if err != nil {
		return nil, err
	}
	return s.b.table(s.b.b.ToTable(s.h.ID, o.name, o.mat))
}

// ToStream is the table's changes as a stream (KTable.toStream); a deleted
// row comes as a record with a nil value. Options: Name.
func (t *Table) ToStream(opts ...Option) (*Stream, error) {
	o, err := parse("ToStream", opts, optName)
	if err != nil {
		return nil, err
	}
	return t.b.stream(t.b.b.ToStream(t.h.ID, o.name))
}

// ToStreamKeyed is the table's changes as a stream whose keys fn makes
// (KTable.toStream(KeyValueMapper)): Kafka Streams' toStream followed by
// selectKey, two nodes (KTABLE-TOSTREAM-<n>, KSTREAM-KEY-SELECT-<n+1>);
// Name names the first. A later grouping repartitions. Options: Name,
// KeySerde (the new keys' serde).
func (t *Table) ToStreamKeyed(fn KeyValueMapper, opts ...Option) (*Stream, error) {
	o, err := parse("ToStreamKeyed", opts, optName, optKeySerde)
	if err != nil {
		return nil, err
	}
	s, err := t.b.stream(t.b.b.ToStream(t.h.ID, o.name))
	if err != nil {
		return nil, err
	}
	return s.b.stream(s.b.b.SelectKey(s.h.ID, native("select_key", fn), o.keySerde, ""))
}

// Count counts the rows of each group into a table of longs
// (KGroupedTable.count); a group whose rows all left keeps a count of 0.
// Options: Store, StoreSerdes, Name.
func (g *GroupedTable) Count(opts ...Option) (*Table, error) {
	o, err := parse("Count", opts, optName, optStore, optStoreSerdes, optChangelogConfig)
	if err != nil {
		return nil, err
	}
	return g.b.table(g.b.b.TableCount(g.h.ID, o.mat, o.name))
}

// Reduce folds each group's values (KGroupedTable.reduce): adder adds a new
// value, subtractor removes one the table replaced or deleted (first, when a
// change does both); a group's first value becomes its aggregate without a
// call. Both are required. Options: Store, StoreSerdes, Name.
func (g *GroupedTable) Reduce(adder, subtractor ReducerFunc, opts ...Option) (*Table, error) {
	o, err := parse("Reduce", opts, optName, optStore, optStoreSerdes, optChangelogConfig)
	if err != nil {
		return nil, err
	}
	return g.b.table(g.b.b.TableReduce(g.h.ID, native("reduce", adder), subtractorFn(subtractor, subtractor == nil), o.mat, o.name))
}

// ReduceBuiltin is Reduce with a built-in that runs in the engine: only Sum,
// which brings its own subtractor (Min, Max and Latest cannot remove a value
// and are refused). Options: Store, StoreSerdes, Name.
func (g *GroupedTable) ReduceBuiltin(r Builtin, opts ...Option) (*Table, error) {
	o, err := parse("ReduceBuiltin", opts, optName, optStore, optStoreSerdes, optChangelogConfig)
	if err != nil {
		return nil, err
	}
	return g.b.table(g.b.b.TableReduce(g.h.ID, topology.Function{Builtin: string(r), Name: string(r)}, topology.Function{}, o.mat, o.name))
}

// Aggregate folds each group's values into an aggregate
// (KGroupedTable.aggregate): init starts a group's aggregate, adder adds a
// new value, subtractor removes an old one (first, when a change does
// both). All three are required. The aggregate's serde is StoreSerdes'
// value serde, else the grouped values'. Options: Store, StoreSerdes, Name.
func (g *GroupedTable) Aggregate(init InitializerFunc, adder, subtractor AggregatorFunc, opts ...Option) (*Table, error) {
	o, err := parse("Aggregate", opts, optName, optStore, optStoreSerdes, optChangelogConfig)
	if err != nil {
		return nil, err
	}
	return g.b.table(g.b.b.TableAggregate(g.h.ID, native("initializer", init), native("aggregate", adder), subtractorFn(subtractor, subtractor == nil), o.mat, o.name))
}

// subtractorFn wraps a subtractor; a nil one is no function at all, which
// the builder refuses as a missing subtractor.
func subtractorFn(fn any, missing bool) topology.Function {
	if missing {
		return topology.Function{}
	}
	return native("subtractor", fn)
}
