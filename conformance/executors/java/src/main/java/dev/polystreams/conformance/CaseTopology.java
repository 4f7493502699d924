package dev.polystreams.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Aggregator;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.BranchedKStream;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Initializer;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.CogroupedKStream;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.SessionWindowedCogroupedKStream;
import org.apache.kafka.streams.kstream.TimeWindowedCogroupedKStream;
import org.apache.kafka.streams.kstream.KGroupedTable;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.KeyValueMapper;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Merger;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Predicate;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Reducer;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.SessionWindowedKStream;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.processor.TimestampExtractor;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.TimeWindowedKStream;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.kstream.ValueMapper;
import org.apache.kafka.streams.kstream.ValueTransformerWithKeySupplier;
import org.apache.kafka.streams.kstream.ValueMapperWithKey;
import org.apache.kafka.streams.kstream.Printed;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * Builds a case's topology with the Kafka Streams DSL: one DSL call per step,
 * as a Kafka Streams user would write it, with the case's catalogue functions
 * (Fn) over natural values. Every function's result goes on as its step's
 * serde carries it (Codec.coerce), as in the SDKs' executors.
 */
@SuppressWarnings({"unchecked", "rawtypes"})
final class CaseTopology {
  /** A refused step: its index and the exception Kafka Streams (or the DSL's argument check) threw. */
  static final class StepException extends RuntimeException {
    final int step;

    StepException(int step, RuntimeException cause) {
      super(cause);
      this.step = step;
    }
  }

  private final StreamsBuilder builder = new StreamsBuilder();
  private final Map<String, Handle> labels = new HashMap<>();

  /** Replays the case's steps; a refused step throws StepException. */
  StreamsBuilder build(JsonNode topology) {
    Handle prev = null;
    for (int i = 0; i < topology.size(); i++) {
      JsonNode st = topology.get(i);
      Handle in = prev;
      if (st.hasNonNull("from")) {
        in = labels.get(st.get("from").asText());
      }
      if (st.hasNonNull("branch")) {
        Map<String, KStream> branches = (Map<String, KStream>) in.dsl;
        String b = st.get("branch").asText();
        KStream s = branches.get(b);
        if (s == null) {
          throw new StepException(i, new IllegalArgumentException("the split makes no branch " + b + " (it makes " + branches.keySet() + ")"));
        }
        in = in.with(Handle.Kind.STREAM, s, in.valueSerde);
      }
      Handle out;
      try {
        out = step(st, in);
      } catch (RuntimeException e) {
        throw new StepException(i, e);
      }
      if (out == null) {
        continue;
      }
      if (out.kind == Handle.Kind.BRANCHES) {
        labels.put(text(st, "as"), out); // reached only through its label
        continue;
      }
      prev = out;
      if (st.hasNonNull("as")) {
        labels.put(text(st, "as"), out);
      }
    }
    return builder;
  }

  private static String text(JsonNode st, String field) {
    JsonNode n = st.get(field);
    return n == null || n.isNull() ? null : n.asText();
  }

  /**
   * A source's Consumed.withTimestampExtractor: a built-in extractor by class
   * name, or a catalogue extractor (timestamp_extractor_fn) as a user
   * TimestampExtractor over the source's deserialized key and value.
   */
  private static Consumed extractor(JsonNode st, Consumed c) {
    Fn fn = Fn.of(st.get("timestamp_extractor_fn"));
    if (fn != null) {
      TimestampExtractor user = (record, partitionTime) -> fn.extract(record.key(), record.value(), record.timestamp(), partitionTime);
      return c.withTimestampExtractor(user);
    }
    String name = text(st, "timestamp_extractor");
    if (name == null) {
      return c;
    }
    switch (name) {
      case "FailOnInvalidTimestamp":
        return c.withTimestampExtractor(new org.apache.kafka.streams.processor.FailOnInvalidTimestamp());
      case "LogAndSkipOnInvalidTimestamp":
        return c.withTimestampExtractor(new org.apache.kafka.streams.processor.LogAndSkipOnInvalidTimestamp());
      case "UsePartitionTimeOnInvalidTimestamp":
        return c.withTimestampExtractor(new org.apache.kafka.streams.processor.UsePartitionTimeOnInvalidTimestamp());
      default:
        throw new IllegalArgumentException("unknown timestamp extractor " + name);
    }
  }

  private static String or(String s, String def) {
    return s == null ? def : s;
  }

  private static Serde<Object> serde(String name) {
    return CaseSerdes.natural(name);
  }

  /** The step's Materialized, or null when it gives none. */
  private static Materialized mat(JsonNode st) {
    JsonNode m = st.get("materialized");
    if (m == null || m.isNull()) {
      return null;
    }
    Materialized x = m.hasNonNull("store") ? Materialized.as(m.get("store").asText()) : Materialized.with(null, null);
    JsonNode v = m.get("versioned");
    if (v != null && !v.isNull()) {
      String store = m.hasNonNull("store") ? m.get("store").asText() : null;
      Duration history = Duration.ofMillis(v.get("history_retention_ms").asLong());
      x = Materialized.as(v.hasNonNull("segment_interval_ms")
          ? Stores.persistentVersionedKeyValueStore(store, history, Duration.ofMillis(v.get("segment_interval_ms").asLong()))
          : Stores.persistentVersionedKeyValueStore(store, history));
    }
    if (m.hasNonNull("key")) {
      x = x.withKeySerde(serde(m.get("key").asText()));
    }
    if (m.hasNonNull("value")) {
      x = x.withValueSerde(serde(m.get("value").asText()));
    }
    if (m.hasNonNull("retention_ms")) {
      x = x.withRetention(Duration.ofMillis(m.get("retention_ms").asLong()));
    }
    return x;
  }

