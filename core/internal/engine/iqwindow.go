package engine

import (
	"bytes"
	"encoding/binary"
	"math"

	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// FetchWindows calls collect for the windows of the window store st in
// partition p that start from from to to (inclusive), of key or, when key
// is nil, of every key, in time order (WindowStore.fetch / fetchAll), each
// as start(8) ‖ key, its value and timestamp. Windows retention no longer keeps are left out even before they are
// deleted: as in Kafka Streams, a fetch starts no earlier than stream time
// - retention + 1.
func FetchWindows(p *state.Partition, st *topology.Store, key []byte, from, to int64, collect func(k, v []byte, ts int64) error) error {
	streamTime, err := StreamTime(p)
	if err != nil {
		return err
	}
	from = max(from, streamTime-st.Retention+1, 0)
	if to < from {
		return nil
	}
	if st.Windows.Kind == topology.SlidingWindows {
		// Keyed first: len(key) ‖ key ‖ start; handed on as start ‖ key.
		var lower, upper []byte
		if key != nil {
			lower = append(binary.BigEndian.AppendUint32(nil, uint32(len(key))), key...)
			upper = state.PrefixEnd(lower)
		}
		return p.ScanRange(lower, upper, func(k, v []byte, ts int64) error {
			if len(k) < 12 || k[0] == 0xff {
				return nil
			}
			n := int(binary.BigEndian.Uint32(k))
			if len(k) != 4+n+8 || key != nil && !bytes.Equal(k[4:4+n], key) {
				return nil
			}
			start := int64(binary.BigEndian.Uint64(k[4+n:]))
			if start < from || start > to {
				return nil
			}
			return collect(append(binary.BigEndian.AppendUint64(nil, uint64(start)), k[4:4+n]...), v, ts)
		})
	}
	lower := binary.BigEndian.AppendUint64(nil, uint64(from))
	var upper []byte
	if to < math.MaxInt64 {
		upper = binary.BigEndian.AppendUint64(nil, uint64(to)+1)
	}
	return p.ScanRange(lower, upper, func(k, v []byte, ts int64) error {
		if len(k) < 8 || k[0] == 0xff { // the watermark row: no window starts past 2^63
			return nil
		}
		if key != nil && !bytes.Equal(k[8:], key) {
			return nil
		}
		return collect(k, v, ts)
	})
}
