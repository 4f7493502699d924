package streams

import (
	"fmt"
	"strconv"

	"github.com/polystreams/polystreams/core/internal/engine"
	"github.com/polystreams/polystreams/core/internal/state"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// Interactive queries (Kafka Streams' KafkaStreams.store and its
// metadata). A Go application embeds its engine: as in Kafka Streams, it
// answers from its own store partitions, and the metadata says which
// instance (by application.server) holds a key, for the application's own
// RPC to reach (docs/design/interactive-queries.md). Keys are serialized
// with the store's key serde.

// ErrRebalancing: the store partition a query needs is not active on this
// instance (nor, with EnableStaleStores, a standby here), or still
// restoring: it is elsewhere, or moving. Retry, or ask the instance the
// metadata names.
var ErrRebalancing = engine.ErrRebalancing

// HostInfo is an instance's application.server (Kafka Streams' HostInfo).
type HostInfo struct {
	Host string
	Port int
}

func (h HostInfo) String() string { return h.Host + ":" + strconv.Itoa(h.Port) }

// KeyQueryMetadata is where a key lives (Kafka Streams' KeyQueryMetadata).
// ActiveHost is the zero HostInfo while no instance holds the key's
// partition (NOT_AVAILABLE).
type KeyQueryMetadata struct {
	ActiveHost   HostInfo
	StandbyHosts []HostInfo
	// Partition: murmur2 of the key modulo the partitions of the store's
	// source topic; -1 for a global store.
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
	HostInfo               HostInfo
	StateStoreNames        []string
	TopicPartitions        []TopicPartition
	StandbyStateStoreNames []string
	StandbyTopicPartitions []TopicPartition
}

// StoreQueryParameters qualify a query (Kafka Streams'
// StoreQueryParameters).
type StoreQueryParameters struct {
	// EnableStaleStores lets a standby copy on this instance answer.
	EnableStaleStores bool
}

// KeyQueryResult answers Get (an IQv2 KeyQuery result).
type KeyQueryResult struct {
	// Value is nil when the store holds none for the key.
	Value []byte
	// Timestamp is that of the record that last wrote Value.
	Timestamp int64
	// Partition is the key's partition (-1 when this instance has no
	// application.server and looked in every partition it holds).
	Partition int32
	// FromStandby: a standby copy answered; it may lag the active one.
	FromStandby bool
}

func hostOf(h engine.HostInfo) HostInfo { return HostInfo{Host: h.Host, Port: h.Port} }

// QueryMetadataForKey returns which instance holds key of store active,
// which hold it as standbys, and its partition. It needs application.server
// (Properties) on the instances; it comes with the group's assignment.
func (a *App) QueryMetadataForKey(store string, key []byte) (KeyQueryMetadata, error) {
	md, err := a.rt.QueryMetadataForKey(store, key)
	if err != nil {
		return KeyQueryMetadata{}, fmt.Errorf("streams: QueryMetadataForKey: %w", err)
	}
	out := KeyQueryMetadata{ActiveHost: hostOf(md.Active), Partition: md.Partition}
	for _, h := range md.Standbys {
		out.StandbyHosts = append(out.StandbyHosts, hostOf(h))
	}
	return out, nil
}

// StreamsMetadataForStore returns the instances holding store, active or
// standby.
func (a *App) StreamsMetadataForStore(store string) ([]StreamsMetadata, error) {
	return a.streamsMetadata(store)
}

// MetadataForAllStreamsClients returns every instance of the application
// that has an application.server.
func (a *App) MetadataForAllStreamsClients() ([]StreamsMetadata, error) {
	return a.streamsMetadata("")
}

func (a *App) streamsMetadata(store string) ([]StreamsMetadata, error) {
	mds, err := a.rt.AllMetadata(store)
	if err != nil {
		return nil, fmt.Errorf("streams: streams metadata: %w", err)
	}
	tps := func(in []engine.TopicPartition) []TopicPartition {
		var out []TopicPartition
		for _, tp := range in {
			out = append(out, TopicPartition(tp))
		}
		return out
	}
	var out []StreamsMetadata
	for _, md := range mds {
		out = append(out, StreamsMetadata{HostInfo: hostOf(md.Host), StateStoreNames: md.StateStores, TopicPartitions: tps(md.TopicPartitions),
			StandbyStateStoreNames: md.StandbyStateStores, StandbyTopicPartitions: tps(md.StandbyTopicPartitions)})
	}
	return out, nil
}

// Get reads key of the key-value store named store from this instance:
// from the active partition holding the key, or, with EnableStaleStores,
// from a standby copy here. A key held elsewhere, or on a partition that is
// moving or restoring, fails with an error wrapping ErrRebalancing that
// names store, key and partition. Safe for concurrent use while the
// application runs.
func (a *App) Get(store string, key []byte, p StoreQueryParameters) (KeyQueryResult, error) {
	if st := a.topo.Stores[store]; st != nil && st.Kind == topology.StoreVersioned {
		return KeyQueryResult{}, fmt.Errorf("streams: Get: store %q is a versioned store: read it with GetVersioned: %w", store, ErrInvalid)
	}
	active, standby, err := a.rt.QueryPartitions(store, p.EnableStaleStores)
	if err != nil {
		return KeyQueryResult{}, fmt.Errorf("streams: Get: %w", err)
	}
	if a.rt.ApplicationServer() == "" {
		// One instance's view: every partition it holds.
		for _, part := range active {
			if v, ts, err := part.Get(key); err != nil || v != nil {
				return KeyQueryResult{Value: v, Timestamp: ts, Partition: part.Number}, err
			}
		}
		return KeyQueryResult{Partition: -1}, nil
	}
	n, err := a.rt.KeyPartition(store, key)
	if err != nil {
		return KeyQueryResult{}, fmt.Errorf("streams: Get: store %q key %q: %w", store, key, err)
	}
	var part *state.Partition
	fromStandby := false
	switch {
	case n < 0: // a global store
		for _, gp := range active {
			part = gp
		}
	case active[n] != nil:
		part = active[n]
	case standby[n] != nil:
		part, fromStandby = standby[n], true
	}
	if part == nil {
		return KeyQueryResult{}, fmt.Errorf("streams: Get: store %q key %q (partition %d) is not held here (application.server %s) now: %w",
			store, key, n, a.rt.ApplicationServer(), ErrRebalancing)
	}
	v, ts, err := part.Get(key)
	if err != nil {
		return KeyQueryResult{}, fmt.Errorf("streams: Get: store %q partition %d: %w", store, part.Number, err)
	}
	return KeyQueryResult{Value: v, Timestamp: ts, Partition: n, FromStandby: fromStandby}, nil
}

// VersionedRecord is one version of a versioned store's value (Kafka
// Streams' VersionedRecord): valid from Timestamp until ValidTo (exclusive;
// absent, HasValidTo false, for the latest version).
type VersionedRecord struct {
	Value      []byte
	Timestamp  int64
	ValidTo    int64
	HasValidTo bool
}

func versionedRecord(v state.Version) VersionedRecord {
	return VersionedRecord{Value: v.Value, Timestamp: v.ValidFrom, ValidTo: v.ValidTo, HasValidTo: !v.Latest}
}

// VersionedQueryResult answers GetVersioned (an IQv2 VersionedKeyQuery
// result).
type VersionedQueryResult struct {
	// Found is false when the store has no version of the key for the
	// time asked (none, a tombstone, or older than the history retention).
	Found  bool
	Record VersionedRecord
	// Partition and FromStandby are as in KeyQueryResult.
	Partition   int32
	FromStandby bool
}

// AsOf is GetVersioned's time bound.
type AsOf struct {
	// Latest: the latest version (VersionedKeyValueStore.get(key)); else
	// the version valid at Timestamp (get(key, asOfTimestamp)).
	Latest    bool
	Timestamp int64
}

// LatestVersion asks for the latest version of a key.
var LatestVersion = AsOf{Latest: true}

// At asks for the version of a key valid at ts (epoch ms).
func At(ts int64) AsOf { return AsOf{Timestamp: ts} }

// GetVersioned reads key of the versioned store named store (a table
// materialized with Versioned) from this instance, as Get does: the
// version at.Timestamp falls in, or the latest. A read as of a time older
// than the store's history retention finds nothing, unless the latest
// version is older still (Kafka Streams' VersionedKeyValueStore.get).
func (a *App) GetVersioned(store string, key []byte, at AsOf, p StoreQueryParameters) (VersionedQueryResult, error) {
	retention, err := a.versionedRetention(store)
	if err != nil {
		return VersionedQueryResult{}, fmt.Errorf("streams: GetVersioned: %w", err)
	}
	active, standby, err := a.rt.QueryPartitions(store, p.EnableStaleStores)
	if err != nil {
		return VersionedQueryResult{}, fmt.Errorf("streams: GetVersioned: %w", err)
	}
	if a.rt.ApplicationServer() == "" {
		for _, part := range active {
			v, ok, err := part.GetVersion(key, at.Latest, at.Timestamp, retention)
			if err != nil || ok {
				return VersionedQueryResult{Found: ok, Record: versionedRecord(v), Partition: part.Number}, err
			}
		}
		return VersionedQueryResult{Partition: -1}, nil
	}
	n, err := a.rt.KeyPartition(store, key)
	if err != nil {
		return VersionedQueryResult{}, fmt.Errorf("streams: GetVersioned: store %q key %q: %w", store, key, err)
	}
	var part *state.Partition
	fromStandby := false
	switch {
	case active[n] != nil:
		part = active[n]
	case standby[n] != nil:
		part, fromStandby = standby[n], true
	}
	if part == nil {
		return VersionedQueryResult{}, fmt.Errorf("streams: GetVersioned: store %q key %q (partition %d) is not held here (application.server %s) now: %w",
			store, key, n, a.rt.ApplicationServer(), ErrRebalancing)
	}
	v, ok, err := part.GetVersion(key, at.Latest, at.Timestamp, retention)
	if err != nil {
		return VersionedQueryResult{}, fmt.Errorf("streams: GetVersioned: store %q partition %d: %w", store, part.Number, err)
	}
	return VersionedQueryResult{Found: ok, Record: versionedRecord(v), Partition: n, FromStandby: fromStandby}, nil
}

// versionedRetention is the history retention of store, which must be a
// versioned store of the topology.
func (a *App) versionedRetention(store string) (int64, error) {
	return versionedRetention(a.topo, store)
}

func versionedRetention(t *topology.Topology, store string) (int64, error) {
	st := t.Stores[store]
	switch {
	case st == nil:
		return 0, fmt.Errorf("store %q does not exist: %w", store, ErrNotFound)
	case st.Kind != topology.StoreVersioned:
		return 0, fmt.Errorf("store %q is not a versioned store (materialize a table with Versioned): %w", store, ErrInvalid)
	}
	return st.Versioned.HistoryRetention, nil
}
