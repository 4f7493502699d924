package engine_test

// The function catalogue of the semantics tests (semantics_test.go): the
// named Go functions a `topology` directive's steps call.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// The function catalogue: Go functions over string values, named as the
// Kafka tests' mocks they stand for (MockMapper, MockReducer,
// MockAggregator, MockInitializer, MockValueJoiner). A name may carry one
// argument after a colon ("suffix:!"). Numbers are decimal strings.
func fnArg[F any](catalogue map[string]func(arg string) F, s step, i int) (topology.Function, error) {
	name, err := s.arg(i)
	if err != nil {
		return topology.Function{}, err
	}
	return fn(catalogue, name)
}

func fn[F any](catalogue map[string]func(arg string) F, name string) (topology.Function, error) {
	base, arg, _ := strings.Cut(name, ":")
	mk, ok := catalogue[base]
	if !ok {
		return topology.Function{}, fmt.Errorf("function %q is not in the catalogue (known: %s)", base, strings.Join(slices.Sorted(maps.Keys(catalogue)), ", "))
	}
	return topology.Function{Name: name, Native: mk(arg)}, nil
}

// text is Java's string concatenation of a value: null prints "null".
func text(b []byte) string {
	if b == nil {
		return "null"
	}
	return string(b)
}

func decimal(b []byte) (int64, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("value %q is not a decimal number", b)
	}
	return n, nil
}

var mapValues = map[string]func(string) topology.MapValuesFunc{
	// upper: String::toUpperCase.
	"upper": func(string) topology.MapValuesFunc {
		return func(v []byte) ([]byte, error) { return []byte(strings.ToUpper(string(v))), nil }
	},
	// digit: value.charAt(0) - 48 (KTableMapValuesTest).
	"digit": func(string) topology.MapValuesFunc {
		return func(v []byte) ([]byte, error) {
			if len(v) == 0 {
				return nil, fmt.Errorf("value is empty")
			}
			return []byte(strconv.Itoa(int(v[0]) - 48)), nil
		}
	},
	// suffix:X appends X.
	"suffix": func(x string) topology.MapValuesFunc {
		return func(v []byte) ([]byte, error) { return []byte(text(v) + x), nil }
	},
	// times:N multiplies a number by N.
	"times": func(x string) topology.MapValuesFunc {
		n, _ := strconv.ParseInt(x, 10, 64)
		return func(v []byte) ([]byte, error) {
			d, err := decimal(v)
			return []byte(strconv.FormatInt(d*n, 10)), err
		}
	},
	// before:SEP is the part before the first SEP ("value.split(SEP)[0]");
	// after:SEP is the part after the first SEP (a foreign key extractor:
	// "value.split(SEP)[1]"); none when there is no SEP.
	"before": func(sep string) topology.MapValuesFunc {
		return func(v []byte) ([]byte, error) {
			fk, _, _ := strings.Cut(string(v), sep)
			return []byte(fk), nil
		}
	},
	// none: no foreign key (value -> null).
	"none": func(string) topology.MapValuesFunc {
		return func([]byte) ([]byte, error) { return nil, nil }
	},
	"after": func(sep string) topology.MapValuesFunc {
		return func(v []byte) ([]byte, error) {
			if _, fk, ok := strings.Cut(string(v), sep); ok {
				return []byte(fk), nil
			}
			return nil, nil
		}
	},
}

var predicates = map[string]func(string) topology.PredicateFunc{
	// even: value % 2 == 0 (KTableFilterTest's predicate).
	"even": func(string) topology.PredicateFunc {
		return func(_, v []byte) (bool, error) {
			d, err := decimal(v)
			return d%2 == 0, err
		}
	},
	"odd": func(string) topology.PredicateFunc {
		return func(_, v []byte) (bool, error) {
			d, err := decimal(v)
			return d%2 != 0, err
		}
	},
	// multipleOf:N: value % N == 0.
	"multipleOf": func(x string) topology.PredicateFunc {
		n, _ := strconv.ParseInt(x, 10, 64)
		return func(_, v []byte) (bool, error) {
			d, err := decimal(v)
			return n != 0 && d%n == 0, err
		}
	},
	// keyMultipleOf:N: key % N == 0 (KStreamFilterTest, KStreamSplitTest).
	"keyMultipleOf": func(x string) topology.PredicateFunc {
		n, _ := strconv.ParseInt(x, 10, 64)
		return func(k, _ []byte) (bool, error) {
			d, err := decimal(k)
			return n != 0 && d%n == 0, err
		}
	},
	// keyNegative: key < 0.
	"keyNegative": func(string) topology.PredicateFunc {
		return func(k, _ []byte) (bool, error) {
			d, err := decimal(k)
			return d < 0, err
		}
	},
	// keyStartsWith:X.
	"keyStartsWith": func(x string) topology.PredicateFunc {
		return func(k, _ []byte) (bool, error) { return strings.HasPrefix(string(k), x), nil }
	},
}

