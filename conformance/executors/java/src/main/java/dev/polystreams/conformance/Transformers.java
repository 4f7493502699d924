package dev.polystreams.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.streams.kstream.ValueTransformerWithKey;
import org.apache.kafka.streams.kstream.ValueTransformerWithKeySupplier;
import org.apache.kafka.streams.processor.ProcessorContext;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The transformer catalogue (conformance/README.md, "Transformers"):
 * KTable.transformValues' ValueTransformerWithKeys over natural values,
 * after KTableTransformValuesTest's.
 */
final class Transformers {
  private Transformers() {}

  /** A supplier: a new transformer per task; out is the result's serde. */
  static ValueTransformerWithKeySupplier<Object, Object, Object> supplier(JsonNode t, String store, String out) {
    String name = Processors.name(t);
    String arg = Processors.arg(t);
    switch (name) {
      case "key_arrow_value":
        return () -> new Base() {
          @Override
          public Object transform(Object key, Object value) {
            return Codec.coerce(out, key + "->" + value + "!");
          }
        };
      case "count_calls":
        return () -> new Base() {
          private long calls;

          @Override
          public Object transform(Object key, Object value) {
            return Codec.coerce(out, ++calls);
          }
        };
      case "value_length":
        return () -> new Base() {
          @Override
          public Object transform(Object key, Object value) {
            return value == null ? null : Codec.coerce(out, (long) String.valueOf(value).codePointCount(0, String.valueOf(value).length()));
          }
        };
      case "count_per_key":
        return () -> new Base() {
          private KeyValueStore<Object, Object> kv;

          @Override
          public void init(ProcessorContext context) {
            kv = context.getStateStore(store);
          }

          @Override
          public Object transform(Object key, Object value) {
            Object old = kv.get(key);
            long n = old == null ? 0 : ((Number) old).longValue();
            kv.put(key, n + 1);
            return Codec.coerce(out, n + 1);
          }
        };
      case "fail_on":
        return () -> new Base() {
          @Override
          public Object transform(Object key, Object value) {
            if (String.valueOf(value).equals(arg)) {
              throw new RuntimeException("fail_on " + arg);
            }
            return value;
          }
        };
      default:
        throw new IllegalArgumentException("transformer " + name + " is not in the transformer catalogue");
    }
  }

  private abstract static class Base implements ValueTransformerWithKey<Object, Object, Object> {
    @Override
    public void init(ProcessorContext context) {}

    @Override
    public void close() {}
  }
}
