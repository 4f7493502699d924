package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/crossing"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// ReadFunc answers a processor's store read during its bundle.
type ReadFunc func(ctx context.Context, req *pb.ReadRequest) (*pb.ReadResponse, error)

// ReadsHost is a Host that runs processor bundles: while it runs one, its
// Read calls reach reads (the server's Read RPC), which the waiting task
// answers on its own goroutine (docs/design/processor.md, "Why the engine
// can answer mid-bundle").
type ReadsHost interface {
	ProcessReads(ctx context.Context, b *pb.Bundle, reads ReadFunc) (*pb.BundleResult, error)
}

// ErrBundleNotInFlight is a Read naming a bundle no task waits for.
var ErrBundleNotInFlight = errors.New("bundle not in flight")

// ErrReadRefused is a Read the engine refuses (a store the bundle's steps
// did not declare, a query it cannot answer).
var ErrReadRefused = errors.New("read refused")

// hostProcessOp runs a processor in the host (a processor step): per run a
// bundle carrying the current entries of the records' keys in the
// processor's stores (StoreView), the init entry of an instance the host
// does not hold yet and the records; the host answers with ops per entry,
// applied here in order through the store transaction. The task's
// processor bundles cross one at a time: the next one's views are read
// after this one's ops are applied.
type hostProcessOp struct {
	opBase
	stores []*storeTx // node.Stores order
	// inited: the host holds this task's instance (it had its init entry).
	inited bool
	// schedules: the host's schedule ids.
	schedules map[uint64]*schedule
	// revived: an aborted transaction revived the operator (revive).
	revived atomic.Bool
}

func newHostProcessOp(t *task, s *step) operator {
	o := &hostProcessOp{opBase: baseOf(t, s, nil), schedules: map[uint64]*schedule{}}
	for _, name := range s.node.Stores {
		o.stores = append(o.stores, t.stores[name])
	}
	return o
}

// revive marks the host's instance forgotten (an aborted transaction):
// before the task's next work its schedules are dropped and the next
// bundle inits it again (applyRevival).
func (o *hostProcessOp) revive() { o.revived.Store(true) }

func (o *hostProcessOp) applyRevival() {
	if !o.revived.Swap(false) {
		return
	}
	o.inited = false
	o.t.dropSchedules(o)
	clear(o.schedules)
}

func (o *hostProcessOp) process(ctx context.Context, recs []rec) ([]rec, error) {
	return o.cross(ctx, recs, nil)
}

// punctuate sends the punctuation alone.
func (o *hostProcessOp) punctuate(ctx context.Context, s *schedule, now int64) error {
	kind := pb.BundleEntry_KIND_PUNCTUATE_STREAM_TIME
	if s.typ == topology.WallClockTime {
		kind = pb.BundleEntry_KIND_PUNCTUATE_WALL_CLOCK
	}
	out, err := o.cross(ctx, nil, []*pb.BundleEntry{{Kind: kind, Step: 0, Schedule: s.hostID, TimeMs: now}})
	if err != nil {
		return err
	}
	for _, c := range o.s.next {
		if err := o.t.push(ctx, c, out); err != nil {
			return err
		}
	}
	return nil
}

// ensure sends the init entry alone, before the task's first records, so
// that the host's schedules exist from the start.
func (o *hostProcessOp) ensure(ctx context.Context) error {
	if o.inited {
		return nil
	}
	_, err := o.cross(ctx, nil, nil)
	return err
}

// closeWait bounds how long a closing task waits for the host to answer
// its close entries.
const closeWait = 10 * time.Second

