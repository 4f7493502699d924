package engine

import (
	"fmt"
	"slices"

	"github.com/polystreams/polystreams/core/internal/topology"
	pb "github.com/polystreams/polystreams/proto/gen/go/polystreams/v1alpha1"
)

// step is a compiled node. The plan of a sub-topology is a DAG of steps
// rooted at its sources; a task pushes each batch through it, each step
// running as the operator its open makes (operator.go). A step is the
// same for every task of its plan; what changes as records pass is in the
// operators.
type step struct {
	node *topology.Node // the node; for a host chain its first node
	next []*step
	// open makes the step's operator in a task (operator.go); index is
	// the step's place in plan.steps and in each task's operators.
	open  opener
	index int
	// slice, when positive, bounds the records pushed through the step
	// (and everything downstream) at once: a hopping window aggregation's
	// (maxWindowUpdates).
	slice int

	// sourceOp
	keySerde, valueSerde string
	// sourceOp, sinkOp: the topic's Schema Registry serdes, decoded at
	// the source and encoded at the sink (wire.go); empty for none.
	keyWire, valueWire string
	// chainOp (and a fold, join or predicate that runs in a host: host.go)
	chain                            []*topology.Node
	steps                            []*pb.Step
	keysChange                       bool
	inKey, inValue, outKey, outValue string
	// countOp, aggregateOp, the windowed aggregations, the table
	// operators: the store the step owns
	store *topology.Store
	// joinOp: the table's store it reads (its table source owns it);
	// the foreign-key join's steps: the store they read or write beside
	// its owner (never cached)
	table *topology.Store
	// joinOp, tableJoinOp: the table operators (filter, filter_not,
	// map_values) that a value read from table passes through, upstream
	// first (the joined table's value getter; see getter.go), and the
	// serde of the values they make (table's when there are none).
	getters    []*step
	otherSerde string
	// joinOp of a global table: the key mapper, a one-step host chain
	// (no steps when it is native); see global.go.
	mapper *step
	// aggregateOp, the windowed aggregations, tableFoldOp: whether the
	// fold runs in the host (else native).
	hostFold bool
	// sinkOp: the full topic name (internal topics prefixed).
	topic string
	// sinkOp: a foreign-key join's response topic, written to the
	// partition each response names.
	byPartition bool
	// sourceOp, sinkOp: records carry changes (a grouped table's
	// repartition topic).
	change bool
	// cached: the step's updates wait in the record cache (cache.go): a
	// stateful step with a successor.
	cached bool
	// branchOp: each host predicate's one-step filter chain (nil for a
	// native predicate), in branch order; next are the branches, in order,
	// the default one last.
	preds []*step
	// sinkOp: the host chains of its TopicNameExtractor and
	// StreamPartitioner (route.go); nil for none or a Go function.
	extractor, partitioner *step
	// stats: the step's counters (stats.go); nil with metrics off.
	stats *stepStats
	// owner: for the aggregation steps of a cogroup after the first, which
	// share its store, the first: its record cache holds their updates
	// too (one caching store in Kafka Streams) and a windowed one's state
	// is theirs.
	owner *step
}

// plan is the compiled form of one sub-topology.
type plan struct {
	id      int
	sources map[string]*step // by full topic name
	// steps are the plan's steps, by index.
	steps  []*step
	stores []*topology.Store
	// cached are the caching steps, upstream ones first.
	cached []*step
	// host: some step crosses to a host.
	host bool
}

// isHost reports whether n is a stateless operator run by a host; those
// fuse into chains.
func isHost(n *topology.Node) bool {
	_, stateless := hostOps[n.Op]
	return stateless && n.Type == topology.Processor && n.Fn != nil && n.Fn.Token != 0
}

var hostOps = map[topology.Op]pb.Operation{
	topology.OpMapValues:            pb.Operation_OPERATION_MAP_VALUES,
	topology.OpFilter:               pb.Operation_OPERATION_FILTER,
	topology.OpFilterNot:            pb.Operation_OPERATION_FILTER_NOT,
	topology.OpFlatMapValues:        pb.Operation_OPERATION_FLAT_MAP_VALUES,
	topology.OpMap:                  pb.Operation_OPERATION_MAP,
	topology.OpSelectKey:            pb.Operation_OPERATION_SELECT_KEY,
	topology.OpPeek:                 pb.Operation_OPERATION_PEEK,
	topology.OpForeach:              pb.Operation_OPERATION_FOREACH,
	topology.OpFlatMap:              pb.Operation_OPERATION_FLAT_MAP,
	topology.OpPrint:                pb.Operation_OPERATION_FOREACH,
	topology.OpMapValuesWithKey:     pb.Operation_OPERATION_MAP_VALUES_WITH_KEY,
	topology.OpFlatMapValuesWithKey: pb.Operation_OPERATION_FLAT_MAP_VALUES_WITH_KEY,
}

