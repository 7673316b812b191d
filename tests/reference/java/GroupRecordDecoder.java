import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;

/**
 * Kafka's group coordinator record serde (the one its coordinator loads __consumer_offsets
 * with) as an oracle for our records there (tests/reference/test_group_records_kafka.py).
 *
 * <p>Reads one record a line from stdin, "keyhex valuehex" ("-" for a tombstone's value), and
 * answers one line of JSON each: {"key": ..., "value": ...} with the generated messages' own
 * JSON (the JsonConverter of each), the value null for a tombstone, or {"error": "..."} when
 * Kafka cannot read the record.
 */
public final class GroupRecordDecoder {
  private GroupRecordDecoder() {}

  private static JsonNode json(ApiMessage message, short version) throws Exception {
    Class<?> converter = Class.forName(message.getClass().getName() + "JsonConverter");
    return (JsonNode) converter.getMethod("write", message.getClass(), short.class)
        .invoke(null, message, version);
  }

  public static void main(String[] args) throws Exception {
    GroupCoordinatorRecordSerde serde = new GroupCoordinatorRecordSerde();
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      String[] parts = line.split(" ", -1);
      ObjectNode out = JsonNodeFactory.instance.objectNode();
      try {
        ByteBuffer key = ByteBuffer.wrap(HexFormat.of().parseHex(parts[0]));
        ByteBuffer value =
            parts[1].equals("-") ? null : ByteBuffer.wrap(HexFormat.of().parseHex(parts[1]));
        CoordinatorRecord record = serde.deserialize(key, value);
        out.put("type", record.key().apiKey());
        out.set("key", json(record.key(), (short) 0));
        if (record.value() == null) {
          out.putNull("value");
        } else {
          out.put("value_version", record.value().version());
          out.set("value", json(record.value().message(), record.value().version()));
        }
      } catch (Exception e) {
        Throwable cause = e.getCause() != null ? e.getCause() : e;
        out.put("error", cause.getClass().getSimpleName() + ": " + cause.getMessage());
      }
      System.out.println(out);
      System.out.flush();
    }
  }
}
