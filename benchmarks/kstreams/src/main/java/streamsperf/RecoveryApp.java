package streamsperf;

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
 * The recovery benchmark's counting app (benchmarks/recovery_perf_app.py) in Kafka Streams.
 *
 * <p>Usage: RecoveryApp BOOTSTRAP APP_ID GUARANTEE STATE_DIR SESSION_TIMEOUT_MS. Counts records
 * per key from recovery-input into APP_ID-counts (String keys, Long counts, default cache);
 * prints "STATE s" on state changes, "RESTORED store partition n" when a changelog partition's
 * restoration ends, and "CLOSED" after close() on SIGTERM.
 */
public final class RecoveryApp {
  private RecoveryApp() {}

  public static void main(String[] args) throws InterruptedException {
    String bootstrap = args[0];
    String appId = args[1];
    int sessionMs = Integer.parseInt(args[4]);
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[2]);
    props.put(StreamsConfig.STATE_DIR_CONFIG, args[3]);
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), sessionMs);
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG),
        Math.max(sessionMs / 10, 100));
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream("recovery-input", Consumed.with(Serdes.String(), Serdes.String()))
        .groupByKey()
        .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts-store")
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
        .toStream()
        .to(appId + "-counts", Produced.with(Serdes.String(), Serdes.Long()));
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
      streams.close(Duration.ofSeconds(60));
      System.out.println("CLOSED");
      System.out.flush();
      closed.countDown();
    }));
    streams.start();
    closed.await();
  }
}
