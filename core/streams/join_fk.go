package streams

// ForeignKeyJoin joins each row of the table with the row of other whose
// key foreignKey extracts from the row's value (KTable.join(other,
// foreignKeyExtractor, joiner), KIP-213): the result is a table keyed as
// this one, updated when either side changes. foreignKey returns the key
// in other's key serde; nil means the row joins nothing. The tables need
// not be co-partitioned: the engine sends subscriptions through the
// internal topics <application.id>-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-<n>-topic
// and -RESPONSE-<n>-topic. Options: ValueSerde (of the joined values;
// default the store's, else this table's), Name (TableJoined.as: names
// every node, store and topic of the join), Store, StoreSerdes,
// ChangelogConfig (Materialized for the result).
func (t *Table) ForeignKeyJoin(other *Table, foreignKey MapValuesFunc, joiner ValueJoinerFunc, opts ...Option) (*Table, error) {
	return t.foreignKeyJoin("ForeignKeyJoin", other, foreignKey, joiner, false, opts)
}

// LeftForeignKeyJoin is ForeignKeyJoin that keeps every row of this table
// (KTable.leftJoin(other, foreignKeyExtractor, joiner)): a row whose
// foreign key is nil or names no row of other is joined with nil.
func (t *Table) LeftForeignKeyJoin(other *Table, foreignKey MapValuesFunc, joiner ValueJoinerFunc, opts ...Option) (*Table, error) {
	return t.foreignKeyJoin("LeftForeignKeyJoin", other, foreignKey, joiner, true, opts)
}

func (t *Table) foreignKeyJoin(op string, other *Table, foreignKey MapValuesFunc, joiner ValueJoinerFunc, left bool, opts []Option) (*Table, error) {
	o, err := parse(op, opts, optName, optValueSerde, optStore, optStoreSerdes, optChangelogConfig)
	if err != nil {
		return nil, err
	}
	return t.b.table(t.b.b.ForeignKeyJoin(t.h.ID, other.h.ID, native("foreign_key", foreignKey), joinerFunction("joiner", joiner), left, o.mat, o.valueSerde, o.name))
}
