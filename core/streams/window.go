package streams

import (
	"fmt"
	"time"

	"github.com/polystreams/polystreams/core/internal/topology"
)

// Windows are the windows of a windowed aggregation (GroupedStream.WindowedBy).
// Durations are whole milliseconds, as in Kafka Streams.
type Windows struct{ w topology.Windows }

// TumblingWindows are fixed windows of size, aligned to the epoch
// (TimeWindows.ofSizeAndGrace); a record up to grace after a window's end
// still counts in it.
func TumblingWindows(size, grace time.Duration) Windows {
	return Windows{topology.Windows{Kind: topology.TimeWindows, Size: size.Milliseconds(), Advance: size.Milliseconds(), Grace: grace.Milliseconds()}}
}

// HoppingWindows are windows of size starting every advance
// (TimeWindows.ofSizeAndGrace(size, grace).advanceBy(advance)).
func HoppingWindows(size, advance, grace time.Duration) Windows {
	return Windows{topology.Windows{Kind: topology.TimeWindows, Size: size.Milliseconds(), Advance: advance.Milliseconds(), Grace: grace.Milliseconds()}}
}

// SlidingWindows are windows of timeDifference, both ends inclusive, made
// as records arrive (SlidingWindows.ofTimeDifferenceAndGrace).
func SlidingWindows(timeDifference, grace time.Duration) Windows {
	return Windows{topology.Windows{Kind: topology.SlidingWindows, Size: timeDifference.Milliseconds(), Grace: grace.Milliseconds()}}
}

// SessionWindows put a key's records at most gap apart into one session
// (SessionWindows.ofInactivityGapAndGrace).
func SessionWindows(gap, grace time.Duration) Windows {
	return Windows{topology.Windows{Kind: topology.SessionWindows, Size: gap.Milliseconds(), Grace: grace.Milliseconds()}}
}

// Retention is how long a window store keeps a window after its start
// (Materialized.withRetention); at least the window size plus grace, the
// default.
func Retention(d time.Duration) Option { return Option{kind: optRetention, ms: d.Milliseconds()} }

// WindowedStream is a grouped stream with windows (TimeWindowedKStream,
// SessionWindowedKStream): its aggregations keep one aggregate per key and
// window, in a table whose keys are windowed (serde
// "windowed(<key serde>,<size>)" or "session-windowed(<key serde>)",
// encoded as Kafka Streams' windowed serdes encode them).
type WindowedStream struct {
	b *Builder
	h *topology.Handle
}

// WindowedBy windows the grouped stream (KGroupedStream.windowedBy).
func (g *GroupedStream) WindowedBy(w Windows) (*WindowedStream, error) {
	h, err := g.b.b.WindowedBy(g.h.ID, w.w)
	if err != nil {
		return nil, err
	}
	return &WindowedStream{b: g.b, h: h}, nil
}

// EmitStrategy is when a windowed aggregation forwards its results
// (Kafka Streams' EmitStrategy, KIP-825).
type EmitStrategy int

const (
	// OnWindowUpdate forwards every update of a window (the default;
	// EmitStrategy.onWindowUpdate()).
	OnWindowUpdate EmitStrategy = iota
	// OnWindowClose forwards only each window's final result, once, when
	// stream time passes the window's end plus grace (for session windows,
	// end + inactivity gap + grace); EmitStrategy.onWindowClose(). The last
	// close time emitted is kept with the store, so a restart neither emits
	// a window again nor loses one.
	OnWindowClose
)

// EmitStrategy sets when the windowed stream's aggregations forward their
// results (TimeWindowedKStream.emitStrategy /
// SessionWindowedKStream.emitStrategy). It adds no node.
func (w *WindowedStream) EmitStrategy(s EmitStrategy) (*WindowedStream, error) {
	if s != OnWindowUpdate && s != OnWindowClose {
		return nil, fmt.Errorf("streams: EmitStrategy(%d): want OnWindowUpdate or OnWindowClose: %w", s, ErrInvalid)
	}
	h, err := w.b.b.EmitStrategy(w.h.ID, s == OnWindowClose)
	if err != nil {
		return nil, err
	}
	return &WindowedStream{b: w.b, h: h}, nil
}

