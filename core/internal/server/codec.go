package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// jsonCodec is connect-go's JSON codec (protojson, unknown fields
// discarded), except that its errors name the request message they could
// not read and are bounded like every error answer: connect-go's says
// "zero-length payload is not a valid JSON object" without naming the
// call, and an answer to a request it could not read never passes through
// the boundErrors interceptor. Safe for concurrent use.
type jsonCodec struct{ name string }

// jsonCodecs replace connect-go's for "json" and "json; charset=utf-8".
func jsonCodecs() []connect.HandlerOption {
	return []connect.HandlerOption{connect.WithCodec(jsonCodec{"json"}), connect.WithCodec(jsonCodec{"json; charset=utf-8"})}
}

func (c jsonCodec) Name() string { return c.name }

func (jsonCodec) IsBinary() bool { return false }

func (jsonCodec) Marshal(m any) ([]byte, error) {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("%T is not a protobuf message", m)
	}
	return protojson.Marshal(pm)
}

func (jsonCodec) MarshalAppend(dst []byte, m any) ([]byte, error) {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("%T is not a protobuf message", m)
	}
	return protojson.MarshalOptions{}.MarshalAppend(dst, pm)
}

func (c jsonCodec) MarshalStable(m any) ([]byte, error) {
	b, err := c.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func (jsonCodec) Unmarshal(data []byte, m any) error {
	pm, ok := m.(proto.Message)
	if !ok {
		return fmt.Errorf("%T is not a protobuf message", m)
	}
	name := pm.ProtoReflect().Descriptor().Name()
	if len(data) == 0 {
		return fmt.Errorf("%s: an empty body is not a JSON object", name)
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, pm); err != nil {
		msg, _ := boundMessage(fmt.Sprintf("%s: %v", name, err))
		return errors.New(msg)
	}
	return nil
}
