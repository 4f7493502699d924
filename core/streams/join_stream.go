package streams

import (
	"time"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// JoinWindows are a stream-stream join's windows: a record at ts joins the
// other stream's records of its key at [ts - before, ts + after]; records
// later than stream time - (before + after + grace) are dropped (KIP-633).
// Durations are whole milliseconds, as in Kafka Streams.
type JoinWindows struct{ w topology.JoinWindows }

// JoinTimeDifference is JoinWindows.ofTimeDifferenceAndGrace: before and
// after are both timeDifference.
func JoinTimeDifference(timeDifference, grace time.Duration) JoinWindows {
	d := timeDifference.Milliseconds()
	return JoinWindows{topology.JoinWindows{Before: d, After: d, Grace: grace.Milliseconds()}}
}

// Before returns the windows with before set (JoinWindows.before): a
// record joins the other stream's records up to d earlier.
func (w JoinWindows) Before(d time.Duration) JoinWindows {
	w.w.Before = d.Milliseconds()
	return w
}

// After returns the windows with after set (JoinWindows.after): a record
// joins the other stream's records up to d later.
func (w JoinWindows) After(d time.Duration) JoinWindows {
	w.w.After = d.Milliseconds()
	return w
}

// JoinStream joins each record with the other stream's records of its key
// within the windows (KStream.join(KStream, ValueJoiner, JoinWindows,
// StreamJoined)): joiner(this value, other value), stamped with the later
// timestamp. Both sides are kept in window stores; the streams must be
// co-partitioned (a key-changed one is repartitioned first). Options:
// ValueSerde (of the joined values; default this stream's), Name
// (StreamJoined.withName), Store (StreamJoined.withStoreName).
func (s *Stream) JoinStream(other *Stream, joiner ValueJoinerFunc, w JoinWindows, opts ...Option) (*Stream, error) {
	return s.joinStream("JoinStream", other, joiner, w, topology.JoinInner, opts)
}

// LeftJoinStream is JoinStream that keeps this stream's records that join
// nothing: each is joined with a nil other value once its window closed
// (KStream.leftJoin(KStream, ...); since Kafka 3.1 no earlier, spurious
// result).
func (s *Stream) LeftJoinStream(other *Stream, joiner ValueJoinerFunc, w JoinWindows, opts ...Option) (*Stream, error) {
	return s.joinStream("LeftJoinStream", other, joiner, w, topology.JoinLeft, opts)
}

// OuterJoinStream is LeftJoinStream for both sides: the other stream's
// records that join nothing are joined with a nil value of this stream
// (KStream.outerJoin(KStream, ...)).
func (s *Stream) OuterJoinStream(other *Stream, joiner ValueJoinerFunc, w JoinWindows, opts ...Option) (*Stream, error) {
	return s.joinStream("OuterJoinStream", other, joiner, w, topology.JoinOuter, opts)
}

func (s *Stream) joinStream(op string, other *Stream, joiner ValueJoinerFunc, w JoinWindows, kind topology.JoinKind, opts []Option) (*Stream, error) {
	o, err := parse(op, opts, optName, optValueSerde, optStore)
	if err != nil {
		return nil, err
	}
	store := ""
	if o.mat != nil {
		store = o.mat.StoreName
	}
	return s.b.stream(s.b.b.StreamJoin(s.h.ID, other.h.ID, joinerFunction("join", joiner), topology.StreamJoinOptions{
		Kind: kind, Windows: &w.w, ValueSerde: o.valueSerde, Name: o.name, StoreName: store,
	}))
}