// tableOps are the table operators that run one function per value, and
// the host operation of each.
var tableOps = map[topology.Op]pb.Operation{
	topology.OpTableFilter:    pb.Operation_OPERATION_FILTER,
	topology.OpTableFilterNot: pb.Operation_OPERATION_FILTER_NOT,
	topology.OpTableMapValues: pb.Operation_OPERATION_MAP_VALUES,
	topology.OpTableSelect:    pb.Operation_OPERATION_MAP,
}

// compile builds the plans of every sub-topology. fullTopic maps a node's
// topic to the topic in Kafka (internal topics get the application.id
// prefix); cache says whether the record cache is on, c.programs whether
// the host runs fold c.programs.
func compile(t *topology.Topology, fullTopic func(name string, internal bool) string, cache, programs bool) ([]*plan, error) {
	var plans []*plan
	for _, sub := range t.Subtopologies {
		c := &compiler{t: t, fullTopic: fullTopic, cache: cache, programs: programs,
			p: &plan{id: sub.ID, sources: map[string]*step{}}, seen: map[*topology.Node]*step{}, aggregations: map[*topology.Store]*step{}}
		for _, src := range sub.Sources {
			s, err := c.build(src)
			if err != nil {
				return nil, err
			}
			for _, topic := range src.Topics {
				c.p.sources[fullTopic(topic, src.Internal)] = s
			}
		}
		slices.Reverse(c.p.cached)
		plans = append(plans, c.p)
	}
	return plans, nil
}

// compiler builds one sub-topology's plan.
type compiler struct {
	t               *topology.Topology
	fullTopic       func(name string, internal bool) string
	cache, programs bool
	p               *plan
	seen            map[*topology.Node]*step
	aggregations    map[*topology.Store]*step // a store's first aggregation step
}

// build compiles n's step and, once, the steps after it.
func (c *compiler) build(n *topology.Node) (*step, error) {
	if s, ok := c.seen[n]; ok {
		return s, nil
	}
	s := &step{node: n, index: len(c.p.steps)}
	c.seen[n] = s
	c.p.steps = append(c.p.steps, s)
	last, err := c.operator(s, n)
	if err != nil {
		return nil, err
	}
	if s.store != nil && n.Op == topology.OpAggregate {
		if first := c.aggregations[s.store]; first != nil {
			s.owner = first
		} else {
			c.aggregations[s.store] = s
		}
	}
	for _, succ := range last.Successors {
		next, err := c.build(succ)
		if err != nil {
			return nil, err
		}
		s.next = append(s.next, next)
	}
	// A window that emits on close forwards its final result at
	// once, past the cache (Kafka Streams' TimestampedTupleForwarder
	// without a cache flush listener).
	emitsOnClose := n.Windows != nil && n.Op != topology.OpSuppress && n.Windows.EmitOnClose
	if c.cache && s.store != nil && len(s.next) > 0 && n.Op != topology.OpSuppress && !feedsTableJoin(s) && !emitsOnClose {
		// Appended after its successors: reversed in compile, upstream first.
		s.cached = true
		if s.owner == nil {
			c.p.cached = append(c.p.cached, s)
		}
	}
	if len(s.steps) > 0 || slices.ContainsFunc(s.preds, func(p *step) bool { return p != nil }) || s.getterHost() || s.extractor != nil || s.partitioner != nil {
		c.p.host = true
	}
	return s, nil
}

// useStore gives s n's store, when it has one.
func (c *compiler) useStore(s *step, n *topology.Node) {
	if len(n.Stores) == 1 && c.t.Stores[n.Stores[0]] != nil {
		s.store = c.t.Stores[n.Stores[0]]
		if !slices.Contains(c.p.stores, s.store) {
			// A cogroup's aggregation nodes share theirs.
			c.p.stores = append(c.p.stores, s.store)
		}
	}
}

