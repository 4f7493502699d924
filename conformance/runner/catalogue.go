package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The catalogue: the functions cases name, defined once here for Go (the
// reference) and in conformance/README.md for every executor. They work on
// natural values: string, int64, float64, []byte, JSON values (map, slice,
// bool) and nil for null.

// role is what a function can be used as; stepRoles says which role each
// operator's fn plays.
type role int

const (
	roleMapper        role = 1 << iota // map_values: value -> value
	roleFlat                           // flat_map_values: value -> values
	rolePredicate                      // filter, filter_not: (key, value) -> bool
	roleKey                            // select_key, group_by: (key, value) -> key
	roleMap                            // map: (key, value) -> (key, value)
	roleAction                         // peek, foreach: (key, value)
	roleReducer                        // reduce: (aggregate, value) -> aggregate
	roleInit                           // aggregate's initializer: () -> aggregate
	roleAggregator                     // aggregate: (key, value, aggregate) -> aggregate
	roleMerger                         // a session aggregate's merger: (key, aggregate1, aggregate2) -> aggregate
	roleJoiner                         // join, left_join, outer_join: (value, other value) -> value
	roleMapperWithKey                  // map_values_with_key: (key, value) -> value
	roleFlatWithKey                    // flat_map_values_with_key: (key, value) -> values
	roleFlatMap                        // flat_map: (key, value) -> (key, value) pairs
	roleExtractor                      // a source's timestamp_extractor_fn: (key, value, timestamp, partition time) -> timestamp
)

var roleNames = []string{"mapper", "flat mapper", "predicate", "key selector", "key-value mapper", "action", "reducer", "initializer", "aggregator", "merger", "joiner", "mapper with key", "flat mapper with key", "flat key-value mapper", "timestamp extractor"}

func (r role) has(x role) bool { return r&x != 0 }

func (r role) String() string {
	var parts []string
	for i, n := range roleNames {
		if r&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, " / ")
}

var stepRoles = map[string]struct{ fn role }{
	"map_values": {roleMapper}, "flat_map_values": {roleFlat}, "filter": {rolePredicate}, "filter_not": {rolePredicate},
	"select_key": {roleKey}, "group_by": {roleKey}, "map": {roleMap}, "peek": {roleAction}, "foreach": {roleAction},
	"reduce": {roleReducer}, "aggregate": {roleAggregator}, "cogroup": {roleAggregator}, "join": {roleJoiner}, "left_join": {roleJoiner}, "outer_join": {roleJoiner},
	"foreign_key_join": {roleJoiner}, "left_foreign_key_join": {roleJoiner},
	"map_values_with_key": {roleMapperWithKey}, "flat_map_values_with_key": {roleFlatWithKey}, "flat_map": {roleFlatMap},
	"to_stream": {roleKey}, // KTable.toStream(KeyValueMapper): the fn is optional
}

type argKind int

const (
	argNone argKind = iota
	argOptional
	argRequired
)

// fnImpl is a catalogue function in Go. Only the members of its roles are
// set; raise_error and raise_on use raise for every role.
type fnImpl struct {
	roles role
	arg   argKind

	mapper  func(arg, v any) (any, error)
	flat    func(arg, v any) ([]any, error)
	pred    func(arg, k, v any) (bool, error)
	key     func(arg, k, v any) (any, error)
	kv      func(arg, k, v any) (any, any, error)
	init    func(arg any) (any, error)
	reducer func(arg, agg, v any) (any, error)
	agg     func(arg, k, v, agg any) (any, error)
	merger  func(arg, k, a1, a2 any) (any, error)
	joiner  func(arg, v, other any) (any, error)
	mapperK func(arg, k, v any) (any, error)
	flatK   func(arg, k, v any) ([]any, error)
	flatKV  func(arg, k, v any) ([][2]any, error)
	extract func(arg, k, v any, timestamp, partitionTime int64) (int64, error)
	raise   func(arg, v any) error
}

const allStateless = roleMapper | roleFlat | rolePredicate | roleKey | roleMap | roleAction | roleReducer | roleAggregator |
	roleMapperWithKey | roleFlatWithKey | roleFlatMap

var catalogue = map[string]fnImpl{
	// Mappers.
	"upper": {roles: roleMapper, mapper: func(_, v any) (any, error) { return mapString("upper", v, strings.ToUpper) }},
	"lower": {roles: roleMapper, mapper: func(_, v any) (any, error) { return mapString("lower", v, strings.ToLower) }},
	"length": {roles: roleMapper, mapper: func(_, v any) (any, error) {
		s, err := str("length", v)
		return int64(utf8.RuneCountInString(s)), err
	}},
	"prefix": {roles: roleMapper, arg: argRequired, mapper: func(arg, v any) (any, error) {
		return mapString("prefix", v, func(s string) string { return fmt.Sprint(arg) + s })
	}},
	"get_field": {roles: roleMapper, arg: argRequired, mapper: func(arg, v any) (any, error) { return field("get_field", v, arg) }},
	"wrap_field": {roles: roleMapper, arg: argRequired, mapper: func(arg, v any) (any, error) {
		return map[string]any{fmt.Sprint(arg): v}, nil
	}},
	"twice":    {roles: roleMapper, mapper: func(_, v any) (any, error) { return arith("twice", v, v, '+') }},
	"to_null":  {roles: roleMapper, mapper: func(_, _ any) (any, error) { return nil, nil }},
	"identity": {roles: roleMapper, mapper: func(_, v any) (any, error) { return v, nil }},
	"to_text": {roles: roleMapper, mapper: func(_, v any) (any, error) {
		switch x := v.(type) {
		case nil:
			return nil, nil
		case string:
			return x, nil
		case int64:
			return fmt.Sprint(x), nil
		}
		return nil, fmt.Errorf("to_text: want a string or an integer, got %s", describeValue(v))
	}},
	"reverse_bytes": {roles: roleMapper, mapper: func(_, v any) (any, error) {
		b, ok := v.([]byte)
		if !ok {
			return nil, fmt.Errorf("reverse_bytes: want bytes, got %s", describeValue(v))
		}
		out := make([]byte, len(b))
		for i := range b {
			out[len(b)-1-i] = b[i]
		}
		return out, nil
	}},
	// Flat mappers.
	"split_words": {roles: roleFlat, flat: func(_, v any) ([]any, error) {
		s, err := str("split_words", v)
		var out []any
		for _, w := range strings.Fields(s) {
			out = append(out, w)
		}
		return out, err
	}},
	"duplicate": {roles: roleFlat, flat: func(_, v any) ([]any, error) { return []any{v, v}, nil }},
	"nothing": {roles: roleFlat | roleFlatWithKey | roleFlatMap,
		flat:   func(_, _ any) ([]any, error) { return nil, nil },
		flatK:  func(_, _, _ any) ([]any, error) { return nil, nil },
		flatKV: func(_, _, _ any) ([][2]any, error) { return nil, nil }},
	// With-key mappers (ValueMapperWithKey).
	"key_as_value":  {roles: roleMapperWithKey, mapperK: func(_, k, _ any) (any, error) { return k, nil }},
	"key_and_value": {roles: roleFlatWithKey, flatK: func(_, k, v any) ([]any, error) { return []any{k, v}, nil }},
	// Flat key-value mappers (flat_map).
	"swap_and_keep": {roles: roleFlatMap, flatKV: func(_, k, v any) ([][2]any, error) { return [][2]any{{v, k}, {k, v}}, nil }},
	// Predicates.
	"is_even": {roles: rolePredicate, pred: func(_, _, v any) (bool, error) {
		if v == nil {
			return false, nil
		}
		i, ok := v.(int64)
		if !ok {
			return false, fmt.Errorf("is_even: want an integer, got %s", describeValue(v))
		}
		return i%2 == 0, nil
	}},
	"is_long_word": {roles: rolePredicate, pred: func(_, _, v any) (bool, error) {
		if v == nil {
			return false, nil
		}
		s, err := str("is_long_word", v)
		return utf8.RuneCountInString(s) >= 5, err
	}},
	"has_key": {roles: rolePredicate, pred: func(_, k, _ any) (bool, error) { return k != nil, nil }},
	"value_contains": {roles: rolePredicate, arg: argRequired, pred: func(arg, _, v any) (bool, error) {
		if v == nil {
			return false, nil
		}
		s, err := str("value_contains", v)
		return strings.Contains(s, fmt.Sprint(arg)), err
	}},
	"key_starts_with": {roles: rolePredicate, arg: argRequired, pred: func(arg, k, _ any) (bool, error) {
		if k == nil {
			return false, nil
		}
		s, err := str("key_starts_with", k)
		return strings.HasPrefix(s, fmt.Sprint(arg)), err
	}},
	"always": {roles: rolePredicate, pred: func(_, _, _ any) (bool, error) { return true, nil }},
	"never":  {roles: rolePredicate, pred: func(_, _, _ any) (bool, error) { return false, nil }},
	// Key selectors.
	"first_word_key": {roles: roleKey, key: func(_, _, v any) (any, error) {
		s, err := str("first_word_key", v)
		if f := strings.Fields(s); len(f) > 0 {
			return f[0], err
		}
		return nil, err
	}},
	"value_as_key": {roles: roleKey, key: func(_, _, v any) (any, error) { return v, nil }},
	"key_upper": {roles: roleKey, key: func(_, k, _ any) (any, error) {
		if k == nil {
			return nil, nil
		}
		return mapString("key_upper", k, strings.ToUpper)
	}},
	"field_key": {roles: roleKey, arg: argRequired, key: func(arg, _, v any) (any, error) { return field("field_key", v, arg) }},
	"first_letter": {roles: roleKey, key: func(_, _, v any) (any, error) {
		s, err := str("first_letter", v)
		if s == "" {
			return nil, err
		}
		r, _ := utf8.DecodeRuneInString(s)
		return string(r), err
	}},
	"null_key": {roles: roleKey, key: func(_, _, _ any) (any, error) { return nil, nil }},
	// Key-value mappers.
	"swap": {roles: roleMap, kv: func(_, k, v any) (any, any, error) { return v, k, nil }},
	"upper_both": {roles: roleMap, kv: func(_, k, v any) (any, any, error) {
		nk, err := mapString("upper_both", k, strings.ToUpper)
		if err != nil {
			return nil, nil, err
		}
		nv, err := mapString("upper_both", v, strings.ToUpper)
		return nk, nv, err
	}},
	"word_one": {roles: roleMap, kv: func(_, _, v any) (any, any, error) { return v, int64(1), nil }},
	"region_of": {roles: roleMap, kv: func(_, _, v any) (any, any, error) {
		r, err := field("region_of", v, "region")
		return r, v, err
	}},
	// No pair at all (Go: a nil key and value) for a row without a region.
	"region_or_none": {roles: roleMap, kv: func(_, _, v any) (any, any, error) {
		r, err := field("region_or_none", v, "region")
		if r == nil || err != nil {
			return nil, nil, err
		}
		return r, v, nil
	}},
	"region_amount": {roles: roleMap, kv: func(_, _, v any) (any, any, error) {
		r, err := field("region_amount", v, "region")
		if err != nil {
			return nil, nil, err
		}
		a, err := field("region_amount", v, "amount")
		return r, a, err
	}},
	// Actions.
	"noop": {roles: roleAction},
	// Failures, usable wherever a record is processed.
	"raise_error": {roles: allStateless, raise: func(_, v any) error {
		return fmt.Errorf("conformance: raise_error on value %s", canonJSON(v))
	}},
	"raise_on": {roles: allStateless, arg: argRequired, raise: func(arg, v any) error {
		if s, ok := v.(string); ok && s == fmt.Sprint(arg) {
			return fmt.Errorf("conformance: raise_on %s", s)
		}
		return nil
	}},
	// Reducers and aggregators.
	"add": {roles: roleReducer | roleAggregator | roleMerger,
		reducer: func(_, agg, v any) (any, error) { return arith("add", agg, v, '+') },
		agg:     func(_, _, v, agg any) (any, error) { return arith("add", agg, v, '+') },
		merger:  func(_, _, a1, a2 any) (any, error) { return arith("add", a1, a2, '+') }},
	"subtract": {roles: roleReducer | roleAggregator,
		reducer: func(_, agg, v any) (any, error) { return arith("subtract", agg, v, '-') },
		agg:     func(_, _, v, agg any) (any, error) { return arith("subtract", agg, v, '-') }},
	"concat": {roles: roleReducer | roleAggregator | roleJoiner, arg: argOptional,
		reducer: func(arg, agg, v any) (any, error) { return concat(arg, agg, v, false) },
		agg:     func(arg, _, v, agg any) (any, error) { return concat(arg, agg, v, true) },
		joiner: func(arg, v, other any) (any, error) {
			if v == nil {
				v = "null" // an outer join's missing value of this stream
			}
			if other == nil {
				other = "null" // a left join's missing table value
			}
			if v == nil {
				v = "null" // an outer join's missing value of this table
			}
			return concat(arg, v, other, false)
		}},
	"longer": {roles: roleReducer, reducer: func(_, agg, v any) (any, error) {
		a, err := str("longer", agg)
		if err != nil {
			return nil, err
		}
		b, err := str("longer", v)
		if utf8.RuneCountInString(b) > utf8.RuneCountInString(a) {
			return b, err
		}
		return a, err
	}},
	"count_agg": {roles: roleAggregator, agg: func(_, _, _, agg any) (any, error) { return arith("count_agg", agg, int64(1), '+') }},
	"sum_field": {roles: roleAggregator, arg: argRequired, agg: func(arg, _, v, agg any) (any, error) {
		f, err := field("sum_field", v, arg)
		if err != nil {
			return nil, err
		}
		return arith("sum_field", agg, f, '+')
	}},
	"subtract_field": {roles: roleAggregator, arg: argRequired, agg: func(arg, _, v, agg any) (any, error) {
		f, err := field("subtract_field", v, arg)
		if err != nil {
			return nil, err
		}
		return arith("subtract_field", agg, f, '-')
	}},
	"append": {roles: roleAggregator, agg: func(_, _, v, agg any) (any, error) {
		list, ok := agg.([]any)
		if !ok {
			return nil, fmt.Errorf("append: want a list aggregate, got %s", describeValue(agg))
		}
		return append(append([]any{}, list...), v), nil
	}},
	// Timestamp extractors (Consumed.withTimestampExtractor): a negative
	// answer drops the record, as Kafka Streams' RecordQueue does.
	"field_timestamp": {roles: roleExtractor, arg: argRequired, extract: func(arg, _, v any, timestamp, _ int64) (int64, error) {
		return fieldTimestamp("field_timestamp", v, arg, timestamp)
	}},
	"field_or_partition_time": {roles: roleExtractor, arg: argRequired, extract: func(arg, _, v any, _, partitionTime int64) (int64, error) {
		return fieldTimestamp("field_or_partition_time", v, arg, partitionTime)
	}},
	// Initializers.
	"zero":         {roles: roleInit, init: func(any) (any, error) { return int64(0), nil }},
	"empty_string": {roles: roleInit, init: func(any) (any, error) { return "", nil }},
	"empty_list":   {roles: roleInit, init: func(any) (any, error) { return []any{}, nil }},
}

func str(fn string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: want a string, got %s", fn, describeValue(v))
	}
	return s, nil
}

