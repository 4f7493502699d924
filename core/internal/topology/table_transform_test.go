package topology

import (
	"errors"
	"strings"
	"testing"
)

// transformer is a host transformer supplier (a processor token).
var transformer = Function{Token: 7, Name: "versioner"}

func transformBuilder() *Builder {
	b := NewBuilder()
	b.HostProcessors = true
	return b
}

// TestTransformValuesNamesAndStores pins KTableImpl.doTransformValues'
// numbering: an unnamed Materialized takes no number (its
// MaterializedInternal is built without the builder), so the node is 3
// and to_stream 4 either way; a named store takes none either and is
// listed with the transformer's stores.
func TestTransformValuesNamesAndStores(t *testing.T) {
	c := check{t}
	for _, m := range []*Materialized{nil, {ValueSerde: "long"}, {StoreName: "tagged", ValueSerde: "string"}} {
		b := transformBuilder()
		c.ok(b.AddStateStore(StoreBuilder{Name: "versions", Type: StoreTypeKeyValue, KeySerde: "string", ValueSerde: "long"}))
		tv := c.id(b.TableTransformValues(c.table(b, "users", nil), transformer, TransformValuesOptions{Stores: []string{"versions"}, Materialized: m}))
		c.id(b.ToStream(tv, ""))
		text := describe(t, b)
		stores := "[versions]"
		if m != nil && m.StoreName != "" {
			stores = "[tagged, versions]"
		}
		for _, want := range []string{"Processor: KTABLE-TRANSFORMVALUES-0000000003 (stores: " + stores + ")", "KTABLE-TOSTREAM-0000000004"} {
			if !strings.Contains(text, want) {
				t.Errorf("materialized %+v: describe() lacks %q:\n%s", m, want, text)
			}
		}
	}
}

// TestTransformValuesRefusals: an unknown store names node and store; a
// join of a result without a store names the transform_values node.
func TestTransformValuesRefusals(t *testing.T) {
	c := check{t}
	b := transformBuilder()
	_, err := b.TableTransformValues(c.table(b, "users", nil), transformer, TransformValuesOptions{Stores: []string{"nope"}})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `node KTABLE-TRANSFORMVALUES-0000000003 names store "nope", which no add_state_store added`) {
		t.Errorf("unknown store: %v", err)
	}

	b = transformBuilder()
	tv := c.id(b.TableTransformValues(c.table(b, "users", nil), transformer, TransformValuesOptions{Name: "tagger"}))
	s := c.stream(b, "clicks")
	_, err = b.Join(s, tv, Function{Token: 9, Name: "joiner"}, false, "", "")
	if err == nil || !strings.Contains(err.Error(), "transform_values node tagger without a store") {
		t.Errorf("join of a transform_values without a store: %v", err)
	}

	b = transformBuilder()
	b.HostProcessors = false
	_, err = b.TableTransformValues(c.table(b, "users", nil), transformer, TransformValuesOptions{})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `host feature "processors"`) {
		t.Errorf("a host without processors: %v", err)
	}
}

// TestTransformValuesSendsOldValues: a group_by after a transform_values
// without a store makes it (and its parent) send old values; with a store
// the parent sends none.
func TestTransformValuesSendsOldValues(t *testing.T) {
	c := check{t}
	for _, store := range []string{"", "tagged"} {
		b := transformBuilder()
		var m *Materialized
		if store != "" {
			m = &Materialized{StoreName: store}
		}
		tbl := c.table(b, "users", nil)
		tv, err := b.TableTransformValues(tbl, transformer, TransformValuesOptions{Materialized: m})
		c.ok(err)
		c.id(b.TableGroupBy(tv.ID, mapFn, "", "", ""))
		parent := tv.Node.Predecessors[0]
		if !tv.Node.SendOld || parent.SendOld != (store == "") {
			t.Errorf("store %q: transform_values sends old values %v (want true), its parent %v (want %v)", store, tv.Node.SendOld, parent.SendOld, store == "")
		}
	}
}
