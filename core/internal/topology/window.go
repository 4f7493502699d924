package topology

import (
	"fmt"
	"math"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// Windowed aggregations (docs/design/windows.md): windowedBy on a grouped
// stream, count / reduce / aggregate per key and window, and suppress until
// a window closes. Names are Kafka Streams' (TimeWindowedKStreamImpl,
// SessionWindowedKStreamImpl, KTableImpl.suppress).

const prefixSuppress = "KTABLE-SUPPRESS-"

// WindowKind is the kind of windows of a windowed stream.
type WindowKind int

const (
	// TimeWindows: fixed size, aligned to the epoch, advancing by Advance
	// (tumbling when Advance == Size).
	TimeWindows WindowKind = iota + 1
	// SlidingWindows: windows of Size (the time difference), both ends
	// inclusive, made as records arrive.
	SlidingWindows
	// SessionWindows: a key's records at most Size (the inactivity gap)
	// apart share a session.
	SessionWindows
)

func (k WindowKind) String() string {
	switch k {
	case TimeWindows:
		return "time windows"
	case SlidingWindows:
		return "sliding windows"
	case SessionWindows:
		return "session windows"
	}
	return "unknown windows"
}

// Windows are the windows of a windowed stream, in milliseconds.
type Windows struct {
	Kind WindowKind
	// Size: time windows' size, sliding windows' time difference, session
	// windows' inactivity gap.
	Size int64
	// Advance: time windows only (Size for tumbling).
	Advance int64
	Grace   int64
	// EmitOnClose is EmitStrategy.onWindowClose (KIP-825): the aggregation
	// forwards each window's final result once, when the window closes,
	// and no update before.
	EmitOnClose bool
}

// CloseGrace is how far stream time must pass a window's end before the
// window closes: grace, and for session windows also the inactivity gap
// (KStreamSessionWindowAggregate's windowCloseTime).
func (w *Windows) CloseGrace() int64 {
	if w.Kind == SessionWindows {
		return w.Grace + w.Size
	}
	return w.Grace
}

// KeySize is the size of the windows as Kafka's TimeWindowedDeserializer
// needs it to compute a window's end from its start (sliding windows: the
// time difference); 0 for session windows, whose keys carry their end.
func (w *Windows) KeySize() int64 {
	if w.Kind == SessionWindows {
		return 0
	}
	return w.Size
}

// KeySerde is the serde of the keys of a windowed aggregation over keys of
// serde inner.
func (w *Windows) KeySerde(inner string) string {
	if w.Kind == SessionWindows {
		return serde.SessionWindowed(inner)
	}
	return serde.TimeWindowed(inner, w.Size)
}

// MaxWindowsPerRecord bounds the time windows one record falls into
// (size_ms / advance_ms, rounded up): a hopping window that passes it is
// refused at Build. Kafka Streams has no bound (TimeWindows.windowsFor
// makes every window of a record, so size 10^12 ms advancing by 1 ms
// exhausts any heap at the first record); here one application's window
// definition must not take the memory of the engine that others share.
// 10,000 allows a day advancing every 10 s, or a week every 2 minutes.
const MaxWindowsPerRecord = 10_000

// PerRecord is how many time windows a record falls into: size_ms /
// advance_ms rounded up (1 for sliding and session windows, which are made
// per record rather than per window).
func (w *Windows) PerRecord() int64 {
	if w == nil || w.Kind != TimeWindows || w.Advance <= 0 || w.Size <= 0 {
		return 1
	}
	return (w.Size-1)/w.Advance + 1
}

// For returns the starts of the time windows a record at ts falls into, in
// ascending order (TimeWindows.windowsFor): every window with
// start <= ts < start + size, starts aligned to the epoch by advance.
//
// Windows whose end would pass math.MaxInt64 are left out (Kafka Streams
// refuses to make them: TimeWindow's end must follow its start), so a
// timestamp near the end of time cannot make the loop overflow and run
// forever. (franz-go hands the engine timestamps through time.Time's
// nanoseconds, which keeps them within the year 2262, so today this guards
// callers of For other than the engine's consumer.)
func (w *Windows) For(ts int64, starts []int64) []int64 {
	start := max(0, ts-w.Size+w.Advance) / w.Advance * w.Advance
	last := min(ts, math.MaxInt64-w.Size)
	for ; start <= last; start += w.Advance {
		starts = append(starts, start)
		if start > last-w.Advance {
			break
		}
	}
	return starts
}

// WindowedBy adds KGroupedStream.windowedBy, or CogroupedKStream.windowedBy
// when input is a cogrouped stream. It adds no node: the windows shape the
// aggregation that follows.
func (b *Builder) WindowedBy(input uint64, w Windows) (*Handle, error) {
	c := b.begin("windowed_by")
	in := b.handles[input]
	if in == nil || in.handle.Kind != KindCogroupedStream {
		in = c.input(input, KindGroupedStream)
	}
	kind := KindWindowedStream
	switch w.Kind {
	case TimeWindows:
		if w.Size <= 0 {
			c.invalid("windowed_by: time windows size_ms %d: the size must be positive", w.Size)
		}
		if w.Advance == 0 {
			w.Advance = w.Size
		}
		if w.Advance <= 0 || (w.Size > 0 && w.Advance > w.Size) {
			c.invalid("windowed_by: time windows advance_ms %d: the advance must be positive and at most size_ms %d", w.Advance, w.Size)
		} else if n := w.PerRecord(); n > MaxWindowsPerRecord {
			c.invalid("windowed_by: time windows of size_ms %d advancing by advance_ms %d put each record in %d windows; at most %d (advance by at least %d ms)",
				w.Size, w.Advance, n, MaxWindowsPerRecord, (w.Size-1)/MaxWindowsPerRecord+1)
		}
	case SlidingWindows:
		if w.Size <= 0 {
			c.invalid("windowed_by: sliding windows time_difference_ms %d: the time difference must be positive", w.Size)
		}
	case SessionWindows:
		if w.Size <= 0 {
			c.invalid("windowed_by: session windows inactivity_gap_ms %d: the inactivity gap must be positive", w.Size)
		}
		kind = KindSessionWindowedStream
	default:
		c.invalid("windowed_by names no windows (time, sliding or session)")
	}
	if w.Grace < 0 {
		c.invalid("windowed_by: %s grace_ms %d: the grace period must not be negative", w.Kind, w.Grace)
	} else if w.Size > 0 {
		// The store keeps windows for size + grace (sliding: twice the
		// time difference + grace): a sum past int64 has no meaning, and
		// Kafka Streams refuses it as a negative retention.
		overflow, what := w.Size > math.MaxInt64-w.Grace, "size_ms + grace_ms"
		if w.Kind == SlidingWindows {
			overflow, what = w.Size > (math.MaxInt64-w.Grace)/2, "2 * time_difference_ms + grace_ms"
		}
		if overflow {
			c.invalid("windowed_by: %s of %d ms and grace_ms %d: %s, the window store's retention, passes the largest time in milliseconds (%d)", w.Kind, w.Size, w.Grace, what, int64(math.MaxInt64))
		}
	}
	if err := c.done(); err != nil {
		return nil, err
	}
	if in.cogroup != nil {
		kind = KindWindowedCogroupedStream
		if w.Kind == SessionWindows {
			kind = KindSessionWindowedCogroupedStream
		}
		return b.mint(&entry{
			handle:  &Handle{Kind: kind, KeySerde: in.handle.KeySerde, Node: in.handle.Node},
			cogroup: in.cogroup, windows: &w,
		}), nil
	}
	return b.mint(&entry{
		handle:  &Handle{Kind: kind, KeySerde: in.handle.KeySerde, ValueSerde: in.handle.ValueSerde, Node: in.handle.Node},
		grouped: in, windows: &w,
	}), nil
}

// EmitStrategy adds TimeWindowedKStream.emitStrategy /
// SessionWindowedKStream.emitStrategy (KIP-825): the windowed stream's
// aggregations emit each window's final result when it closes (onClose), or
// every update (the default). Like Kafka Streams', it adds no node and takes
// no name number; the handle made is a windowed stream of the same windows.
func (b *Builder) EmitStrategy(input uint64, onClose bool) (*Handle, error) {
	c := b.begin("emit_strategy")
	e := b.handles[input]
	switch {
	case e == nil:
		c.problems = append(c.problems, problem{ErrNotFound, fmt.Sprintf("emit_strategy names handle %d, which does not exist", input)})
	case e.windows == nil:
		c.invalid("emit_strategy needs a windowed stream (windowed_by with time, sliding or session windows), but handle %d is a %s", input, e.handle.Kind)
	case e.cogroup != nil:
		c.invalid("emit_strategy: handle %d is a %s, whose aggregation emits every window update (Kafka Streams' windowed cogroups have no emit strategy)", input, e.handle.Kind)
	}
	if err := c.done(); err != nil {
		return nil, err
	}
	w := *e.windows
	w.EmitOnClose = onClose
	h := *e.handle
	return b.mint(&entry{handle: &h, grouped: e.grouped, windows: &w}), nil
}

// Suppression is a Suppressed: until the windows close (TimeLimit < 0),
// or until a time limit (ms) after each key's first buffered update; and
// the buffer's bounds (Kafka Streams' BufferConfig).
type Suppression struct {
	// TimeLimit is untilTimeLimit's timeToWaitForMoreEvents (ms); below 0,
	// untilWindowCloses (the limit is then the windows' grace).
	TimeLimit int64
	// MaxRecords and MaxBytes bound the buffer; math.MaxInt64: no bound.
	MaxRecords, MaxBytes int64
	// ShutDown: a full buffer fails the record (shutDownWhenFull); else it
	// emits its oldest updates early (emitEarlyWhenFull).
	ShutDown bool
}

// UntilWindowCloses is Suppressed.untilWindowCloses(unbounded()).
var UntilWindowCloses = Suppression{TimeLimit: -1, MaxRecords: math.MaxInt64, MaxBytes: math.MaxInt64, ShutDown: true}

// FinalResults reports whether s is untilWindowCloses.
func (s *Suppression) FinalResults() bool { return s.TimeLimit < 0 }

// Bounded reports whether s's buffer has a bound.
func (s *Suppression) Bounded() bool {
	return s.MaxRecords != math.MaxInt64 || s.MaxBytes != math.MaxInt64
}

// Suppress adds KTable.suppress(Suppressed): a KTABLE-SUPPRESS- node with
// its buffer store. untilWindowCloses needs a windowed aggregation's table
// and a StrictBufferConfig (unbounded, or shutDownWhenFull); untilTimeLimit
// takes any table. The table above sends old values (the buffer keeps
// each key's prior value), which materializes a table source. The
// node and store numbers are taken even when name is given
// (SuppressTopologyTest).
func (b *Builder) Suppress(input uint64, name string, sup Suppression) (*Handle, error) {
	c := b.begin("suppress")
	in := c.input(input, KindTable)
	var w *Windows
	if in != nil {
		w = in.handle.Node.Windows
		if sup.FinalResults() && w == nil {
			c.invalid("suppress(untilWindowCloses) needs the table of a windowed aggregation: window close time is only defined for windowed computations, and handle %d (node %s) is not one", input, in.handle.Node.Name)
		}
	}
	if sup.MaxRecords < 0 {
		c.invalid("suppress: BufferConfig.maxRecords is %d: want at least 0", sup.MaxRecords)
	}
	if sup.MaxBytes < 0 {
		c.invalid("suppress: BufferConfig.maxBytes is %d: want at least 0", sup.MaxBytes)
	}
	if sup.FinalResults() && sup.Bounded() && !sup.ShutDown {
		c.invalid("suppress(untilWindowCloses) takes a StrictBufferConfig (unbounded, or a bound with shutDownWhenFull), not emitEarlyWhenFull: emitting a window early would not be its final result")
	}
	// KTableImpl#suppress: a name names the node and its store
	// ("<name>-store") and takes no number; an anonymous suppression takes
	// one for its node, then one for its store.
	nodeName, store := name, name+"-store"
	if name == "" {
		nodeName = c.processorName("", prefixSuppress)
		store = prefixSuppress + "STATE-STORE-" + pad(c.burn())
	} else if c.validName("node", name) {
		c.claim(name)
	}
	if b.stores[store] != nil {
		c.invalid("suppress names store %q, which exists already", store)
	}
	if err := c.done(); err != nil {
		return nil, err
	}
	// KTableSuppressProcessorSupplier: "The suppress buffer requires seeing
	// the old values, to support the prior value view."
	b.sendOldValues(in.handle.Node)
	s := sup
	n := &Node{
		Name: nodeName, Type: Processor, Op: OpSuppress, Stores: []string{store}, Windows: w, Suppress: &s,
		KeySerde: in.handle.KeySerde, ValueSerde: in.handle.ValueSerde,
	}
	b.newStore(store, n.KeySerde, n.ValueSerde, nil)
	b.stores[store].Kind = StoreSuppress
	b.stores[store].Windows = w
	b.stores[store].Suppress = &s
	g := b.hang(in, n)
	return b.mint(&entry{handle: &Handle{Kind: KindTable, KeySerde: n.KeySerde, ValueSerde: n.ValueSerde, Node: n}, g: g}), nil
}

// windowRetention checks a windowed store's retention: at least size +
// grace (Kafka Streams: "The retention period of the window store ... must
// be no smaller than its window size plus the grace period"); 0 means that.
func (c *call) windowRetention(w *Windows, retention int64) int64 {
	least, what := w.Size+w.Grace, "the window size plus grace"
	if w.Kind == SlidingWindows {
		// SlidingWindowedKStreamImpl: 2 * time difference + grace.
		least, what = 2*w.Size+w.Grace, "twice the time difference plus grace"
	}
	if retention == 0 {
		return least
	}
	if retention < least {
		c.invalid("%s: materialized retention_ms %d is less than %s (%d ms)", c.op, retention, what, least)
	}
	return retention
}