func mapString(fn string, v any, f func(string) string) (any, error) {
	if v == nil {
		return nil, nil
	}
	s, err := str(fn, v)
	if err != nil {
		return nil, err
	}
	return f(s), nil
}

func field(fn string, v, name any) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: want a JSON object, got %s", fn, describeValue(v))
	}
	return m[fmt.Sprint(name)], nil
}

// fieldTimestamp is the JSON object value's integer field name, or
// fallback when the value is null or has no such field (or a null one).
func fieldTimestamp(fn string, v, name any, fallback int64) (int64, error) {
	if v == nil {
		return fallback, nil
	}
	f, err := field(fn, v, name)
	if err != nil || f == nil {
		return fallback, err
	}
	ts, ok := f.(int64)
	if !ok {
		return 0, fmt.Errorf("%s: want an integer field %v, got %s", fn, name, describeValue(f))
	}
	return ts, nil
}

// arith adds or subtracts two numbers: integers stay integers.
func arith(fn string, a, b any, op byte) (any, error) {
	ai, aInt := a.(int64)
	bi, bInt := b.(int64)
	if aInt && bInt {
		if op == '-' {
			return ai - bi, nil
		}
		return ai + bi, nil
	}
	af, aok := num(a)
	bf, bok := num(b)
	if !aok || !bok {
		return nil, fmt.Errorf("%s: want numbers, got %s and %s", fn, describeValue(a), describeValue(b))
	}
	if op == '-' {
		return af - bf, nil
	}
	return af + bf, nil
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// concat joins aggregate and value with the separator arg (default none); as
// an aggregator, an empty aggregate takes the value alone.
func concat(arg, agg, v any, aggregator bool) (any, error) {
	a, err := str("concat", agg)
	if err != nil {
		return nil, err
	}
	b, err := str("concat", v)
	if err != nil {
		return nil, err
	}
	if aggregator && a == "" {
		return b, nil
	}
	sep := ""
	if arg != nil {
		sep = fmt.Sprint(arg)
	}
	return a + sep + b, nil
}