  /** The materialized value serde, when the step names one. */
  private static String matValue(JsonNode st) {
    JsonNode m = st.get("materialized");
    return m != null && m.hasNonNull("value") ? m.get("value").asText() : null;
  }

  private static Named named(JsonNode st) {
    String n = text(st, "name");
    return n == null ? null : Named.as(n);
  }

  private Handle step(JsonNode st, Handle in) {
    String op = text(st, "op");
    String name = text(st, "name");
    switch (op) {
      case "stream": {
        List<String> topics = new ArrayList<>();
        st.get("topics").forEach(t -> topics.add(t.asText()));
        String ks = or(text(st, "key"), "bytes");
        String vs = or(text(st, "value"), "bytes");
        Consumed c = extractor(st, Consumed.with(serde(ks), serde(vs)));
        if (name != null) {
          c = c.withName(name);
        }
        return new Handle(Handle.Kind.STREAM, builder.stream(topics, c), ks, vs, null, false);
      }
      case "table":
      case "global_table": {
        String ks = or(text(st, "key"), "bytes");
        String vs = or(text(st, "value"), "bytes");
        Consumed c = extractor(st, Consumed.with(serde(ks), serde(vs)));
        if (name != null) {
          c = c.withName(name);
        }
        Materialized m = mat(st);
        String topic = text(st, "topic");
        if (op.equals("global_table")) {
          GlobalKTable g = m == null ? builder.globalTable(topic, c) : builder.globalTable(topic, c, m);
          return new Handle(Handle.Kind.GLOBAL_TABLE, g, ks, vs, null, false);
        }
        KTable t = m == null ? builder.table(topic, c) : builder.table(topic, c, m);
        return new Handle(Handle.Kind.TABLE, t, ks, vs, null, false);
      }
      case "add_state_store": {
        JsonNode v = st.get("versioned");
        if (v != null && !v.isNull()) {
          Duration history = Duration.ofMillis(v.get("history_retention_ms").asLong());
          builder.addStateStore(Stores.versionedKeyValueStoreBuilder(
              v.hasNonNull("segment_interval_ms")
                  ? Stores.persistentVersionedKeyValueStore(name, history, Duration.ofMillis(v.get("segment_interval_ms").asLong()))
                  : Stores.persistentVersionedKeyValueStore(name, history),
              serde(text(st, "key")), serde(text(st, "value"))));
          return null;
        }
        builder.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(name), serde(text(st, "key")), serde(text(st, "value"))));
        return null;
      }
      default:
        break;
    }
    if (in == null) {
      throw new IllegalArgumentException(op + " applies to nothing (no earlier step made a stream or table)");
    }
    switch (in.kind) {
      case STREAM:
        return streamStep(st, op, in);
      case GROUPED_STREAM:
      case TIME_WINDOWED:
      case SESSION_WINDOWED:
        return groupedStep(st, op, in);
      case TABLE:
        return tableStep(st, op, in);
      case GROUPED_TABLE:
        return groupedTableStep(st, op, in);
      case COGROUPED:
      case TIME_WINDOWED_COGROUPED:
      case SESSION_WINDOWED_COGROUPED:
        return cogroupedStep(st, op, in);
      default:
        throw new IllegalArgumentException(op + " cannot apply to a " + in.kind);
    }
  }

  private Handle streamStep(JsonNode st, String op, Handle in) {
    KStream<Object, Object> s = (KStream<Object, Object>) in.dsl;
    String name = text(st, "name");
    Named n = named(st);
    Fn f = Fn.of(st.get("fn"));
    String ks = in.keySerde;
    String vs = in.valueSerde;
    switch (op) {
      case "map_values": {
        String out = or(text(st, "value"), vs);
        ValueMapper<Object, Object> m = v -> Codec.coerce(out, f.map(v));
        return in.with(Handle.Kind.STREAM, n == null ? s.mapValues(m) : s.mapValues(m, n), out);
      }
      case "flat_map_values": {
        String out = or(text(st, "value"), vs);
        ValueMapper<Object, Iterable<Object>> m = v -> {
          List<Object> r = new ArrayList<>();
          for (Object x : f.flat(v)) {
            r.add(Codec.coerce(out, x));
          }
          return r;
        };
        return in.with(Handle.Kind.STREAM, n == null ? s.flatMapValues(m) : s.flatMapValues(m, n), out);
      }
      case "map_values_with_key": {
        String out = or(text(st, "value"), vs);
        ValueMapperWithKey<Object, Object, Object> m = (k, v) -> Codec.coerce(out, f.mapWithKey(k, v));
        return in.with(Handle.Kind.STREAM, n == null ? s.mapValues(m) : s.mapValues(m, n), out);
      }
      case "flat_map_values_with_key": {
        String out = or(text(st, "value"), vs);
        ValueMapperWithKey<Object, Object, Iterable<Object>> m = (k, v) -> {
          List<Object> r = new ArrayList<>();
          for (Object x : f.flatWithKey(k, v)) {
            r.add(Codec.coerce(out, x));
          }
          return r;
        };
        return in.with(Handle.Kind.STREAM, n == null ? s.flatMapValues(m) : s.flatMapValues(m, n), out);
      }
      case "flat_map": {
        String outK = or(text(st, "key"), ks);
        String outV = or(text(st, "value"), vs);
        KeyValueMapper<Object, Object, Iterable<KeyValue<Object, Object>>> m = (k, v) -> {
          List<KeyValue<Object, Object>> r = new ArrayList<>();
          for (Object[] kv : f.flatKeyValue(k, v)) {
            r.add(KeyValue.pair(Codec.coerce(outK, kv[0]), Codec.coerce(outV, kv[1])));
          }
          return r;
        };
        KStream r = n == null ? s.flatMap(m) : s.flatMap(m, n);
        return new Handle(Handle.Kind.STREAM, r, outK, outV, null, false);
      }
      case "filter":
      case "filter_not": {
        Predicate<Object, Object> p = f::test;
        KStream r;
        if (op.equals("filter")) {
          r = n == null ? s.filter(p) : s.filter(p, n);
        } else {
          r = n == null ? s.filterNot(p) : s.filterNot(p, n);
        }
        return in.with(Handle.Kind.STREAM, r, vs);
      }
      case "map": {
        String outK = or(text(st, "key"), ks);
        String outV = or(text(st, "value"), vs);
        KeyValueMapper<Object, Object, KeyValue<Object, Object>> m = (k, v) -> {
          Object[] kv = f.keyValue(k, v);
          return kv == null ? null : KeyValue.pair(Codec.coerce(outK, kv[0]), Codec.coerce(outV, kv[1]));
        };
        KStream r = n == null ? s.map(m) : s.map(m, n);
        return new Handle(Handle.Kind.STREAM, r, outK, outV, null, false);
      }
      case "select_key": {
        String outK = or(text(st, "key"), ks);
        KeyValueMapper<Object, Object, Object> m = (k, v) -> Codec.coerce(outK, f.key(k, v));
        KStream r = n == null ? s.selectKey(m) : s.selectKey(m, n);
        return new Handle(Handle.Kind.STREAM, r, outK, vs, null, false);
      }
      case "group_by":
      case "group_by_key": {
        String outK = or(text(st, "key"), ks);
        String outV = or(text(st, "value"), vs);
        Grouped g = (name == null ? Grouped.with(serde(outK), serde(outV)) : Grouped.as(name).withKeySerde(serde(outK)).withValueSerde(serde(outV)));
        KGroupedStream r;
        if (op.equals("group_by")) {
          KeyValueMapper<Object, Object, Object> m = (k, v) -> Codec.coerce(outK, f.key(k, v));
          r = s.groupBy(m, g);
        } else {
          r = s.groupByKey(g);
        }
        return new Handle(Handle.Kind.GROUPED_STREAM, r, outK, outV, null, false);
      }
      case "peek": {
        KStream r = n == null ? s.peek(f::act) : s.peek(f::act, n);
        return in.with(Handle.Kind.STREAM, r, vs);
      }
      case "foreach":
        if (n == null) {
          s.foreach(f::act);
        } else {
          s.foreach(f::act, n);
        }
        return null;
      case "print": {
        Printed<Object, Object> p = Printed.toSysOut();
        if (st.hasNonNull("label")) {
          p = p.withLabel(st.get("label").asText());
        }
        if (name != null) {
          p = p.withName(name);
        }
        s.print(p);
        return null;
      }
      case "to": {
        Handle sink = new Handle(Handle.Kind.STREAM, s, or(text(st, "key"), ks), or(text(st, "value"), vs), in.windowSize, in.sessionWindowed);
        Produced p = Produced.with(CaseSerdes.keySerde(sink), serde(sink.valueSerde));
        if (name != null) {
          p = p.withName(name);
        }
        if ("key".equals(text(st, "extract"))) {
          // Named by toString(), which describe() prints: the SDKs print
          // the function's name, a lambda's toString() is not stable.
          String prefix = text(st, "topic");
          s.to(new org.apache.kafka.streams.processor.TopicNameExtractor<Object, Object>() {
            @Override
            public String extract(Object k, Object v, org.apache.kafka.streams.processor.RecordContext rc) {
              return prefix + k;
            }

            @Override
            public String toString() {
              return "topic_by_key";
            }
          }, p);
          return null;
        }
        s.to(text(st, "topic"), p);
        return null;
      }
      case "process":
      case "process_values": {
        List<String> stores = new ArrayList<>();
        if (st.hasNonNull("stores")) {
          st.get("stores").forEach(x -> stores.add(x.asText()));
        }
        String[] storeNames = stores.toArray(new String[0]);
        String store = stores.isEmpty() ? null : stores.get(0);
        String out = or(text(st, "value"), vs);
        if (op.equals("process_values")) {
          KStream r = n == null ? s.processValues(Processors.fixedKeySupplier(st.get("processor")), storeNames)
              : s.processValues(Processors.fixedKeySupplier(st.get("processor")), n, storeNames);
          return in.with(Handle.Kind.STREAM, r, out);
        }
        KStream r = n == null ? s.process(Processors.supplier(st.get("processor"), store), storeNames)
            : s.process(Processors.supplier(st.get("processor"), store), n, storeNames);
        return new Handle(Handle.Kind.STREAM, r, or(text(st, "key"), ks), out, null, false);
      }
      case "merge": {
        Handle other = labels.get(text(st, "other"));
        KStream o = (KStream) other.dsl;
        return in.with(Handle.Kind.STREAM, n == null ? s.merge(o) : s.merge(o, n), vs);
      }
      case "repartition": {
        Repartitioned r = name == null ? Repartitioned.with(CaseSerdes.keySerde(in), serde(vs)) : Repartitioned.as(name).withKeySerde(CaseSerdes.keySerde(in)).withValueSerde(serde(vs));
        if (st.hasNonNull("partitions")) {
          r = r.withNumberOfPartitions(st.get("partitions").asInt());
        }
        return in.with(Handle.Kind.STREAM, s.repartition(r), vs);
      }
      case "split": {
        BranchedKStream<Object, Object> b = n == null ? s.split() : s.split(n);
        for (JsonNode br : st.get("branches")) {
          Fn p = Fn.of(br.get("fn"));
          Predicate<Object, Object> pred = p::test;
          b = br.hasNonNull("name") ? b.branch(pred, Branched.as(br.get("name").asText())) : b.branch(pred);
        }
        Map<String, KStream<Object, Object>> m;
        if (st.path("default_branch").asBoolean(false)) {
          m = st.hasNonNull("default_name") ? b.defaultBranch(Branched.as(st.get("default_name").asText())) : b.defaultBranch();
        } else {
          m = b.noDefaultBranch();
        }
        return in.with(Handle.Kind.BRANCHES, m, vs);
      }
      case "join":
      case "left_join":
      case "outer_join":
        return streamJoin(st, op, in, s, f);
      case "to_table": {
        Materialized m = mat(st);
        KTable r = n == null ? (m == null ? s.toTable() : s.toTable(m)) : (m == null ? s.toTable(n) : s.toTable(n, m));
        JsonNode mj = st.get("materialized");
        String outK = mj != null && mj.hasNonNull("key") ? mj.get("key").asText() : ks;
        return new Handle(Handle.Kind.TABLE, r, outK, or(matValue(st), vs), in.windowSize, in.sessionWindowed);
      }
      default:
        throw new IllegalArgumentException(op + " cannot apply to a stream");
    }
  }

  /** The step's joiner: a catalogue function or a built-in, with the result's serde. */
  private static ValueJoiner<Object, Object, Object> joiner(JsonNode st, Fn f, String vs, String otherVs, String out) {
    String builtin = text(st, "builtin_joiner");
    if (builtin == null) {
      return (v, o) -> Codec.coerce(out, f.join(v, o));
    }
    switch (builtin) {
      case "pair":
        return (v, o) -> {
          List<Object> pair = new ArrayList<>();
          pair.add(v);
          pair.add(o);
          return pair;
        };
      case "this":
        return (v, o) -> v;
      case "other":
        return (v, o) -> o;
      default:
        throw new IllegalArgumentException("builtin_joiner " + builtin + " is not known");
    }
  }

  /** The joined values' serde: the built-in's, else the step's value, else def. */
  private static String joinSerde(JsonNode st, String def, String vs, String otherVs) {
    String builtin = text(st, "builtin_joiner");
    if (builtin != null) {
      switch (builtin) {
        case "pair":
          return "json";
        case "this":
          return vs;
        case "other":
          return otherVs;
        default:
          break;
      }
    }
    return or(text(st, "value"), def);
  }

  private Handle streamJoin(JsonNode st, String op, Handle in, KStream<Object, Object> s, Fn f) {
    String name = text(st, "name");
    Named n = named(st);
    String vs = in.valueSerde;
    if (st.hasNonNull("other")) {
      Handle other = labels.get(text(st, "other"));
      String out = joinSerde(st, vs, vs, other.valueSerde);
      ValueJoiner<Object, Object, Object> j = joiner(st, f, vs, other.valueSerde, out);
      JsonNode jw = st.get("join_windows");
      Duration d = Duration.ofMillis(jw.get("time_difference_ms").asLong());
      JoinWindows w = jw.hasNonNull("grace_ms") ? JoinWindows.ofTimeDifferenceAndGrace(d, Duration.ofMillis(jw.get("grace_ms").asLong())) : JoinWindows.ofTimeDifferenceWithNoGrace(d);
      if (jw.hasNonNull("before_ms")) {
        w = w.before(Duration.ofMillis(jw.get("before_ms").asLong()));
      }
      if (jw.hasNonNull("after_ms")) {
        w = w.after(Duration.ofMillis(jw.get("after_ms").asLong()));
      }
      StreamJoined sj = StreamJoined.with(CaseSerdes.keySerde(in), serde(vs), serde(other.valueSerde));
      if (st.hasNonNull("store_name")) {
        sj = sj.withStoreName(text(st, "store_name"));
      }
      if (name != null) {
        sj = sj.withName(name);
      }
      KStream o = (KStream) other.dsl;
      KStream r;
      switch (op) {
        case "join":
          r = s.join(o, j, w, sj);
          break;
        case "left_join":
          r = s.leftJoin(o, j, w, sj);
          break;
        default:
          r = s.outerJoin(o, j, w, sj);
          break;
      }
      return in.with(Handle.Kind.STREAM, r, out);
    }
    Handle table = labels.get(text(st, "table"));
    String out = joinSerde(st, vs, vs, table.valueSerde);
    ValueJoiner<Object, Object, Object> j = joiner(st, f, vs, table.valueSerde, out);
    if (table.kind == Handle.Kind.GLOBAL_TABLE) {
      Fn km = Fn.of(st.get("key_mapper"));
      String gks = table.keySerde;
      KeyValueMapper<Object, Object, Object> mapper = (k, v) -> Codec.coerce(gks, km.key(k, v));
      GlobalKTable g = (GlobalKTable) table.dsl;
      KStream r;
      if (op.equals("join")) {
        r = n == null ? s.join(g, mapper, j) : s.join(g, mapper, j, n);
      } else {
        r = n == null ? s.leftJoin(g, mapper, j) : s.leftJoin(g, mapper, j, n);
      }
      return in.with(Handle.Kind.STREAM, r, out);
    }
    Joined joined = Joined.with(CaseSerdes.keySerde(in), serde(vs), serde(table.valueSerde));
    if (name != null) {
      joined = joined.withName(name);
    }
    KTable t = (KTable) table.dsl;
    KStream r = op.equals("join") ? s.join(t, j, joined) : s.leftJoin(t, j, joined);
    return in.with(Handle.Kind.STREAM, r, out);
  }

  /** A reducer: a catalogue function or a built-in (sum, min, max, latest), polystreams' own. */
  private static Reducer<Object> reducer(JsonNode st, Fn f, String aggSerde) {
    String builtin = text(st, "builtin");
    if (builtin == null) {
      return (agg, v) -> Codec.coerce(aggSerde, f.reduce(agg, v));
    }
    return builtinReducer(builtin, false);
  }

  private static Reducer<Object> builtinReducer(String builtin, boolean subtract) {
    switch (builtin) {
      case "sum":
        return (a, v) -> {
          if (a instanceof Long x && v instanceof Long y) {
            return subtract ? x - y : x + y;
          }
          double x = ((Number) a).doubleValue();
          double y = ((Number) v).doubleValue();
          return subtract ? x - y : x + y;
        };
      case "min":
        return (a, v) -> ((Number) v).doubleValue() < ((Number) a).doubleValue() ? v : a;
      case "max":
        return (a, v) -> ((Number) v).doubleValue() > ((Number) a).doubleValue() ? v : a;
      case "latest":
        return (a, v) -> v;
      default:
        throw new IllegalArgumentException("builtin " + builtin + " is not known");
    }
  }

  /**
   * A cogroup's DSL object, with the aggregate's serde, which its
   * aggregators coerce to: known only at aggregate, so they read it then.
   */
  static final class Cogroup {
    final Object dsl;
    final String[] aggSerde;
    final String firstValueSerde;

    Cogroup(Object dsl, String[] aggSerde, String firstValueSerde) {
      this.dsl = dsl;
      this.aggSerde = aggSerde;
      this.firstValueSerde = firstValueSerde;
    }
  }

  private static Aggregator<Object, Object, Object> cogroupAggregator(Fn f, String[] aggSerde) {
    return (k, v, agg) -> Codec.coerce(aggSerde[0], f.aggregate(k, v, agg));
  }

  private Handle cogroupedStep(JsonNode st, String op, Handle in) {
    Cogroup c = (Cogroup) in.dsl;
    switch (op) {
      case "cogroup": {
        Handle g = labels.get(text(st, "other"));
        CogroupedKStream r = ((CogroupedKStream) c.dsl).cogroup((KGroupedStream) g.dsl, cogroupAggregator(Fn.of(st.get("fn")), c.aggSerde));
        return in.with(Handle.Kind.COGROUPED, new Cogroup(r, c.aggSerde, c.firstValueSerde), null);
      }
      case "windowed_by": {
        Object w = windows(st.get("windows"));
        CogroupedKStream cg = (CogroupedKStream) c.dsl;
        if (w instanceof SessionWindows sw) {
          return new Handle(Handle.Kind.SESSION_WINDOWED_COGROUPED, new Cogroup(cg.windowedBy(sw), c.aggSerde, c.firstValueSerde), in.keySerde, null, null, true);
        }
        if (w instanceof SlidingWindows sw) {
          return new Handle(Handle.Kind.TIME_WINDOWED_COGROUPED, new Cogroup(cg.windowedBy(sw), c.aggSerde, c.firstValueSerde), in.keySerde, null, sw.timeDifferenceMs(), false);
        }
        TimeWindows tw = (TimeWindows) w;
        return new Handle(Handle.Kind.TIME_WINDOWED_COGROUPED, new Cogroup(cg.windowedBy(tw), c.aggSerde, c.firstValueSerde), in.keySerde, null, tw.sizeMs, false);
      }
      case "aggregate": {
        Named n = named(st);
        Materialized m = mat(st);
        c.aggSerde[0] = or(matValue(st), c.firstValueSerde);
        String aggSerde = c.aggSerde[0];
        Fn init = Fn.of(st.get("init"));
        Initializer<Object> i = () -> Codec.coerce(aggSerde, init.init());
        Materialized mm = m == null ? Materialized.with(null, null) : m;
        Object r;
        if (in.kind == Handle.Kind.COGROUPED) {
          CogroupedKStream g = (CogroupedKStream) c.dsl;
          r = n == null ? (m == null ? g.aggregate(i) : g.aggregate(i, m)) : (m == null ? g.aggregate(i, n) : g.aggregate(i, n, m));
        } else if (in.kind == Handle.Kind.TIME_WINDOWED_COGROUPED) {
          TimeWindowedCogroupedKStream g = (TimeWindowedCogroupedKStream) c.dsl;
          r = n == null ? (m == null ? g.aggregate(i) : g.aggregate(i, m)) : g.aggregate(i, n, mm);
        } else {
          SessionWindowedCogroupedKStream g = (SessionWindowedCogroupedKStream) c.dsl;
          Fn mf = Fn.of(st.get("merger"));
          Merger<Object, Object> merger = mf == null ? null : (k, a1, a2) -> Codec.coerce(aggSerde, mf.merge(k, a1, a2));
          r = n == null ? (m == null ? g.aggregate(i, merger) : g.aggregate(i, merger, m)) : g.aggregate(i, merger, n, mm);
        }
        return in.with(Handle.Kind.TABLE, r, aggSerde);
      }
      default:
        throw new IllegalArgumentException(op + " cannot apply to a " + in.kind);
    }
  }

  /** The windows of a windowed_by step: TimeWindows, SlidingWindows or SessionWindows. */
  private static Object windows(JsonNode w) {
    Duration grace = w.hasNonNull("grace_ms") ? Duration.ofMillis(w.get("grace_ms").asLong()) : null;
    switch (w.get("type").asText()) {
      case "session": {
        Duration gap = Duration.ofMillis(w.get("inactivity_gap_ms").asLong());
        return grace == null ? SessionWindows.ofInactivityGapWithNoGrace(gap) : SessionWindows.ofInactivityGapAndGrace(gap, grace);
      }
      case "sliding": {
        Duration d = Duration.ofMillis(w.get("time_difference_ms").asLong());
        return grace == null ? SlidingWindows.ofTimeDifferenceWithNoGrace(d) : SlidingWindows.ofTimeDifferenceAndGrace(d, grace);
      }
      default: {
        Duration size = Duration.ofMillis(w.get("size_ms").asLong());
        TimeWindows tw = grace == null ? TimeWindows.ofSizeWithNoGrace(size) : TimeWindows.ofSizeAndGrace(size, grace);
        if (w.hasNonNull("advance_ms")) {
          tw = tw.advanceBy(Duration.ofMillis(w.get("advance_ms").asLong()));
        }
        return tw;
      }
    }
  }

  private Handle groupedStep(JsonNode st, String op, Handle in) {
    Named n = named(st);
    Materialized m = mat(st);
    Fn f = Fn.of(st.get("fn"));
    String aggSerde = or(matValue(st), in.valueSerde);
    if (op.equals("cogroup")) {
      String[] holder = new String[1];
      KGroupedStream g = (KGroupedStream) in.dsl;
      return in.with(Handle.Kind.COGROUPED, new Cogroup(g.cogroup(cogroupAggregator(f, holder)), holder, in.valueSerde), null);
    }
    if (op.equals("emit_strategy")) {
      String strategy = text(st, "strategy");
      EmitStrategy e;
      switch (strategy) {
        case "on_window_close":
          e = EmitStrategy.onWindowClose();
          break;
        case "on_window_update":
          e = EmitStrategy.onWindowUpdate();
          break;
        default:
          throw new IllegalArgumentException("emit_strategy " + strategy + " is not known");
      }
      Object r;
      if (in.kind == Handle.Kind.TIME_WINDOWED) {
        r = ((TimeWindowedKStream) in.dsl).emitStrategy(e);
      } else if (in.kind == Handle.Kind.SESSION_WINDOWED) {
        r = ((SessionWindowedKStream) in.dsl).emitStrategy(e);
      } else {
        throw new IllegalArgumentException("emit_strategy applies to a windowed stream, not a " + in.kind);
      }
      return in.with(in.kind, r, in.valueSerde);
    }
    if (op.equals("windowed_by")) {
      KGroupedStream g = (KGroupedStream) in.dsl;
      JsonNode w = st.get("windows");
      Duration grace = w.hasNonNull("grace_ms") ? Duration.ofMillis(w.get("grace_ms").asLong()) : null;
      switch (w.get("type").asText()) {
        case "session": {
          Duration gap = Duration.ofMillis(w.get("inactivity_gap_ms").asLong());
          SessionWindows sw = grace == null ? SessionWindows.ofInactivityGapWithNoGrace(gap) : SessionWindows.ofInactivityGapAndGrace(gap, grace);
          return new Handle(Handle.Kind.SESSION_WINDOWED, g.windowedBy(sw), in.keySerde, in.valueSerde, null, true);
        }
        case "sliding": {
          Duration d = Duration.ofMillis(w.get("time_difference_ms").asLong());
          SlidingWindows sw = grace == null ? SlidingWindows.ofTimeDifferenceWithNoGrace(d) : SlidingWindows.ofTimeDifferenceAndGrace(d, grace);
          return new Handle(Handle.Kind.TIME_WINDOWED, g.windowedBy(sw), in.keySerde, in.valueSerde, d.toMillis(), false);
        }
        default: {
          Duration size = Duration.ofMillis(w.get("size_ms").asLong());
          TimeWindows tw = grace == null ? TimeWindows.ofSizeWithNoGrace(size) : TimeWindows.ofSizeAndGrace(size, grace);
          if (w.hasNonNull("advance_ms")) {
            tw = tw.advanceBy(Duration.ofMillis(w.get("advance_ms").asLong()));
          }
          return new Handle(Handle.Kind.TIME_WINDOWED, g.windowedBy(tw), in.keySerde, in.valueSerde, size.toMillis(), false);
        }
      }
    }
    Object r;
    String out = op.equals("count") ? "long" : aggSerde;
    switch (op) {
      case "count":
        if (in.kind == Handle.Kind.GROUPED_STREAM) {
          KGroupedStream g = (KGroupedStream) in.dsl;
          r = n == null ? (m == null ? g.count() : g.count(m)) : (m == null ? g.count(n) : g.count(n, m));
        } else if (in.kind == Handle.Kind.TIME_WINDOWED) {
          TimeWindowedKStream g = (TimeWindowedKStream) in.dsl;
          r = n == null ? (m == null ? g.count() : g.count(m)) : (m == null ? g.count(n) : g.count(n, m));
        } else {
          SessionWindowedKStream g = (SessionWindowedKStream) in.dsl;
          r = n == null ? (m == null ? g.count() : g.count(m)) : (m == null ? g.count(n) : g.count(n, m));
        }
        break;
      case "reduce": {
        Reducer<Object> red = reducer(st, f, aggSerde);
        if (in.kind == Handle.Kind.GROUPED_STREAM) {
          KGroupedStream g = (KGroupedStream) in.dsl;
          r = n == null ? (m == null ? g.reduce(red) : g.reduce(red, m)) : g.reduce(red, n, m == null ? Materialized.with(null, null) : m);
        } else if (in.kind == Handle.Kind.TIME_WINDOWED) {
          TimeWindowedKStream g = (TimeWindowedKStream) in.dsl;
          r = n == null ? (m == null ? g.reduce(red) : g.reduce(red, m)) : g.reduce(red, n, m == null ? Materialized.with(null, null) : m);
        } else {
          SessionWindowedKStream g = (SessionWindowedKStream) in.dsl;
          r = n == null ? (m == null ? g.reduce(red) : g.reduce(red, m)) : g.reduce(red, n, m == null ? Materialized.with(null, null) : m);
        }
        break;
      }
      case "aggregate": {
        Fn init = Fn.of(st.get("init"));
        Initializer<Object> i = () -> Codec.coerce(aggSerde, init.init());
        Aggregator<Object, Object, Object> a = (k, v, agg) -> Codec.coerce(aggSerde, f.aggregate(k, v, agg));
        Materialized mm = m == null ? Materialized.with(null, null) : m;
        if (in.kind == Handle.Kind.GROUPED_STREAM) {
          KGroupedStream g = (KGroupedStream) in.dsl;
          r = n == null ? (m == null ? g.aggregate(i, a) : g.aggregate(i, a, m)) : g.aggregate(i, a, n, mm);
        } else if (in.kind == Handle.Kind.TIME_WINDOWED) {
          TimeWindowedKStream g = (TimeWindowedKStream) in.dsl;
          r = n == null ? (m == null ? g.aggregate(i, a) : g.aggregate(i, a, m)) : g.aggregate(i, a, n, mm);
        } else {
          SessionWindowedKStream g = (SessionWindowedKStream) in.dsl;
          Fn mf = Fn.of(st.get("merger"));
          Merger<Object, Object> merger = mf == null ? null : (k, a1, a2) -> Codec.coerce(aggSerde, mf.merge(k, a1, a2));
          r = n == null ? (m == null ? g.aggregate(i, a, merger) : g.aggregate(i, a, merger, m)) : g.aggregate(i, a, merger, n, mm);
        }
        break;
      }
      default:
        throw new IllegalArgumentException(op + " cannot apply to a " + in.kind);
    }
    return in.with(Handle.Kind.TABLE, r, out);
  }

  private Handle tableStep(JsonNode st, String op, Handle in) {
    KTable<Object, Object> t = (KTable<Object, Object>) in.dsl;
    String name = text(st, "name");
    Named n = named(st);
    Materialized m = mat(st);
    Fn f = Fn.of(st.get("fn"));
    String vs = in.valueSerde;
    switch (op) {
      case "filter":
      case "filter_not": {
        Predicate<Object, Object> p = f::test;
        KTable r;
        if (op.equals("filter")) {
          r = n == null ? (m == null ? t.filter(p) : t.filter(p, m)) : (m == null ? t.filter(p, n) : t.filter(p, n, m));
        } else {
          r = n == null ? (m == null ? t.filterNot(p) : t.filterNot(p, m)) : (m == null ? t.filterNot(p, n) : t.filterNot(p, n, m));
        }
        return in.with(Handle.Kind.TABLE, r, vs);
      }
      case "transform_values": {
        List<String> stores = new ArrayList<>();
        if (st.hasNonNull("stores")) {
          st.get("stores").forEach(x -> stores.add(x.asText()));
        }
        String[] storeNames = stores.toArray(new String[0]);
        String out = or(matValue(st), or(text(st, "value"), vs));
        ValueTransformerWithKeySupplier<Object, Object, Object> sup = Transformers.supplier(st.get("transformer"), stores.isEmpty() ? null : stores.get(0), out);
        KTable r;
        if (m == null) {
          r = n == null ? t.transformValues(sup, storeNames) : t.transformValues(sup, n, storeNames);
        } else {
          r = n == null ? t.transformValues(sup, m, storeNames) : t.transformValues(sup, m, n, storeNames);
        }
        return in.with(Handle.Kind.TABLE, r, out);
      }
      case "map_values": {
        String out = or(matValue(st), or(text(st, "value"), vs));
        ValueMapper<Object, Object> mapper = v -> Codec.coerce(out, f.map(v));
        KTable r = n == null ? (m == null ? t.mapValues(mapper) : t.mapValues(mapper, m)) : (m == null ? t.mapValues(mapper, n) : t.mapValues(mapper, n, m));
        return in.with(Handle.Kind.TABLE, r, out);
      }
      case "group_by": {
        String outK = or(text(st, "key"), in.keySerde);
        String outV = or(text(st, "value"), vs);
        KeyValueMapper<Object, Object, KeyValue<Object, Object>> mapper = (k, v) -> {
          Object[] kv = f.keyValue(k, v);
          return kv == null ? null : KeyValue.pair(Codec.coerce(outK, kv[0]), Codec.coerce(outV, kv[1]));
        };
        Grouped g = (name == null ? Grouped.with(serde(outK), serde(outV)) : Grouped.as(name).withKeySerde(serde(outK)).withValueSerde(serde(outV)));
        return new Handle(Handle.Kind.GROUPED_TABLE, t.groupBy(mapper, g), outK, outV, null, false);
      }
      case "to_stream": {
        if (f == null) {
          return in.with(Handle.Kind.STREAM, n == null ? t.toStream() : t.toStream(n), vs);
        }
        String outK = or(text(st, "key"), in.keySerde);
        KeyValueMapper<Object, Object, Object> mapper = (k, v) -> Codec.coerce(outK, f.key(k, v));
        KStream r = n == null ? t.toStream(mapper) : t.toStream(mapper, n);
        return new Handle(Handle.Kind.STREAM, r, outK, vs, null, false);
      }
      case "suppress": {
        Suppressed.BufferConfig buffer = Suppressed.BufferConfig.unbounded();
        JsonNode bc = st.get("buffer");
        if (bc != null && (bc.has("max_records") || bc.has("max_bytes"))) {
          buffer = bc.has("max_records") ? Suppressed.BufferConfig.maxRecords(bc.get("max_records").asLong()) : null;
          if (bc.has("max_bytes")) {
            buffer = buffer == null ? Suppressed.BufferConfig.maxBytes(bc.get("max_bytes").asLong()) : buffer.withMaxBytes(bc.get("max_bytes").asLong());
          }
          buffer = "shut_down".equals(text(bc, "when_full")) ? buffer.shutDownWhenFull() : buffer.emitEarlyWhenFull();
        }
        Suppressed s;
        if (st.has("time_limit_ms")) {
          s = Suppressed.untilTimeLimit(java.time.Duration.ofMillis(st.get("time_limit_ms").asLong()), buffer);
        } else {
          // untilWindowCloses takes a StrictBufferConfig: an eager one does
          // not compile in Java; the cast refuses it at run time here.
          s = Suppressed.untilWindowCloses((Suppressed.StrictBufferConfig) buffer);
        }
        if (name != null) {
          s = s.withName(name);
        }
        return in.with(Handle.Kind.TABLE, t.suppress(s), vs);
      }
      case "join":
      case "left_join":
      case "outer_join": {
        Handle other = labels.get(text(st, "table"));
        String out = joinSerde(st, or(matValue(st), vs), vs, other.valueSerde);
        ValueJoiner<Object, Object, Object> j = joiner(st, f, vs, other.valueSerde, out);
        KTable o = (KTable) other.dsl;
        KTable r;
        switch (op) {
          case "join":
            r = n == null ? (m == null ? t.join(o, j) : t.join(o, j, m)) : (m == null ? t.join(o, j, n) : t.join(o, j, n, m));
            break;
          case "left_join":
            r = n == null ? (m == null ? t.leftJoin(o, j) : t.leftJoin(o, j, m)) : (m == null ? t.leftJoin(o, j, n) : t.leftJoin(o, j, n, m));
            break;
          default:
            r = n == null ? (m == null ? t.outerJoin(o, j) : t.outerJoin(o, j, m)) : (m == null ? t.outerJoin(o, j, n) : t.outerJoin(o, j, n, m));
            break;
        }
        return in.with(Handle.Kind.TABLE, r, out);
      }
      case "foreign_key_join":
      case "left_foreign_key_join": {
        Handle other = labels.get(text(st, "table"));
        String out = joinSerde(st, or(matValue(st), vs), vs, other.valueSerde);
        ValueJoiner<Object, Object, Object> j = joiner(st, f, vs, other.valueSerde, out);
        Fn fk = Fn.of(st.get("foreign_key"));
        String oks = other.keySerde;
        java.util.function.Function<Object, Object> extractor = v -> Codec.coerce(oks, fk.map(v));
        KTable o = (KTable) other.dsl;
        TableJoined tj = name == null ? TableJoined.with(null, null) : TableJoined.as(name);
        KTable r;
        if (op.equals("foreign_key_join")) {
          r = m == null ? t.join(o, extractor, j, tj) : t.join(o, extractor, j, tj, m);
        } else {
          r = m == null ? t.leftJoin(o, extractor, j, tj) : t.leftJoin(o, extractor, j, tj, m);
        }
        return in.with(Handle.Kind.TABLE, r, out);
      }
      default:
        throw new IllegalArgumentException(op + " cannot apply to a table");
    }
  }

  private Handle groupedTableStep(JsonNode st, String op, Handle in) {
    KGroupedTable<Object, Object> g = (KGroupedTable<Object, Object>) in.dsl;
    Named n = named(st);
    Materialized m = mat(st);
    Fn f = Fn.of(st.get("fn"));
    Fn sub = Fn.of(st.get("subtractor"));
    String aggSerde = or(matValue(st), in.valueSerde);
    Materialized mm = m == null ? Materialized.<Object, Object, KeyValueStore<Bytes, byte[]>>with(null, null) : m;
    KTable r;
    switch (op) {
      case "count":
        r = n == null ? (m == null ? g.count() : g.count(m)) : (m == null ? g.count(n) : g.count(n, m));
        return in.with(Handle.Kind.TABLE, r, "long");
      case "reduce": {
        Reducer<Object> adder;
        Reducer<Object> subtractor;
        String builtin = text(st, "builtin");
        if (builtin != null) {
          adder = builtinReducer(builtin, false);
          subtractor = builtin.equals("sum") ? builtinReducer(builtin, true) : null;
        } else {
          adder = (agg, v) -> Codec.coerce(aggSerde, f.reduce(agg, v));
          subtractor = sub == null ? null : (agg, v) -> Codec.coerce(aggSerde, sub.reduce(agg, v));
        }
        r = n == null ? (m == null ? g.reduce(adder, subtractor) : g.reduce(adder, subtractor, m)) : g.reduce(adder, subtractor, n, mm);
        return in.with(Handle.Kind.TABLE, r, aggSerde);
      }
      case "aggregate": {
        Fn init = Fn.of(st.get("init"));
        Initializer<Object> i = () -> Codec.coerce(aggSerde, init.init());
        Aggregator<Object, Object, Object> adder = (k, v, agg) -> Codec.coerce(aggSerde, f.aggregate(k, v, agg));
        Aggregator<Object, Object, Object> subtractor = sub == null ? null : (k, v, agg) -> Codec.coerce(aggSerde, sub.aggregate(k, v, agg));
        r = n == null ? (m == null ? g.aggregate(i, adder, subtractor) : g.aggregate(i, adder, subtractor, m)) : g.aggregate(i, adder, subtractor, n, mm);
        return in.with(Handle.Kind.TABLE, r, aggSerde);
      }
      default:
        throw new IllegalArgumentException(op + " cannot apply to a grouped table");
    }
  }
}
