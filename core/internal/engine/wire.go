package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/polystreams/polystreams/core/internal/serde/registry"
	"github.com/polystreams/polystreams/core/internal/topology"
)

// Schema Registry serdes at the topology's edges: a source whose topic has
// one (topology.Node.KeyWire, ValueWire) decodes its records to json, a
// sink encodes json to it (docs/design/schema-registry.md).

// newRegistry makes the application's Schema Registry serdes when a
// source or sink of topo names one; nil when none does. A topology that
// needs a registry with no schema.registry.url fails, naming the nodes.
func newRegistry(cfg registry.Config, topo *topology.Topology) (*registry.Serdes, error) {
	var users []string
	seen := map[*topology.Node]bool{}
	visit := func(n *topology.Node) {
		if !seen[n] && (n.KeyWire != "" || n.ValueWire != "") {
			users = append(users, n.Name)
		}
		seen[n] = true
	}
	for _, st := range topo.Subtopologies {
		for _, n := range st.Nodes {
			visit(n)
		}
	}
	for _, g := range topo.Globals {
		visit(g.Source)
	}
	if len(users) == 0 {
		return nil, nil
	}
	if len(cfg.URLs) == 0 {
		return nil, fmt.Errorf("engine: nodes %s read or write a Schema Registry serde (avro, json-schema, protobuf), but schema.registry.url is not set", strings.Join(users, ", "))
	}
	return registry.New(cfg)
}

// decodeWire decodes a record's key and value of topic from their Schema
// Registry serdes (an empty one passes its bytes as they are).
func decodeWire(ctx context.Context, reg *registry.Serdes, keyWire, valueWire, topic string, key, value []byte) ([]byte, []byte, error) {
	var err error
	if keyWire != "" && key != nil {
		if key, err = reg.Decode(ctx, nil, keyWire, topic, true, key); err != nil {
			return nil, nil, fmt.Errorf("key does not decode as %s: %w", serdeLabel(keyWire), err)
		}
	}
	if valueWire != "" && value != nil {
		if value, err = reg.Decode(ctx, nil, valueWire, topic, false, value); err != nil {
			return nil, nil, fmt.Errorf("value does not decode as %s: %w", serdeLabel(valueWire), err)
		}
	}
	return key, value, nil
}

// encodeWire is decodeWire's reverse, at a sink.
func encodeWire(ctx context.Context, reg *registry.Serdes, keyWire, valueWire, topic string, key, value []byte) ([]byte, []byte, error) {
	var err error
	if keyWire != "" && key != nil {
		if key, err = reg.Encode(ctx, nil, keyWire, topic, true, key); err != nil {
			return nil, nil, fmt.Errorf("key does not encode as %s: %w", serdeLabel(keyWire), err)
		}
	}
	if valueWire != "" && value != nil {
		if value, err = reg.Encode(ctx, nil, valueWire, topic, false, value); err != nil {
			return nil, nil, fmt.Errorf("value does not encode as %s: %w", serdeLabel(valueWire), err)
		}
	}
	return key, value, nil
}

// serdeLabel shortens a serde name that carries a schema, for errors.
func serdeLabel(name string) string {
	if i := strings.IndexByte(name, '('); i > 0 {
		return name[:i] + "(<schema>)"
	}
	return name
}

// wireUnavailable reports whether err is a registry that did not answer:
// the batch fails whatever the error policy, as skipping records while
// the registry is down would lose them.
func wireUnavailable(err error) bool { return errors.Is(err, registry.ErrUnavailable) }
