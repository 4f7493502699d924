package engine

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// Versioned key-value stores (KIP-889), as Kafka Streams'
// RocksDBVersionedStore keeps them: every version of a key by the
// timestamp it became valid at, for the store's history retention behind
// its observed stream time (the largest timestamp written). The layout in
// Pebble is state/versioned.go's; the changelog is a plain compacted topic
// whose records are the versions (the key, the value or null for a
// tombstone, the version's timestamp as the record's), so a JVM Kafka
// Streams application restores what polystreams wrote and the reverse
// (docs/design/versioned-stores.md).

// versionedCodec maps a versioned store's rows to changelog records and
// back. Its keyCodec half strips a version's store key to the user's key;
// restoring needs the record's timestamp too (restoreWrite).
type versionedCodec struct{}

func (versionedCodec) toLog(sk []byte) []byte {
	k, _, _ := state.SplitVersionKey(sk)
	return k
}

func (versionedCodec) fromLog([]byte) ([]byte, error) {
	return nil, fmt.Errorf("engine: a versioned store's changelog key needs its record's timestamp")
}

// logRecord is the changelog record of a versioned store's write w, nil for
// the stream-time row (the partition's own, never logged).
func (versionedCodec) logRecord(topic string, partition int32, w state.Write) (*kgo.Record, error) {
	k, from, ok := state.SplitVersionKey(w.Key)
	if !ok {
		return nil, nil
	}
	v, err := state.VersionData(w.Value)
	if err != nil {
		return nil, fmt.Errorf("key %q version %d: %w", k, from, err)
	}
	return &kgo.Record{Topic: topic, Partition: partition, Key: k, Value: v, Timestamp: time.UnixMilli(from)}, nil
}

// versionRestore turns a versioned store's changelog records into its
// writes: each record a version, and the stream time they advance to.
type versionRestore struct {
	part       *state.Partition
	streamTime int64
	known      bool
	moved      bool
}

func (vr *versionRestore) add(ws []state.Write, r *kgo.Record) ([]state.Write, error) {
	if r.Key == nil {
		return ws, fmt.Errorf("a versioned store's changelog record has a null key")
	}
	if !vr.known {
		v, st, err := vr.part.Get(state.StreamTimeKey)
		if err != nil {
			return ws, err
		}
		vr.streamTime, vr.known = -1, true
		if v != nil {
			vr.streamTime = st
		}
	}
	ts := r.Timestamp.UnixMilli()
	if ts > vr.streamTime {
		vr.streamTime, vr.moved = ts, true
	}
	return append(ws, state.Write{Key: state.VersionKey(r.Key, ts), Value: state.VersionValue(r.Value), TS: ts}), nil
}

// finish adds the stream-time row, when the records moved it.
func (vr *versionRestore) finish(ws []state.Write) []state.Write {
	if vr.moved {
		ws = append(ws, state.Write{Key: state.StreamTimeKey, Value: []byte{}, TS: vr.streamTime})
		vr.moved = false
	}
	return ws
}

// sortVersions orders a versioned store's writes by timestamp, so that its
// changelog carries a key's versions in time order (a batch's writes are
// a map's).
func sortVersions(ws []state.Write) {
	slices.SortStableFunc(ws, func(a, b state.Write) int {
		if a.TS != b.TS {
			return cmpInt(a.TS, b.TS)
		}
		return bytes.Compare(a.Key, b.Key)
	})
}

// streamTime is a versioned store's observed stream time: the largest
// timestamp written to it, -1 before any.
func (s *storeTx) streamTime() (int64, error) {
	v, ts, err := s.Get(state.StreamTimeKey)
	if err != nil || v == nil {
		return -1, err
	}
	return ts, nil
}

