package engine

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// storeTx is a task's transaction of one store partition (state.Tx: the
// batch's and the open transaction's writes over Pebble) with what the
// engine knows of the store: its definition, its changelog topic and how
// its keys map to the changelog's.
type storeTx struct {
	*state.Tx
	store     *topology.Store
	changelog string
	// keys maps store keys to changelog keys and back (window.go); nil for
	// a key-value store, whose keys are the same.
	keys keyCodec
}

// row is a store's value for a key with its timestamp (state.Row).
type row = state.Row

// front is an in-memory view of part of a store in front of its
// transaction (state.Front; window.go's open windows).
type front = state.Front

// changelogRecord is the changelog record of a store change: the plain
// value, with the row's timestamp as the record's; nil for a row that is
// not logged (a versioned store's stream time: versioned.go).
func (s *storeTx) changelogRecord(partition int32, w state.Write) *kgo.Record {
	if vc, ok := s.keys.(versionedCodec); ok {
		r, err := vc.logRecord(s.changelog, partition, w)
		if err != nil {
			// Only the store's own writes reach here, made by
			// VersionValue: a bad one is a bug, not bad input.
			panic(fmt.Sprintf("engine: store %s: %v", s.store.Name, err))
		}
		return r
	}
	key := w.Key
	if s.keys != nil {
		key = s.keys.toLog(key)
	}
	return &kgo.Record{Topic: s.changelog, Partition: partition, Key: key, Value: w.Value, Timestamp: time.UnixMilli(w.TS)}
}
