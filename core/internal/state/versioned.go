package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// A versioned key-value store (Kafka Streams' VersionedKeyValueStore,
// KIP-889) keeps every version of a key's value, each valid from its
// timestamp until the next version's. Its partition holds, in the store's
// key range:
//
//	'v' len(key) (4 BE) key validFrom (8 BE, sign bit flipped)  a version
//	's'                                                         stream time
//
// so a key's versions are adjacent and in time order. A version's stored
// value is a 1 byte (then the value) or a 0 byte alone for a tombstone (a
// delete is a version too: reads as of its time find nothing); its row
// timestamp is its validFrom. The stream-time row's timestamp is the
// largest validFrom ever written (the store's observed stream time); it is
// the partition's own and never logged. The changelog carries each version
// as Kafka Streams' does: the plain key and value (null for a tombstone)
// at the version's timestamp (docs/design/versioned-stores.md).
const (
	versionTag    = 'v'
	streamTimeTag = 's'
)

// StreamTimeKey is the store key of a versioned store's stream-time row.
var StreamTimeKey = []byte{streamTimeTag}

// VersionKey is the store key of key's version valid from validFrom.
func VersionKey(key []byte, validFrom int64) []byte {
	b := make([]byte, 0, 1+4+len(key)+8)
	b = append(b, versionTag)
	b = binary.BigEndian.AppendUint32(b, uint32(len(key)))
	b = append(b, key...)
	return binary.BigEndian.AppendUint64(b, uint64(validFrom)^(1<<63))
}

// VersionRange is the store key range [lo, hi) of key's versions.
func VersionRange(key []byte) (lo, hi []byte) {
	lo = VersionKey(key, math.MinInt64)
	hi = append(VersionKey(key, math.MaxInt64)[:len(lo)-8:len(lo)-8], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0)
	return lo, hi
}

// SplitVersionKey returns the key and validFrom of a version's store key;
// ok is false for any other key (the stream-time row).
func SplitVersionKey(sk []byte) (key []byte, validFrom int64, ok bool) {
	if len(sk) < 1+4+8 || sk[0] != versionTag {
		return nil, 0, false
	}
	n := int(binary.BigEndian.Uint32(sk[1:5]))
	if len(sk) != 1+4+n+8 {
		return nil, 0, false
	}
	return sk[5 : 5+n], int64(binary.BigEndian.Uint64(sk[5+n:]) ^ (1 << 63)), true
}

// VersionValue is the stored value of a version of value (nil: a
// tombstone).
func VersionValue(value []byte) []byte {
	if value == nil {
		return []byte{0}
	}
	return append(append(make([]byte, 0, 1+len(value)), 1), value...)
}

// VersionData is the value a version's stored value holds (nil for a
// tombstone).
func VersionData(stored []byte) ([]byte, error) {
	if len(stored) == 0 || stored[0] > 1 || stored[0] == 0 && len(stored) > 1 {
		return nil, errors.New("a stored version is a 1 byte and its value, or a 0 byte alone")
	}
	if stored[0] == 0 {
		return nil, nil
	}
	return stored[1:], nil
}

// Version is one version of a key's value: valid from ValidFrom until
// ValidTo (exclusive; Latest: until further notice). A nil Value is a
// tombstone.
type Version struct {
	Value              []byte
	ValidFrom, ValidTo int64
	Latest             bool
}

// FindVersion picks, from a key's versions in ascending validFrom (the
// tombstones among them), the one a read finds (VersionedKeyValueStore.get,
// as RocksDBVersionedStore answers it): with latest, the latest version;
// else the version valid at asOf. A read as of a time before streamTime -
// retention finds only a latest version valid then: older ones may be gone
// already. A tombstone, or no version, finds nothing (ok false).
func FindVersion(versions []Version, latest bool, asOf, streamTime, retention int64) (Version, bool) {
	n := len(versions)
	if n == 0 {
		return Version{}, false
	}
	if latest {
		v := versions[n-1]
		return v, v.Value != nil
	}
	i := n - 1
	for i >= 0 && versions[i].ValidFrom > asOf {
		i--
	}
	if i < 0 {
		return Version{}, false
	}
	v := versions[i]
	if v.Value == nil || asOf < streamTime-retention && !v.Latest {
		return Version{}, false
	}
	return v, true
}

// Versions returns key's versions in Pebble, in ascending validFrom, with
// ValidTo and Latest set.
func (p *Partition) Versions(key []byte) ([]Version, error) {
	lo, hi := VersionRange(key)
	var vs []Version
	err := p.ScanRange(lo, hi, func(sk, stored []byte, _ int64) error {
		_, from, ok := SplitVersionKey(sk)
		if !ok {
			return nil
		}
		v, err := VersionData(stored)
		if err != nil {
			return fmt.Errorf("key %q version %d: %w", key, from, err)
		}
		if v != nil {
			v = append(make([]byte, 0, len(v)), v...)
		}
		vs = append(vs, Version{Value: v, ValidFrom: from})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("state: versions in store %s partition %d: %w", p.Store, p.Number, err)
	}
	LinkVersions(vs)
	return vs, nil
}

// LinkVersions sets ValidTo and Latest of versions in ascending validFrom.
func LinkVersions(vs []Version) {
	for i := range vs {
		vs[i].ValidTo, vs[i].Latest = math.MaxInt64, i == len(vs)-1
		if i+1 < len(vs) {
			vs[i].ValidTo = vs[i+1].ValidFrom
		}
	}
}

// GetVersion is VersionedKeyValueStore.get(key) (latest) or get(key,
// asOf) over the partition as Pebble holds it, for a store of history
// retention ms.
func (p *Partition) GetVersion(key []byte, latest bool, asOf, retention int64) (Version, bool, error) {
	vs, err := p.Versions(key)
	if err != nil {
		return Version{}, false, err
	}
	_, st, err := p.Get(StreamTimeKey)
	if err != nil {
		return Version{}, false, err
	}
	v, ok := FindVersion(vs, latest, asOf, st, retention)
	return v, ok, nil
}
