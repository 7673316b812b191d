import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import org.apache.kafka.streams.processor.internals.ProcessorMetadata;
import org.apache.kafka.streams.processor.internals.TopicPartitionMetadata;

/**
 * Kafka Streams' own offset-commit metadata codec (TopicPartitionMetadata, ProcessorMetadata)
 * as an oracle for streams/processor/commit_metadata.py (tests/reference/
 * test_commit_metadata_diff.py).
 *
 * <p>Reads one request a line from stdin and answers one line each:
 * "E time [key value]..." prints the encoded string; "D hex [key]..." decodes the string whose
 * UTF-8 bytes are hex (empty for the empty string) and prints "time [value]..." with each
 * key's value, "null" for a missing one. Keys hold no spaces.
 */
public final class CommitMetadataCodec {
  private CommitMetadataCodec() {}

  public static void main(String[] args) throws Exception {
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      String[] parts = line.split(" ", -1);
      if (parts[0].equals("E")) {
        Map<String, Long> map = new HashMap<>();
        for (int i = 2; i + 1 < parts.length; i += 2) {
          map.put(parts[i], Long.parseLong(parts[i + 1]));
        }
        ProcessorMetadata meta = new ProcessorMetadata(map);
        System.out.println(
            new TopicPartitionMetadata(Long.parseLong(parts[1]), meta).encode());
      } else {
        String text = new String(HexFormat.of().parseHex(parts[1]), StandardCharsets.UTF_8);
        TopicPartitionMetadata decoded = TopicPartitionMetadata.decode(text);
        StringBuilder out = new StringBuilder(Long.toString(decoded.partitionTime()));
        for (int i = 2; i < parts.length; i++) {
          out.append(' ').append(decoded.processorMetadata().get(parts[i]));
        }
        System.out.println(out);
      }
      System.out.flush();
    }
  }
}
