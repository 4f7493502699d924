package dev.polystreams.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorSupplier;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;

/**
 * The processor catalogue (conformance/README.md, "Processors";
 * docs/design/host-vectors.md) on Kafka Streams' Processor API, over natural
 * values (the serdes of the case's steps decode them).
 */
final class Processors {
  private Processors() {}

  static String name(JsonNode p) {
    return p.isTextual() ? p.asText() : p.get("name").asText();
  }

  static String arg(JsonNode p) {
    return p.isObject() && p.hasNonNull("arg") ? p.get("arg").asText() : null;
  }

  /** A supplier for process(): a new processor per task. */
  static ProcessorSupplier<Object, Object, Object, Object> supplier(JsonNode p, String store) {
    String name = name(p);
    String arg = arg(p);
    switch (name) {
      case "count_per_key":
        return () -> new CountPerKey(store);
      case "forward_to":
        return () -> new Processor<Object, Object, Object, Object>() {
          private ProcessorContext<Object, Object> ctx;

          @Override
          public void init(ProcessorContext<Object, Object> context) {
            ctx = context;
          }

          @Override
          public void process(Record<Object, Object> r) {
            ctx.forward(r, arg);
          }
        };
      case "sweep_every":
        return () -> new SweepEvery(store, Long.parseLong(arg), PunctuationType.STREAM_TIME);
      case "sweep_wall_clock":
        return () -> new SweepEvery(store, Long.parseLong(arg), PunctuationType.WALL_CLOCK_TIME);
      case "versioned_history":
        return () -> new VersionedHistory(store);
      case "forward_then_fail":
        return () -> new Processor<Object, Object, Object, Object>() {
          private ProcessorContext<Object, Object> ctx;

          @Override
          public void init(ProcessorContext<Object, Object> context) {
            ctx = context;
          }

          @Override
          public void process(Record<Object, Object> r) {
            ctx.forward(r);
            if (String.valueOf(r.value()).equals(arg)) {
              throw new RuntimeException("forward_then_fail " + arg);
            }
          }
        };
      default:
        throw new IllegalArgumentException("processor " + name + " is not in the processor catalogue for process");
    }
  }

  /** A supplier for processValues(). */
  static FixedKeyProcessorSupplier<Object, Object, Object> fixedKeySupplier(JsonNode p) {
    String name = name(p);
    if (!name.equals("restamp")) {
      throw new IllegalArgumentException("processor " + name + " is not in the processor catalogue for process_values");
    }
    return () -> new FixedKeyProcessor<Object, Object, Object>() {
      private FixedKeyProcessorContext<Object, Object> ctx;

      @Override
      public void init(FixedKeyProcessorContext<Object, Object> context) {
        ctx = context;
      }

      @Override
      public void process(FixedKeyRecord<Object, Object> r) {
        Headers h = new RecordHeaders(r.headers().toArray());
        h.add("seen", "1".getBytes(StandardCharsets.UTF_8));
        ctx.forward(r.withTimestamp(r.timestamp() + 1000).withHeaders(h));
      }
    };
  }

  /** n = store.get(key) or 0; store.put(key, n + 1); forward(record.withValue(n + 1)). */
  static final class CountPerKey implements Processor<Object, Object, Object, Object> {
    private final String store;
    private ProcessorContext<Object, Object> ctx;
    private KeyValueStore<Object, Object> kv;

    CountPerKey(String store) {
      this.store = store;
    }

    @Override
    public void init(ProcessorContext<Object, Object> context) {
      ctx = context;
      kv = context.getStateStore(store);
    }

    @Override
    public void process(Record<Object, Object> r) {
      Object old = kv.get(r.key());
      long n = old == null ? 0 : ((Number) old).longValue();
      kv.put(r.key(), n + 1);
      ctx.forward(r.withValue(n + 1));
    }
  }

  /**
   * Counts per key with no forward; every interval of stream time (sweep_every)
   * or wall-clock time (sweep_wall_clock) forwards
   * each entry (key, count) at the punctuation's time, then deletes it.
   */
  static final class SweepEvery implements Processor<Object, Object, Object, Object> {
    private final String store;
    private final long interval;
    private ProcessorContext<Object, Object> ctx;
    private KeyValueStore<Object, Object> kv;

    private final PunctuationType type;

    SweepEvery(String store, long interval, PunctuationType type) {
      this.store = store;
      this.interval = interval;
      this.type = type;
    }

    @Override
    public void init(ProcessorContext<Object, Object> context) {
      ctx = context;
      kv = context.getStateStore(store);
      context.schedule(Duration.ofMillis(interval), type, this::sweep);
    }

    private void sweep(long ts) {
      List<KeyValue<Object, Object>> all = new ArrayList<>();
      try (KeyValueIterator<Object, Object> it = kv.all()) {
        it.forEachRemaining(all::add);
      }
      for (KeyValue<Object, Object> e : all) {
        ctx.forward(new Record<>(e.key, e.value, ts));
        kv.delete(e.key);
      }
    }

    @Override
    public void process(Record<Object, Object> r) {
      Object old = kv.get(r.key());
      long n = old == null ? 0 : ((Number) old).longValue();
      kv.put(r.key(), n + 1);
    }
  }

  /**
   * Over a versioned store: a record whose value is "delete" calls
   * delete(key, ts) and forwards "delete <deleted> latest <get(key)>";
   * any other calls put(key, value, ts) and forwards "put <its answer>
   * latest <get(key)> asof <get(key, ts - 1)>". A version prints as
   * value@timestamp, then &lt;validTo when it has one; none as null.
   */
  static final class VersionedHistory implements Processor<Object, Object, Object, Object> {
    private final String store;
    private ProcessorContext<Object, Object> ctx;
    private VersionedKeyValueStore<Object, Object> vs;

    VersionedHistory(String store) {
      this.store = store;
    }

    @Override
    public void init(ProcessorContext<Object, Object> context) {
      ctx = context;
      vs = context.getStateStore(store);
    }

    static String show(VersionedRecord<Object> r) {
      if (r == null) {
        return "null";
      }
      return r.value() + "@" + r.timestamp() + r.validTo().map(t -> "<" + t).orElse("");
    }

    @Override
    public void process(Record<Object, Object> r) {
      String out;
      if ("delete".equals(String.valueOf(r.value()))) {
        VersionedRecord<Object> d = vs.delete(r.key(), r.timestamp());
        out = "delete " + show(d) + " latest " + show(vs.get(r.key()));
      } else {
        long code = vs.put(r.key(), r.value(), r.timestamp());
        out = "put " + code + " latest " + show(vs.get(r.key())) + " asof " + show(vs.get(r.key(), r.timestamp() - 1));
      }
      ctx.forward(r.withValue(out));
    }
  }
}
