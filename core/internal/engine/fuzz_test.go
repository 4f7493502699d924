package engine

import (
	"bytes"
	"testing"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// FuzzChangelog: what the engine reads back from Kafka when it restores a
// store or consumes a grouped table's repartition topic (changelog keys of
// window, session, sliding and suppression stores; Kafka Streams' change
// encoding) decodes or fails with an error, never panics, and what decodes
// encodes back to the same store key.
func FuzzChangelog(f *testing.F) {
	f.Add(windowCodec{}.toLog(windowKey(1000, []byte("k"))), false)
	f.Add(sessionCodec{}.toLog(sessionKey([]byte("k"), session{5, 9})), false)
	f.Add(slidingCodec{}.toLog(slidingKey([]byte("k"), 7)), false)
	f.Add(metaLogKey, false)
	f.Add(storeTimeLogKey, false)
	f.Add(encodeChange([]byte("new"), []byte("old")), true)
	f.Add(encodeChange(nil, []byte("old")), true)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 2}, true)
	codecs := map[string]keyCodec{
		"window": windowCodec{}, "session": sessionCodec{}, "sliding": slidingCodec{},
		"suppress(time)":    suppressCodec{w: &topology.Windows{Kind: topology.TimeWindows, Size: 10, Advance: 10}},
		"suppress(session)": suppressCodec{w: &topology.Windows{Kind: topology.SessionWindows, Size: 10}},
	}
	f.Fuzz(func(t *testing.T, b []byte, change bool) {
		if change {
			nv, ov, err := decodeChange(b)
			if err != nil {
				return
			}
			if nv == nil && ov == nil {
				t.Fatalf("change %x decodes to neither value", b)
			}
			if again := encodeChange(nv, ov); !bytes.Equal(again, b) && !(nv != nil && ov != nil) {
				t.Fatalf("change %x decodes to %q %q, which encode to %x", b, nv, ov, again)
			}
			return
		}
		for name, c := range codecs {
			sk, err := c.fromLog(b)
			if err != nil {
				continue
			}
			lk := c.toLog(sk)
			if again, err := c.fromLog(lk); err != nil || !bytes.Equal(again, sk) {
				t.Fatalf("%s: log key %x -> store key %x -> log key %x -> %x, %v", name, b, sk, lk, again, err)
			}
		}
	})
}
