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

// versionPut is what putVersion did (state.VersionPut).
type versionPut = state.VersionPut

// putCode is VersionedKeyValueStore.put's answer: the version's validTo,
// PutValidToUndefined when it is the latest, PutNotPut when dropped.
func putCode(p versionPut) int64 {
	switch {
	case !p.Put:
		return topology.PutNotPut
	case p.Latest:
		return topology.PutValidToUndefined
	}
	return p.ValidTo
}

// getVersion is VersionedKeyValueStore.get(key, asOf) (latest: get(key)):
// state.Tx.GetVersion with the store's history retention.
func (s *storeTx) getVersion(key []byte, latest bool, asOf int64) (state.Version, bool, error) {
	return s.GetVersion(key, latest, asOf, s.store.Versioned.HistoryRetention)
}

// deleteVersion is VersionedKeyValueStore.delete(key, ts):
// state.Tx.DeleteVersion with the store's history retention.
func (s *storeTx) deleteVersion(eos bool, key []byte, ts int64) (v state.Version, ok, put bool, err error) {
	return s.DeleteVersion(eos, key, ts, s.store.Versioned.HistoryRetention)
}

// putVersion is VersionedKeyValueStore.put(key, value, ts):
// state.Tx.PutVersion with the store's history retention.
func (s *storeTx) putVersion(eos bool, key, value []byte, ts int64) (versionPut, error) {
	return s.PutVersion(eos, key, value, ts, s.store.Versioned.HistoryRetention)
}

// versionedStore reports whether st is a versioned store.
func versionedStore(st *topology.Store) bool { return st != nil && st.Kind == topology.StoreVersioned }