// Count counts each key's records per window. Options: Store, StoreSerdes,
// Retention, ChangelogConfig, Name.
func (w *WindowedStream) Count(opts ...Option) (*Table, error) {
	o, err := parse("Count", opts, optName, optStore, optStoreSerdes, optChangelogConfig, optRetention)
	if err != nil {
		return nil, err
	}
	return w.b.table(w.b.b.Count(w.h.ID, o.mat, o.name))
}

// Reduce folds each key's values per window with fn. Options as Count.
func (w *WindowedStream) Reduce(fn ReducerFunc, opts ...Option) (*Table, error) {
	o, err := parse("Reduce", opts, optName, optStore, optStoreSerdes, optChangelogConfig, optRetention)
	if err != nil {
		return nil, err
	}
	return w.b.table(w.b.b.Reduce(w.h.ID, native("reduce", fn), o.mat, o.name))
}

// ReduceBuiltin is Reduce with a built-in reducer that runs in the engine.
func (w *WindowedStream) ReduceBuiltin(r Builtin, opts ...Option) (*Table, error) {
	o, err := parse("ReduceBuiltin", opts, optName, optStore, optStoreSerdes, optChangelogConfig, optRetention)
	if err != nil {
		return nil, err
	}
	return w.b.table(w.b.b.Reduce(w.h.ID, topology.Function{Builtin: string(r), Name: string(r)}, o.mat, o.name))
}

// Aggregate folds each key's values per window into an aggregate that init
// starts. Session windows need AggregateSessions. Options as Count.
func (w *WindowedStream) Aggregate(init InitializerFunc, fn AggregatorFunc, opts ...Option) (*Table, error) {
	o, err := parse("Aggregate", opts, optName, optStore, optStoreSerdes, optChangelogConfig, optRetention)
	if err != nil {
		return nil, err
	}
	return w.b.table(w.b.b.Aggregate(w.h.ID, native("initializer", init), native("aggregate", fn), o.mat, o.name))
}

// AggregateSessions is Aggregate over session windows: merger combines the
// aggregates of two sessions a record bridges (Merger.apply).
func (w *WindowedStream) AggregateSessions(init InitializerFunc, fn, merger AggregatorFunc, opts ...Option) (*Table, error) {
	o, err := parse("AggregateSessions", opts, optName, optStore, optStoreSerdes, optChangelogConfig, optRetention)
	if err != nil {
		return nil, err
	}
	return w.b.table(w.b.b.AggregateSessions(w.h.ID, native("initializer", init), native("aggregate", fn), native("merger", merger), o.mat, o.name))
}

// Suppress holds the table's updates back and forwards each key's latest
// one later, as s says (KTable.suppress): UntilWindowCloses, on a windowed
// aggregation's table, forwards each window's final result once stream
// time passes its end plus grace; UntilTimeLimit forwards a key's latest
// update once stream time reaches the time of its first held update plus
// the limit. Stream time is the largest timestamp the suppression has
// received. Options: Name (the node's; its store is "<name>-store").
func (t *Table) Suppress(s Suppressed, opts ...Option) (*Table, error) {
	o, err := parse("Suppress", opts, optName)
	if err != nil {
		return nil, err
	}
	if s.err != nil {
		return nil, s.err
	}
	return t.b.table(t.b.b.Suppress(t.h.ID, o.name, s.s))
}

// Suppressed is what Table.Suppress holds back and how long (Kafka
// Streams' Suppressed); make one with UntilWindowCloses or UntilTimeLimit.
type Suppressed struct {
	s   topology.Suppression
	err error
}

