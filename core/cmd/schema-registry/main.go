// Command schema-registry serves a Confluent-compatible Schema Registry
// REST API in memory (franz-go's pkg/sr/srfake) for the tests of the
// Schema Registry serdes (make test-schema-registry): it is the registry
// that runs here, where neither Karapace (not on PyPI) nor Apicurio (its
// modules are not all on Maven Central) can be installed; see
// docs/design/schema-registry.md. It prints "schema registry at <url>" once
// it listens and serves until it is killed. Registering an Avro schema
// that cannot read the subject's latest one is refused with HTTP 409, as
// a registry at its default compatibility level (BACKWARD) refuses it (the
// check is twmb/avro's; srfake has none of its own); a Protobuf schema
// that breaks the latest one's data too (protobuf.go), and a Protobuf
// schema asked for with ?format=serialized comes back as a base64
// FileDescriptorProto, as Confluent's registry answers. Not for production:
// it keeps nothing.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:0", "address to listen on (port 0: a free one)")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "schema-registry: listen on %s: %v\n", *addr, err)
		os.Exit(1)
	}
	reg := srfake.NewRegistry(srfake.WithGlobalCompat(sr.CompatBackward))
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool { return refuseIncompatible(reg, w, r) })
	fmt.Printf("schema registry at http://%s\n", ln.Addr())
	srv := &http.Server{Handler: serialized(reg, reg.Handler()), ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintf(os.Stderr, "schema-registry: %v\n", err)
		os.Exit(1)
	}
}

// refuseIncompatible answers 409 to a new Avro or Protobuf version of a
// subject that cannot read the data of the subject's latest version
// (BACKWARD).
func refuseIncompatible(reg *srfake.Registry, w http.ResponseWriter, r *http.Request) bool {
	subject, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/subjects/"), "/versions")
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/subjects/") || !ok || strings.Contains(subject, "/") {
		return false
	}
	body, err := readBody(r) // put back for the registry, when this lets it through
	if err != nil {
		return false
	}
	var in sr.Schema
	if json.Unmarshal(body, &in) != nil || (in.Type != sr.TypeAvro && in.Type != sr.TypeProtobuf) {
		return false
	}
	var latest sr.SubjectSchema
	for v := 1; ; v++ {
		s, ok := reg.GetSchema(subject, v)
		if !ok {
			break
		}
		latest = s
	}
	if latest.Schema.Schema == "" {
		return false
	}
	if latest.Schema.Type != in.Type {
		return false
	}
	var why string
	if in.Type == sr.TypeProtobuf {
		why = protoIncompatible(reg, latest.Schema, in)
	} else {
		writer, err1 := avro.Parse(latest.Schema.Schema)
		reader, err2 := avro.Parse(in.Schema)
		if err1 != nil || err2 != nil {
			return false
		}
		if err := avro.CheckCompatibility(writer, reader); err != nil {
			why = err.Error()
		}
	}
	if why != "" {
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		w.WriteHeader(http.StatusConflict)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"error_code": 409,
			"message":    fmt.Sprintf("Schema being registered is incompatible with an earlier schema for subject %q (BACKWARD): %s", subject, why),
		})
		return true
	}
	return false
}
