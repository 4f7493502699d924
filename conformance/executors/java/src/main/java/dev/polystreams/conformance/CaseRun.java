package dev.polystreams.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Runs one case through Kafka Streams' TopologyTestDriver: builds the
 * topology (CaseTopology), records Topology.describe(), pipes the inputs in
 * the runner's order and reads every expected output topic; or records the
 * refusal (the step, the exception) or the failure (the input record at
 * which processing failed).
 *
 * <p>Result: {"describe", "refused": {"step", "class", "message"},
 * "failure": {"topic", "partition", "offset", "node", "class", "message"},
 * "outputs": {topic: [{"key", "value" (base64 or null), "timestamp",
 * "headers": [{"key", "value"}]}]}, "dropped_records", "error"}.
 */
final class CaseRun {
  private static final Pattern RECORD = Pattern.compile("topic=([^,\\s]+), partition=(\\d+), offset=(\\d+)");
  private static final Pattern PROCESSOR = Pattern.compile("processor=([^,\\s]+)");

  private final JsonNode item;
  private final ObjectNode result = Codec.JSON.createObjectNode();

  CaseRun(JsonNode item) {
    this.item = item;
  }

  ObjectNode run() {
    PrintCapture.begin();
    try {
      return runCase();
    } finally {
      List<String> printed = PrintCapture.end();
      if (!printed.isEmpty()) {
        ArrayNode p = result.putArray("printed");
        printed.forEach(p::add);
      }
    }
  }

  private ObjectNode runCase() {
    JsonNode c = item.get("case");
    Path state;
    try {
      state = Files.createTempDirectory("conformance-java-");
    } catch (IOException e) {
      result.put("error", "state directory: " + e);
      return result;
    }
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, "conformance-java");
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:9");
    props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, CaseSerdes.Universal.class.getName());
    props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, CaseSerdes.Universal.class.getName());
    props.put(StreamsConfig.STATE_DIR_CONFIG, state.toString());
    item.path("config").fields().forEachRemaining(e -> props.put(e.getKey(), e.getValue().asText()));
    try {
      Topology topology;
      try {
        topology = new CaseTopology().build(c.get("topology")).build(props);
        result.put("describe", topology.describe().toString());
      } catch (CaseTopology.StepException e) {
        refused(e.step, e.getCause());
        return result;
      } catch (RuntimeException e) {
        refused(c.get("topology").size(), e);
        return result;
      }
      TopologyTestDriver driver;
      try {
        driver = new TopologyTestDriver(topology, props);
      } catch (RuntimeException e) {
        result.remove("describe");
        refused(c.get("topology").size(), e);
        return result;
      }
      try {
        pipe(driver);
        ObjectNode outputs = result.putObject("outputs");
        for (JsonNode t : item.path("outputs")) {
          outputs.set(t.asText(), read(driver, t.asText()));
        }
        result.put("dropped_records", dropped(driver));
      } finally {
        try {
          driver.close();
        } catch (RuntimeException e) {
          // A driver that failed may fail to close; the result is recorded.
        }
      }
    } finally {
      delete(state);
    }
    return result;
  }

  private void refused(int step, Throwable e) {
    ObjectNode r = result.putObject("refused");
    r.put("step", step);
    r.put("class", e.getClass().getName());
    r.put("message", messages(e));
  }

  /** Pipes the inputs in order; stops at the first record processing fails on. */
  private void pipe(TopologyTestDriver driver) {
    Map<String, TestInputTopic<byte[], byte[]>> topics = new HashMap<>();
    Map<String, Long> offsets = new HashMap<>();
    Base64.Decoder b64 = Base64.getDecoder();
    for (JsonNode r : item.path("inputs")) {
      if (r.has("advance_wall_clock_ms")) {
        driver.advanceWallClockTime(Duration.ofMillis(r.get("advance_wall_clock_ms").asLong()));
        continue;
      }
      String topic = r.get("topic").asText();
      TestInputTopic<byte[], byte[]> in = topics.computeIfAbsent(topic, t -> driver.createInputTopic(t, new ByteArraySerializer(), new ByteArraySerializer()));
      byte[] key = r.hasNonNull("key") ? b64.decode(r.get("key").asText()) : null;
      byte[] value = r.hasNonNull("value") ? b64.decode(r.get("value").asText()) : null;
      RecordHeaders headers = new RecordHeaders();
      for (JsonNode h : r.path("headers")) {
        headers.add(h.get("key").asText(), h.hasNonNull("value") ? b64.decode(h.get("value").asText()) : null);
      }
      long offset = offsets.merge(topic, 1L, Long::sum) - 1;
      try {
        in.pipeInput(new TestRecord<>(key, value, headers, Instant.ofEpochMilli(r.path("timestamp").asLong(0))));
      } catch (RuntimeException e) {
        ObjectNode f = result.putObject("failure");
        String msg = messages(e);
        Matcher m = RECORD.matcher(msg);
        if (m.find()) {
          f.put("topic", m.group(1));
          f.put("partition", Integer.parseInt(m.group(2)));
          f.put("offset", Long.parseLong(m.group(3)));
        } else {
          f.put("topic", topic);
          f.put("partition", 0);
          f.put("offset", offset);
        }
        Matcher p = PROCESSOR.matcher(msg);
        if (p.find()) {
          f.put("node", p.group(1));
        }
        f.put("class", e.getClass().getName());
        f.put("message", msg);
        return;
      }
    }
  }

  private static ArrayNode read(TopologyTestDriver driver, String topic) {
    ArrayNode out = Codec.JSON.createArrayNode();
    List<TestRecord<byte[], byte[]>> records;
    try {
      records = driver.createOutputTopic(topic, new ByteArrayDeserializer(), new ByteArrayDeserializer()).readRecordsToList();
    } catch (RuntimeException e) {
      return out; // nothing was written to it
    }
    Base64.Encoder b64 = Base64.getEncoder();
    for (TestRecord<byte[], byte[]> r : records) {
      ObjectNode o = out.addObject();
      if (r.key() == null) {
        o.putNull("key");
      } else {
        o.put("key", b64.encodeToString(r.key()));
      }
      if (r.value() == null) {
        o.putNull("value");
      } else {
        o.put("value", b64.encodeToString(r.value()));
      }
      o.put("timestamp", r.timestamp());
      ArrayNode hs = o.putArray("headers");
      for (Header h : r.headers()) {
        ObjectNode ho = hs.addObject();
        ho.put("key", h.key());
        if (h.value() == null) {
          ho.putNull("value");
        } else {
          ho.put("value", b64.encodeToString(h.value()));
        }
      }
    }
    return out;
  }

  /** The task metric dropped-records-total, summed over tasks. */
  private static long dropped(TopologyTestDriver driver) {
    double sum = 0;
    for (Map.Entry<MetricName, ? extends Metric> e : driver.metrics().entrySet()) {
      if (e.getKey().name().equals("dropped-records-total") && e.getKey().group().equals("stream-task-metrics")) {
        Object v = e.getValue().metricValue();
        if (v instanceof Number n) {
          sum += n.doubleValue();
        }
      }
    }
    return (long) sum;
  }

  /** The messages of an exception and its causes, joined. */
  private static String messages(Throwable e) {
    StringBuilder b = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (b.length() > 0) {
        b.append(": ");
      }
      b.append(t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage());
    }
    return b.toString();
  }

  private static void delete(Path dir) {
    try (Stream<Path> s = Files.walk(dir)) {
      s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // A temporary directory left behind is harmless.
    }
  }
}
