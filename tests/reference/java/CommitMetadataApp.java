import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.WindowStore;

/**
 * tests/runtime/commit_metadata_app.py in Kafka Streams 4.4: the same topology, store name and
 * output, for tests/reference/test_commit_metadata_handover.py.
 *
 * <p>Usage: CommitMetadataApp BOOTSTRAP APP_ID STATE_DIR GUARANTEE PREFIX (put before each
 * topic name). Prints "STATE s" on state changes and "CLOSED" after close() on SIGTERM.
 */
public final class CommitMetadataApp {
  private CommitMetadataApp() {}

  static final long PUNCTUATE_MS = 1_000;
  static final long WINDOW_MS = 1_000;
  static final long RETENTION_MS = 120_000;

  static final class StreamTimeReporter implements Processor<String, String, String, String> {
    private ProcessorContext<String, String> context;

    @Override
    public void init(ProcessorContext<String, String> context) {
      this.context = context;
      context.schedule(Duration.ofMillis(PUNCTUATE_MS), PunctuationType.STREAM_TIME,
          ts -> context.forward(
              new Record<>("punctuation " + context.taskId(), Long.toString(ts), ts)));
    }

    @Override
    public void process(Record<String, String> record) {
      context.forward(record.withValue(
          "record " + record.timestamp() + " " + context.currentStreamTimeMs()));
    }
  }

  public static void main(String[] args) throws InterruptedException {
    Properties props = new Properties();
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
    props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[3]);
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
    props.put("__emit.interval.ms.kstreams.windowed.aggregation__", 0L);
    props.put("session.timeout.ms", 6000);
    props.put("heartbeat.interval.ms", 500);
    String prefix = args[4];
    StreamsBuilder builder = new StreamsBuilder();
    KStream<String, String> source =
        builder.stream(prefix + "cm-input", Consumed.with(Serdes.String(), Serdes.String()));
    source.process(StreamTimeReporter::new)
        .to(prefix + "cm-times", Produced.with(Serdes.String(), Serdes.String()));
    source.groupByKey()
        .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(WINDOW_MS)))
        .emitStrategy(EmitStrategy.onWindowClose())
        .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("cm-counts")
            .withRetention(Duration.ofMillis(RETENTION_MS)))
        .toStream()
        .map((key, count) -> KeyValue.pair(key.key() + "@" + key.window().start(), count))
        .to(prefix + "cm-finals", Produced.with(Serdes.String(), Serdes.Long()));
    KafkaStreams streams = new KafkaStreams(builder.build(), props);
    streams.setStateListener((now, before) -> {
      System.out.println("STATE " + now);
      System.out.flush();
    });
    CountDownLatch closed = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      streams.close(Duration.ofSeconds(60));
      System.out.println("CLOSED");
      System.out.flush();
      closed.countDown();
    }));
    streams.start();
    closed.await();
  }
}