// operator sets what s runs for n. It answers the last node s covers (a
// fused run of host operators covers several).
func (c *compiler) operator(s *step, n *topology.Node) (*topology.Node, error) {
	t, p := c.t, c.p
	switch {
	case n.Op == topology.OpCogroupMerge:
		// KTablePassThrough: its aggregation nodes' updates.
		s.open = newPassOp
	case n.Op == topology.OpProcess || n.Op == topology.OpProcessValues || n.Op == topology.OpTableTransformValues:
		return n, c.process(s, n)
	case n.FK != nil && n.Type == topology.Processor:
		return n, compileFK(t, p, s, n)
	case n.Windows != nil && n.Op != topology.OpSuppress:
		return n, c.windowed(s, n)
	case n.Op == topology.OpJoinWindow || n.Op == topology.OpStreamJoin:
		return n, compileStreamJoin(t, p, s)
	case n.Op == topology.OpSuppress:
		s.open = newSuppressOp
		if c.useStore(s, n); s.store == nil {
			return nil, fmt.Errorf("engine: suppression %s has no store", n.Name)
		}
	case n.Type == topology.Source:
		s.keySerde, s.valueSerde, s.change = n.KeySerde, n.ValueSerde, n.Change
		s.keyWire, s.valueWire = n.KeyWire, n.ValueWire
		s.open = newSourceOp
		if n.Change {
			s.valueSerde = "" // the change's values are validated downstream
		}
	case n.Type == topology.Sink:
		s.topic, s.change = c.fullTopic(n.Topic, n.Internal), n.Change
		s.keyWire, s.valueWire = n.KeyWire, n.ValueWire
		s.open = newSinkOp
		s.byPartition = n.FK != nil
		s.extractor = routeStep(n, n.TopicExtractor, pb.Operation_OPERATION_TOPIC_NAME)
		s.partitioner = routeStep(n, n.Partitioner, pb.Operation_OPERATION_STREAM_PARTITION)
	case n.Op == topology.OpTableSource:
		s.open = newTableSourceOp
		c.useStore(s, n)
	case tableOps[n.Op] != 0:
		s.open = newTableTransformOp
		if n.Op == topology.OpTableSelect {
			s.open = newTableSelectOp
		}
		c.useStore(s, n)
		if len(n.Predecessors) != 1 {
			return nil, fmt.Errorf("engine: node %s has %d predecessors; table operators need one", n.Name, len(n.Predecessors))
		}
		tableFnStep(s, n)
	case isHost(n):
		return c.hostChain(s, n)
	case n.Op == topology.OpReduce || n.Op == topology.OpAggregate ||
		n.Op == topology.OpTableCount || n.Op == topology.OpTableReduce || n.Op == topology.OpTableAggregate:
		return n, c.fold(s, n)
	case isTableJoin(n.Op):
		return n, compileTableJoin(t, s, n)
	case n.Op == topology.OpTableMerge:
		s.open = newTableMergeOp
		c.useStore(s, n)
	case n.Op == topology.OpGlobalJoin || n.Op == topology.OpGlobalLeftJoin:
		if err := compileGlobalJoin(t, s, n); err != nil {
			return nil, err
		}
		p.host = p.host || len(s.mapper.steps) > 0
	case n.Fn != nil && n.Fn.Native != nil && n.Op != topology.OpJoin && n.Op != topology.OpLeftJoin:
		// A join's native joiner runs in joinOp, beside its table lookup.
		s.open = newNativeOp
	case n.Op == topology.OpRepartitionFilter && n.KeepNullKeys:
		s.open = newPassOp // a join downstream joins null keys with null
	case n.Op == topology.OpRepartitionFilter:
		s.open = newDropNullKeyOp
	case n.Op == topology.OpCount:
		s.open = newCountOp
		if c.useStore(s, n); s.store == nil {
			return nil, fmt.Errorf("engine: count node %s has no store", n.Name)
		}
	case n.Op == topology.OpToStream || n.Op == topology.OpMerge || n.Op == topology.OpBranchChild:
		s.open = newPassOp
	case n.Op == topology.OpJoin || n.Op == topology.OpLeftJoin:
		return n, c.lookupJoin(s, n)
	case n.Op == topology.OpBranch:
		return n, c.branch(s, n)
	default:
		return nil, fmt.Errorf("engine: node %s (op %d) has nothing to run", n.Name, n.Op)
	}
	return n, nil
}