// close sends the close entry of the host's instance as the task closes
// (revocation, Stop), so the host calls close() and drops it. The task
// has committed its last batch: a close's ops are not applied (Kafka
// Streams closes processors after the task's last commit), and a close
// that fails or is not answered is logged, as a Go processor's is.
func (o *hostProcessOp) close(ctx context.Context) {
	if !o.inited {
		return
	}
	t, s := o.t, o.s
	o.inited = false
	t.dropSchedules(o)
	clear(o.schedules)
	if ctx.Err() != nil {
		return // the engine is shutting down with its session: the host ends too
	}
	ctx, cancel := context.WithTimeout(ctx, closeWait)
	defer cancel()
	after := []*pb.BundleEntry{{Kind: pb.BundleEntry_KIND_CLOSE, Step: 0}}
	b := &pb.Bundle{Steps: s.steps, KeySerde: s.inKey, ValueSerde: s.inValue, OutputKeySerde: s.outKey, OutputValueSerde: s.outValue,
		Partition: t.id.partition, Task: t.id.String(), After: after}
	b.Stores, _ = o.views(nil)
	res, err := o.send(ctx, b)
	switch {
	case err != nil:
		t.app.log.Warn("closing a host processor as its task stops", "task", t.id.String(), "node", s.node.Name, "error", err)
	case len(res.OpCounts) != 1:
		t.app.log.Warn("closing a host processor as its task stops: malformed answer", "task", t.id.String(), "node", s.node.Name, "op_groups", len(res.OpCounts))
	case len(res.Failures) > 0:
		t.app.log.Warn("closing a host processor as its task stops", "task", t.id.String(), "node", s.node.Name, "error", res.Failures[0].Message)
	case res.OpCounts[0] > 0:
		t.app.log.Warn("a host processor's close made ops, which are not applied (the task committed its last batch)", "task", t.id.String(), "node", s.node.Name, "ops", res.OpCounts[0])
	}
}

// bundleEntries are a processor bundle's entries: inits, records, after.
type bundleEntries struct {
	inits []*pb.BundleEntry
	recs  []rec
	after []*pb.BundleEntry
}

func (e *bundleEntries) n() int { return len(e.inits) + len(e.recs) + len(e.after) }

// cross sends one bundle (the init entry when needed, recs, after) and
// applies the answer; it returns the forwards to all children (named
// children are pushed to here).
func (o *hostProcessOp) cross(ctx context.Context, recs []rec, after []*pb.BundleEntry) ([]rec, error) {
	s, t := o.s, o.t
	var b *pb.Bundle
	if len(recs) > 0 {
		b = encodeBundle(s, recs) // with header columns: a processor step is METADATA_WRITE
	} else {
		b = &pb.Bundle{Steps: s.steps, KeySerde: s.inKey, ValueSerde: s.inValue, OutputKeySerde: s.outKey, OutputValueSerde: s.outValue}
	}
	b.Partition = t.id.partition
	b.Task = t.id.String()
	e := &bundleEntries{recs: recs, after: after}
	if !o.inited {
		e.inits = []*pb.BundleEntry{{Kind: pb.BundleEntry_KIND_INIT, Step: 0}}
		o.inited = true
	}
	b.Inits, b.After = e.inits, e.after
	views, err := o.views(recs)
	if err != nil {
		return nil, err
	}
	b.Stores = views

	res, err := o.send(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("engine: task %s: bundle for node %s: %w", t.id, s.node.Name, err)
	}
	return o.apply(ctx, b, e, res)
}

// send crosses b, answering the host's Reads on this goroutine while it
// waits.
func (o *hostProcessOp) send(ctx context.Context, b *pb.Bundle) (*pb.BundleResult, error) {
	rh, ok := o.t.app.host.(ReadsHost)
	if bh, isBudgeted := o.t.app.host.(budgetedHost); isBudgeted {
		_, ok = bh.Host.(ReadsHost)
	}
	if !ok {
		return o.t.app.host.Process(ctx, b)
	}
	type call struct {
		req   *pb.ReadRequest
		reply chan readAnswer
	}
	type answer struct {
		res *pb.BundleResult
		err error
	}
	calls := make(chan call)
	done := make(chan answer, 1)
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		res, err := rh.ProcessReads(ctx, b, func(rctx context.Context, req *pb.ReadRequest) (*pb.ReadResponse, error) {
			c := call{req: req, reply: make(chan readAnswer, 1)}
			select {
			case calls <- c:
			case <-finished:
				return nil, fmt.Errorf("%w: bundle %d", ErrBundleNotInFlight, req.BundleId)
			case <-rctx.Done():
				return nil, rctx.Err()
			}
			select {
			case a := <-c.reply:
				return a.resp, a.err
			case <-rctx.Done():
				return nil, rctx.Err()
			}
		})
		done <- answer{res, err}
	}()
	for {
		select {
		case c := <-calls:
			resp, err := o.read(c.req)
			c.reply <- readAnswer{resp, err}
		case a := <-done:
			return a.res, a.err
		}
	}
}

