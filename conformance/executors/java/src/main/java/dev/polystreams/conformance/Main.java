package dev.polystreams.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The conformance matrix's Kafka Streams column. One JVM runs a batch of
 * cases: {@code java -cp ... dev.polystreams.conformance.Main <batch.json>
 * [threads]}. The batch (written by conformance/runner) is a JSON array of
 * items: {"name", "case" (the case file's object), "config" (Kafka Streams
 * properties), "inputs" (the records to pipe, in order, bytes as base64),
 * "outputs" (topics to read), "result" (the file to write)}. Each item's
 * result is written as JSON to its file (CaseRun). Exits non-zero only when
 * the batch itself cannot be read; a case that cannot run reports why in its
 * result.
 */
public final class Main {
  private Main() {}

  /** The Kafka Streams version this executor was built against (tools/kafka/VERSION). */
  static String kafkaVersion() {
    try (InputStream in = Main.class.getResourceAsStream("version.properties")) {
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("kafka.version");
    } catch (Exception e) {
      return "unknown";
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: Main <batch.json> [threads]");
      System.exit(2);
    }
    JsonNode batch = Codec.JSON.readTree(new File(args[0]));
    PrintCapture.install();
    int threads = args.length > 1 ? Integer.parseInt(args[1]) : 1;
    String version = kafkaVersion();
    ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, threads));
    List<Future<?>> done = new ArrayList<>();
    for (JsonNode item : batch) {
      done.add(pool.submit(() -> {
        ObjectNode result;
        try {
          result = new CaseRun(item).run();
        } catch (RuntimeException | Error e) {
          result = Codec.JSON.createObjectNode();
          result.put("error", "the executor failed: " + e);
        }
        result.put("kafka_streams", version);
        try {
          Codec.JSON.writeValue(new File(item.get("result").asText()), result);
        } catch (Exception e) {
          System.err.println("conformance-java: writing " + item.get("result").asText() + ": " + e);
        }
        return null;
      }));
    }
    for (Future<?> f : done) {
      f.get();
    }
    pool.shutdown();
  }
}
