package streams_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/polystreams/polystreams/core/streams"
)

// The Schema Registry serdes' shared set-up (avro_test.go,
// protobuf_test.go): a registry holding the orders' schema, the pipeline
// that prices orders, and a registry that refuses the sink's schema.

// ordersRegistry is an in-process registry (srfake) with schema registered
// under orders-value, and its id; closed when the test ends.
func ordersRegistry(t *testing.T, schema string, typ sr.SchemaType) (*srfake.Registry, int) {
	t.Helper()
	reg := srfake.New()
	t.Cleanup(reg.Close)
	id, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: schema, Type: typ})
	must(err)
	return reg, id
}

// registryPipeline reads orders (string keys, values of serde in), prices
// each (priceOrder, a Go function that sees JSON) and writes priced
// (values of serde out), against the registry at url and with props.
func registryPipeline(t *testing.T, url string, props map[string]string, in, out string) *streams.TestDriver {
	t.Helper()
	b := streams.NewBuilder()
	orders, err := b.Stream([]string{"orders"}, streams.KeySerde(streams.String), streams.ValueSerde(in))
	must(err)
	priced, err := orders.MapValues(priceOrder)
	must(err)
	must(priced.To("priced", streams.ValueSerde(out)))
	p := map[string]string{"schema.registry.url": url}
	for k, v := range props {
		p[k] = v
	}
	d, err := streams.NewTestDriver(b, streams.Config{Properties: p, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// priceOrder is an order's JSON (id, item, note) priced: the id as the
// source's serde wrote it (protojson writes an int64 as a string), the
// item upper-cased, and a total of 10 with a note, else 2.5.
func priceOrder(v []byte) ([]byte, error) {
	var o struct {
		ID   json.RawMessage `json:"id"`
		Item string          `json:"item"`
		Note *string         `json:"note"`
	}
	if err := json.Unmarshal(v, &o); err != nil {
		return nil, err
	}
	total := 2.5
	if o.Note != nil {
		total = 10
	}
	return json.Marshal(map[string]any{"id": o.ID, "item": strings.ToUpper(o.Item), "total": total})
}

// refusePricedSchemas makes reg answer 409 to a new schema under
// priced-value, as a real registry answers a schema its compatibility
// level refuses.
func refusePricedSchemas(reg *srfake.Registry) {
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPost && r.URL.Path == "/subjects/priced-value/versions" {
			w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"error_code":409,"message":"Schema being registered is incompatible with an earlier schema for subject \"priced-value\""}`)
			return true
		}
		return false
	})
}