// versions returns key's versions as the store reads now (the batch's
// writes over the open transaction's over Pebble's), in ascending
// validFrom.
func (s *storeTx) versions(key []byte) ([]state.Version, error) {
	lo, hi := state.VersionRange(key)
	var vs []state.Version
	var derr error
	err := s.Scan(lo, hi, func(sk, stored []byte, _ int64) bool {
		_, from, ok := state.SplitVersionKey(sk)
		if !ok {
			return true
		}
		v, err := state.VersionData(stored)
		if err != nil {
			derr = fmt.Errorf("store %s key %q version %d: %w", s.store.Name, key, from, err)
			return false
		}
		vs = append(vs, state.Version{Value: v, ValidFrom: from})
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, err
	}
	state.LinkVersions(vs)
	return vs, nil
}

// getVersion is VersionedKeyValueStore.get(key, asOf) (latest: get(key)).
func (s *storeTx) getVersion(key []byte, latest bool, asOf int64) (state.Version, bool, error) {
	vs, err := s.versions(key)
	if err != nil {
		return state.Version{}, false, err
	}
	st, err := s.streamTime()
	if err != nil {
		return state.Version{}, false, err
	}
	v, ok := state.FindVersion(vs, latest, asOf, st, s.store.Versioned.HistoryRetention)
	return v, ok, nil
}

// versionPut is what putVersion did.
type versionPut struct {
	// put: the version was written; false when it is older than the
	// history retention behind the store's stream time (Kafka Streams
	// drops it: "Skipping record for expired put").
	put bool
	// latest: it is the key's latest version now (PUT_RETURN_CODE_IS_LATEST).
	latest bool
	// old is the key's latest value before the put (nil: none, or a
	// tombstone).
	old []byte
	// validTo is the version's end when it is not the latest: the next
	// version's validFrom.
	validTo int64
}

// code is VersionedKeyValueStore.put's answer: the version's validTo,
// PutValidToUndefined when it is the latest, PutNotPut when dropped.
func (p versionPut) code() int64 {
	switch {
	case !p.put:
		return topology.PutNotPut
	case p.latest:
		return topology.PutValidToUndefined
	}
	return p.validTo
}

// deleteVersion is VersionedKeyValueStore.delete(key, ts): the version
// valid at ts as a read finds it before the delete (ok false: none), then
// a tombstone valid from ts. A delete older than the history retention
// behind the store's stream time does nothing and finds nothing
// (RocksDBVersionedStore.delete: "Skipping record for expired delete");
// put is false then.
func (s *storeTx) deleteVersion(eos bool, key []byte, ts int64) (v state.Version, ok, put bool, err error) {
	st, err := s.streamTime()
	if err != nil {
		return state.Version{}, false, false, err
	}
	if ts < st-s.store.Versioned.HistoryRetention {
		return state.Version{}, false, false, nil
	}
	if v, ok, err = s.getVersion(key, false, ts); err != nil {
		return state.Version{}, false, false, err
	}
	if _, err := s.putVersion(eos, key, nil, ts); err != nil {
		return state.Version{}, false, false, err
	}
	return v, ok, true, nil
}

// putVersion is VersionedKeyValueStore.put(key, value, ts): a version of
// value (nil: a tombstone) valid from ts, replacing one from the same ts.
// Versions that no read can find any more (older than the one valid at
// stream time - history retention) leave Pebble, without a changelog
// record: the changelog's compaction lag keeps them as long as reads may
// need them.
func (s *storeTx) putVersion(eos bool, key, value []byte, ts int64) (versionPut, error) {
	retention := s.store.Versioned.HistoryRetention
	st, err := s.streamTime()
	if err != nil {
		return versionPut{}, err
	}
	vs, err := s.versions(key)
	if err != nil {
		return versionPut{}, err
	}
	var res versionPut
	if len(vs) > 0 {
		res.old = vs[len(vs)-1].Value
	}
	if ts < st-retention {
		return res, nil
	}
	res.put, res.latest = true, len(vs) == 0 || ts >= vs[len(vs)-1].ValidFrom
	for _, v := range vs {
		if v.ValidFrom > ts {
			res.validTo = v.ValidFrom
			break
		}
	}
	if ts > st {
		st = ts
		s.Put(state.StreamTimeKey, []byte{}, st)
	}
	s.Put(state.VersionKey(key, ts), state.VersionValue(value), ts)
	// The version valid at the cut-off (the last from at or before it)
	// answers reads from the cut-off on; those before it, none.
	cut := st - retention
	anchor, found := ts, ts <= cut
	for _, v := range vs {
		if v.ValidFrom <= cut && (!found || v.ValidFrom > anchor) {
			anchor, found = v.ValidFrom, true
		}
	}
	if found && len(vs) > 0 && vs[0].ValidFrom < anchor {
		lo, _ := state.VersionRange(key)
		if err := s.Expire(eos, lo, state.VersionKey(key, anchor)); err != nil {
			return versionPut{}, err
		}
	}
	return res, nil
}

// versionedStore reports whether st is a versioned store.
func versionedStore(st *topology.Store) bool { return st != nil && st.Kind == topology.StoreVersioned }