// process sets s to run a processor (process, processValues) or a
// table's transformValues: in Go, or in the host over the processor
// crossing, with the stores it declares.
func (c *compiler) process(s *step, n *topology.Node) error {
	t, p := c.t, c.p
	s.open = newProcessOp
	stores := n.Stores
	if n.Op == topology.OpTableTransformValues {
		// The transformer runs as a fixed-key processor
		// (table_transform.go) over the transformer's stores;
		// the node's own store is the step's.
		s.open, stores = newTableTransformValuesOp, n.TransformerStores()
		if n.TableStore != "" {
			s.store = t.Stores[n.TableStore]
			p.stores = append(p.stores, s.store)
		}
		if len(n.Predecessors) != 1 {
			return fmt.Errorf("engine: node %s has %d predecessors; table operators need one", n.Name, len(n.Predecessors))
		}
	}
	if _, ok := n.Fn.Native.(topology.NewProcessorFunc); !ok {
		op := pb.Operation_OPERATION_PROCESS
		if n.Op != topology.OpProcess {
			op = pb.Operation_OPERATION_PROCESS_VALUES
		}
		var children []string
		for _, c := range n.Successors {
			children = append(children, c.Name)
		}
		s.steps = []*pb.Step{{Token: n.Fn.Token, Operation: op, Node: n.Name, Stores: slices.Clone(stores), Children: children, Metadata: pb.Metadata_METADATA_WRITE}}
		s.chain = []*topology.Node{n}
		s.inKey, s.inValue = n.Predecessors[0].KeySerde, n.Predecessors[0].ValueSerde
		s.outKey, s.outValue = n.KeySerde, n.ValueSerde
		if n.Op != topology.OpTableTransformValues {
			s.open = newHostProcessOp
		}
	}
	for _, name := range stores {
		st := t.Stores[name]
		if st == nil {
			return fmt.Errorf("engine: node %s names store %q, which the topology lacks", n.Name, name)
		}
		if st.ChangelogTopic == "" {
			return fmt.Errorf("engine: store %q of node %s has logging disabled, which this engine does not run yet", name, n.Name)
		}
		if ps := st.Processor; ps != nil && ps.RetainDuplicates {
			return fmt.Errorf("engine: window store %q of node %s retains duplicates, which this engine does not run yet", name, n.Name)
		}
		if !slices.Contains(p.stores, st) {
			p.stores = append(p.stores, st)
		}
	}
	return nil
}

// windowed sets s to run a windowed aggregation: time, session or
// sliding windows, folded in Go or by the host.
func (c *compiler) windowed(s *step, n *topology.Node) error {
	switch n.Windows.Kind {
	case topology.SessionWindows:
		s.open = newSessionWindowOp
	case topology.SlidingWindows:
		s.open = newSlidingWindowOp
	default:
		s.open = newTimeWindowOp
	}
	if c.useStore(s, n); s.store == nil || len(n.Predecessors) != 1 {
		return fmt.Errorf("engine: node %s needs one store and one predecessor", n.Name)
	}
	if per := int(n.Windows.PerRecord()); per > 1 {
		s.slice = max(1, maxWindowUpdates/per)
	}
	s.hostFold = n.Fn != nil && n.Fn.Token != 0
	if s.hostFold && n.Windows.Kind != topology.TimeWindows && !c.programs {
		// The server refuses these; a hand-made topology may not.
		return fmt.Errorf("engine: node %s: %s with host functions need a host with the fold_programs feature", n.Name, n.Windows.Kind)
	}
	if s.hostFold {
		// Groups are keyed by the inner key: (key, window)
		// pairs for time windows, a key's program for sessions
		// and sliding windows.
		s.steps = []*pb.Step{foldStep(n)}
		s.inKey, s.inValue = n.Predecessors[0].KeySerde, n.Predecessors[0].ValueSerde
		s.outKey, s.outValue = n.Predecessors[0].KeySerde, s.store.ValueSerde
	}
	return nil
}

// hostChain sets s to run n and the linear run of host operators after
// it as one crossing; it answers the last node of the run.
func (c *compiler) hostChain(s *step, n *topology.Node) (*topology.Node, error) {
	last := n
	s.open = newChainOp
	s.chain = []*topology.Node{n}
	// Fuse a linear run of host operators into one crossing.
	for len(last.Successors) == 1 && isHost(last.Successors[0]) && len(last.Successors[0].Predecessors) == 1 {
		last = last.Successors[0]
		s.chain = append(s.chain, last)
	}
	if len(n.Predecessors) != 1 {
		return nil, fmt.Errorf("engine: node %s has %d predecessors; host operators need one", n.Name, len(n.Predecessors))
	}
	s.inKey, s.inValue = n.Predecessors[0].KeySerde, n.Predecessors[0].ValueSerde
	s.outKey, s.outValue = last.KeySerde, last.ValueSerde
	for _, node := range s.chain {
		op, ok := hostOps[node.Op]
		if !ok {
			return nil, fmt.Errorf("engine: node %s: operation %d cannot run in a host", node.Name, node.Op)
		}
		if node.Op == topology.OpMap || node.Op == topology.OpSelectKey || node.Op == topology.OpFlatMap {
			s.keysChange = true
		}
		s.steps = append(s.steps, &pb.Step{Token: node.Fn.Token, Operation: op, Node: node.Name, Metadata: stepMetadata(node.Fn)})
	}
	return last, nil
}