type readAnswer struct {
	resp *pb.ReadResponse
	err  error
}

// read answers a Read from the store transaction as it is (the bundle's
// ops are applied only once it is answered, so this is the state the
// bundle started from).
func (o *hostProcessOp) read(req *pb.ReadRequest) (*pb.ReadResponse, error) {
	n := o.s.node
	i := slices.Index(n.Stores, req.Store)
	if i < 0 {
		return nil, fmt.Errorf("%w: Read for bundle %d: node %s declares no store %q (its stores: %v)", ErrReadRefused, req.BundleId, n.Name, req.Store, n.Stores)
	}
	tx := o.stores[i]
	resp := &pb.ReadResponse{}
	var k, v columns
	add := func(key, value []byte, ts int64) {
		k.add(key)
		v.add(value)
		if st := tx.store.Processor; st != nil && st.Type.Timestamped() {
			resp.Timestamps = append(resp.Timestamps, ts)
		}
	}
	if st := tx.store.Processor; st != nil && st.Type.Windowed() {
		return o.readWindows(req, tx)
	}
	if versionedStore(tx.store) {
		return o.readVersions(req, tx)
	}
	if _, ok := req.Query.(*pb.ReadRequest_Versions); ok {
		return nil, fmt.Errorf("%w: Read for bundle %d: node %s, store %q is a %s, not a versioned key-value store: it has no versions to read", ErrReadRefused, req.BundleId, n.Name, req.Store, storeKindName(tx.store))
	}
	var lo, hi []byte
	switch q := req.Query.(type) {
	case *pb.ReadRequest_Get:
		value, ts, err := tx.Get(q.Get)
		if err != nil {
			return nil, err
		}
		if value != nil {
			add(q.Get, value, ts)
		}
		resp.KeyLengths, resp.Keys, resp.ValueLengths, resp.Values = k.lens, k.data, v.lens, v.data
		return resp, nil
	case *pb.ReadRequest_All:
	case *pb.ReadRequest_Range:
		lo, hi = q.Range.GetFrom(), state.UpperBound(q.Range.GetTo())
	case *pb.ReadRequest_Prefix:
		lo, hi = q.Prefix, state.PrefixEnd(q.Prefix)
	default:
		return nil, fmt.Errorf("%w: Read for bundle %d: node %s, store %q: query %T is not served yet", ErrReadRefused, req.BundleId, n.Name, req.Store, req.Query)
	}
	if len(req.Continuation) > 0 && !req.Reverse {
		lo = req.Continuation
	}
	budget := o.t.app.cfg.BundleMaxBytes
	size := 0
	var rows [][3]any
	err := tx.Scan(lo, hi, func(key, value []byte, ts int64) bool {
		rows = append(rows, [3]any{key, value, ts})
		return true
	})
	if err != nil {
		return nil, err
	}
	if req.Reverse {
		slices.Reverse(rows)
	}
	for _, r := range rows {
		key, value := r[0].([]byte), r[1].([]byte)
		if !req.Reverse && size > 0 && size+len(key)+len(value) > budget {
			// The next chunk starts at this key (polystreams.bundle.max.bytes
			// per answer); a reverse query is answered whole.
			resp.Continuation = slices.Clone(key)
			break
		}
		size += len(key) + len(value)
		add(key, value, r[2].(int64))
	}
	resp.KeyLengths, resp.Keys, resp.ValueLengths, resp.Values = k.lens, k.data, v.lens, v.data
	return resp, nil
}

