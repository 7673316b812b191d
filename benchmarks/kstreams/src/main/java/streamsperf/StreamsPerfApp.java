package streamsperf;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;

/**
 * The four streams_perf workloads (benchmarks/streams_perf_apps.py) in Kafka Streams.
 *
 * <p>Same protocol as the Python children: build the topology and the KafkaStreams object, print
 * READY, wait for GO on stdin (so JVM start-up and class loading stay outside the clock, as the
 * Python children's imports do), start, run until SIGTERM. Same topics, keys (UTF-8 strings),
 * JSON values and output serialization as ours: Long counts, time-windowed keys as the key bytes
 * plus the 8-byte window start (TimeWindowedSerializer). Same per-record logic as the shared
 * Python functions keep/mapped/joined/window_start.
 *
 * <p>Usage: StreamsPerfApp WORKLOAD --bootstrap B --app-id ID --out TOPIC --state-dir D
 * [--guarantee at_least_once|exactly_once_v2] [--partitions P] [--cache-max-bytes N]
 */
public final class StreamsPerfApp {
  static final String VIEWS_TOPIC = "page-views";
  static final String USERS_TOPIC = "users";
  static final long WINDOW_MS = 10_000L;
  static final long MIN_DURATION_MS = 500L;

  private StreamsPerfApp() {}

  /** JSON objects as maps, Jackson's defaults (numbers as Integer/Long/Double). */
  static final class JsonSerde implements Serde<Map<String, Object>> {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final TypeReference<LinkedHashMap<String, Object>> TYPE =
        new TypeReference<>() {};

    @Override
    public Serializer<Map<String, Object>> serializer() {
      return (topic, data) -> {
        if (data == null) {
          return null;
        }
        try {
          return MAPPER.writeValueAsBytes(data);
        } catch (IOException e) {
          throw new IllegalStateException("cannot write JSON", e);
        }
      };
    }

    @Override
    public Deserializer<Map<String, Object>> deserializer() {
      return (topic, data) -> {
        if (data == null) {
          return null;
        }
        try {
          return MAPPER.readValue(data, TYPE);
        } catch (IOException e) {
          throw new IllegalStateException("cannot read JSON from " + topic, e);
        }
      };
    }
  }

  static boolean keep(Map<String, Object> view) {
    return ((Number) view.get("duration_ms")).longValue() >= MIN_DURATION_MS;
  }

  static Map<String, Object> mapped(Map<String, Object> view) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("user", view.get("user_id"));
    out.put("page", view.get("page"));
    out.put("country", view.get("country"));
    out.put("secs", ((Number) view.get("duration_ms")).longValue() / 1000.0);
    return out;
  }

  static Map<String, Object> joined(Map<String, Object> view, Map<String, Object> user) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("user", view.get("user_id"));
    out.put("page", view.get("page"));
    out.put("region", user.get("region"));
    out.put("tier", user.get("tier"));
    out.put("ts", view.get("ts"));
    return out;
  }

  static Map<String, String> parseArgs(String[] argv) {
    if (argv.length < 1) {
      throw new IllegalArgumentException("usage: StreamsPerfApp WORKLOAD --bootstrap B ...");
    }
    Map<String, String> args = new HashMap<>();
    args.put("workload", argv[0]);
    args.put("guarantee", "at_least_once");
    for (int i = 1; i < argv.length; i += 2) {
      if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
        throw new IllegalArgumentException("expected --name value at " + argv[i]);
      }
      args.put(argv[i].substring(2), argv[i + 1]);
    }
    for (String needed : new String[] {"bootstrap", "app-id", "out", "state-dir"}) {
      if (!args.containsKey(needed)) {
        throw new IllegalArgumentException("missing --" + needed);
      }
    }
    return args;
  }

  static StreamsBuilder topology(String workload, String out) {
    Serde<String> s = Serdes.String();
    Serde<Map<String, Object>> j = new JsonSerde();
    StreamsBuilder builder = new StreamsBuilder();
    KStream<String, Map<String, Object>> views =
        builder.stream(VIEWS_TOPIC, Consumed.with(s, j));
    switch (workload) {
      case "filter_map" ->
          views.filter((k, v) -> keep(v)).mapValues(StreamsPerfApp::mapped)
              .to(out, Produced.with(s, j));
      case "count" ->
          views.groupByKey().count().toStream().to(out, Produced.with(s, Serdes.Long()));
      case "window_count" ->
          views.groupByKey()
              .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(WINDOW_MS)))
              .count()
              .toStream()
              .to(out, Produced.with(
                  WindowedSerdes.timeWindowedSerdeFrom(String.class, WINDOW_MS), Serdes.Long()));
      case "join" -> {
        KTable<String, Map<String, Object>> users =
            builder.table(USERS_TOPIC, Consumed.with(s, j));
        views.join(users, StreamsPerfApp::joined).to(out, Produced.with(s, j));
      }
      default -> throw new IllegalArgumentException("unknown workload " + workload);
    }
    return builder;
  }

  public static void main(String[] argv) throws Exception {
    Map<String, String> args = parseArgs(argv);
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, args.get("app-id"));
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap"));
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args.get("guarantee"));
    props.put(StreamsConfig.STATE_DIR_CONFIG, args.get("state-dir"));
    if (args.containsKey("cache-max-bytes")) {  // 0: no record cache, every update forwarded
      props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, args.get("cache-max-bytes"));
    }
    // The input was written before the app's group existed: read it from the start.
    props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
    StreamsBuilder builder = topology(args.get("workload"), args.get("out"));
    KafkaStreams streams = new KafkaStreams(builder.build(), props);
    CountDownLatch stopped = new CountDownLatch(1);
    java.util.concurrent.atomic.AtomicBoolean failed = new java.util.concurrent.atomic.AtomicBoolean();
    streams.setUncaughtExceptionHandler(e -> {
      System.err.println("ERROR " + e);
      e.printStackTrace();
      failed.set(true);
      stopped.countDown();
      return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
          .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    });
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      streams.close(Duration.ofSeconds(30));
      stopped.countDown();
    }));
    System.out.println("READY");
    System.out.flush();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line = in.readLine();
    if (line == null || !line.strip().equals("GO")) {
      streams.close();
      return;
    }
    streams.start();
    stopped.await();
    if (failed.get()) {
      System.exit(2);  // the harness reports the row as failed; the shutdown hook closes
    }
  }
}