// fold sets s to run a reduce or aggregate of a grouped stream or table.
func (c *compiler) fold(s *step, n *topology.Node) error {
	s.open = newAggregateOp
	if n.Op != topology.OpReduce && n.Op != topology.OpAggregate {
		s.open = newTableFoldOp
	}
	if c.useStore(s, n); s.store == nil || len(n.Predecessors) != 1 {
		return fmt.Errorf("engine: node %s needs one store and one predecessor", n.Name)
	}
	s.hostFold = n.Fn != nil && n.Fn.Token != 0
	if s.hostFold {
		s.steps = []*pb.Step{foldStep(n)}
		s.inKey, s.inValue = n.Predecessors[0].KeySerde, n.Predecessors[0].ValueSerde
		s.outKey, s.outValue = n.KeySerde, s.store.ValueSerde
	}
	return nil
}

// lookupJoin sets s to run a stream-table join: a lookup in the
// table's store, and the joiner in Go or the host.
func (c *compiler) lookupJoin(s *step, n *topology.Node) error {
	t := c.t
	s.open = newJoinOp
	// The table's store: its source's step owns it (s.store
	// would make the join a stateful, cached step).
	if s.table = t.Stores[n.Stores[0]]; s.table == nil || len(n.Predecessors) != 1 {
		return fmt.Errorf("engine: join %s needs its table's store and one predecessor", n.Name)
	}
	if err := compileGetter(s, n); err != nil {
		return err
	}
	if n.Fn.Token != 0 {
		s.steps = []*pb.Step{{Token: n.Fn.Token, Operation: pb.Operation_OPERATION_VALUE_JOIN, Node: n.Name}}
		s.chain = []*topology.Node{n}
		s.inKey, s.inValue = n.Predecessors[0].KeySerde, n.Predecessors[0].ValueSerde
		s.outKey, s.outValue = n.KeySerde, n.ValueSerde
	}
	return nil
}

// branch sets s to run a split: one predicate step per branch.
func (c *compiler) branch(s *step, n *topology.Node) error {
	s.open = newBranchOp
	if k := len(n.Successors) - len(n.Branches); k != 0 && k != 1 {
		return fmt.Errorf("engine: split %s has %d predicates and %d branches", n.Name, len(n.Branches), len(n.Successors))
	}
	for _, pred := range n.Branches {
		if pred.Token == 0 {
			s.preds = append(s.preds, nil)
			continue
		}
		s.preds = append(s.preds, &step{
			node: n, chain: []*topology.Node{n},
			steps: []*pb.Step{{Token: pred.Token, Operation: pb.Operation_OPERATION_FILTER, Node: n.Name}},
			inKey: n.KeySerde, inValue: n.ValueSerde, outKey: n.KeySerde, outValue: n.ValueSerde,
		})
	}
	return nil
}

// foldStep is the host step of a fold: the reducer or aggregator, with the
// initializer (aggregate) and, for a grouped table, the subtractor.
func foldStep(n *topology.Node) *pb.Step {
	st := &pb.Step{Token: n.Fn.Token, Operation: pb.Operation_OPERATION_REDUCE, Node: n.Name}
	if n.Op == topology.OpAggregate || n.Op == topology.OpTableAggregate {
		st.Operation = pb.Operation_OPERATION_AGGREGATE
		st.InitializerToken = n.Init.Token
	}
	if n.Sub != nil {
		st.SubtractorToken = n.Sub.Token
	}
	if n.Merger != nil {
		st.MergerToken = n.Merger.Token
	}
	return st
}

// stepMetadata is the record metadata a step's function asked for when it
// was registered.
func stepMetadata(f *topology.Function) pb.Metadata {
	if f == nil {
		return pb.Metadata_METADATA_UNSPECIFIED
	}
	switch f.Metadata {
	case topology.MetadataRead:
		return pb.Metadata_METADATA_READ
	case topology.MetadataWrite:
		return pb.Metadata_METADATA_WRITE
	}
	return pb.Metadata_METADATA_UNSPECIFIED
}