// readWindows answers a Read of a window store: window_fetch (one key or
// every key) or all, whole, in (key, window start) order.
func (o *hostProcessOp) readWindows(req *pb.ReadRequest, tx *storeTx) (*pb.ReadResponse, error) {
	var rows []windowRow
	var err error
	switch q := req.Query.(type) {
	case *pb.ReadRequest_WindowFetch:
		rows, err = windowFetch(tx, q.WindowFetch.Key, q.WindowFetch.FromMs, q.WindowFetch.ToMs)
	case *pb.ReadRequest_All:
		rows, err = windowFetch(tx, nil, 0, math.MaxInt64)
	default:
		return nil, fmt.Errorf("%w: Read for bundle %d: node %s, store %q is a window store: read it with window_fetch or all, not %T", ErrReadRefused, req.BundleId, o.s.node.Name, req.Store, req.Query)
	}
	if err != nil {
		return nil, err
	}
	if req.Reverse {
		slices.Reverse(rows)
	}
	resp := &pb.ReadResponse{}
	var k, v columns
	timestamped := tx.store.Processor.Type.Timestamped()
	for _, r := range rows {
		k.add(r.key)
		v.add(r.value)
		resp.Windows = append(resp.Windows, r.start)
		if timestamped {
			resp.Timestamps = append(resp.Timestamps, r.ts)
		}
	}
	resp.KeyLengths, resp.Keys, resp.ValueLengths, resp.Values = k.lens, k.data, v.lens, v.data
	return resp, nil
}

// readVersions answers a Read of a versioned store: the versions of one
// key (ReadRequest.versions), as the store's view carries a key's.
func (o *hostProcessOp) readVersions(req *pb.ReadRequest, tx *storeTx) (*pb.ReadResponse, error) {
	q, ok := req.Query.(*pb.ReadRequest_Versions)
	if !ok {
		return nil, fmt.Errorf("%w: Read for bundle %d: node %s, store %q is a versioned key-value store: read it with versions (of one key), not %T", ErrReadRefused, req.BundleId, o.s.node.Name, req.Store, req.Query)
	}
	if q.Versions == nil {
		return nil, fmt.Errorf("%w: Read for bundle %d: node %s, store %q: versions of a null key", ErrReadRefused, req.BundleId, o.s.node.Name, req.Store)
	}
	st, err := tx.StreamTime()
	if err != nil {
		return nil, err
	}
	vs, err := tx.Versions(q.Versions)
	if err != nil {
		return nil, err
	}
	resp := &pb.ReadResponse{}
	var k, v columns
	for _, ver := range readableVersions(vs, st, tx.store.Versioned.HistoryRetention) {
		k.add(q.Versions)
		v.add(ver.Value)
		resp.Windows = append(resp.Windows, ver.ValidFrom)
	}
	resp.KeyLengths, resp.Keys, resp.ValueLengths, resp.Values = k.lens, k.data, v.lens, v.data
	return resp, nil
}

// readableVersions are the versions of vs (ascending validFrom) a read or a
// put's answer may still depend on: from the one valid at streamTime -
// retention on (FindVersion finds nothing older, and a put older than
// that is dropped).
func readableVersions(vs []state.Version, streamTime, retention int64) []state.Version {
	cut := streamTime - retention
	first := 0
	for i, v := range vs {
		if v.ValidFrom <= cut {
			first = i
		}
	}
	return vs[first:]
}

// maxViewVersions is how many versions of a key a versioned store's view
// carries; a key with more is uncovered (its reads are Reads).
const maxViewVersions = 64

func storeKindName(st *topology.Store) string {
	if st.Processor != nil {
		return st.Processor.Type.String()
	}
	return "key-value store"
}

// distinctKeys are recs' non-null keys, each once, in the order first seen:
// the keys a bundle's store views cover.
func distinctKeys(recs []rec) [][]byte {
	keys := make([][]byte, 0, len(recs))
	seen := make(map[string]bool, len(recs))
	for i := range recs {
		key := recs[i].key
		if key == nil || seen[string(key)] {
			continue
		}
		seen[string(key)] = true
		keys = append(keys, key)
	}
	return keys
}

// columns builds length-prefixed columns (-1: null).
type columns struct {
	lens []int32
	data []byte
}

