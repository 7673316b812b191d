import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The fault harness's count topology (tests/faults/catalogue.py, "count") in Kafka Streams 4.4,
 * for the pause scenario (tests/faults/pause_feed.py --framework kafka-streams): count-input
 * (String keys and values) grouped by key and counted into the RocksDB store count-store, its
 * changes to count-output (String keys, Long counts).
 *
 * <p>Usage: PauseCountApp BOOTSTRAP APP_ID GUARANTEE STATE_DIR SESSION_TIMEOUT_MS HEARTBEAT_MS
 * CACHE_BYTES MAX_POLL_RECORDS COMMIT_MS (COMMIT_MS -1: Kafka's default for the guarantee).
 * Prints "STATE s" on state changes, "RESTORING store partition start end" and "RESTORED store
 * partition n" around each changelog restore, and "CLOSED" after close() on SIGTERM.
 */
public final class PauseCountApp {
  private PauseCountApp() {}

  public static void main(String[] args) throws InterruptedException {
    Properties props = new Properties();
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[2]);
    props.put(StreamsConfig.STATE_DIR_CONFIG, args[3]);
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG),
        Integer.parseInt(args[4]));
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG),
        Integer.parseInt(args[5]));
    props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, Long.parseLong(args[6]));
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.MAX_POLL_RECORDS_CONFIG),
        Integer.parseInt(args[7]));
    long commitMs = Long.parseLong(args[8]);
    if (commitMs >= 0) {
      props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, commitMs);
    }
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream("count-input", Consumed.with(Serdes.String(), Serdes.String()))
        .groupByKey()
        .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("count-store")
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
        .toStream()
        .to("count-output", Produced.with(Serdes.String(), Serdes.Long()));
    KafkaStreams streams = new KafkaStreams(builder.build(), props);
    streams.setGlobalStateRestoreListener(new StateRestoreListener() {
      @Override
      public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
        System.out.println("RESTORING " + store + " " + tp.partition() + " " + start + " " + end);
        System.out.flush();
      }

      @Override
      public void onBatchRestored(TopicPartition tp, String store, long end, long count) {}

      @Override
      public void onRestoreEnd(TopicPartition tp, String store, long total) {
        System.out.println("RESTORED " + store + " " + tp.partition() + " " + total);
        System.out.flush();
      }
    });
    streams.setStateListener((now, before) -> {
      System.out.println("STATE " + now);
      System.out.flush();
    });
    CountDownLatch closed = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      streams.close(Duration.ofSeconds(30));
      System.out.println("CLOSED");
      System.out.flush();
      closed.countDown();
    }));
    streams.start();
    closed.await();
  }
}
