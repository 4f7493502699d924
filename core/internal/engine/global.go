package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/config"
	"github.com/polystreams/polystreams/core/internal/serde"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// Global tables (Kafka Streams' GlobalStreamThread and GlobalStateManager).
//
// Every instance keeps every partition of a global table's topic in the
// table's store, read by a consumer of its own that belongs to no group:
// it assigns itself every partition, from the store's checkpointed offsets
// (or the start), read_committed under exactly_once_v2. As in Kafka
// Streams the topic is the store's changelog. No task processes a record
// before every global store has caught up with its topic's end offsets, as
// they were when the restore began (the application is Restoring
// meanwhile); the reader then goes on applying what is written to the
// topics while the tasks run.
//
// Layout in Pebble: the rows of every topic partition in partition 0 of
// the store (a key lives in one topic partition, and a lookup must not
// need to know which), and topic partition p's next offset as partition
// p's checkpoint. Rows are written before their checkpoint, and replaying
// a table's upserts from an older offset converges to the same rows, so a
// crash at any point leaves a checkpoint that is safe to resume from.

// globalDataPartition is the store partition holding a global store's rows.
const globalDataPartition = 0

// globals reads the application's global tables. Its goroutine (run) is
// the only writer of their stores; tasks and queries read them through
// Partitions of their own.
type globals struct {
	a    *App
	opts []kgo.Opt // of the consumer, which run creates
	cl   *kgo.Client
	tops []*globalTopic
	// byTopic: tops by topic name.
	byTopic map[string]*globalTopic
	ready   chan struct{} // closed once every global store is restored
	done    chan struct{} // closed when run returns
	// restoring is set until ready is closed (State reads it).
	restoring atomic.Bool
}

// globalTopic is one global table's topic and store.
type globalTopic struct {
	g     *topology.GlobalStore
	data  *state.Partition
	parts map[int32]*globalPart
}

// check validates a record of gt's topic (its key and value once decoded
// from a Schema Registry serde) against the source's serdes, as
// a task's source does (sourceOp).
func (gt *globalTopic) check(key, value []byte) error {
	src := gt.g.Source
	if serde.Checks(src.KeySerde) {
		if err := serde.Validate(src.KeySerde, key); err != nil {
			return fmt.Errorf("key does not decode as %s: %w", src.KeySerde, err)
		}
	}
	if value != nil && serde.Checks(src.ValueSerde) {
		if err := serde.Validate(src.ValueSerde, value); err != nil {
			return fmt.Errorf("value does not decode as %s: %w", src.ValueSerde, err)
		}
	}
	return nil
}

// globalPart is one partition of a global table's topic.
type globalPart struct {
	ckpt *state.Partition // its checkpoint
	// from: where the restore began; next: the next offset to apply; end:
	// the restore's target.
	from, next, end int64
	entry           *restoreEntry
	restored        bool
	// applied is next once the rows before it are in the store: what
	// others (the test driver's quiescence) read, as run owns next.
	applied atomic.Int64
}