func (c *columns) add(b []byte) {
	if b == nil {
		c.lens = append(c.lens, -1)
		return
	}
	c.lens = append(c.lens, int32(len(b)))
	c.data = append(c.data, b...)
}

// views are the current entries of recs' distinct keys in each store whose
// key serde is the records' (docs/design/processor.md, "What is
// prefetched"); window stores get none (their fetches are Reads).
func (o *hostProcessOp) views(recs []rec) ([]*pb.StoreView, error) {
	var views []*pb.StoreView
	keys := distinctKeys(recs)
	for _, tx := range o.stores {
		st := tx.store
		v := &pb.StoreView{Store: st.Name, KeySerde: st.KeySerde, ValueSerde: st.ValueSerde, Type: storeTypeOf(st)}
		views = append(views, v)
		if versionedStore(st) {
			if err := o.versionsView(v, tx, keys); err != nil {
				return nil, err
			}
			continue
		}
		if st.Processor == nil || st.Processor.Type.Windowed() || st.KeySerde != o.s.inKey {
			continue
		}
		var k, vc columns
		for _, key := range keys {
			value, ts, err := tx.Get(key)
			if err != nil {
				return nil, err
			}
			k.add(key)
			vc.add(value)
			if st.Processor.Type.Timestamped() {
				v.Timestamps = append(v.Timestamps, ts)
			}
		}
		v.KeyLengths, v.Keys, v.ValueLengths, v.Values = k.lens, k.data, vc.lens, vc.data
	}
	return views, nil
}

// versionsView fills a versioned store's view: its stream time and, when
// the store is keyed by the records' key serde, the versions of recs'
// distinct keys a read may still find (docs/design/versioned-stores.md,
// "Processors in a host").
func (o *hostProcessOp) versionsView(v *pb.StoreView, tx *storeTx, keys [][]byte) error {
	st, err := tx.StreamTime()
	if err != nil {
		return err
	}
	v.StreamTimeMs, v.HistoryRetentionMs = st, tx.store.Versioned.HistoryRetention
	if tx.store.KeySerde != o.s.inKey {
		return nil
	}
	var k, vc, unc columns
	for _, key := range keys {
		vs, err := tx.Versions(key)
		if err != nil {
			return err
		}
		vs = readableVersions(vs, st, tx.store.Versioned.HistoryRetention)
		if len(vs) > maxViewVersions {
			unc.add(key)
			continue
		}
		k.add(key)
		v.VersionCounts = append(v.VersionCounts, int32(len(vs)))
		for _, ver := range vs {
			vc.add(ver.Value)
			v.Windows = append(v.Windows, ver.ValidFrom)
		}
	}
	v.KeyLengths, v.Keys, v.ValueLengths, v.Values = k.lens, k.data, vc.lens, vc.data
	v.UncoveredLengths, v.Uncovered = unc.lens, unc.data
	return nil
}

func storeTypeOf(st *topology.Store) pb.StoreType {
	if st.Processor == nil {
		return pb.StoreType_STORE_TYPE_KEY_VALUE
	}
	switch st.Processor.Type {
	case topology.StoreTypeTimestampedKeyValue:
		return pb.StoreType_STORE_TYPE_TIMESTAMPED_KEY_VALUE
	case topology.StoreTypeWindow:
		return pb.StoreType_STORE_TYPE_WINDOW
	case topology.StoreTypeTimestampedWindow:
		return pb.StoreType_STORE_TYPE_TIMESTAMPED_WINDOW
	case topology.StoreTypeVersioned:
		return pb.StoreType_STORE_TYPE_VERSIONED_KEY_VALUE
	}
	return pb.StoreType_STORE_TYPE_KEY_VALUE
}

func headersOfRec(r *rec) []kgo.RecordHeader {
	if r.ownHeaders {
		return r.headers
	}
	if r.in == nil {
		return nil
	}
	return r.in.Headers
}

