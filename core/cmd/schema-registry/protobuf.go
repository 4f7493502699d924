package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/polystreams/polystreams/core/internal/serde"
)

// Protobuf, as Confluent's registry serves it: a schema fetched with
// ?format=serialized comes back as a base64 FileDescriptorProto (what
// confluent-kafka's Python deserializer asks for), and a new version that
// breaks the latest one's data (BACKWARD) is refused with 409.

// serialized serves GETs with format=serialized: srfake answers the
// request without the parameter, and a PROTOBUF schema in .proto text is
// replaced by its compiled descriptor.
func serialized(reg *srfake.Registry, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.Method != http.MethodGet || q.Get("format") != "serialized" {
			next.ServeHTTP(w, r)
			return
		}
		q.Del("format")
		r.URL.RawQuery = q.Encode()
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		var doc map[string]any
		if rec.Code == http.StatusOK && json.Unmarshal(body, &doc) == nil && doc["schemaType"] == "PROTOBUF" {
			text, _ := doc["schema"].(string)
			var refs []sr.SchemaReference
			if raw, ok := doc["references"]; ok {
				b, _ := json.Marshal(raw)
				_ = json.Unmarshal(b, &refs)
			}
			if fd, err := compileProto(reg, text, refs); err == nil {
				b, _ := proto.Marshal(protodesc.ToFileDescriptorProto(fd))
				doc["schema"] = base64.StdEncoding.EncodeToString(b)
				body, _ = json.Marshal(doc)
			}
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// compileProto compiles a registered Protobuf schema (.proto text or a
// base64 descriptor) with its references, read from reg.
func compileProto(reg *srfake.Registry, text string, refs []sr.SchemaReference) (protoreflect.FileDescriptor, error) {
	sources := map[string]string{}
	queue := refs
	for len(queue) > 0 {
		ref := queue[0]
		queue = queue[1:]
		if _, done := sources[ref.Name]; done {
			continue
		}
		got, ok := reg.GetSchema(ref.Subject, ref.Version)
		if !ok {
			return nil, fmt.Errorf("reference %s (subject %s, version %d) is not registered", ref.Name, ref.Subject, ref.Version)
		}
		sources[ref.Name] = got.Schema.Schema
		queue = append(queue, got.Schema.References...)
	}
	const main = "schema.proto"
	sources[main] = text
	resolve := protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		src, ok := sources[path]
		if !ok {
			return protocompile.SearchResult{}, fs.ErrNotExist
		}
		if b, err := base64.StdEncoding.DecodeString(src); err == nil && !strings.ContainsAny(src, " \n;{") {
			fdp := &descriptorpb.FileDescriptorProto{}
			if proto.Unmarshal(b, fdp) == nil {
				fdp.Name = proto.String(path)
				serde.FillJSONNames(fdp.GetMessageType())
				return protocompile.SearchResult{Proto: fdp}, nil
			}
		}
		return protocompile.SearchResult{Source: strings.NewReader(src)}, nil
	})
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(resolve)}
	files, err := c.Compile(context.Background(), main)
	if err != nil {
		return nil, err
	}
	return files[0], nil
}

// protoIncompatible says why schema next cannot read data of prev
// (BACKWARD), or "": a message of prev is gone, or a field number changed
// its kind (beyond the varint kinds, which read each other) or whether it
// repeats.
func protoIncompatible(reg *srfake.Registry, prev sr.Schema, next sr.Schema) string {
	a, err1 := compileProto(reg, prev.Schema, prev.References)
	b, err2 := compileProto(reg, next.Schema, next.References)
	if err1 != nil || err2 != nil {
		return ""
	}
	var walk func(protoreflect.MessageDescriptors) string
	walk = func(msgs protoreflect.MessageDescriptors) string {
		for i := 0; i < msgs.Len(); i++ {
			old := msgs.Get(i)
			nd, _ := findMessage(b, old.FullName())
			if nd == nil {
				return fmt.Sprintf("message %s is removed", old.FullName())
			}
			for j := 0; j < old.Fields().Len(); j++ {
				of := old.Fields().Get(j)
				nf := nd.Fields().ByNumber(of.Number())
				if nf == nil {
					continue
				}
				if of.Cardinality() == protoreflect.Repeated != (nf.Cardinality() == protoreflect.Repeated) {
					return fmt.Sprintf("field %d of %s changes whether it repeats", of.Number(), old.FullName())
				}
				if of.Kind() != nf.Kind() && !(varint(of.Kind()) && varint(nf.Kind())) {
					return fmt.Sprintf("field %d of %s changes kind from %s to %s", of.Number(), old.FullName(), of.Kind(), nf.Kind())
				}
			}
			if why := walk(old.Messages()); why != "" {
				return why
			}
		}
		return ""
	}
	return walk(a.Messages())
}

func findMessage(fd protoreflect.FileDescriptor, name protoreflect.FullName) (protoreflect.MessageDescriptor, bool) {
	var find func(protoreflect.MessageDescriptors) protoreflect.MessageDescriptor
	find = func(msgs protoreflect.MessageDescriptors) protoreflect.MessageDescriptor {
		for i := 0; i < msgs.Len(); i++ {
			if m := msgs.Get(i); m.FullName() == name {
				return m
			} else if got := find(m.Messages()); got != nil {
				return got
			}
		}
		return nil
	}
	m := find(fd.Messages())
	return m, m != nil
}

func varint(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.BoolKind:
		return true
	}
	return false
}

// readBody reads r's body and puts it back for the next handler.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, err
}
