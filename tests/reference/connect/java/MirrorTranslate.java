// Kafka's own MirrorMaker 2 client (connect-mirror-client 4.3.1) reading a target cluster:
// RemoteClusterUtils.translateOffsets, upstreamClusters and replicationHops, printed one per line
// for tests/reference/connect/mirror_suite.py. Usage: BOOTSTRAP SOURCE_ALIAS GROUP
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

public class MirrorTranslate {
    public static void main(String[] args) throws Exception {
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", args[0]);
        Map<TopicPartition, OffsetAndMetadata> offsets =
            RemoteClusterUtils.translateOffsets(props, args[1], args[2], Duration.ofSeconds(30));
        Map<String, Long> sorted = new TreeMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            sorted.put(e.getKey().topic() + " " + e.getKey().partition(), e.getValue().offset());
        }
        for (Map.Entry<String, Long> e : sorted.entrySet()) {
            System.out.println("OFFSET " + e.getKey() + " " + e.getValue());
        }
        for (String cluster : RemoteClusterUtils.upstreamClusters(props)) {
            System.out.println("UPSTREAM " + cluster + " "
                + RemoteClusterUtils.replicationHops(props, cluster));
        }
        System.out.flush();
        System.exit(0);
    }
}
