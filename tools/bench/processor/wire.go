package main

// The wire: protobuf columns written and read with protowire, field for
// field as the sketch in docs/design/processor.md.

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of the sketch in docs/design/processor.md.
const (
	// Bundle (existing columns)
	fKeyLengths   = 7
	fKeys         = 8
	fValueLengths = 9
	fValues       = 10
	fOffsets      = 13
	fTimestamps   = 14
	// Bundle.stores: StoreView
	fStores = 30
	// StoreView
	svName         = 1
	svKeyLengths   = 2
	svKeys         = 3
	svValueLengths = 4
	svValues       = 5
	svTimestamps   = 6
	// BundleResult (existing, stateless)
	rOutputCounts = 2
	rValueLengths = 5
	rValues       = 6
	// BundleResult ops
	rOpCounts     = 8
	rOpKinds      = 9
	rOpTargets    = 10
	rOpKeyLengths = 11
	rOpKeys       = 12
	rOpValLengths = 13
	rOpValues     = 14
	rOpTimestamps = 15
)

const (
	opPut     = 1
	opDelete  = 2
	opForward = 3
)

func appendLens(b []byte, num protowire.Number, lens []int32) []byte {
	if len(lens) == 0 {
		return b
	}
	var p []byte
	for _, l := range lens {
		p = protowire.AppendVarint(p, protowire.EncodeZigZag(int64(l)))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, p)
}

func appendInts(b []byte, num protowire.Number, xs []int64) []byte {
	if len(xs) == 0 {
		return b
	}
	var p []byte
	for _, x := range xs {
		p = protowire.AppendVarint(p, uint64(x))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, p)
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// column is a columnar byte column being built.
type column struct {
	lens []int32
	data []byte
}

func (c *column) add(v []byte) {
	if v == nil {
		c.lens = append(c.lens, -1)
		return
	}
	c.lens = append(c.lens, int32(len(v)))
	c.data = append(c.data, v...)
}

// encodeRecords writes the record columns of a bundle.
func encodeRecords(b []byte, recs []rec) []byte {
	var k, v column
	offs := make([]int64, len(recs))
	tss := make([]int64, len(recs))
	for i, r := range recs {
		k.add(r.key)
		v.add(r.value)
		offs[i], tss[i] = r.offset, r.ts
	}
	b = appendLens(b, fKeyLengths, k.lens)
	b = appendBytes(b, fKeys, k.data)
	b = appendLens(b, fValueLengths, v.lens)
	b = appendBytes(b, fValues, v.data)
	b = appendInts(b, fOffsets, offs)
	return appendInts(b, fTimestamps, tss)
}

// encodePrefetch writes a processor bundle: the records and one StoreView
// with the current entry of each distinct key (value length -1: absent).
func (e *engine) encodePrefetch(recs []rec) ([]byte, error) {
	b := encodeRecords(make([]byte, 0, len(recs)*160), recs)
	seen := make(map[string]struct{}, len(recs))
	var k, v column
	var tss []int64
	for _, r := range recs {
		if _, ok := seen[string(r.key)]; ok {
			continue
		}
		seen[string(r.key)] = struct{}{}
		val, ts, err := e.get(r.key)
		if err != nil {
			return nil, err
		}
		k.add(r.key)
		v.add(val)
		tss = append(tss, ts)
	}
	var sv []byte
	sv = appendBytes(sv, svName, []byte("customers"))
	sv = appendLens(sv, svKeyLengths, k.lens)
	sv = appendBytes(sv, svKeys, k.data)
	sv = appendLens(sv, svValueLengths, v.lens)
	sv = appendBytes(sv, svValues, v.data)
	sv = appendInts(sv, svTimestamps, tss)
	b = protowire.AppendTag(b, fStores, protowire.BytesType)
	return protowire.AppendBytes(b, sv), nil
}

// decoded is a bundle or answer as its reader sees it: the columns, as
// slices of the message (no copy).
type decoded struct {
	lens  map[protowire.Number][]int32
	ints  map[protowire.Number][]int64
	bytes map[protowire.Number][]byte
	views [][]byte
}

func decode(msg []byte, packedLens, packedInts []protowire.Number) (*decoded, error) {
	d := &decoded{lens: map[protowire.Number][]int32{}, ints: map[protowire.Number][]int64{}, bytes: map[protowire.Number][]byte{}}
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		msg = msg[n:]
		if typ != protowire.BytesType {
			return nil, fmt.Errorf("field %d: wire type %d", num, typ)
		}
		v, n := protowire.ConsumeBytes(msg)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		msg = msg[n:]
		switch {
		case slices.Contains(packedLens, num):
			xs := make([]int32, 0, len(v))
			for len(v) > 0 {
				x, n := protowire.ConsumeVarint(v)
				if n < 0 {
					return nil, protowire.ParseError(n)
				}
				xs = append(xs, int32(protowire.DecodeZigZag(x)))
				v = v[n:]
			}
			d.lens[num] = xs
		case slices.Contains(packedInts, num):
			xs := make([]int64, 0, len(v))
			for len(v) > 0 {
				x, n := protowire.ConsumeVarint(v)
				if n < 0 {
					return nil, protowire.ParseError(n)
				}
				xs = append(xs, int64(x))
				v = v[n:]
			}
			d.ints[num] = xs
		case num == fStores:
			d.views = append(d.views, v)
		default:
			d.bytes[num] = v
		}
	}
	return d, nil
}

// split cuts a column into its values (nil for -1).
func split(lens []int32, data []byte) ([][]byte, error) {
	out := make([][]byte, len(lens))
	o := 0
	for i, l := range lens {
		if l < 0 {
			continue
		}
		if o+int(l) > len(data) {
			return nil, fmt.Errorf("column of %d bytes, lengths need more", len(data))
		}
		out[i] = data[o : o+int(l) : o+int(l)]
		o += int(l)
	}
	if o != len(data) {
		return nil, fmt.Errorf("column holds %d bytes more than its lengths", len(data)-o)
	}
	return out, nil
}
