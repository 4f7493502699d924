package engine

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/polystreams/polystreams/core/internal/group"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// Interactive queries across instances (docs/design/interactive-queries.md).
// Each instance with an application.server names it in its JoinGroup user
// data; the group's leader hands every such instance each endpoint's active
// partitions and standby tasks (group.Host), which answer Kafka Streams'
// queryMetadataForKey and streamsMetadataForStore here.

// ErrRebalancing: the store partition a query needs is not where the last
// assignment put it, or is still restoring: the group is moving it. The
// query may be retried.
var ErrRebalancing = errors.New("rebalancing")

// HostInfo is an instance's application.server.
type HostInfo struct {
	Host string
	Port int
}

func (h HostInfo) String() string { return net.JoinHostPort(h.Host, strconv.Itoa(h.Port)) }

func hostInfo(endpoint string) HostInfo {
	host, port, _ := net.SplitHostPort(endpoint)
	n, _ := strconv.Atoi(port)
	return HostInfo{Host: host, Port: n}
}

// KeyQueryMetadata is where a key of a store lives (Kafka Streams'
// KeyQueryMetadata): Active is the zero HostInfo when no instance holds the
// key's partition (KeyQueryMetadata.NOT_AVAILABLE).
type KeyQueryMetadata struct {
	Active    HostInfo
	Standbys  []HostInfo
	Partition int32
}

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// StreamsMetadata is one instance of the application (Kafka Streams'
// StreamsMetadata).
type StreamsMetadata struct {
	Host                   HostInfo
	StateStores            []string
	TopicPartitions        []TopicPartition
	StandbyStateStores     []string
	StandbyTopicPartitions []TopicPartition
}

// ApplicationID is the application's application.id.
func (a *App) ApplicationID() string { return a.cfg.ApplicationID }

// PartitionCount is the number of partitions of store (those of its
// sub-topology's source topics) in the last assignment; 0 when not known.
func (a *App) PartitionCount(store string) int32 {
	_, p, topics, err := a.storePlan(store)
	if err != nil || p == nil {
		return 0
	}
	hosts := a.balancer.Hosts()
	for _, t := range topics {
		if n := partitionCount(hosts, t); n > 0 {
			return n
		}
	}
	return 0
}

// ApplicationServer is this instance's application.server ("" for none).
func (a *App) ApplicationServer() string { return a.cfg.ApplicationServer }

// storePlan returns the sub-topology whose tasks hold store, and its
// source topics (full names), sorted.
func (a *App) storePlan(store string) (*topology.Store, *plan, []string, error) {
	st, ok := a.topo.Stores[store]
	if !ok {
		return nil, nil, nil, fmt.Errorf("engine: store %q does not exist", store)
	}
	if st.Global {
		return st, nil, nil, nil
	}
	for _, p := range a.plans {
		for _, s := range p.stores {
			if s.Name == store {
				return st, p, a.planTopics(p), nil
			}
		}
	}
	return nil, nil, nil, fmt.Errorf("engine: store %q belongs to no sub-topology", store)
}

// partitionCount is how many partitions topic has in hosts' assignment.
func partitionCount(hosts []group.Host, topic string) int32 {
	var n int32
	for _, h := range hosts {
		for _, p := range h.Partitions[topic] {
			n = max(n, p+1)
		}
	}
	return n
}

// KeyPartition is the partition of store's source topic that key
// (serialized with the store's key serde; a window store's inner key)
// lives in: Kafka's default partitioner, murmur2 of the key modulo the
// topic's partitions, as the records reached the store. The partition
// count is the last assignment's, known only with an application.server.
func (a *App) KeyPartition(store string, key []byte) (int32, error) {
	_, p, topics, err := a.storePlan(store)
	if err != nil {
		return 0, err
	}
	if p == nil {
		return -1, nil // a global store: every instance holds every key
	}
	return keyPartition(a.balancer.Hosts(), topics, key)
}

func keyPartition(hosts []group.Host, topics []string, key []byte) (int32, error) {
	for _, t := range topics {
		if n := partitionCount(hosts, t); n > 0 {
			return int32(kgo.StickyKeyPartitioner(nil).ForTopic(t).Partition(&kgo.Record{Key: key}, int(n))), nil
		}
	}
	return 0, fmt.Errorf("engine: the partition count of %v is not known yet (no assignment): %w", topics, ErrRebalancing)
}

