package main

import (
	"fmt"

	"github.com/polystreams/polystreams/core/streams"
)

// The transformer catalogue (conformance/README.md, "Transformers"):
// KTable.transformValues' ValueTransformerWithKeys, over natural values,
// as every executor defines them (after KTableTransformValuesTest's).
//
//   - key_arrow_value: "<key>-><value>!" (a null value prints null);
//     ExclamationValueTransformer.
//   - count_calls: how many values this instance has transformed, a long
//     (StatefulTransformer).
//   - value_length: the string value's length, a long; null stays null
//     (StatelessTransformer).
//   - count_per_key: adds one to the key's long in the first store and
//     returns it (a tombstone counts too).
//   - fail_on (arg): the value, unless it equals arg: then it fails with
//     "fail_on <arg>".
var transformerNames = map[string]bool{
	"key_arrow_value": false, "count_calls": false, "value_length": false, "count_per_key": false, "fail_on": true,
}

// goTransformValues adds a transform_values step running the case's
// transformer.
func goTransformValues(in *streams.Table, st Step, labels map[string]any) (*streams.Table, error) {
	if st.Transformer == nil {
		return nil, fmt.Errorf("transform_values names no transformer")
	}
	name := st.Transformer.Name
	takesArg, ok := transformerNames[name]
	if !ok {
		return nil, fmt.Errorf("transformer %q is not in the transformer catalogue", name)
	}
	arg := ""
	if st.Transformer.Arg != nil {
		arg = fmt.Sprint(st.Transformer.Arg)
	}
	if takesArg && arg == "" {
		return nil, fmt.Errorf("transformer %s takes an argument", name)
	}
	p := &catalogueProcessor{name: "count_per_key"} // its store helpers
	if len(st.Stores) > 0 {
		p.store = st.Stores[0]
		serdes, _ := labels[storeLabel+p.store].([2]string)
		p.storeValue = serdes[1]
	}
	ks, vs := in.KeySerde(), in.ValueSerde()
	out := vs
	if st.Materialized != nil && st.Materialized.Value != "" {
		out = st.Materialized.Value
	} else if st.Value != "" {
		out = st.Value
	}
	newT := func() streams.ValueTransformerWithKey {
		q := *p
		return &catalogueTransformer{name: name, arg: arg, p: &q, keySerde: ks, inValue: vs, outValue: out}
	}
	o := opts(st, false, true)
	o = append(o, streams.Stores(st.Stores...))
	return in.TransformValues(newT, o...)
}

type catalogueTransformer struct {
	name, arg                   string
	p                           *catalogueProcessor
	keySerde, inValue, outValue string
	calls                       int64
}

func (t *catalogueTransformer) Init(ctx streams.ProcessorContext) error { return t.p.Init(ctx) }

func (t *catalogueTransformer) Close() error { return nil }

func (t *catalogueTransformer) Transform(key, value []byte) ([]byte, error) {
	var v any
	if value != nil {
		var err error
		if v, err = decode(t.inValue, value); err != nil {
			return nil, err
		}
	}
	var res any
	switch t.name {
	case "key_arrow_value":
		k, err := decode(t.keySerde, key)
		if err != nil {
			return nil, err
		}
		s := "null"
		if v != nil {
			s = fmt.Sprint(v)
		}
		res = fmt.Sprintf("%v->%s!", k, s)
	case "count_calls":
		t.calls++
		res = t.calls
	case "value_length":
		if v == nil {
			return nil, nil
		}
		res = int64(len([]rune(fmt.Sprint(v))))
	case "count_per_key":
		n, err := t.p.increment(key)
		if err != nil {
			return nil, err
		}
		res = n
	case "fail_on":
		if fmt.Sprint(v) == t.arg {
			return nil, fmt.Errorf("fail_on %s", t.arg)
		}
		return value, nil
	default:
		return nil, fmt.Errorf("transformer %q is not in the transformer catalogue", t.name)
	}
	return encodeValue(t.outValue, res)
}
