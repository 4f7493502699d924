package streams

// Join joins each record with the value table holds for its key now
// (KStream.join(KTable)): records whose key the table does not hold are
// dropped. The stream and the table must be co-partitioned (same partition
// count; the engine refuses to start otherwise); a stream whose key
// changed upstream is repartitioned first. Options: ValueSerde (of the
// joined values; default the stream's), Name (Joined.as).
func (s *Stream) Join(table *Table, joiner ValueJoinerFunc, opts ...Option) (*Stream, error) {
	return s.join("Join", table, joiner, false, opts)
}

// LeftJoin is Join that keeps every record: the joiner gets a nil table
// value for a key the table does not hold (KStream.leftJoin(KTable)).
func (s *Stream) LeftJoin(table *Table, joiner ValueJoinerFunc, opts ...Option) (*Stream, error) {
	return s.join("LeftJoin", table, joiner, true, opts)
}

func (s *Stream) join(op string, table *Table, joiner ValueJoinerFunc, left bool, opts []Option) (*Stream, error) {
	o, err := parse(op, opts, optName, optValueSerde)
	if err != nil {
		return nil, err
	}
	return s.b.stream(s.b.b.Join(s.h.ID, table.h.ID, joinerFunction("join", joiner), left, o.valueSerde, o.name))
}
