package streams

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/polystreams/polystreams/core/internal/engine"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// Range, prefix, all and window queries over this instance's store
// partitions (Kafka Streams' ReadOnlyKeyValueStore.range / prefixScan / all
// and ReadOnlyWindowStore.fetch / fetchAll on KafkaStreams.store's local
// view): each partition held here (active, or with EnableStaleStores a
// standby copy) in partition order, each in key order (windows: in start
// order), as Kafka Streams' composite stores iterate them. Keys another
// instance holds are not in the answer: QueryMetadataForKey and
// StreamsMetadataForStore say which instance to ask. Safe for concurrent
// use while the application runs.

// Range calls fn for each entry of the key-value store named store with
// from <= key <= to (nil: open), until fn returns false.
func (a *App) Range(store string, from, to []byte, p StoreQueryParameters, fn func(key, value []byte, timestamp int64) bool) error {
	return a.scanKeyValue("Range", store, p, func(part *state.Partition, collect func(k, v []byte, ts int64) error) error {
		return part.ScanRange(from, state.UpperBound(to), collect)
	}, fn)
}

// PrefixScan calls fn for each entry of the key-value store named store
// whose key starts with prefix, until fn returns false.
func (a *App) PrefixScan(store string, prefix []byte, p StoreQueryParameters, fn func(key, value []byte, timestamp int64) bool) error {
	return a.scanKeyValue("PrefixScan", store, p, func(part *state.Partition, collect func(k, v []byte, ts int64) error) error {
		return part.ScanRange(prefix, state.PrefixEnd(prefix), collect)
	}, fn)
}

// All calls fn for every entry of the key-value store named store, until
// fn returns false.
func (a *App) All(store string, p StoreQueryParameters, fn func(key, value []byte, timestamp int64) bool) error {
	return a.scanKeyValue("All", store, p, func(part *state.Partition, collect func(k, v []byte, ts int64) error) error {
		return part.Scan(collect)
	}, fn)
}

// WindowedValue is one window's value in a window store (Kafka Streams'
// KeyValue<Windowed<K>, V>): the window is [Start, End) in epoch ms.
type WindowedValue struct {
	Key        []byte
	Start, End int64
	Value      []byte
	Timestamp  int64
}

// FetchWindows calls fn for the windows of key (nil: of every key) in the
// window store named store (a time or sliding windowed aggregation's) that
// start from from to to, both inclusive, until fn returns false
// (ReadOnlyWindowStore.fetch(key, from, to) / fetchAll(from, to)). Windows
// past the store's retention are left out, as in Kafka Streams.
func (a *App) FetchWindows(store string, key []byte, from, to time.Time, p StoreQueryParameters, fn func(WindowedValue) bool) error {
	st, parts, err := a.localPartitions("FetchWindows", store, topology.StoreWindow, p)
	if err != nil {
		return err
	}
	size := st.Windows.KeySize()
	fetch := func(part *state.Partition, visit func(k, v []byte, ts int64) error) error {
		return engine.FetchWindows(part, st, key, from.UnixMilli(), to.UnixMilli(), visit)
	}
	return eachEntry("FetchWindows", store, parts, fetch, func(k, v []byte, ts int64) bool {
		start := int64(binary.BigEndian.Uint64(k))
		return fn(WindowedValue{Key: slices.Clone(k[8:]), Start: start, End: start + size, Value: slices.Clone(v), Timestamp: ts})
	})
}

// scanKeyValue runs scan over each local partition of the key-value store
// named store, handing fn copies of what it finds.
func (a *App) scanKeyValue(call, store string, p StoreQueryParameters, scan func(*state.Partition, func(k, v []byte, ts int64) error) error, fn func(key, value []byte, timestamp int64) bool) error {
	_, parts, err := a.localPartitions(call, store, topology.StoreKeyValue, p)
	if err != nil {
		return err
	}
	return eachEntry(call, store, parts, scan, func(k, v []byte, ts int64) bool {
		return fn(slices.Clone(k), slices.Clone(v), ts)
	})
}

// eachEntry runs scan over parts in order, handing visit each entry until
// visit returns false (a stopped scan returns nil).
func eachEntry(call, store string, parts []*state.Partition, scan func(*state.Partition, func(k, v []byte, ts int64) error) error, visit func(k, v []byte, ts int64) bool) error {
	stopped := false
	for _, part := range parts {
		err := scan(part, func(k, v []byte, ts int64) error {
			if stopped = !visit(k, v, ts); stopped {
				return state.ErrStop
			}
			return nil
		})
		if stopped || errors.Is(err, state.ErrStop) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("streams: %s: store %q partition %d: %w", call, store, part.Number, err)
		}
	}
	return nil
}

// localPartitions returns store, which must be of kind, and the partitions
// of it this instance answers from, in partition order.
func (a *App) localPartitions(call, store string, kind topology.StoreKind, p StoreQueryParameters) (*topology.Store, []*state.Partition, error) {
	st := a.topo.Stores[store]
	switch {
	case st == nil:
		return nil, nil, fmt.Errorf("streams: %s: store %q does not exist: %w", call, store, ErrNotFound)
	case st.Kind != kind:
		want := "a key-value store (Range, PrefixScan, All; a versioned store answers GetVersioned)"
		if kind == topology.StoreWindow {
			want = "a window store (FetchWindows)"
		}
		return nil, nil, fmt.Errorf("streams: %s: store %q is not %s: %w", call, store, want, ErrInvalid)
	}
	active, standby, err := a.rt.QueryPartitions(store, p.EnableStaleStores)
	if err != nil {
		return nil, nil, fmt.Errorf("streams: %s: %w", call, err)
	}
	parts := make([]*state.Partition, 0, len(active)+len(standby))
	for _, m := range []map[int32]*state.Partition{active, standby} {
		for _, part := range m {
			parts = append(parts, part)
		}
	}
	slices.SortFunc(parts, func(x, y *state.Partition) int { return int(x.Number - y.Number) })
	return st, parts, nil
}
