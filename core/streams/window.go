package streams

import (
	"strconv"
	"time"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// Windowed aggregations (docs/design/windows.md): WindowedBy on a grouped
// stream, Count / Reduce / Aggregate per key and window into a table whose
// keys are windowed (serde "windowed(<key serde>,<size ms>)" or
// "session-windowed(<key serde>)", Kafka Streams' windowed serializers'
// bytes), and Suppress until a window closes.

// Windows are the windows of WindowedBy: Kafka Streams' TimeWindows,
// SlidingWindows and SessionWindows. Values are checked by WindowedBy,
// which names the field and value it refuses.
type Windows struct {
	w topology.Windows
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// TimeWindowsOfSizeWithNoGrace is TimeWindows.ofSizeWithNoGrace: tumbling
// windows of size, aligned to the epoch, that accept no record after their
// end. AdvanceBy makes them hopping.
func TimeWindowsOfSizeWithNoGrace(size time.Duration) Windows {
	return Windows{topology.Windows{Kind: topology.TimeWindows, Size: ms(size), Advance: ms(size)}}
}

// TimeWindowsOfSizeAndGrace is TimeWindows.ofSizeAndGrace: tumbling windows
// of size that accept records up to grace after their end (in stream time).
func TimeWindowsOfSizeAndGrace(size, grace time.Duration) Windows {
	return Windows{topology.Windows{Kind: topology.TimeWindows, Size: ms(size), Advance: ms(size), Grace: ms(grace)}}
}

// AdvanceBy makes time windows hopping: a window starts every advance (at
// most the size). Other windows are returned as they are.
func (w Windows) AdvanceBy(advance time.Duration) Windows {
	if w.w.Kind == topology.TimeWindows {
		w.w.Advance = ms(advance)
	}
	return w
}

// SlidingWindowsOfTimeDifferenceWithNoGrace is
// SlidingWindows.ofTimeDifferenceWithNoGrace.
func SlidingWindowsOfTimeDifferenceWithNoGrace(timeDifference time.Duration) Windows {
	return Windows{topology.Windows{Kind: topology.SlidingWindows, Size: ms(timeDifference)}}
}

// SlidingWindowsOfTimeDifferenceAndGrace is
// SlidingWindows.ofTimeDifferenceAndGrace.
func SlidingWindowsOfTimeDifferenceAndGrace(timeDifference, grace time.Duration) Windows {
	return Windows{topology.Windows{Kind: topology.SlidingWindows, Size: ms(timeDifference), Grace: ms(grace)}}
}

// SessionWindowsOfInactivityGapWithNoGrace is
// SessionWindows.ofInactivityGapWithNoGrace.
func SessionWindowsOfInactivityGapWithNoGrace(gap time.Duration) Windows {
	return Windows{topology.Windows{Kind: topology.SessionWindows, Size: ms(gap)}}
}

// SessionWindowsOfInactivityGapAndGrace is
// SessionWindows.ofInactivityGapAndGrace.
func SessionWindowsOfInactivityGapAndGrace(gap, grace time.Duration) Windows {
	return Windows{topology.Windows{Kind: topology.SessionWindows, Size: ms(gap), Grace: ms(grace)}}
}

// WindowedStream is a grouped stream windowed by WindowedBy
// (TimeWindowedKStream, or SessionWindowedKStream for session windows).
type WindowedStream struct {
	b *Builder
	h *topology.Handle
}

// KeySerde is the serde of the grouped records' keys (the inner keys).
func (w *WindowedStream) KeySerde() string { return w.h.KeySerde }

// ValueSerde is the serde of the grouped records' values.
func (w *WindowedStream) ValueSerde() string { return w.h.ValueSerde }

// WindowedBy windows the grouped stream (KGroupedStream.windowedBy).
func (g *GroupedStream) WindowedBy(w Windows) (*WindowedStream, error) {
	h, err := g.b.b.WindowedBy(g.h.ID, w.w)
	if err != nil {
		return nil, err
	}
	return &WindowedStream{b: g.b, h: h}, nil
}

// optRetention is Retention's option kind (numbered apart from builder.go's).
const optRetention optKind = 100

func init() { optNames[optRetention] = "Retention" }

// Retention is Materialized.withRetention for a windowed aggregation's
// store: how long a window is kept after its start (at least size + grace,
// the default).
func Retention(d time.Duration) Option {
	return Option{kind: optRetention, value: strconv.FormatInt(ms(d), 10)}
}

// windowed parses a windowed aggregation's options: those of an
// aggregation, and Retention.
func windowed(op string, opts []Option) (options, error) {
	o, err := parse(op, opts, optName, optStore, optStoreSerdes, optChangelogConfig, optRetention)
	if err != nil {
		return o, err
	}
	for _, opt := range opts {
		if opt.kind == optRetention {
			if o.mat == nil {
				o.mat = &topology.Materialized{}
			}
			o.mat.Retention, _ = strconv.ParseInt(opt.value, 10, 64)
		}
	}
	return o, nil
}

// Count counts the records per key and window into a table of longs.
// Options: Store, StoreSerdes, ChangelogConfig, Retention, Name.
func (w *WindowedStream) Count(opts ...Option) (*Table, error) {
	o, err := windowed("Count", opts)
	if err != nil {
		return nil, err
	}
	return w.b.table(w.b.b.Count(w.h.ID, o.mat, o.name))
}

// Reduce folds each key's values per window with fn. Options as for Count.
func (w *WindowedStream) Reduce(fn ReducerFunc, opts ...Option) (*Table, error) {
	o, err := windowed("Reduce", opts)
	if err != nil {
		return nil, err
	}
	return w.b.table(w.b.b.Reduce(w.h.ID, native("reduce", fn), o.mat, o.name))
}

// ReduceBuiltin is Reduce with a built-in reducer that runs in the engine.
func (w *WindowedStream) ReduceBuiltin(r Builtin, opts ...Option) (*Table, error) {
	o, err := windowed("ReduceBuiltin", opts)
	if err != nil {
		return nil, err
	}
	return w.b.table(w.b.b.Reduce(w.h.ID, topology.Function{Builtin: string(r), Name: string(r)}, o.mat, o.name))
}

// Aggregate folds each key's values per window into an aggregate that init
// starts. Session windows need AggregateSessions (a merger). Options as
// for Count.
func (w *WindowedStream) Aggregate(init InitializerFunc, fn AggregatorFunc, opts ...Option) (*Table, error) {
	o, err := windowed("Aggregate", opts)
	if err != nil {
		return nil, err
	}
	return w.b.table(w.b.b.Aggregate(w.h.ID, native("initializer", init), native("aggregate", fn), o.mat, o.name))
}

// AggregateSessions is a session-windowed stream's aggregate: merger(key,
// aggregate1, aggregate2) merges two sessions a record bridges
// (SessionWindowedKStream.aggregate). A nil merger is refused.
func (w *WindowedStream) AggregateSessions(init InitializerFunc, fn, merger AggregatorFunc, opts ...Option) (*Table, error) {
	o, err := windowed("AggregateSessions", opts)
	if err != nil {
		return nil, err
	}
	if merger == nil {
		return w.b.table(w.b.b.Aggregate(w.h.ID, native("initializer", init), native("aggregate", fn), o.mat, o.name))
	}
	return w.b.table(w.b.b.AggregateSessions(w.h.ID, native("initializer", init), native("aggregate", fn), native("merger", merger), o.mat, o.name))
}

// SuppressUntilWindowCloses is
// KTable.suppress(Suppressed.untilWindowCloses(unbounded())) on a windowed
// aggregation's table: each window's final result, once, when its task's
// stream time passes the window's end plus grace. Option: Name
// (Suppressed.withName; its store is "<name>-store").
func (t *Table) SuppressUntilWindowCloses(opts ...Option) (*Table, error) {
	o, err := parse("SuppressUntilWindowCloses", opts, optName)
	if err != nil {
		return nil, err
	}
	return t.b.table(t.b.b.Suppress(t.h.ID, o.name))
}

// DroppedRecords counts the records the application's tasks dropped since
// it started (Kafka Streams' dropped-records-total): records too late for a
// window, records an aggregation skips for a null key or value.
func (a *App) DroppedRecords() int64 { return a.rt.DroppedRecords() }