// apply checks the answer's op columns and applies them entry by entry,
// op by op. A failed entry keeps the ops before its failure.
func (o *hostProcessOp) apply(ctx context.Context, b *pb.Bundle, e *bundleEntries, res *pb.BundleResult) ([]rec, error) {
	a := &hostAnswer{o: o, b: b, res: res, byChild: make([][]rec, len(o.s.next))}
	if err := a.split(e); err != nil {
		return nil, err
	}
	op := 0
	for entry, count := range res.OpCounts {
		var in *rec // the entry's input record (nil: init or punctuation)
		var punct *pb.BundleEntry
		switch {
		case entry < len(e.inits):
		case entry < len(e.inits)+len(e.recs):
			in = &e.recs[entry-len(e.inits)]
		default:
			punct = e.after[entry-len(e.inits)-len(e.recs)]
		}
		for range count {
			j := op
			op++
			var err error
			switch kind := res.OpKinds[j]; kind {
			case pb.OpKind_OP_KIND_PUT, pb.OpKind_OP_KIND_DELETE:
				err = a.write(j, kind, in, punct)
			case pb.OpKind_OP_KIND_FORWARD:
				err = a.forward(j, in)
			case pb.OpKind_OP_KIND_SCHEDULE:
				err = a.schedule(j)
			case pb.OpKind_OP_KIND_CANCEL:
				if sc := o.schedules[res.OpSchedules[j]]; sc != nil {
					sc.Cancel()
					delete(o.schedules, res.OpSchedules[j])
				}
			default:
				err = a.bad("op %d has kind %v", j, kind)
			}
			if err != nil {
				return nil, err
			}
		}
		if f := a.failed[entry]; f != nil {
			if err := a.entryFailed(f, in, punct); err != nil {
				return nil, err
			}
		}
	}
	for i, c := range o.s.next {
		if len(a.byChild[i]) > 0 {
			if err := o.t.push(ctx, c, a.byChild[i]); err != nil {
				return nil, err
			}
		}
	}
	return a.out, nil
}

// hostAnswer is a host processor's answer to one bundle while it is
// applied: its op columns split per op, the entries that failed, what it
// forwarded so far, and how far the forwards' header columns are read.
type hostAnswer struct {
	o                            *hostProcessOp
	b                            *pb.Bundle
	res                          *pb.BundleResult
	keys, values, hkeys, hvalues [][]byte
	failed                       map[int]*pb.RecordFailure // entry -> its first failure
	out                          []rec                     // forwarded to all children
	byChild                      [][]rec                   // forwarded to one child
	fwd, hdr                     int
}

// bad is the error of a malformed answer.
func (a *hostAnswer) bad(format string, args ...any) error {
	return fmt.Errorf("engine: host answered bundle %d for node %s malformed: %s", a.b.Id, a.o.s.node.Name, fmt.Sprintf(format, args...))
}

