package topology

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// Built-in reducers: they run in the engine and never cross to a host.
const (
	BuiltinSum    = "sum"
	BuiltinMin    = "min"
	BuiltinMax    = "max"
	BuiltinLatest = "latest"
)

// builtinReducer returns the ReduceFunc of a built-in over values of
// valueSerde, Kafka's encodings (long: 8-byte big-endian two's complement,
// overflowing as Java's long does; double: IEEE 754 big-endian).
func builtinReducer(name, valueSerde string) (ReduceFunc, error) {
	if name == BuiltinLatest {
		return func(_, v []byte) ([]byte, error) { return v, nil }, nil
	}
	var pick func(a, b int64) int64
	var pickF func(a, b float64) float64
	switch name {
	case BuiltinSum:
		pick, pickF = func(a, b int64) int64 { return a + b }, func(a, b float64) float64 { return a + b }
	case BuiltinMin:
		pick, pickF = func(a, b int64) int64 { return min(a, b) }, math.Min
	case BuiltinMax:
		pick, pickF = func(a, b int64) int64 { return max(a, b) }, math.Max
	default:
		return nil, fmt.Errorf("built-in reducer %q is not known (known: sum, min, max, latest)", name)
	}
	switch valueSerde {
	case serde.Long:
		return func(agg, v []byte) ([]byte, error) {
			a, err := serde.DecodeLong(agg)
			if err != nil {
				return nil, fmt.Errorf("aggregate: %w", err)
			}
			b, err := serde.DecodeLong(v)
			if err != nil {
				return nil, fmt.Errorf("value: %w", err)
			}
			return serde.AppendLong(make([]byte, 0, 8), pick(a, b)), nil
		}, nil
	case serde.Double:
		return func(agg, v []byte) ([]byte, error) {
			if len(agg) != 8 || len(v) != 8 {
				return nil, serde.Malformed(fmt.Errorf("double needs 8 bytes, got %d and %d", len(agg), len(v)))
			}
			a := math.Float64frombits(binary.BigEndian.Uint64(agg))
			b := math.Float64frombits(binary.BigEndian.Uint64(v))
			return binary.BigEndian.AppendUint64(make([]byte, 0, 8), math.Float64bits(pickF(a, b))), nil
		}, nil
	}
	return nil, fmt.Errorf("built-in reducer %q needs long or double values, but the grouped stream's values are %s", name, serde.Or(valueSerde, serde.Bytes))
}

// builtinSubtractor undoes builtinReducer's name for a grouped table's
// subtractor; only sum can be undone.
func builtinSubtractor(name, valueSerde string) (ReduceFunc, error) {
	if name != BuiltinSum {
		return nil, fmt.Errorf("built-in %s cannot remove a value, so it cannot reduce a grouped table; use a host reducer with a subtractor", name)
	}
	switch valueSerde {
	case serde.Long:
		return func(agg, v []byte) ([]byte, error) {
			a, err := serde.DecodeLong(agg)
			if err != nil {
				return nil, fmt.Errorf("aggregate: %w", err)
			}
			b, err := serde.DecodeLong(v)
			if err != nil {
				return nil, fmt.Errorf("value: %w", err)
			}
			return serde.AppendLong(make([]byte, 0, 8), a-b), nil
		}, nil
	case serde.Double:
		return func(agg, v []byte) ([]byte, error) {
			if len(agg) != 8 || len(v) != 8 {
				return nil, serde.Malformed(fmt.Errorf("double needs 8 bytes, got %d and %d", len(agg), len(v)))
			}
			a := math.Float64frombits(binary.BigEndian.Uint64(agg))
			b := math.Float64frombits(binary.BigEndian.Uint64(v))
			return binary.BigEndian.AppendUint64(make([]byte, 0, 8), math.Float64bits(a-b)), nil
		}, nil
	}
	return nil, fmt.Errorf("built-in reducer %q needs long or double values, but the grouped table's values are %s", name, serde.Or(valueSerde, serde.Bytes))
}
