package registry

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// Protobuf in the Confluent wire format: after the magic byte and the
// schema id come the message indexes, the path from the schema file's
// top-level messages to the record's message (nested ones by their index
// in their parent), as a zigzag-varint count then zigzag-varint indexes;
// [0], the file's first message, is written as the count 0 alone.

// protoJSON is how a source writes a record's message as JSON: proto
// field names (as the .proto spells them), every field present (a
// proto3 field at its default too, as an Avro record has all its fields).
var protoJSON = protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}

// maxIndexes bounds a record's message-index path (nesting depth).
const maxIndexes = 100

// readIndexes reads the message indexes at the start of b, returning them
// and the protobuf bytes after them.
func readIndexes(b []byte) ([]int, []byte, error) {
	n, k := binary.Varint(b)
	if k <= 0 {
		return nil, nil, errors.New("the message indexes do not decode (want a zigzag varint count after the schema id)")
	}
	b = b[k:]
	if n == 0 {
		return []int{0}, b, nil
	}
	if n < 0 || n > maxIndexes {
		return nil, nil, fmt.Errorf("the message-index count %d is out of range (0 to %d)", n, maxIndexes)
	}
	idx := make([]int, n)
	for i := range idx {
		v, k := binary.Varint(b)
		if k <= 0 || v < 0 {
			return nil, nil, fmt.Errorf("message index %d of %d does not decode as a zigzag varint of at least 0", i, n)
		}
		idx[i], b = int(v), b[k:]
	}
	return idx, b, nil
}

// appendIndexes appends md's message indexes in the wire format.
func appendIndexes(dst []byte, md protoreflect.MessageDescriptor) []byte {
	var path []int
	for d := protoreflect.Descriptor(md); ; d = d.Parent() {
		m, ok := d.(protoreflect.MessageDescriptor)
		if !ok {
			break
		}
		path = append(path, m.Index())
	}
	if len(path) == 1 && path[0] == 0 {
		return append(dst, 0)
	}
	dst = binary.AppendVarint(dst, int64(len(path)))
	for i := len(path) - 1; i >= 0; i-- {
		dst = binary.AppendVarint(dst, int64(path[i]))
	}
	return dst
}

// messageAt is the message idx names in fd.
func messageAt(fd protoreflect.FileDescriptor, idx []int) (protoreflect.MessageDescriptor, error) {
	msgs := fd.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range idx {
		if i >= msgs.Len() {
			return nil, fmt.Errorf("message indexes %v name no message of the schema (%d messages at depth of index %d)", idx, msgs.Len(), i)
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	return md, nil
}

// messageNamed is the message of fd whose full name is name, or nil.
func messageNamed(fd protoreflect.FileDescriptor, name protoreflect.FullName) protoreflect.MessageDescriptor {
	var find func(protoreflect.MessageDescriptors) protoreflect.MessageDescriptor
	find = func(msgs protoreflect.MessageDescriptors) protoreflect.MessageDescriptor {
		for i := 0; i < msgs.Len(); i++ {
			m := msgs.Get(i)
			if m.FullName() == name {
				return m
			}
			if found := find(m.Messages()); found != nil {
				return found
			}
		}
		return nil
	}
	return find(fd.Messages())
}

// decodeProtobuf turns the payload after a record's schema id into JSON
// appended to dst: the message its indexes name in writer, read as
// reader's message of the same name (else reader's first) when the
// source names a schema.
func decodeProtobuf(dst []byte, writer, reader protoreflect.FileDescriptor, payload []byte) ([]byte, error) {
	idx, pb, err := readIndexes(payload)
	if err != nil {
		return nil, err
	}
	md, err := messageAt(writer, idx)
	if err != nil {
		return nil, err
	}
	if reader != nil {
		if named := messageNamed(reader, md.FullName()); named != nil {
			md = named
		} else {
			md = reader.Messages().Get(0)
		}
	}
	msg := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(pb, msg); err != nil {
		return nil, fmt.Errorf("the value does not decode as message %s: %w", md.FullName(), err)
	}
	js, err := protoJSON.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("message %s has no JSON form: %w", md.FullName(), err)
	}
	// protojson puts a space after a separator at random, on purpose
	// (its output is not stable); the records' JSON is, so compact it.
	out := bytes.NewBuffer(dst)
	if err := json.Compact(out, js); err != nil {
		return nil, fmt.Errorf("message %s: protojson wrote invalid JSON: %w", md.FullName(), err)
	}
	return out.Bytes(), nil
}

// encodeProtobuf appends the message indexes of md and js, JSON of md
// (protojson: proto or JSON field names), in protobuf binary.
func encodeProtobuf(dst []byte, md protoreflect.MessageDescriptor, js []byte) ([]byte, error) {
	msg := dynamicpb.NewMessage(md)
	if err := protojson.Unmarshal(js, msg); err != nil {
		return nil, fmt.Errorf("the JSON does not fit message %s: %w", md.FullName(), err)
	}
	dst = appendIndexes(dst, md)
	out, err := proto.MarshalOptions{}.MarshalAppend(dst, msg)
	if err != nil {
		return nil, fmt.Errorf("the value does not encode as message %s: %w", md.FullName(), err)
	}
	return out, nil
}

// maxReferences bounds the schemas one schema's references reach.
const maxReferences = 64

// references fetches the schemas refs name (and theirs), by import name,
// for CompileProtobuf.
func (s *Serdes) references(ctx context.Context, refs []sr.SchemaReference) (map[string]string, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	queue := append([]sr.SchemaReference(nil), refs...)
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		if _, done := out[r.Name]; done {
			continue
		}
		if len(out) == maxReferences {
			return nil, fmt.Errorf("the schema's references reach more than %d schemas", maxReferences)
		}
		got, err := s.cl.SchemaByVersion(ctx, r.Subject, r.Version)
		if err != nil {
			if notFound(err) {
				return nil, serde.Malformed(fmt.Errorf("reference %s (subject %s, version %d) is not registered (%v)", r.Name, r.Subject, r.Version, err))
			}
			return nil, unavailable(err)
		}
		out[r.Name] = got.Schema.Schema
		queue = append(queue, got.Schema.References...)
	}
	return out, nil
}
