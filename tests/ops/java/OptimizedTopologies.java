import java.time.Duration;
import java.util.Properties;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.TimeWindows;

/**
 * Prints Kafka Streams' describe() of the cases in tests/ops/optimized_cases.py, built with
 * topology.optimization=none and =all: "=== caseN none|all" then the description.
 */
public class OptimizedTopologies {
    interface Case { void build(StreamsBuilder b); }

    static KStream<String, String> in(StreamsBuilder b) {
        return b.stream("in", Consumed.with(Serdes.String(), Serdes.String()));
    }

    static final Case[] CASES = {
        b -> { KStream<String, String> m = in(b).map((k, v) -> KeyValue.pair(v, k));
               m.groupByKey().count().toStream().to("out1");
               m.groupByKey().reduce((a, c) -> a + c).toStream().to("out2"); },
        b -> { KStream<String, String> m = in(b).selectKey((k, v) -> v);
               m.filter((k, v) -> true).groupByKey().count().toStream().to("out1");
               m.mapValues(v -> v + "x").groupByKey().count().toStream().to("out2"); },
        b -> b.table("tin", Consumed.with(Serdes.String(), Serdes.String()),
                     Materialized.as("tstore")).toStream().to("tout"),
        b -> { KStream<String, String> m = in(b).map((k, v) -> KeyValue.pair(v, k));
               m.groupByKey().count(Materialized.as("c1")).toStream().to("out1");
               m.groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
                .count().toStream().to("out2");
               m.to("out3"); },
        b -> in(b).map((k, v) -> KeyValue.pair(v, k)).groupByKey().count().toStream().to("out1"),
        b -> in(b).map((k, v) -> KeyValue.pair(v, k)).filter((k, v) -> true).groupByKey()
                  .count().toStream().to("out1"),
        b -> { KStream<String, String> m = in(b).selectKey((k, v) -> v);
               KTable<String, String> t = b.table("t", Consumed.with(Serdes.String(), Serdes.String()));
               m.join(t, (a, c) -> a + c).to("out1");
               m.groupByKey().count().toStream().to("out2"); },
        b -> { KStream<String, String> s = in(b);
               s.groupBy((k, v) -> v).count().toStream().to("out1");
               s.groupBy((k, v) -> v).count().toStream().to("out2"); },
    };

    public static void main(String[] args) {
        for (int i = 0; i < CASES.length; i++) {
            for (String optimization : new String[] {"none", "all"}) {
                Properties props = new Properties();
                props.put(StreamsConfig.APPLICATION_ID_CONFIG, "app");
                props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
                props.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, optimization);
                StreamsBuilder builder = new StreamsBuilder();
                CASES[i].build(builder);
                System.out.println("=== case" + (i + 1) + " " + optimization);
                System.out.print(builder.build(props).describe());
            }
        }
    }
}
