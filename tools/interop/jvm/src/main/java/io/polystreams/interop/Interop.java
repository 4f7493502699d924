package io.polystreams.interop;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;

/**
 * The JVM side of the interoperability tests (core/internal/interop): a real
 * KafkaStreams instance that runs one of two topologies until it is stopped
 * (SIGTERM closes it).
 *
 * <pre>
 *   Interop produce BOOTSTRAP APP_ID PREFIX STATE_DIR
 *   Interop decode  BOOTSTRAP APP_ID PREFIX STATE_DIR OTHER_PREFIX OTHER_APP_ID
 * </pre>
 *
 * produce reads "interop-words" (String user, String word) and writes, under PREFIX:
 * PREFIX-counts (count per user, Serdes.Long; store "counts", whose changelog is
 * APP_ID-counts-changelog), PREFIX-wcounts (count per user and 10 s tumbling window,
 * TimeWindowedSerde), PREFIX-rekeyed (the words keyed by word: a key-changed stream
 * written with to()) and PREFIX-wordcounts (count per word through the repartition
 * topic APP_ID-byword-repartition).
 *
 * decode reads the other application's outputs with Kafka Streams' serdes and writes
 * what it read as text to PREFIX-decoded-* (String key, String value): counts,
 * wcounts ("user@start-end"), the other side's changelog read as a table
 * (builder.table), and a count per key of the other side's rekeyed stream.
 */
public final class Interop {
    static final String WORDS = "interop-words";
    static final long WINDOW_MS = 10_000;

    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            usage();
        }
        String mode = args[0], bootstrap = args[1], appId = args[2], prefix = args[3], stateDir = args[4];
        StreamsBuilder b = new StreamsBuilder();
        switch (mode) {
            case "produce" -> produce(b, prefix);
            case "decode" -> {
                if (args.length != 7) {
                    usage();
                }
                decode(b, prefix, args[5], args[6]);
            }
            default -> usage();
        }
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        Topology t = b.build(p);
        System.err.println(t.describe());
        KafkaStreams streams = new KafkaStreams(t, p);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.err.println("interop: state " + before + " -> " + now);
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                done.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(20));
            done.countDown();
        }));
        streams.start();
        done.await();
        if (streams.state() == KafkaStreams.State.ERROR) {
            System.exit(1);
        }
    }

    static void usage() {
        System.err.println("usage: Interop produce BOOTSTRAP APP_ID PREFIX STATE_DIR\n"
                + "       Interop decode BOOTSTRAP APP_ID PREFIX STATE_DIR OTHER_PREFIX OTHER_APP_ID");
        System.exit(2);
    }

    static void produce(StreamsBuilder b, String prefix) {
        Serde<String> s = Serdes.String();
        KStream<String, String> words = b.stream(WORDS, Consumed.with(s, s));
        words.groupByKey()
                .count(Materialized.as("counts"))
                .toStream()
                .to(prefix + "-counts", Produced.with(s, Serdes.Long()));
        words.groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(WINDOW_MS), Duration.ofDays(1)))
                .count(Materialized.as("wcounts"))
                .toStream()
                .to(prefix + "-wcounts", Produced.with(
                        WindowedSerdes.timeWindowedSerdeFrom(String.class, WINDOW_MS), Serdes.Long()));
        KStream<String, String> rekeyed = words.selectKey((user, word) -> word);
        rekeyed.to(prefix + "-rekeyed", Produced.with(s, s));
        rekeyed.groupByKey(Grouped.as("byword"))
                .count(Materialized.as("wordcounts"))
                .toStream()
                .to(prefix + "-wordcounts", Produced.with(s, Serdes.Long()));
    }

    static void decode(StreamsBuilder b, String prefix, String other, String otherAppId) {
        Serde<String> s = Serdes.String();
        Serde<Long> l = Serdes.Long();
        String out = prefix + "-decoded-";
        b.stream(other + "-counts", Consumed.with(s, l))
                .mapValues(v -> Long.toString(v))
                .to(out + "counts", Produced.with(s, s));
        Serde<Windowed<String>> windowed = WindowedSerdes.timeWindowedSerdeFrom(String.class, WINDOW_MS);
        b.stream(other + "-wcounts", Consumed.with(windowed, l))
                .map((w, v) -> KeyValue.pair(
                        w.key() + "@" + w.window().start() + "-" + w.window().end(), Long.toString(v)))
                .to(out + "wcounts", Produced.with(s, s));
        b.table(otherAppId + "-counts-changelog", Consumed.with(s, l), Materialized.as("changelog-table"))
                .toStream()
                .mapValues(v -> v == null ? null : Long.toString(v))
                .to(out + "changelog", Produced.with(s, s));
        b.stream(other + "-rekeyed", Consumed.with(s, s))
                .groupByKey()
                .count(Materialized.as("rekeyed-counts"))
                .toStream()
                .mapValues(v -> Long.toString(v))
                .to(out + "rekeyed", Produced.with(s, s));
    }
}
