package io.polystreams.bench;

import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindowedKStream;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;

/**
 * The Kafka Streams arm of make bench-peers: each topology as a Kafka Streams
 * user writes it (the DSL, RocksDB stores with changelogs, Serdes.Long
 * counts; windowed results keyed as TimeWindowedSerializer writes them). Takes the flags every arm takes (tools/bench/peers/arms/common.py)
 * and runs until SIGTERM.
 */
public final class Peers {
    public static void main(String[] argv) throws InterruptedException {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) {
            if (!argv[i].startsWith("--")) {
                throw new IllegalArgumentException("peers: expected --flag value pairs, got " + Arrays.toString(argv));
            }
            args.put(argv[i].substring(2), argv[i + 1]);
        }
        String topology = require(args, "topology");
        String input = require(args, "input");
        String output = require(args, "output");

        StreamsBuilder b = new StreamsBuilder();
        switch (topology) {
            case "map_values" -> b.stream(input, Consumed.with(Serdes.ByteArray(), Serdes.String()))
                    .mapValues(v -> v.toUpperCase(Locale.ROOT))
                    .to(output, Produced.with(Serdes.ByteArray(), Serdes.String()));
            case "word_count" -> b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                    .flatMapValues(line -> Arrays.asList(line.split(" ")))
                    .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
                    .count()
                    .toStream()
                    .to(output, Produced.with(Serdes.String(), Serdes.Long()));
            case "count" -> b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                    .groupByKey()
                    .count()
                    .toStream()
                    .to(output, Produced.with(Serdes.String(), Serdes.Long()));
            case "sum_eos", "sum_alos" -> b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                    .groupByKey()
                    .aggregate(() -> 0L, (key, value, total) -> total + Json.number(value, "amount"),
                            Materialized.with(Serdes.String(), Serdes.Long()))
                    .toStream()
                    .to(output, Produced.with(Serdes.String(), Serdes.Long()));
            case "tumbling_count", "hopping_count", "hopping_sum" -> {
                // Records arrive in timestamp order on each partition: no grace.
                Duration size = Duration.ofMinutes(1);
                TimeWindows windows = topology.equals("tumbling_count")
                        ? TimeWindows.ofSizeWithNoGrace(size)
                        : TimeWindows.ofSizeWithNoGrace(size).advanceBy(Duration.ofSeconds(15));
                TimeWindowedKStream<String, String> windowed = b
                        .stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                        .groupByKey()
                        .windowedBy(windows);
                KTable<Windowed<String>, Long> results = topology.equals("hopping_sum")
                        ? windowed.aggregate(() -> 0L, (key, value, total) -> total + Json.number(value, "amount"),
                                Materialized.with(Serdes.String(), Serdes.Long()))
                        : windowed.count();
                results.toStream().to(output, Produced.with(
                        WindowedSerdes.timeWindowedSerdeFrom(String.class, size.toMillis()), Serdes.Long()));
            }
            case "join" -> {
                KTable<String, String> rates = b.table(require(args, "table"),
                        Consumed.with(Serdes.String(), Serdes.String()));
                b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                        .join(rates, (event, rate) -> Long.toString(Json.number(event, "amount") * Json.number(rate, "rate")))
                        .to(output, Produced.with(Serdes.String(), Serdes.String()));
            }
            case "join_global" -> {
                // A global table is restored whole before any event is processed.
                GlobalKTable<String, String> rates = b.globalTable(require(args, "table"),
                        Consumed.with(Serdes.String(), Serdes.String()));
                b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                        .join(rates, (key, event) -> key,
                                (event, rate) -> Long.toString(Json.number(event, "amount") * Json.number(rate, "rate")))
                        .to(output, Produced.with(Serdes.String(), Serdes.String()));
            }
            default -> throw new IllegalArgumentException("peers: unknown --topology " + topology);
        }

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, require(args, "app"));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, require(args, "brokers"));
        p.put(StreamsConfig.STATE_DIR_CONFIG, require(args, "state-dir"));
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, require(args, "commit-ms"));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
                topology.equals("sum_eos") ? StreamsConfig.EXACTLY_ONCE_V2 : StreamsConfig.AT_LEAST_ONCE);
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        // A JVM user on a 2-core machine runs one stream thread per core.
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, args.getOrDefault("threads", "2"));

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                done.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            done.countDown();
        }));
        streams.start();
        done.await();
    }

    private static String require(Map<String, String> args, String name) {
        String v = args.get(name);
        if (v == null) {
            throw new IllegalArgumentException("peers: --" + name + " is required");
        }
        return v;
    }

    /** A number field of a JSON object such as {"amount": n}, read as a Kafka Streams user reads JSON: with Jackson. */
    static final class Json {
        private static final com.fasterxml.jackson.databind.ObjectMapper MAPPER = new com.fasterxml.jackson.databind.ObjectMapper();

        static long number(String value, String field) {
            try {
                com.fasterxml.jackson.databind.JsonNode n = MAPPER.readTree(value).get(field);
                if (n == null) {
                    throw new IllegalArgumentException("peers: value has no " + field + ": " + value);
                }
                return n.asLong();
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                throw new IllegalArgumentException("peers: value is not JSON with " + field + ": " + value, e);
            }
        }
    }
}