var flatMapValues = map[string]func(string) topology.FlatMapValuesFunc{
	// words: value.split(" ").
	"words": func(string) topology.FlatMapValuesFunc {
		return func(v []byte) ([][]byte, error) {
			var out [][]byte
			for _, w := range strings.Fields(string(v)) {
				out = append(out, []byte(w))
			}
			return out, nil
		}
	},
	// lowerUpper: "v" + value, "V" + value (KStreamFlatMapValuesTest).
	"lowerUpper": func(string) topology.FlatMapValuesFunc {
		return func(v []byte) ([][]byte, error) {
			return [][]byte{[]byte("v" + text(v)), []byte("V" + text(v))}, nil
		}
	},
	// upTo: the numbers 0 .. value-1 (KStreamFlatMapValuesTest's mapper
	// makes value copies; this makes the count visible).
	"upTo": func(string) topology.FlatMapValuesFunc {
		return func(v []byte) ([][]byte, error) {
			d, err := decimal(v)
			var out [][]byte
			for i := int64(0); i < d; i++ {
				out = append(out, []byte(strconv.FormatInt(i, 10)))
			}
			return out, err
		}
	},
}

var mappers = map[string]func(string) topology.MapFunc{
	// noop: KeyValue.pair(key, value) (MockMapper.noOpKeyValueMapper).
	"noop": func(string) topology.MapFunc {
		return func(k, v []byte) ([]byte, []byte, error) { return k, v, nil }
	},
	// swap: KeyValue.pair(value, key) (KStreamMapTest).
	"swap": func(string) topology.MapFunc {
		return func(k, v []byte) ([]byte, []byte, error) { return v, k, nil }
	},
	// byValue: KeyValue.pair(value, value) (MockMapper.selectValueKeyValueMapper).
	"byValue": func(string) topology.MapFunc {
		return func(_, v []byte) ([]byte, []byte, error) { return v, v, nil }
	},
	// byValueNullKeys: byValue, except that key "null" maps to a null key
	// and key "NULL" to a null pair (KTableAggregateTest.testAggRepartition;
	// a Go MapFunc has no null pair, so it is a null key and value here:
	// both are dropped by the grouping).
	"byValueNullKeys": func(string) topology.MapFunc {
		return func(k, v []byte) ([]byte, []byte, error) {
			switch string(k) {
			case "null":
				return nil, v, nil
			case "NULL":
				return nil, nil, nil
			}
			return v, v, nil
		}
	},
	// keyChars: KeyValue.pair(key.charAt(0), key.charAt(1))
	// (KTableAggregateTest.testRemoveOldBeforeAddNew).
	"keyChars": func(string) topology.MapFunc {
		return func(k, _ []byte) ([]byte, []byte, error) {
			if len(k) < 2 {
				return nil, nil, fmt.Errorf("key %q has fewer than 2 characters", k)
			}
			return k[:1], k[1:2], nil
		}
	},
	// letterIndex: KeyValue.pair(key.charAt(0) - 'A', value) (an Integer
	// key in Kafka's test; its decimal text here).
	"letterIndex": func(string) topology.MapFunc {
		return func(k, v []byte) ([]byte, []byte, error) {
			if len(k) == 0 {
				return nil, nil, fmt.Errorf("key is empty")
			}
			return []byte(strconv.Itoa(int(k[0]) - 'A')), v, nil
		}
	},
	// keyPrefix:N: KeyValue.pair(key.substring(0, N), value).
	"keyPrefix": func(x string) topology.MapFunc {
		n, _ := strconv.Atoi(x)
		return func(k, v []byte) ([]byte, []byte, error) { return k[:min(n, len(k))], v, nil }
	},
}