// split checks the answer's op columns against each other and against the
// bundle's entries e, and splits them per op.
func (a *hostAnswer) split(e *bundleEntries) error {
	res := a.res
	if len(res.OpCounts) != e.n() {
		return a.bad("%d op groups for %d entries (%d inits, %d records, %d after)", len(res.OpCounts), e.n(), len(e.inits), len(e.recs), len(e.after))
	}
	total := 0
	for _, c := range res.OpCounts {
		if c < 0 {
			return a.bad("a negative op count %d", c)
		}
		total += int(c)
	}
	forwards := 0
	for _, k := range res.OpKinds {
		if k == pb.OpKind_OP_KIND_FORWARD {
			forwards++
		}
	}
	switch {
	case len(res.OpKinds) != total, len(res.OpTargets) != total, len(res.OpKeyLengths) != total, len(res.OpValueLengths) != total,
		len(res.OpTimestamps) != total, len(res.OpSchedules) != total:
		return a.bad("op columns of %d, %d, %d, %d, %d, %d ops for op counts adding up to %d (kinds, targets, key lengths, value lengths, timestamps, schedules)",
			len(res.OpKinds), len(res.OpTargets), len(res.OpKeyLengths), len(res.OpValueLengths), len(res.OpTimestamps), len(res.OpSchedules), total)
	case len(res.OpSteps) != 0 && len(res.OpSteps) != total:
		return a.bad("%d op steps for %d ops", len(res.OpSteps), total)
	case len(res.OpHeaderCounts) != forwards:
		return a.bad("%d op header counts for %d forwards", len(res.OpHeaderCounts), forwards)
	}
	var err error
	if a.keys, err = crossing.SplitColumn(res.OpKeyLengths, res.OpKeys); err != nil {
		return a.bad("op keys: %v", err)
	}
	if a.values, err = crossing.SplitColumn(res.OpValueLengths, res.OpValues); err != nil {
		return a.bad("op values: %v", err)
	}
	hcount := 0
	for _, c := range res.OpHeaderCounts {
		hcount += max(int(c), 0)
	}
	if len(res.OpHeaderKeyLengths) != hcount || len(res.OpHeaderValueLengths) != hcount {
		return a.bad("%d header keys and %d header values for %d headers", len(res.OpHeaderKeyLengths), len(res.OpHeaderValueLengths), hcount)
	}
	if a.hkeys, err = crossing.SplitColumn(res.OpHeaderKeyLengths, res.OpHeaderKeys); err != nil {
		return a.bad("op header keys: %v", err)
	}
	if a.hvalues, err = crossing.SplitColumn(res.OpHeaderValueLengths, res.OpHeaderValues); err != nil {
		return a.bad("op header values: %v", err)
	}
	a.failed = map[int]*pb.RecordFailure{}
	for _, f := range res.Failures {
		if f.Index < 0 || int(f.Index) >= e.n() {
			return a.bad("failure names entry %d of %d", f.Index, e.n())
		}
		if a.failed[int(f.Index)] == nil {
			a.failed[int(f.Index)] = f
		}
	}
	return nil
}

// write applies op j, a put or delete (kind) of the entry with input in
// (nil: an init or punctuation punct), to its store.
func (a *hostAnswer) write(j int, kind pb.OpKind, in *rec, punct *pb.BundleEntry) error {
	o, res, n := a.o, a.res, a.o.s.node
	key, value := a.keys[j], a.values[j]
	si := int(res.OpTargets[j])
	if si < 0 || si >= len(o.stores) {
		return a.bad("op %d writes store %d of %d", j, si, len(o.stores))
	}
	if key == nil {
		return a.bad("op %d writes a null key to store %q", j, n.Stores[si])
	}
	if tx := o.stores[si]; versionedStore(tx.store) {
		// put(key, value, ts) or delete(key, ts) (a tombstone),
		// ts the version's validFrom: the same putVersion as a Go
		// processor's, so changelog and restore are shared.
		if kind == pb.OpKind_OP_KIND_DELETE {
			value = nil
		}
		p, err := tx.putVersion(o.t.app.eos, slices.Clone(key), slices.Clone(value), res.OpTimestamps[j])
		if err != nil {
			return err
		}
		if !p.Put {
			// Expired (the host answered PUT_RETURN_CODE_NOT_PUT
			// and sent it anyway, for this count):
			// RocksDBVersionedStore counts an expired put or
			// delete in dropped-records.
			o.t.app.dropped.Add(1)
		}
		return nil
	}
	if kind == pb.OpKind_OP_KIND_DELETE {
		value = nil
	} else if value == nil {
		return a.bad("op %d puts a null value into store %q (a delete is OP_KIND_DELETE)", j, n.Stores[si])
	}
	// A store without timestamps keeps the record context's
	// time with a row (its changelog record's timestamp, as
	// Kafka Streams logs it): the input's, or the punctuation's.
	ts := res.OpTimestamps[j]
	if st := o.stores[si].store.Processor; st == nil || !st.Type.Timestamped() {
		ts = 0
		if in != nil {
			ts = in.ts
		} else if punct != nil {
			ts = punct.TimeMs
		}
	}
	if st := o.stores[si].store.Processor; st != nil && st.Type.Windowed() {
		// A window store's PUT and DELETE carry the window start.
		rowTS := res.OpTimestamps[j]
		if in != nil {
			rowTS = in.ts
		} else if punct != nil {
			rowTS = punct.TimeMs
		}
		if err := o.t.windowPut(o.stores[si], n.Name, key, value, res.OpTimestamps[j], rowTS); err != nil {
			return a.bad("op %d: %v", j, err)
		}
		return nil
	}
	o.stores[si].Put(slices.Clone(key), slices.Clone(value), ts)
	return nil
}

