package streams_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/polystreams/polystreams/core/streams"
)

// funcTransformer is a stateless transformer from a function; forward
// asks it to forward from Transform, which its context refuses.
type funcTransformer struct {
	f       func(key, value []byte) ([]byte, error)
	forward bool
	ctx     streams.ProcessorContext
}

func (t *funcTransformer) Init(ctx streams.ProcessorContext) error { t.ctx = ctx; return nil }
func (t *funcTransformer) Close() error                            { return nil }
func (t *funcTransformer) Transform(key, value []byte) ([]byte, error) {
	if t.forward {
		if err := t.ctx.Forward(streams.Record{Key: key, Value: value}); err != nil {
			return nil, err
		}
	}
	return t.f(key, value)
}

func transformDriver(t *testing.T, props map[string]string, newT func() streams.ValueTransformerWithKey, opts ...streams.Option) *streams.TestDriver {
	t.Helper()
	b := streams.NewBuilder()
	tbl, err := b.Table("in", streams.KeySerde(streams.String), streams.ValueSerde(streams.String))
	must(err)
	tv, err := tbl.TransformValues(newT, opts...)
	must(err)
	s, err := tv.ToStream()
	must(err)
	must(s.To("out"))
	d, err := streams.NewTestDriver(b, streams.Config{ApplicationID: "tv", Properties: props})
	must(err)
	t.Cleanup(func() { d.Close() })
	return d
}

// A transformer that fails skips its change under log_and_continue (the
// change is not forwarded with a made-up value) and counts it dropped.
func TestTransformValuesFailureSkipsTheChange(t *testing.T) {
	d := transformDriver(t, map[string]string{"processing.exception.handler": "LogAndContinueProcessingExceptionHandler"}, func() streams.ValueTransformerWithKey {
		return &funcTransformer{f: func(_, v []byte) ([]byte, error) {
			if string(v) == "bad" {
				return nil, errors.New("bad value")
			}
			return []byte(strings.ToUpper(string(v))), nil
		}}
	})
	for _, v := range []string{"ok", "bad", "fine"} {
		must(d.PipeInput("in", []byte("k"), []byte(v)))
	}
	out, err := d.ReadOutput("out")
	must(err)
	var got []string
	for _, r := range out {
		got = append(got, string(r.Value))
	}
	if strings.Join(got, ",") != "OK,FINE" || d.DroppedRecords() != 1 {
		t.Errorf("outputs %v, dropped %d; want OK,FINE and 1", got, d.DroppedRecords())
	}
}

// A transformer's context refuses forward, naming the node; under the
// default policy the record fails naming node and record.
func TestTransformValuesCannotForward(t *testing.T) {
	d := transformDriver(t, nil, func() streams.ValueTransformerWithKey {
		return &funcTransformer{forward: true, f: func(_, v []byte) ([]byte, error) { return v, nil }}
	}, streams.Name("tagger"))
	err := d.PipeInput("in", []byte("k"), []byte("v"))
	if err == nil || !strings.Contains(err.Error(), "tagger") || !strings.Contains(err.Error(), "forward: node tagger is a transform_values node") {
		t.Errorf("forward from a transformer: %v", err)
	}
}
