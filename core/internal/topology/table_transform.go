package topology

import (
	"slices"

	"github.com/polystreams/polystreams/core/internal/serde"
)

const prefixTableTransformValues = "KTABLE-TRANSFORMVALUES-"

// TransformValuesOptions are KTable.transformValues' arguments besides the
// transformer supplier.
type TransformValuesOptions struct {
	// Stores the transformer uses (added by AddStateStore):
	// transformValues' stateStoreNames.
	Stores []string
	// Materialized (nil: none). Only one naming a store materializes the
	// result; an unnamed one changes only the serdes, and takes no name
	// number (KTableImpl.doTransformValues builds its MaterializedInternal
	// without the builder).
	Materialized *Materialized
	// ValueSerde of the new values when Materialized gives none; empty
	// keeps the input's.
	ValueSerde string
	// Name is Named.as; empty: KTABLE-TRANSFORMVALUES-<n>.
	Name string
}

// TableTransformValues adds KTable.transformValues: a KTABLE-TRANSFORMVALUES
// processor (KTableTransformValues) running fn, a transformer supplier in
// its processor form (a host token run as a fixed-key processor that
// forwards one value per record, or a NewProcessorFunc whose processors
// do the same), on each change's new value and, when old values are sent
// and the result is not materialized, on its old one. A materialized
// result has its own store (Node.TableStore, listed first in Stores): the
// old values come from it, and it is the table's value getter. Unlike
// filter and map_values, a store-less transform_values is no value getter
// (Kafka Streams' would call the transformer on lookup): a join of it is
// refused, naming it.
func (b *Builder) TableTransformValues(input uint64, fn Function, o TransformValuesOptions) (*Handle, error) {
	c := b.begin("transform_values")
	in := c.input(input, KindTable)
	c.function(fn, newProcessorNative)
	c.serde("value", o.ValueSerde)
	var mat Materialized
	if o.Materialized != nil {
		mat = *o.Materialized
		c.serde("materialized key", mat.KeySerde)
		c.serde("materialized value", mat.ValueSerde)
		c.changelogConfig(mat)
		if mat.StoreName != "" && c.validName("store", mat.StoreName) && b.stores[mat.StoreName] != nil {
			c.invalid("transform_values names store %q, which exists already", mat.StoreName)
		}
	}
	name := c.processorName(o.Name, prefixTableTransformValues)
	c.storesOf(name, o.Stores)
	if mat.StoreName != "" && slices.Contains(o.Stores, mat.StoreName) {
		c.invalid("transform_values: node %s names its materialized store %q among its transformer's stores", name, mat.StoreName)
	}
	c.hostProcessor(name, fn)
	if err := c.done(); err != nil {
		return nil, err
	}
	n := &Node{
		Name: name, Type: Processor, Op: OpTableTransformValues, Fn: &fn,
		KeySerde:   serde.Or(mat.KeySerde, in.handle.KeySerde),
		ValueSerde: serde.Or(mat.ValueSerde, serde.Or(o.ValueSerde, in.handle.ValueSerde)),
	}
	if mat.StoreName != "" {
		b.newStore(mat.StoreName, n.KeySerde, n.ValueSerde, mat.ChangelogConfig)
		n.TableStore = mat.StoreName
		n.Stores = []string{mat.StoreName}
	}
	n.Stores = append(n.Stores, o.Stores...)
	g := b.hang(in, n)
	return b.mint(&entry{handle: &Handle{Kind: KindTable, KeySerde: n.KeySerde, ValueSerde: n.ValueSerde, Node: n}, g: g}), nil
}

// TransformerStores are the stores a transform_values node's transformer
// uses: its Stores without its own (TableStore).
func (n *Node) TransformerStores() []string {
	if n.TableStore == "" {
		return n.Stores
	}
	return slices.DeleteFunc(slices.Clone(n.Stores), func(s string) bool { return s == n.TableStore })
}
