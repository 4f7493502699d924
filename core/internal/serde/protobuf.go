package serde

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Protobuf names the Schema Registry Protobuf serde: the Confluent wire
// format (magic byte 0, the schema's 4-byte big-endian id, the message
// indexes as zigzag varints, then the protobuf binary). Like Avro, a
// topic's format, decoded to json where records enter (protojson of the
// record's message, proto field names, every field present) and encoded
// from json where they leave. "protobuf" alone reads any schema the
// registry holds and, at a sink, writes with the subject's latest schema;
// "protobuf(<schema>)" names the schema (.proto text): a sink registers
// it and writes its first message, a source reads each record into the
// message of the same name in it (else its first).
const Protobuf = "protobuf"

// ProtobufWith names the Protobuf serde with schema (.proto text).
func ProtobufWith(schema string) string { return Protobuf + "(" + schema + ")" }

// ProtobufMessage is fd's message named name: its full name, or its name
// in fd's package (a nested message as Outer.Inner).
func ProtobufMessage(fd protoreflect.FileDescriptor, name string) (protoreflect.MessageDescriptor, error) {
	want := []protoreflect.FullName{protoreflect.FullName(name)}
	if pkg := fd.Package(); pkg != "" {
		want = append(want, protoreflect.FullName(string(pkg)+"."+name))
	}
	var all []string
	var found protoreflect.MessageDescriptor
	var walk func(protoreflect.MessageDescriptors)
	walk = func(msgs protoreflect.MessageDescriptors) {
		for i := 0; i < msgs.Len(); i++ {
			m := msgs.Get(i)
			all = append(all, string(m.FullName()))
			for _, w := range want {
				if found == nil && m.FullName() == w {
					found = m
				}
			}
			walk(m.Messages())
		}
	}
	walk(fd.Messages())
	if found == nil {
		return nil, fmt.Errorf("message %q is not in the schema (its messages: %s)", name, strings.Join(all, ", "))
	}
	return found, nil
}

// protobufMain is the file name a schema's text is compiled under.
const protobufMain = "polystreams-schema.proto"

// CompileProtobuf compiles a Protobuf schema as a registry holds it: .proto
// text, or a serialized FileDescriptorProto in base64 (what Confluent's
// Python serializer registers and format=serialized answers). imports are
// the schemas it imports by name (a registry's schema references), in
// either form; the standard imports (google/protobuf/*.proto) are known.
func CompileProtobuf(text string, imports map[string]string) (protoreflect.FileDescriptor, error) {
	main := protobufMain
	if fdp, ok := protobufDescriptor(text); ok {
		main = fdp.GetName()
	}
	resolve := protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		src, ok := imports[path]
		if path == main {
			src, ok = text, true
		}
		if !ok {
			return protocompile.SearchResult{}, fs.ErrNotExist
		}
		if fdp, isFDP := protobufDescriptor(src); isFDP {
			fdp.Name = proto.String(path) // a reference's import name is the file's name
			return protocompile.SearchResult{Proto: fdp}, nil
		}
		return protocompile.SearchResult{Source: strings.NewReader(src)}, nil
	})
	var errs []string
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(resolve),
		Reporter: reporter.NewReporter(func(err reporter.ErrorWithPos) error {
			errs = append(errs, err.Error())
			return nil
		}, nil),
	}
	files, err := c.Compile(context.Background(), main)
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "; "))
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%v (a schema imports the standard google/protobuf files and the registry references it is registered with; protobuf(<schema>) has none: register a schema with references outside polystreams, and write with protobuf alone, the subject's latest)", err)
		}
		return nil, err
	}
	// protocompile's descriptors resolve features (field presence ...) on
	// every call, which reflection over each record's fields makes often:
	// google.golang.org/protobuf's own descriptors of the same files
	// answer from what they computed once (decode ~2x faster).
	fd, err := standardFile(files[0], new(protoregistry.Files))
	if err != nil {
		return nil, err
	}
	if fd.Messages().Len() == 0 {
		return nil, errors.New("the schema defines no message")
	}
	return fd, nil
}

// standardFile is fd rebuilt by protodesc, its imports first, into files.
func standardFile(fd protoreflect.FileDescriptor, files *protoregistry.Files) (protoreflect.FileDescriptor, error) {
	if got, err := files.FindFileByPath(fd.Path()); err == nil {
		return got, nil
	}
	imports := fd.Imports()
	for i := 0; i < imports.Len(); i++ {
		if _, err := standardFile(imports.Get(i).FileDescriptor, files); err != nil {
			return nil, err
		}
	}
	std, err := protodesc.NewFile(protodesc.ToFileDescriptorProto(fd), files)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fd.Path(), err)
	}
	if err := files.RegisterFile(std); err != nil {
		return nil, fmt.Errorf("%s: %w", fd.Path(), err)
	}
	return std, nil
}

// protobufDescriptor reads text as a base64 FileDescriptorProto.
func protobufDescriptor(text string) (*descriptorpb.FileDescriptorProto, bool) {
	if strings.ContainsAny(text, " \n\t;{") {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return nil, false
	}
	fdp := &descriptorpb.FileDescriptorProto{}
	if proto.Unmarshal(b, fdp) != nil || fdp.GetName() == "" {
		return nil, false
	}
	FillJSONNames(fdp.GetMessageType())
	return fdp, true
}

// FillJSONNames sets each field's json_name that is unset or empty to the
// name protoc gives (the field name in lowerCamelCase): descriptors embedded
// in protoc's Python code (what confluent-kafka registers) carry none, and
// protocompile then takes every field's JSON name to be "", which conflict.
func FillJSONNames(msgs []*descriptorpb.DescriptorProto) {
	for _, m := range msgs {
		for _, f := range m.GetField() {
			if f.GetJsonName() == "" {
				f.JsonName = proto.String(jsonName(f.GetName()))
			}
		}
		FillJSONNames(m.GetNestedType())
	}
}

// jsonName is protoc's JSON name of a field: its name without
// underscores, each letter after one upper-cased.
func jsonName(name string) string {
	b := make([]byte, 0, len(name))
	upper := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_':
			upper = true
		case upper && 'a' <= c && c <= 'z':
			b = append(b, c-'a'+'A')
			upper = false
		default:
			b = append(b, c)
			upper = false
		}
	}
	return string(b)
}