// startGlobals checks the global tables' topics and positions each
// partition at its checkpoint; begin then starts the reader (globals.run),
// and the tasks wait for it (see awaitGlobals). A topic that does not
// exist fails the start, named.
func (a *App) startGlobals(ctx context.Context) error {
	if len(a.topo.Globals) == 0 {
		return nil
	}
	topics := a.globalTopics()
	details, err := a.listExisting(ctx, topics)
	if err != nil {
		return fmt.Errorf("engine: reading metadata of global tables' topics: %w", err)
	}
	var missing []string
	for _, g := range a.topo.Globals {
		if d, ok := details[g.Topic()]; !ok || d.Err != nil || len(d.Partitions) == 0 {
			missing = append(missing, fmt.Sprintf("topic %q of global table %s (store %s)", g.Topic(), g.Processor.Name, g.Store.Name))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("engine: %s does not exist (Kafka Streams' MissingSourceTopicException); create it first", strings.Join(missing, ", "))
	}
	list := a.adm.ListEndOffsets
	if a.eos {
		list = a.adm.ListCommittedOffsets // the last stable offset
	}
	ends, err := settledOffsets(ctx, list, topics...)
	if err != nil {
		return fmt.Errorf("engine: listing end offsets of global tables' topics: %w", err)
	}
	gs := &globals{a: a, byTopic: map[string]*globalTopic{}, ready: make(chan struct{}), done: make(chan struct{})}
	consume := map[string]map[int32]kgo.Offset{}
	var sps []storePartition
	for _, g := range a.topo.Globals {
		gt := &globalTopic{g: g, data: a.db.Partition(g.Store.Name, globalDataPartition), parts: map[int32]*globalPart{}}
		wipe := false
		for _, pd := range details[g.Topic()].Partitions {
			gp := &globalPart{ckpt: a.db.Partition(g.Store.Name, pd.Partition)}
			from, ok, err := gp.ckpt.Checkpoint()
			if err != nil {
				return fmt.Errorf("engine: global store %s: %w", g.Store.Name, err)
			}
			end, eok := ends.Lookup(g.Topic(), pd.Partition)
			if !eok || end.Err != nil {
				return fmt.Errorf("engine: global store %s: no end offset for %s/%d: %v", g.Store.Name, g.Topic(), pd.Partition, end.Err)
			}
			if !ok || from > end.Offset {
				// No checkpoint (a first start, or a store of another
				// layout), or one past the topic's end (the topic was
				// recreated): the rows cannot be trusted.
				wipe = true
			}
			gp.next, gp.end = from, end.Offset
			gt.parts[pd.Partition] = gp
		}
		if wipe {
			a.log.Info("restoring global store from the start of its topic", "store", g.Store.Name, "topic", g.Topic())
			if err := gt.data.Wipe(); err != nil {
				return err
			}
			for _, gp := range gt.parts {
				if err := gp.ckpt.ClearCheckpoint(); err != nil {
					return err
				}
				gp.next = 0
			}
		}
		consume[g.Topic()] = map[int32]kgo.Offset{}
		for p, gp := range gt.parts {
			gp.from = gp.next
			gp.applied.Store(gp.next)
			consume[g.Topic()][p] = kgo.NewOffset().At(gp.next)
			sps = append(sps, storePartition{Store: g.Store.Name, Partition: p})
		}
		gs.tops = append(gs.tops, gt)
		gs.byTopic[g.Topic()] = gt
	}
	opts := append(a.clientOpts(),
		kgo.ConsumePartitions(consume),
		// Transaction markers take offsets: keep them so that the position
		// reaches the end offset.
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if a.eos {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	gs.opts = opts
	gs.restoring.Store(true)
	a.restores.Assign(sps)
	for _, gt := range gs.tops {
		for p, gp := range gt.parts {
			gp.entry = a.restores.Begin(storePartition{Store: gt.g.Store.Name, Partition: p}, gp.end-gp.next)
		}
	}
	a.globals = gs
	a.noteRestored()
	return nil
}

// awaitGlobals waits until the global stores are restored; false when ctx
// is done or stop closed first.
func (a *App) awaitGlobals(ctx context.Context, stop <-chan struct{}) bool {
	if a.globals == nil {
		return true
	}
	select {
	case <-a.globals.ready:
		return true
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
}

// globalTopics are the global tables' topics, sorted.
func (a *App) globalTopics() []string {
	topics := make([]string, 0, len(a.topo.Globals))
	for _, g := range a.topo.Globals {
		topics = append(topics, g.Topic())
	}
	sort.Strings(topics)
	return topics
}

// globalApplied is the next offset of topic/partition that the global
// reader has not applied yet; ok false when topic is no global table's or
// the reader has not started.
func (a *App) globalApplied(topic string, partition int32) (next int64, ok bool) {
	if a.globals == nil {
		return 0, false
	}
	gt := a.globals.byTopic[topic]
	if gt == nil {
		return 0, false
	}
	gp := gt.parts[partition]
	if gp == nil {
		return 0, false
	}
	return gp.applied.Load(), true
}

// globalsRestoring reports whether the global stores are still restoring.
func (a *App) globalsRestoring() bool { return a.globals != nil && a.globals.restoring.Load() }

// runGlobals starts the reader.
func (a *App) runGlobals() {
	if a.globals != nil {
		go a.globals.run(a.ctx)
	}
}

// stopGlobals waits for the reader to stop (a.ctx is canceled first).
func (a *App) stopGlobals() {
	if a.globals != nil {
		<-a.globals.done
	}
}

// globalPartitions returns a global store's rows for a query: none while
// restoring.
func (a *App) globalPartitions(st *topology.Store) []*state.Partition {
	if a.globals == nil || a.globals.restoring.Load() {
		return nil
	}
	return []*state.Partition{a.db.Partition(st.Name, globalDataPartition)}
}

// run applies the topics' records to the stores until ctx is done,
// checkpointing once restored and then every commit.interval.ms, and at
// the end.
func (gs *globals) run(ctx context.Context) {
	defer close(gs.done)
	defer gs.a.recovered("global stores")
	a := gs.a
	var err error
	if gs.cl, err = kgo.NewClient(gs.opts...); err != nil {
		a.fail(fmt.Errorf("engine: global tables' consumer: %w", err))
		return
	}
	defer gs.cl.Close()
	start := time.Now()
	for _, gt := range gs.tops {
		for _, gp := range gt.parts {
			if gp.next >= gp.end {
				gp.restored = true
				a.restores.Finish(gp.entry)
			}
		}
	}
	gs.maybeReady(start)
	lastCkpt := time.Now()
	for {
		pctx, cancel := context.WithTimeout(ctx, a.cfg.CommitInterval)
		fs := gs.cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil || fs.IsClientClosed() {
			break
		}
		fs.EachError(func(t string, p int32, err error) {
			if ctx.Err() == nil && pctx.Err() == nil {
				a.log.Warn("global table fetch", "topic", t, "partition", p, "error", err)
			}
		})
		var ferr error
		fs.EachPartition(func(ftp kgo.FetchTopicPartition) {
			gt := gs.byTopic[ftp.Topic]
			if gt == nil || len(ftp.Records) == 0 || ferr != nil {
				return
			}
			gp := gt.parts[ftp.Partition]
			ws := make([]state.Write, 0, len(ftp.Records))
			for _, r := range ftp.Records {
				gp.next = r.Offset + 1
				if r.Attrs.IsControl() {
					continue
				}
				if r.Key == nil {
					// KTableSource: a record with a null key cannot be
					// stored; it is skipped and counted.
					a.dropped.Add(1)
					continue
				}
				key, value, err := decodeWire(a.ctx, a.registry, gt.g.Source.KeyWire, gt.g.Source.ValueWire, r.Topic, r.Key, r.Value)
				if err != nil && wireUnavailable(err) {
					ferr = fmt.Errorf("engine: global store %s: %w", gt.g.Store.Name, &RecordError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Node: gt.g.Source.Name, Err: err})
					return
				}
				if err == nil {
					err = gt.check(key, value)
				}
				if err != nil {
					// The deserialization policy, as for a task's source
					// (a dead letter is logged only: the global consumer
					// writes nothing).
					re := &RecordError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Node: gt.g.Source.Name, Err: err}
					if a.cfg.DeserializationPolicy == config.PolicyFail {
						ferr = fmt.Errorf("engine: global store %s: %w", gt.g.Store.Name, re)
						return
					}
					a.dropped.Add(1)
					a.log.Warn("skipping record of a global table", "policy", a.cfg.DeserializationPolicy.String(), "error", re.Error())
					continue
				}
				ws = append(ws, state.Write{Key: key, Value: value, TS: r.Timestamp.UnixMilli()})
			}
			if err := gt.data.Apply(ws); err != nil {
				ferr = fmt.Errorf("engine: global store %s: %w", gt.g.Store.Name, err)
				return
			}
			gp.applied.Store(gp.next)
			if !gp.restored {
				a.restores.Advance(gp.entry, gp.next-gp.from)
				if gp.next >= gp.end {
					gp.restored = true
					a.restores.Finish(gp.entry)
				}
			}
		})
		if ferr != nil {
			a.fail(ferr)
			break
		}
		if gs.maybeReady(start) || !gs.restoring.Load() && time.Since(lastCkpt) >= a.cfg.CommitInterval {
			gs.checkpoint()
			lastCkpt = time.Now()
		}
	}
	if !gs.restoring.Load() {
		gs.checkpoint()
	}
}

// maybeReady closes ready once every partition is restored; it reports
// whether it did so now.
func (gs *globals) maybeReady(start time.Time) bool {
	if !gs.restoring.Load() {
		return false
	}
	for _, gt := range gs.tops {
		for _, gp := range gt.parts {
			if !gp.restored {
				return false
			}
		}
	}
	gs.checkpoint()
	gs.restoring.Store(false)
	close(gs.ready)
	gs.a.noteRestored()
	for _, gt := range gs.tops {
		gs.a.log.Info("restored global store", "store", gt.g.Store.Name, "topic", gt.g.Topic(), "took", time.Since(start).Round(time.Millisecond))
	}
	return true
}

// checkpoint records each partition's next offset (its rows are applied).
func (gs *globals) checkpoint() {
	for _, gt := range gs.tops {
		for p, gp := range gt.parts {
			if err := gp.ckpt.SetCheckpoint(gp.next); err != nil {
				gs.a.log.Warn("checkpointing global store", "store", gt.g.Store.Name, "partition", p, "error", err)
			}
		}
	}
}

// compileGlobalJoin compiles a stream-global-table join into s: the
// global store, the key mapper (a one-step OPERATION_SELECT_KEY bundle
// whose keys come back in the global table's key serde, or a native
// function) and the joiner (OPERATION_VALUE_JOIN, as a stream-table join's).
func compileGlobalJoin(t *topology.Topology, s *step, n *topology.Node) error {
	s.open = newJoinOp
	if s.table = t.Stores[n.GlobalStore]; s.table == nil || !s.table.Global || n.KeyMapper == nil || len(n.Predecessors) != 1 {
		return fmt.Errorf("engine: global join %s needs its global table's store, a key mapper and one predecessor", n.Name)
	}
	in := n.Predecessors[0]
	s.otherSerde = s.table.ValueSerde
	s.mapper = &step{node: n}
	if n.KeyMapper.Token != 0 {
		s.mapper.chain = []*topology.Node{n}
		md, err := readMetadata(n, n.KeyMapper)
		if err != nil {
			return err
		}
		s.mapper.steps = []*pb.Step{{Token: n.KeyMapper.Token, Operation: pb.Operation_OPERATION_SELECT_KEY, Node: n.Name, Metadata: md}}
		s.mapper.keysChange = true
		s.mapper.inKey, s.mapper.inValue = in.KeySerde, in.ValueSerde
		s.mapper.outKey, s.mapper.outValue = s.table.KeySerde, in.ValueSerde
	}
	if n.Fn.Token != 0 {
		st, err := joinerStep(n)
		if err != nil {
			return err
		}
		s.steps = []*pb.Step{st}
		s.chain = []*topology.Node{n}
		s.inKey, s.inValue = in.KeySerde, in.ValueSerde
		s.outKey, s.outValue = n.KeySerde, n.ValueSerde
	}
	return nil
}

// globalJoin is KStreamGlobalKTableJoin (KStreamKTableJoinProcessor with a
// key mapper): each stream record's mapped key is looked up in the global
// store as it is now, and the joiner joins the record's value with what
// it holds; the output keeps the record's key and timestamp. A record with
// a null value is dropped and counted, before its key is mapped (Kafka
// maps it and then drops it). A null mapped key drops the record
// (counted) in an inner join; a left join joins it with null (Kafka 4.1's
// KStreamKTableJoinProcessor#maybeDropRecord keeps a left join's record
// whose mapped key is null, KIP-962). An inner join drops a record whose
// mapped key the store does not hold (not counted). Host key mappers and
// joiners cross once per bundle each.
func (o *joinOp) globalJoin(ctx context.Context, recs []rec) ([]rec, error) {
	t, s := o.t, o.s
	left := s.node.Op == topology.OpGlobalLeftJoin
	in := make([]rec, 0, len(recs))
	for _, r := range recs {
		if r.value == nil {
			t.app.dropped.Add(1)
			continue
		}
		in = append(in, r)
	}
	if len(in) == 0 {
		return nil, nil
	}
	keys, mapped, err := o.mapGlobalKeys(ctx, in)
	if err != nil {
		return nil, err
	}
	part := t.app.db.Partition(s.table.Name, globalDataPartition)
	keep := make([]rec, 0, len(in))
	others := make([][]byte, 0, len(in))
	for i, r := range in {
		if !mapped[i] {
			continue // its key mapper failed, and the policy skipped it
		}
		var other []byte
		switch {
		case keys[i] == nil && left:
		case keys[i] == nil:
			t.app.dropped.Add(1) // "Skipping record due to null join key or value"
			continue
		default:
			v, _, err := part.Get(keys[i])
			if err != nil {
				return nil, recordError(r, s.node.Name, err)
			}
			if v == nil && !left {
				continue
			}
			other = v
		}
		keep, others = append(keep, r), append(others, other)
	}
	return o.joinWithOthers(ctx, keep, others) // join.go
}

// mapGlobalKeys runs a global join's key mapper over recs: keys[i] is
// record i's mapped key (nil: null), mapped[i] false when its mapper failed
// and the processing policy skipped the record.
func (o *joinOp) mapGlobalKeys(ctx context.Context, recs []rec) (keys [][]byte, mapped []bool, err error) {
	t, s := o.t, o.s
	keys, mapped = make([][]byte, len(recs)), make([]bool, len(recs))
	if f, ok := s.node.KeyMapper.Native.(topology.SelectKeyFunc); ok {
		for i, r := range recs {
			k, err := f(r.key, r.value)
			if err != nil {
				if err := t.recordFailed(r, s.node.Name, kindOf(err), err); err != nil {
					return nil, nil, err
				}
				continue
			}
			keys[i], mapped[i] = k, true
		}
		return keys, mapped, nil
	}
	bounds := t.bundleBounds(len(recs), func(i int) int { return len(recs[i].key) + len(recs[i].value) })
	for j := range len(bounds) - 1 {
		start, end := bounds[j], bounds[j+1]
		chunk := recs[start:end]
		out, res, fails, err := t.crossOnce(ctx, s.mapper, chunk)
		if err != nil {
			return nil, nil, err
		}
		if err := t.applyFailures(chunk, fails); err != nil {
			return nil, nil, err
		}
		o := 0
		for i, c := range res.OutputCounts {
			if c == 1 {
				keys[start+i], mapped[start+i] = out[o].key, true
				o++
			}
		}
	}
	return keys, mapped, nil
}