// forward applies op j, a forward from the entry with input in (nil: an
// init or punctuation), to all children or the one it names.
func (a *hostAnswer) forward(j int, in *rec) error {
	o, res, n := a.o, a.res, a.o.s.node
	key, value := a.keys[j], a.values[j]
	child := int(res.OpTargets[j])
	if child < 0 || child > len(o.s.next) {
		return a.bad("op %d forwards to child %d of %d", j, child, len(o.s.next))
	}
	r := rec{key: slices.Clone(key), value: slices.Clone(value), ts: res.OpTimestamps[j]}
	if in != nil {
		r.in = in.in
		if n.Op == topology.OpProcessValues && string(key) != string(in.key) {
			return a.bad("op %d: process_values node forwards key %q for input key %q", j, key, in.key)
		}
	} else {
		r.in = &kgo.Record{Partition: -1, Offset: -1}
	}
	hc := int(res.OpHeaderCounts[a.fwd])
	a.fwd++
	if hc >= 0 {
		r.ownHeaders = true
		for range hc {
			r.headers = append(r.headers, kgo.RecordHeader{Key: string(a.hkeys[a.hdr]), Value: a.hvalues[a.hdr]})
			a.hdr++
		}
	} else if in != nil {
		r.headers, r.ownHeaders = headersOfRec(in), true
	} else {
		r.ownHeaders = true
	}
	if child == 0 {
		a.out = append(a.out, r)
	} else {
		a.byChild[child-1] = append(a.byChild[child-1], r)
	}
	return nil
}

// schedule applies op j, a punctuation's schedule.
func (a *hostAnswer) schedule(j int) error {
	o, res := a.o, a.res
	typ := topology.StreamTime
	switch res.OpTargets[j] {
	case 1:
	case 2:
		typ = topology.WallClockTime
	default:
		return a.bad("op %d schedules punctuation type %d (1 stream time, 2 wall clock)", j, res.OpTargets[j])
	}
	if res.OpTimestamps[j] < 1 {
		return a.bad("op %d schedules an interval of %d ms; the minimum is 1 ms", j, res.OpTimestamps[j])
	}
	id := res.OpSchedules[j]
	if id == 0 || o.schedules[id] != nil {
		return a.bad("op %d schedules id %d, which is 0 or taken", j, id)
	}
	sc := &schedule{op: o, typ: typ, interval: res.OpTimestamps[j], hostID: id}
	o.schedules[id] = sc
	o.t.addSchedule(sc)
	return nil
}

// entryFailed applies failure f of the entry with input in (nil: an init
// or punctuation punct) by the error policy: a record's or a
// punctuator's; a failed init fails the task.
func (a *hostAnswer) entryFailed(f *pb.RecordFailure, in *rec, punct *pb.BundleEntry) error {
	o, n := a.o, a.o.s.node
	ferr := errors.New(f.Message)
	switch {
	case in != nil:
		kind := kindProcessing
		if f.Kind == pb.RecordFailure_KIND_DESERIALIZATION {
			kind = kindDeserialization
		}
		if err := o.t.recordFailed(*in, n.Name, kind, ferr); err != nil {
			return err
		}
	case punct != nil && punct.Kind != pb.BundleEntry_KIND_CLOSE:
		typ := topology.StreamTime
		if punct.Kind == pb.BundleEntry_KIND_PUNCTUATE_WALL_CLOCK {
			typ = topology.WallClockTime
		}
		if err := o.t.punctuatorFailed(n.Name, typ, punct.TimeMs, ferr); err != nil {
			return err
		}
	case punct == nil:
		o.inited = false
		return fmt.Errorf("engine: init of node %s in task %s failed: %w", n.Name, o.t.id, ferr)
	}
	return nil
}
