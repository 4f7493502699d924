package state

import "fmt"

// A versioned store's reads and writes through its transaction (the
// layout is versioned.go's): VersionedKeyValueStore's get, put and delete,
// over the batch's writes, the open transaction's and Pebble's.

// StreamTime is a versioned store's observed stream time: the largest
// timestamp written to it, -1 before any.
func (s *Tx) StreamTime() (int64, error) {
	v, ts, err := s.Get(StreamTimeKey)
	if err != nil || v == nil {
		return -1, err
	}
	return ts, nil
}

// Versions returns key's versions as the store reads now (the batch's
// writes over the open transaction's over Pebble's), in ascending
// validFrom.
func (s *Tx) Versions(key []byte) ([]Version, error) {
	lo, hi := VersionRange(key)
	var vs []Version
	var derr error
	err := s.Scan(lo, hi, func(sk, stored []byte, _ int64) bool {
		_, from, ok := SplitVersionKey(sk)
		if !ok {
			return true
		}
		v, err := VersionData(stored)
		if err != nil {
			derr = fmt.Errorf("store %s key %q version %d: %w", s.Part.Store, key, from, err)
			return false
		}
		vs = append(vs, Version{Value: v, ValidFrom: from})
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, err
	}
	LinkVersions(vs)
	return vs, nil
}

// GetVersion is VersionedKeyValueStore.get(key, asOf) (latest: get(key))
// of a store with history retention retention.
func (s *Tx) GetVersion(key []byte, latest bool, asOf, retention int64) (Version, bool, error) {
	vs, err := s.Versions(key)
	if err != nil {
		return Version{}, false, err
	}
	st, err := s.StreamTime()
	if err != nil {
		return Version{}, false, err
	}
	v, ok := FindVersion(vs, latest, asOf, st, retention)
	return v, ok, nil
}

// VersionPut is what PutVersion did.
type VersionPut struct {
	// Put: the version was written; false when it is older than the
	// history retention behind the store's stream time (Kafka Streams
	// drops it: "Skipping record for expired put").
	Put bool
	// Latest: it is the key's latest version now (PUT_RETURN_CODE_IS_LATEST).
	Latest bool
	// Old is the key's latest value before the put (nil: none, or a
	// tombstone).
	Old []byte
	// ValidTo is the version's end when it is not the latest: the next
	// version's validFrom.
	ValidTo int64
}

// DeleteVersion is VersionedKeyValueStore.delete(key, ts): the version
// valid at ts as a read finds it before the delete (ok false: none), then
// a tombstone valid from ts. A delete older than the history retention
// behind the store's stream time does nothing and finds nothing
// (RocksDBVersionedStore.delete: "Skipping record for expired delete");
// put is false then.
func (s *Tx) DeleteVersion(eos bool, key []byte, ts, retention int64) (v Version, ok, put bool, err error) {
	st, err := s.StreamTime()
	if err != nil {
		return Version{}, false, false, err
	}
	if ts < st-retention {
		return Version{}, false, false, nil
	}
	if v, ok, err = s.GetVersion(key, false, ts, retention); err != nil {
		return Version{}, false, false, err
	}
	if _, err := s.PutVersion(eos, key, nil, ts, retention); err != nil {
		return Version{}, false, false, err
	}
	return v, ok, true, nil
}

// PutVersion is VersionedKeyValueStore.put(key, value, ts): a version of
// value (nil: a tombstone) valid from ts, replacing one from the same ts.
// Versions that no read can find any more (older than the one valid at
// stream time - history retention) leave Pebble, without a changelog
// record: the changelog's compaction lag keeps them as long as reads may
// need them.
func (s *Tx) PutVersion(eos bool, key, value []byte, ts, retention int64) (VersionPut, error) {
	st, err := s.StreamTime()
	if err != nil {
		return VersionPut{}, err
	}
	vs, err := s.Versions(key)
	if err != nil {
		return VersionPut{}, err
	}
	var res VersionPut
	if len(vs) > 0 {
		res.Old = vs[len(vs)-1].Value
	}
	if ts < st-retention {
		return res, nil
	}
	res.Put, res.Latest = true, len(vs) == 0 || ts >= vs[len(vs)-1].ValidFrom
	for _, v := range vs {
		if v.ValidFrom > ts {
			res.ValidTo = v.ValidFrom
			break
		}
	}
	if ts > st {
		st = ts
		s.Put(StreamTimeKey, []byte{}, st)
	}
	s.Put(VersionKey(key, ts), VersionValue(value), ts)
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
		lo, _ := VersionRange(key)
		if err := s.Expire(eos, lo, VersionKey(key, anchor)); err != nil {
			return VersionPut{}, err
		}
	}
	return res, nil
}
