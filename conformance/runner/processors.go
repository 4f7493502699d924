package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/polystreams/polystreams/core/streams"
)

// The processor catalogue (conformance/README.md, "Processors";
// docs/design/host-vectors.md): Go processors over natural values, as
// every executor defines them.

// storeLabel prefixes a store's serdes among a build's labels.
const storeLabel = "store:"

// processorNames are the catalogue's processors and whether they take an
// argument.
var processorNames = map[string]bool{
	"count_per_key": false, "forward_to": true, "restamp": false, "sweep_every": true, "sweep_wall_clock": true,
	"forward_then_fail": true, "versioned_history": false,
}

// goProcess adds a process or process_values step running the case's
// processor.
func goProcess(in *streams.Stream, st Step, labels map[string]any) (*streams.Stream, error) {
	name := st.Processor.Name
	takesArg, ok := processorNames[name]
	if !ok {
		return nil, fmt.Errorf("processor %q is not in the processor catalogue", name)
	}
	arg := ""
	if st.Processor.Arg != nil {
		arg = fmt.Sprint(st.Processor.Arg)
	}
	if takesArg && arg == "" {
		return nil, fmt.Errorf("processor %s takes an argument", name)
	}
	var store string
	var storeSerdes [2]string
	if len(st.Stores) > 0 {
		store = st.Stores[0]
		storeSerdes, _ = labels[storeLabel+store].([2]string)
	}
	vs := in.ValueSerde()
	out := or(st.Value, vs)
	newP := func() streams.Processor {
		return &catalogueProcessor{name: name, arg: arg, store: store, storeValue: storeSerdes[1], inValue: vs, outValue: out}
	}
	o := opts(st, !(st.Op == "process_values"), true)
	o = append(o, streams.Stores(st.Stores...))
	if st.Op == "process_values" {
		return in.ProcessValues(newP, o...)
	}
	return in.Process(newP, o...)
}

type catalogueProcessor struct {
	name, arg, store              string
	storeValue, inValue, outValue string
	s                             *streams.ProcessorStore
	ctx                           streams.ProcessorContext
}

func (p *catalogueProcessor) Init(ctx streams.ProcessorContext) error {
	p.ctx = ctx
	if p.store != "" {
		s, err := ctx.StateStore(p.store)
		if err != nil {
			return err
		}
		p.s = s
	}
	if p.name == "sweep_every" || p.name == "sweep_wall_clock" {
		ms, err := strconv.ParseInt(p.arg, 10, 64)
		if err != nil {
			return fmt.Errorf("%s %q: %w", p.name, p.arg, err)
		}
		typ := streams.StreamTime
		if p.name == "sweep_wall_clock" {
			typ = streams.WallClockTime
		}
		_, err = ctx.Schedule(time.Duration(ms)*time.Millisecond, typ, p.sweep)
		return err
	}
	return nil
}

func (p *catalogueProcessor) Close() error { return nil }

// increment adds one to key's count in the store and returns it.
func (p *catalogueProcessor) increment(key []byte) (int64, error) {
	if p.s == nil {
		return 0, errors.New(p.name + " needs a store")
	}
	old, err := p.s.Get(key)
	if err != nil {
		return 0, err
	}
	n := int64(0)
	if old != nil {
		v, err := decode(p.storeValue, old)
		if err != nil {
			return 0, err
		}
		n, _ = v.(int64)
	}
	b, err := encodeValue(p.storeValue, n+1)
	if err != nil {
		return 0, err
	}
	return n + 1, p.s.Put(key, b)
}

func (p *catalogueProcessor) Process(ctx streams.ProcessorContext, r streams.Record) error {
	switch p.name {
	case "count_per_key":
		n, err := p.increment(r.Key)
		if err != nil {
			return err
		}
		v, err := encodeValue(p.outValue, n)
		if err != nil {
			return err
		}
		return ctx.Forward(r.WithValue(v))
	case "forward_to":
		return ctx.ForwardTo(p.arg, r)
	case "restamp":
		r.Timestamp += 1000
		r.Headers = append(append([]streams.Header(nil), r.Headers...), streams.Header{Key: "seen", Value: []byte("1")})
		return ctx.Forward(r)
	case "sweep_every", "sweep_wall_clock":
		_, err := p.increment(r.Key)
		return err
	case "versioned_history":
		return p.versionedHistory(ctx, r)
	case "forward_then_fail":
		if err := ctx.Forward(r); err != nil {
			return err
		}
		v, err := decode(p.inValue, r.Value)
		if err != nil {
			return err
		}
		if fmt.Sprint(v) == p.arg {
			return fmt.Errorf("forward_then_fail %s", p.arg)
		}
		return nil
	}
	return fmt.Errorf("processor %q is not in the processor catalogue", p.name)
}

// sweep forwards every entry of the store at ts, then deletes it.
func (p *catalogueProcessor) sweep(ts int64) error {
	var keys [][]byte
	var fwdErr error
	err := p.s.All(func(k, v []byte) bool {
		keys = append(keys, k)
		n, err := decode(p.storeValue, v)
		if err == nil {
			var out []byte
			if out, err = encodeValue(p.outValue, n); err == nil {
				err = p.ctx.Forward(streams.Record{Key: k, Value: out, Timestamp: ts})
			}
		}
		fwdErr = err
		return err == nil
	})
	if err != nil {
		return err
	}
	if fwdErr != nil {
		return fwdErr
	}
	for _, k := range keys {
		if _, err := p.s.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// versionedHistory: a record whose value is "delete" deletes its key as of
// its timestamp and forwards "delete <deleted> latest <get(key)>"; any
// other puts its value and forwards "put <put's answer> latest <get(key)>
// asof <get(key, ts - 1)>". A version prints as value@timestamp, then
// <validTo when it has one; none as null.
func (p *catalogueProcessor) versionedHistory(ctx streams.ProcessorContext, r streams.Record) error {
	if p.s == nil {
		return errors.New(p.name + " needs a store")
	}
	show := func(v streams.VersionedRecord, ok bool, err error) (string, error) {
		if err != nil || !ok {
			return "null", err
		}
		d, err := decode(p.storeValue, v.Value)
		if err != nil {
			return "", err
		}
		s := fmt.Sprintf("%v@%d", d, v.Timestamp)
		if v.HasValidTo {
			s += fmt.Sprintf("<%d", v.ValidTo)
		}
		return s, nil
	}
	in, err := decode(p.inValue, r.Value)
	if err != nil {
		return err
	}
	var out string
	if fmt.Sprint(in) == "delete" {
		d, err := show(p.s.VersionedDelete(r.Key, r.Timestamp))
		if err != nil {
			return err
		}
		l, err := show(p.s.VersionedGet(r.Key))
		if err != nil {
			return err
		}
		out = "delete " + d + " latest " + l
	} else {
		v, err := encodeValue(p.storeValue, in)
		if err != nil {
			return err
		}
		code, err := p.s.VersionedPut(r.Key, v, r.Timestamp)
		if err != nil {
			return err
		}
		l, err := show(p.s.VersionedGet(r.Key))
		if err != nil {
			return err
		}
		a, err := show(p.s.VersionedGetAsOf(r.Key, r.Timestamp-1))
		if err != nil {
			return err
		}
		out = fmt.Sprintf("put %d latest %s asof %s", code, l, a)
	}
	b, err := encodeValue(p.outValue, out)
	if err != nil {
		return err
	}
	return ctx.Forward(r.WithValue(b))
}