// QueryMetadataForKey is Kafka Streams' queryMetadataForKey: the instance
// holding store's key active, those holding it as standbys, and the key's
// partition. A global store's key is held by this instance, partition -1.
func (a *App) QueryMetadataForKey(store string, key []byte) (KeyQueryMetadata, error) {
	_, p, topics, err := a.storePlan(store)
	if err != nil {
		return KeyQueryMetadata{}, err
	}
	if p == nil {
		return KeyQueryMetadata{Active: hostInfo(a.cfg.ApplicationServer), Partition: -1}, nil
	}
	hosts := a.balancer.Hosts()
	part, err := keyPartition(hosts, topics, key)
	if err != nil {
		return KeyQueryMetadata{}, err
	}
	md := KeyQueryMetadata{Partition: part}
	for _, h := range hosts {
		if slices.ContainsFunc(topics, func(t string) bool { return slices.Contains(h.Partitions[t], part) }) {
			md.Active = hostInfo(h.Endpoint)
		}
		if slices.Contains(h.Standby, part) {
			md.Standbys = append(md.Standbys, hostInfo(h.Endpoint))
		}
	}
	return md, nil
}

// AllMetadata is Kafka Streams' metadataForAllStreamsClients (store
// empty) or streamsMetadataForStore(store): the instances (with an
// application.server) of the last assignment, in endpoint order, and what
// each holds. A global store is on every instance.
func (a *App) AllMetadata(store string) ([]StreamsMetadata, error) {
	var want *topology.Store
	if store != "" {
		st, _, _, err := a.storePlan(store)
		if err != nil {
			return nil, err
		}
		want = st
	}
	var globals []string
	for _, st := range a.topo.Stores {
		if st.Global {
			globals = append(globals, st.Name)
		}
	}
	slices.Sort(globals)
	var out []StreamsMetadata
	for _, h := range a.balancer.Hosts() {
		md := StreamsMetadata{Host: hostInfo(h.Endpoint), StateStores: slices.Clone(globals)}
		for _, p := range a.plans {
			var active, standby []TopicPartition
			for _, t := range a.planTopics(p) {
				for _, n := range h.Partitions[t] {
					active = append(active, TopicPartition{t, n})
				}
				count := partitionCount(a.balancer.Hosts(), t)
				for _, n := range h.Standby {
					if n < count {
						standby = append(standby, TopicPartition{t, n})
					}
				}
			}
			md.TopicPartitions = append(md.TopicPartitions, active...)
			md.StandbyTopicPartitions = append(md.StandbyTopicPartitions, standby...)
			for _, s := range p.stores {
				if len(active) > 0 {
					md.StateStores = append(md.StateStores, s.Name)
				}
				if len(standby) > 0 {
					md.StandbyStateStores = append(md.StandbyStateStores, s.Name)
				}
			}
		}
		slices.Sort(md.StateStores)
		slices.Sort(md.StandbyStateStores)
		sortTopicPartitions(md.TopicPartitions)
		sortTopicPartitions(md.StandbyTopicPartitions)
		if want != nil && !slices.Contains(md.StateStores, want.Name) && !slices.Contains(md.StandbyStateStores, want.Name) {
			continue
		}
		out = append(out, md)
	}
	return out, nil
}

func sortTopicPartitions(tps []TopicPartition) {
	slices.SortFunc(tps, func(x, y TopicPartition) int {
		if x.Topic != y.Topic {
			if x.Topic < y.Topic {
				return -1
			}
			return 1
		}
		return int(x.Partition - y.Partition)
	})
}

// QueryPartitions returns the partitions of store this instance can answer
// from: those of its active tasks (restored), and, when stale is set, those
// it keeps as standbys. Safe for concurrent use with processing.
func (a *App) QueryPartitions(store string, stale bool) (active, standby map[int32]*state.Partition, err error) {
	parts, err := a.StorePartitions(store)
	if err != nil {
		return nil, nil, err
	}
	active = map[int32]*state.Partition{}
	for _, p := range parts {
		active[p.Number] = p
	}
	standby = map[int32]*state.Partition{}
	if !stale || a.topo.Stores[store].Global {
		return active, standby, nil
	}
	a.mu.Lock()
	s := a.standby
	a.mu.Unlock()
	if s != nil {
		for _, sp := range s.parts {
			if sp.Store == store {
				if _, ok := active[sp.Partition]; !ok {
					standby[sp.Partition] = a.db.Partition(store, sp.Partition)
				}
			}
		}
	}
	return active, standby, nil
}