var keySelectors = map[string]func(string) topology.SelectKeyFunc{
	// key: the key stays ((k, v) -> k).
	"key": func(string) topology.SelectKeyFunc {
		return func(k, _ []byte) ([]byte, error) { return k, nil }
	},
	// value: the value is the key (MockMapper.selectValueMapper).
	"value": func(string) topology.SelectKeyFunc {
		return func(_, v []byte) ([]byte, error) { return v, nil }
	},
	// numberName: keyMap.get(value), {1: ONE, 2: TWO, 3: THREE}
	// (KStreamSelectKeyTest); null for another value.
	"numberName": func(string) topology.SelectKeyFunc {
		names := map[string]string{"1": "ONE", "2": "TWO", "3": "THREE"}
		return func(_, v []byte) ([]byte, error) {
			if n, ok := names[string(v)]; ok {
				return []byte(n), nil
			}
			return nil, nil
		}
	},
	// keyPrefix:N: key.substring(0, N).
	"keyPrefix": func(x string) topology.SelectKeyFunc {
		n, _ := strconv.Atoi(x)
		return func(k, _ []byte) ([]byte, error) { return k[:min(n, len(k))], nil }
	},
}

var reducers = map[string]func(string) topology.ReduceFunc{
	// concat: value1 + "+" + value2 (MockReducer.STRING_ADDER).
	"concat": func(string) topology.ReduceFunc {
		return func(a, v []byte) ([]byte, error) { return []byte(text(a) + "+" + text(v)), nil }
	},
	// unconcat: value1 + "-" + value2 (MockReducer.STRING_REMOVER).
	"unconcat": func(string) topology.ReduceFunc {
		return func(a, v []byte) ([]byte, error) { return []byte(text(a) + "-" + text(v)), nil }
	},
	// sum and minus: numbers.
	"sum": func(string) topology.ReduceFunc {
		return func(a, v []byte) ([]byte, error) { return arith(a, v, 1) }
	},
	"minus": func(string) topology.ReduceFunc {
		return func(a, v []byte) ([]byte, error) { return arith(a, v, -1) }
	},
}

func arith(a, v []byte, sign int64) ([]byte, error) {
	x, err := decimal(a)
	if err != nil {
		return nil, err
	}
	y, err := decimal(v)
	if err != nil {
		return nil, err
	}
	return []byte(strconv.FormatInt(x+sign*y, 10)), nil
}

var initializers = map[string]func(string) topology.InitializerFunc{
	// empty: "" (() -> "").
	"empty": func(string) topology.InitializerFunc {
		return func() ([]byte, error) { return []byte{}, nil }
	},
	// zero: "0" (MockInitializer.STRING_INIT).
	"zero": func(string) topology.InitializerFunc {
		return func() ([]byte, error) { return []byte("0"), nil }
	},
}

var aggregators = map[string]func(string) topology.AggregateFunc{
	// adder: aggregate + "+" + value (MockAggregator.TOSTRING_ADDER).
	"adder": func(string) topology.AggregateFunc {
		return func(_, v, a []byte) ([]byte, error) { return []byte(text(a) + "+" + text(v)), nil }
	},
	// merge: aggOne + "+" + aggTwo (SessionWindowedKStreamImplTest's
	// sessionMerger; the engine passes the sessions as value and aggregate).
	"merge": func(string) topology.AggregateFunc {
		return func(_, one, two []byte) ([]byte, error) { return []byte(text(one) + "+" + text(two)), nil }
	},
	// append: aggregate + value.
	"append": func(string) topology.AggregateFunc {
		return func(_, v, a []byte) ([]byte, error) { return []byte(text(a) + text(v)), nil }
	},
	// removeAll: aggregate.replaceAll(value, "").
	"removeAll": func(string) topology.AggregateFunc {
		return func(_, v, a []byte) ([]byte, error) { return []byte(strings.ReplaceAll(text(a), text(v), "")), nil }
	},
	// remover: aggregate + "-" + value (MockAggregator.TOSTRING_REMOVER).
	"remover": func(string) topology.AggregateFunc {
		return func(_, v, a []byte) ([]byte, error) { return []byte(text(a) + "-" + text(v)), nil }
	},
}

var joiners = map[string]func(string) topology.ValueJoinerFunc{
	// tuple: "(" + value1 + "," + value2 + ")" (the foreign-key join tests').
	"tuple": func(string) topology.ValueJoinerFunc {
		return func(v, o []byte) ([]byte, error) { return []byte("(" + text(v) + "," + text(o) + ")"), nil }
	},
	// percent: p1 + "%" + p2 (KStreamWindowAggregateTest.testJoin).
	"percent": func(string) topology.ValueJoinerFunc {
		return func(v, o []byte) ([]byte, error) { return []byte(text(v) + "%" + text(o)), nil }
	},
	// pair: value1 + "+" + value2 (MockValueJoiner.TOSTRING_JOINER).
	"pair": func(string) topology.ValueJoinerFunc {
		return func(v, o []byte) ([]byte, error) { return []byte(text(v) + "+" + text(o)), nil }
	},
}