// UntilWindowCloses is Suppressed.untilWindowCloses: each window's final
// result, once. Its buffer takes Unbounded(), or bounds with
// ShutDownWhenFull (a window emitted early would not be final; Suppress
// refuses EmitEarlyWhenFull).
func UntilWindowCloses(buffer BufferConfig) Suppressed {
	s := topology.UntilWindowCloses
	buffer.apply(&s)
	return Suppressed{s: s}
}

// UntilTimeLimit is Suppressed.untilTimeLimit: a key's updates are held
// until stream time reaches the time of its first held update plus limit
// (at least 0; milliseconds count), then its latest (a tombstone too) is
// forwarded.
func UntilTimeLimit(limit time.Duration, buffer BufferConfig) Suppressed {
	s := topology.UntilWindowCloses
	s.TimeLimit = limit.Milliseconds()
	buffer.apply(&s)
	if limit < 0 {
		return Suppressed{err: fmt.Errorf("streams: UntilTimeLimit of %s: want at least 0: %w", limit, ErrInvalid)}
	}
	return Suppressed{s: s}
}

// BufferConfig bounds a suppression's buffer (Suppressed.BufferConfig):
// the records (keys) and bytes it holds, counted as Kafka Streams counts
// them (key, values, the record's topic and headers), and what it does when
// an update would pass a bound: emit its oldest early (EmitEarlyWhenFull,
// MaxRecords' and MaxBytes' default) or fail the record (ShutDownWhenFull;
// the processing error policy applies). The zero BufferConfig is
// Unbounded().
type BufferConfig struct {
	records, bytes           int64
	hasRecords, hasBytes     bool
	shutDown, shutDownChosen bool
}

// Unbounded is BufferConfig.unbounded(): no bound (memory is the limit).
func Unbounded() BufferConfig { return BufferConfig{shutDown: true, shutDownChosen: true} }

// MaxRecords is BufferConfig.maxRecords(n): at most n keys, emitting early
// when full.
func MaxRecords(n int64) BufferConfig { return BufferConfig{}.WithMaxRecords(n) }

// MaxBytes is BufferConfig.maxBytes(n): at most n bytes, emitting early
// when full.
func MaxBytes(n int64) BufferConfig { return BufferConfig{}.WithMaxBytes(n) }

// WithMaxRecords bounds the buffer to n keys as well.
func (b BufferConfig) WithMaxRecords(n int64) BufferConfig {
	b.records, b.hasRecords = n, true
	return b
}

// WithMaxBytes bounds the buffer to n bytes as well.
func (b BufferConfig) WithMaxBytes(n int64) BufferConfig {
	b.bytes, b.hasBytes = n, true
	return b
}

// EmitEarlyWhenFull forwards the oldest held updates until the buffer fits.
func (b BufferConfig) EmitEarlyWhenFull() BufferConfig {
	b.shutDown, b.shutDownChosen = false, true
	return b
}

// ShutDownWhenFull fails the record that overfills the buffer, naming the
// suppression and its store.
func (b BufferConfig) ShutDownWhenFull() BufferConfig {
	b.shutDown, b.shutDownChosen = true, true
	return b
}

func (b BufferConfig) apply(s *topology.Suppression) {
	if b.hasRecords {
		s.MaxRecords = b.records
	}
	if b.hasBytes {
		s.MaxBytes = b.bytes
	}
	s.ShutDown = b.shutDown
	if !b.hasRecords && !b.hasBytes && !b.shutDownChosen {
		s.ShutDown = true // unbounded: never full
	}
}

// DroppedRecords counts the records the application's tasks dropped since
// it started (Kafka Streams' dropped-records-total): records too late for a
// window, records an aggregation skips for a null key or value.
func (a *App) DroppedRecords() int64 { return a.rt.DroppedRecords() }

// KeySerde is the serde of the grouped records' keys (the windows' inner keys).
func (w *WindowedStream) KeySerde() string { return w.h.KeySerde }

// ValueSerde is the serde of the grouped records' values.
func (w *WindowedStream) ValueSerde() string { return w.h.ValueSerde }
