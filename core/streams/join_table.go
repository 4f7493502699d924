package streams

import "github.com/polystreams/polystreams/core/internal/topology"

// Join joins the table with other on the key (KTable.join(KTable)): the
// result holds joiner(this value, other value) for every key both tables
// hold, and is updated whenever either side changes; deleting either
// side's row deletes the joined one. Both tables must be co-partitioned
// (same partition count; the engine refuses to start otherwise) and keep a
// store (a table read from a topic always does; Filter and MapValues need
// Store). Options: ValueSerde (of the joined values; default this table's),
// Name (names the merge node, and "<name>-join-this" / "<name>-join-other"),
// Store, StoreSerdes, ChangelogConfig (keep the result in a store, as
// Materialized does; a named one is queryable).
func (t *Table) Join(other *Table, joiner ValueJoinerFunc, opts ...Option) (*Table, error) {
	return t.join("Join", other, joiner, topology.TableJoinOptions{}, opts)
}

// LeftJoin is Join that keeps every row of this table: the joiner gets a
// nil other value for a key other does not hold (KTable.leftJoin(KTable)).
func (t *Table) LeftJoin(other *Table, joiner ValueJoinerFunc, opts ...Option) (*Table, error) {
	return t.join("LeftJoin", other, joiner, topology.TableJoinOptions{Left: true}, opts)
}

// OuterJoin is Join that keeps every row of either table: the joiner gets a
// nil value for the side that does not hold the key
// (KTable.outerJoin(KTable)).
func (t *Table) OuterJoin(other *Table, joiner ValueJoinerFunc, opts ...Option) (*Table, error) {
	return t.join("OuterJoin", other, joiner, topology.TableJoinOptions{Outer: true}, opts)
}

func (t *Table) join(op string, other *Table, joiner ValueJoinerFunc, jo topology.TableJoinOptions, opts []Option) (*Table, error) {
	o, err := parse(op, opts, optName, optValueSerde, optStore, optStoreSerdes, optChangelogConfig)
	if err != nil {
		return nil, err
	}
	jo.ValueSerde, jo.Name, jo.Materialized = o.valueSerde, o.name, o.mat
	return t.b.table(t.b.b.TableJoin(t.h.ID, other.h.ID, joinerFunction("join", joiner), jo))
}
