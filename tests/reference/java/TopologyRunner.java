import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Function;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Runs DSL cases (tests/reference/dsl_translate.py describes the JSON) on Kafka Streams'
 * TopologyTestDriver: one case per stdin line, one JSON answer per stdout line, so a test session
 * starts the JVM once. The named functions mirror tests/reference/dsl_catalogue.py exactly.
 */
@SuppressWarnings({"unchecked", "rawtypes", "deprecation"})
public final class TopologyRunner {
    static final ObjectMapper JSON = new ObjectMapper();
    // one state directory per JVM: concurrent runners (parallel test sessions) must not share
    // /tmp/kafka-streams/<application.id>, whose RocksDB locks they would fight over
    static String stateDir;
    // and one below it per case: a driver whose close failed (a case Kafka refuses mid-flush)
    // keeps its RocksDB locks, which would fail every later case in the same directory
    static long caseCount;
    // which of the case's inputs was being fed when it failed: -1 while building the topology
    // and the driver, the input count once all were fed (reading the outputs, closing)
    static int feeding;

    public static void main(String[] args) throws Exception {
        PrintStream answers = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err); // library logging must not interleave with the answers
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("dsl-runner-");
        stateDir = dir.toString();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try (var paths = java.nio.file.Files.walk(dir)) {
                paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (Exception ignored) { }
        }));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) continue;
            ObjectNode answer;
            try {
                answer = run(JSON.readTree(line));
            } catch (Throwable t) {
                answer = JSON.createObjectNode();
                StringBuilder why = new StringBuilder(t.toString());
                for (Throwable c = t.getCause(); c != null; c = c.getCause()) why.append(" <- ").append(c);
                answer.put("error", why.toString());
                answer.put("failed_at", feeding);
            }
            answers.println(JSON.writeValueAsString(answer));
        }
    }

    // -- the catalogue (keep identical to dsl_catalogue.py) ------------------------------------

    static String s(Object v) { return v == null ? "null" : v.toString(); }

    static boolean pred(String name, Object k, Object v) {
        switch (name) {
            case "value-has-a": return v != null && s(v).contains("a");
            case "value-len-odd": return v != null && s(v).length() % 2 == 1;
            case "key-lt-c": return k != null && s(k).compareTo("c") < 0;
            case "value-not-null": return v != null;
            default: throw new IllegalArgumentException("predicate " + name);
        }
    }

    static Object mapValue(String name, Object v) {
        if (v == null) return null;
        switch (name) {
            case "upper": return s(v).toUpperCase();
            case "append-x": return s(v) + "x";
            case "len": return (long) s(v).length();
            case "double": return ((Long) v) * 2;
            default: throw new IllegalArgumentException("mapper " + name);
        }
    }

    static Object mapKey(String name, Object k, Object v) {
        switch (name) {
            case "value-as-key": return v == null ? null : s(v);
            case "first-char": return v == null ? null : s(v).substring(0, Math.min(1, s(v).length()));
            case "key-upper": return k == null ? null : s(k).toUpperCase();
            default: throw new IllegalArgumentException("key mapper " + name);
        }
    }

    static List<Object> flatValues(String name, Object v) {
        List<Object> out = new ArrayList<>();
        switch (name) {
            case "split-chars":
                if (v != null) for (char c : s(v).toCharArray()) out.add(String.valueOf(c));
                return out;
            case "dup": out.add(v); out.add(v); return out;
            case "none": return out;
            default: throw new IllegalArgumentException("flat mapper " + name);
        }
    }

    static KeyValue regroup(String name, Object k, Object v) {
        switch (name) {
            case "by-first-char": return KeyValue.pair(mapKey("first-char", k, v), v);
            case "swap": return KeyValue.pair(s(v), s(k));
            default: throw new IllegalArgumentException("regrouper " + name);
        }
    }

    static Object reduce(String name, Object agg, Object v) {
        switch (name) {
            case "concat": return s(agg) + "+" + s(v);
            case "sum": return (Long) agg + (Long) v;
            case "latest": return v;
            default: throw new IllegalArgumentException("reducer " + name);
        }
    }

    static Object unreduce(String name, Object agg, Object v) {
        switch (name) {
            case "concat": return s(agg) + "-" + s(v);
            case "sum": return (Long) agg - (Long) v;
            default: throw new IllegalArgumentException("subtractor " + name);
        }
    }

    static Object init(String name) {
        return name.equals("concat") ? "" : (Object) 0L;
    }

    static Object aggregate(String name, Object v, Object agg, int sign) {
        switch (name) {
            case "count": return (Long) agg + sign;
            case "sum-len": return (Long) agg + sign * (long) s(v).length();
            case "sum": return (Long) agg + sign * (Long) v;
            case "concat": return s(agg) + (sign > 0 ? "+" : "-") + s(v);
            default: throw new IllegalArgumentException("aggregator " + name);
        }
    }

    static Object merge(String name, Object a, Object b) {
        return name.equals("concat") ? s(a) + "&" + s(b) : (Object) ((Long) a + (Long) b);
    }

    static Object join(String name, Object l, Object r) {
        switch (name) {
            case "concat": return s(l) + "|" + s(r);
            default: throw new IllegalArgumentException("joiner " + name);
        }
    }

    // -- building -------------------------------------------------------------------------------

    static Serde serde(String vt) { return vt.equals("l") ? Serdes.Long() : Serdes.String(); }

    static Duration ms(JsonNode n, String field) { return Duration.ofMillis(n.get(field).asLong()); }

    static Object windows(JsonNode w) {
        boolean grace = w.has("grace");
        switch (w.get("type").asText()) {
            case "tumbling":
            case "hopping": {
                TimeWindows t = grace ? TimeWindows.ofSizeAndGrace(ms(w, "size"), ms(w, "grace"))
                                      : TimeWindows.ofSizeWithNoGrace(ms(w, "size"));
                return w.has("advance") ? t.advanceBy(ms(w, "advance")) : t;
            }
            case "sliding":
                return grace ? SlidingWindows.ofTimeDifferenceAndGrace(ms(w, "diff"), ms(w, "grace"))
                             : SlidingWindows.ofTimeDifferenceWithNoGrace(ms(w, "diff"));
            case "session":
                return grace ? SessionWindows.ofInactivityGapAndGrace(ms(w, "gap"), ms(w, "grace"))
                             : SessionWindows.ofInactivityGapWithNoGrace(ms(w, "gap"));
            default: throw new IllegalArgumentException("windows " + w);
        }
    }

    static JoinWindows joinWindows(JsonNode w) {
        JoinWindows j = w.has("grace") ? JoinWindows.ofTimeDifferenceAndGrace(ms(w, "diff"), ms(w, "grace"))
                                       : JoinWindows.ofTimeDifferenceWithNoGrace(ms(w, "diff"));
        if (w.has("before")) j = j.before(ms(w, "before"));
        if (w.has("after")) j = j.after(ms(w, "after"));
        return j;
    }

    static Materialized mat(JsonNode op, String vt) {
        Materialized m = op.has("store") ? Materialized.as(op.get("store").asText()) : Materialized.with(null, null);
        if (!op.path("serdes").asText().equals("inferred"))  // else Kafka picks them
            m = m.withKeySerde(Serdes.String()).withValueSerde(serde(vt));
        return op.has("retention") ? m.withRetention(ms(op, "retention")) : m;
    }

    static String windowedKey(Object k) {
        Windowed w = (Windowed) k;
        return s(w.key()) + "@" + w.window().start() + "/" + w.window().end();
    }

    static Object build(StreamsBuilder b, Map<String, Object> nodes, Map<String, String> types, JsonNode op) {
        String kind = op.get("op").asText();
        String vt = op.path("vt").asText("s");
        Object from = op.has("from") ? nodes.get(op.get("from").asText()) : null;
        String inVt = op.has("from") ? types.get(op.get("from").asText()) : "s";
        String fn = op.path("fn").asText();
        switch (kind) {
            case "stream":
                return b.stream(op.get("topic").asText(), Consumed.with(Serdes.String(), serde(vt)));
            case "table":
                if (op.has("versioned")) {  // KIP-889: a versioned source table
                    Materialized vm = Materialized.as(Stores.persistentVersionedKeyValueStore(op.get("store").asText(),
                        Duration.ofMillis(op.get("versioned").asLong())));
                    vm = vm.withKeySerde((Serde) Serdes.String()).withValueSerde((Serde) serde(vt));
                    return b.table(op.get("topic").asText(), Consumed.with(Serdes.String(), serde(vt)), vm);
                }
                return op.has("store") ? b.table(op.get("topic").asText(), Consumed.with(Serdes.String(), serde(vt)), mat(op, vt))
                                       : b.table(op.get("topic").asText(), Consumed.with(Serdes.String(), serde(vt)));
            case "global_table":
                return b.globalTable(op.get("topic").asText(), Consumed.with(Serdes.String(), serde(vt)), mat(op, vt));
            case "filter":
            case "filter_not": {
                boolean keep = kind.equals("filter");
                Predicate p = (k, v) -> pred(fn, k, v) == keep;
                if (from instanceof KStream) return ((KStream) from).filter(p);
                return op.has("store") ? ((KTable) from).filter(p, mat(op, vt)) : ((KTable) from).filter(p);
            }
            case "map_values": {
                if (op.path("keyed").asBoolean()) {  // ValueMapperWithKey
                    ValueMapperWithKey mk = (k, v) -> s(k) + "@" + s(mapValue(fn, v));
                    if (from instanceof KStream) return ((KStream) from).mapValues(mk);
                    return op.has("store") ? ((KTable) from).mapValues(mk, mat(op, vt)) : ((KTable) from).mapValues(mk);
                }
                ValueMapper m = v -> mapValue(fn, v);
                if (from instanceof KStream) return ((KStream) from).mapValues(m);
                return op.has("store") ? ((KTable) from).mapValues(m, mat(op, vt)) : ((KTable) from).mapValues(m);
            }
            case "select_key": return ((KStream) from).selectKey((k, v) -> mapKey(fn, k, v));
            case "flat_map_values": return ((KStream) from).flatMapValues(v -> flatValues(fn, v));
            case "repartition": return ((KStream) from).repartition(Repartitioned.with(Serdes.String(), serde(vt)));
            case "merge": return ((KStream) from).merge((KStream) nodes.get(op.get("other").asText()));
            case "to":
                ((KStream) from).to(op.get("topic").asText(), Produced.with(Serdes.String(), serde(inVt)));
                return null;
            case "to_table":
                if (op.has("versioned")) {  // KIP-889: a versioned table
                    Materialized vm = Materialized.as(Stores.persistentVersionedKeyValueStore(op.get("store").asText(),
                        Duration.ofMillis(op.get("versioned").asLong())));
                    vm = vm.withKeySerde((Serde) Serdes.String()).withValueSerde((Serde) serde(vt));
                    return ((KStream) from).toTable(vm);
                }
                return ((KStream) from).toTable(mat(op, vt));
            case "to_stream":
                return op.path("windowed").asBoolean() ? ((KTable) from).toStream((k, v) -> windowedKey(k))
                                                       : ((KTable) from).toStream();
            case "group_by_key": return ((KStream) from).groupByKey(Grouped.with(Serdes.String(), serde(inVt)));
            case "group_by":
                if (from instanceof KStream)
                    return ((KStream) from).groupBy((k, v) -> mapKey(fn, k, v), Grouped.with(Serdes.String(), serde(inVt)));
                return ((KTable) from).groupBy((k, v) -> regroup(fn, k, v), Grouped.with(Serdes.String(), serde(vt)));
            case "windowed_by": {
                Object w = windows(op.get("windows"));
                if (w instanceof TimeWindows) return ((KGroupedStream) from).windowedBy((TimeWindows) w);
                if (w instanceof SlidingWindows) return ((KGroupedStream) from).windowedBy((SlidingWindows) w);
                return ((KGroupedStream) from).windowedBy((SessionWindows) w);
            }
            case "emit_on_close":
                if (from instanceof TimeWindowedKStream) return ((TimeWindowedKStream) from).emitStrategy(EmitStrategy.onWindowClose());
                return ((SessionWindowedKStream) from).emitStrategy(EmitStrategy.onWindowClose());
            case "count":
                if (from instanceof KGroupedStream) return ((KGroupedStream) from).count(mat(op, vt));
                if (from instanceof KGroupedTable) return ((KGroupedTable) from).count(mat(op, vt));
                if (from instanceof TimeWindowedKStream) return ((TimeWindowedKStream) from).count(mat(op, vt));
                return ((SessionWindowedKStream) from).count(mat(op, vt));
            case "reduce": {
                Reducer r = (a, v) -> reduce(fn, a, v);
                if (from instanceof KGroupedStream) return ((KGroupedStream) from).reduce(r, mat(op, vt));
                if (from instanceof KGroupedTable) return ((KGroupedTable) from).reduce(r, (a, v) -> unreduce(fn, a, v), mat(op, vt));
                if (from instanceof TimeWindowedKStream) return ((TimeWindowedKStream) from).reduce(r, mat(op, vt));
                return ((SessionWindowedKStream) from).reduce(r, mat(op, vt));
            }
            case "aggregate": {
                Initializer i = () -> init(fn);
                Aggregator add = (k, v, a) -> aggregate(fn, v, a, 1);
                if (from instanceof KGroupedStream) return ((KGroupedStream) from).aggregate(i, add, mat(op, vt));
                if (from instanceof KGroupedTable)
                    return ((KGroupedTable) from).aggregate(i, add, (k, v, a) -> aggregate(fn, v, a, -1), mat(op, vt));
                if (from instanceof TimeWindowedKStream) return ((TimeWindowedKStream) from).aggregate(i, add, mat(op, vt));
                return ((SessionWindowedKStream) from).aggregate(i, add, (k, a1, a2) -> merge(fn, a1, a2), mat(op, vt));
            }
            case "cogroup": {
                CogroupedKStream c = null;
                String agg = null;
                for (JsonNode in : op.get("inputs")) {
                    String name = in.get("fn").asText();
                    agg = agg == null ? name : agg;
                    Aggregator a = (k, v, acc) -> aggregate(name, v, acc, 1);
                    KGroupedStream g = (KGroupedStream) nodes.get(in.get("from").asText());
                    c = c == null ? g.cogroup(a) : c.cogroup(g, a);
                }
                String first = agg;
                Initializer i = () -> init(first);
                if (!op.has("windows")) return c.aggregate(i, mat(op, vt));
                Object w = windows(op.get("windows"));
                if (w instanceof TimeWindows) return c.windowedBy((TimeWindows) w).aggregate(i, mat(op, vt));
                if (w instanceof SlidingWindows) return c.windowedBy((SlidingWindows) w).aggregate(i, mat(op, vt));
                return c.windowedBy((SessionWindows) w).aggregate(i, (k, a1, a2) -> merge(first, a1, a2), mat(op, vt));
            }
            case "suppress": {
                Suppressed sup = op.has("time_limit")
                    ? Suppressed.untilTimeLimit(ms(op, "time_limit"), Suppressed.BufferConfig.unbounded())
                    : Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded());
                return ((KTable) from).suppress(sup);
            }
            case "join":
            case "left_join":
            case "outer_join":
                return buildJoin(kind, op, from, nodes.get(op.get("other").asText()), inVt,
                                 types.get(op.get("other").asText()), fn);
            default: throw new IllegalArgumentException("operation " + kind);
        }
    }

    static Object buildJoin(String kind, JsonNode op, Object left, Object right, String lvt, String rvt, String fn) {
        ValueJoiner j = (l, r) -> join(fn, l, r);
        ValueJoinerWithKey jk = (k, l, r) -> s(k) + "@" + join(fn, l, r);
        boolean keyed = op.path("keyed").asBoolean();
        boolean inner = kind.equals("join"), leftJoin = kind.equals("left_join");
        if (left instanceof KStream && right instanceof KStream) {
            StreamJoined sj = StreamJoined.with(Serdes.String(), serde(lvt), serde(rvt));
            JoinWindows w = joinWindows(op.get("windows"));
            KStream l = (KStream) left;
            if (keyed) return inner ? l.join((KStream) right, jk, w, sj) : leftJoin ? l.leftJoin((KStream) right, jk, w, sj)
                                                                         : l.outerJoin((KStream) right, jk, w, sj);
            return inner ? l.join((KStream) right, j, w, sj) : leftJoin ? l.leftJoin((KStream) right, j, w, sj)
                                                                  : l.outerJoin((KStream) right, j, w, sj);
        }
        if (left instanceof KStream && right instanceof GlobalKTable) {
            String sel = op.get("key_selector").asText();
            KeyValueMapper ks = (k, v) -> mapKey(sel, k, v);
            KStream l = (KStream) left;
            return inner ? l.join((GlobalKTable) right, ks, j) : l.leftJoin((GlobalKTable) right, ks, j);
        }
        if (left instanceof KStream) {
            Joined jd = Joined.with(Serdes.String(), serde(lvt), serde(rvt));
            if (op.has("grace")) jd = jd.withGracePeriod(Duration.ofMillis(op.get("grace").asLong()));  // KIP-923
            KStream l = (KStream) left;
            if (keyed) return inner ? l.join((KTable) right, jk, jd) : l.leftJoin((KTable) right, jk, jd);
            return inner ? l.join((KTable) right, j, jd) : l.leftJoin((KTable) right, j, jd);
        }
        KTable l = (KTable) left, r = (KTable) right;
        boolean named = op.has("store");
        if (op.has("fk")) {
            String fk = op.get("fk").asText();
            if (op.path("fk_keyed").asBoolean()) {  // Kafka 4.0: BiFunction (key, value) -> fk
                java.util.function.BiFunction ke = (k, v) -> mapKey(fk, k, v);
                if (inner) return named ? l.join(r, ke, j, mat(op, "s")) : l.join(r, ke, j);
                return named ? l.leftJoin(r, ke, j, mat(op, "s")) : l.leftJoin(r, ke, j);
            }
            Function extractor = v -> mapKey(fk, null, v);
            if (inner) return named ? l.join(r, extractor, j, mat(op, "s")) : l.join(r, extractor, j);
            return named ? l.leftJoin(r, extractor, j, mat(op, "s")) : l.leftJoin(r, extractor, j);
        }
        if (inner) return named ? l.join(r, j, mat(op, "s")) : l.join(r, j);
        if (leftJoin) return named ? l.leftJoin(r, j, mat(op, "s")) : l.leftJoin(r, j);
        return named ? l.outerJoin(r, j, mat(op, "s")) : l.outerJoin(r, j);
    }

    // -- running ---------------------------------------------------------------------------------

    static JsonNode json(Object v) { return JSON.valueToTree(v); }

    static ObjectNode run(JsonNode c) throws Exception {
        feeding = -1;
        Properties props = new Properties();
        props.put("application.id", c.path("application_id").asText("dsl-diff"));
        props.put("bootstrap.servers", "localhost:9091");
        props.put("state.dir", stateDir + java.io.File.separator + "case-" + caseCount++);
        props.put("default.key.serde", Serdes.StringSerde.class.getName());
        props.put("default.value.serde", Serdes.StringSerde.class.getName());
        props.put("statestore.cache.max.bytes", c.path("cache_bytes").asText("0"));
        // Kafka throttles these emits by wall-clock time; the outer join's throttle is the case's
        // (0 unless it says), the windowed one stays off (docs/kafka-differences.md).
        props.put("__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", c.path("emit_interval_ms").asText("0"));
        props.put("__emit.interval.ms.kstreams.windowed.aggregation__", "0");
        props.put("topology.optimization", c.path("optimization").asText("none"));
        StreamsBuilder b = new StreamsBuilder();
        Map<String, Object> nodes = new HashMap<>();
        Map<String, String> types = new HashMap<>();
        Map<String, String> sourceTypes = new HashMap<>();
        for (JsonNode op : c.get("ops")) {
            String id = op.get("id").asText();
            nodes.put(id, build(b, nodes, types, op));
            types.put(id, op.path("vt").asText("s"));
            if (op.has("topic") && !op.get("op").asText().equals("to")) sourceTypes.put(op.get("topic").asText(), op.path("vt").asText("s"));
        }
        ObjectNode answer = JSON.createObjectNode();
        try (TopologyTestDriver d = new TopologyTestDriver(b.build(props), props, Instant.ofEpochMilli(0))) {
            Map<String, TestInputTopic> inputs = new HashMap<>();
            for (Map.Entry<String, String> e : sourceTypes.entrySet())
                inputs.put(e.getKey(), d.createInputTopic(e.getKey(), Serdes.String().serializer(), serde(e.getValue()).serializer()));
            for (JsonNode r : c.get("input")) {
                feeding++;
                if (r.has("wall")) { d.advanceWallClockTime(Duration.ofMillis(r.get("wall").asLong())); continue; }
                JsonNode v = r.get("value");
                Object value = v == null || v.isNull() ? null : v.isNumber() ? (Object) v.asLong() : v.asText();
                JsonNode k = r.get("key");
                inputs.get(r.get("topic").asText()).pipeInput(k == null || k.isNull() ? null : k.asText(), value, r.get("ts").asLong());
            }
            feeding = c.get("input").size();
            ObjectNode outputs = answer.putObject("outputs");
            c.get("outputs").fields().forEachRemaining(e -> {
                ArrayNode list = outputs.putArray(e.getKey());
                for (Object o : d.createOutputTopic(e.getKey(), Serdes.String().deserializer(), serde(e.getValue().asText()).deserializer()).readRecordsToList()) {
                    TestRecord t = (TestRecord) o;
                    list.addArray().add(json(t.key())).add(json(t.value())).add(t.timestamp());
                }
            });
            ObjectNode stores = answer.putObject("stores");
            c.get("stores").fields().forEachRemaining(e -> {
                ArrayNode list = stores.putArray(e.getKey());
                String storeKind = e.getValue().asText();
                KeyValueIterator it = storeKind.equals("kv") ? d.getKeyValueStore(e.getKey()).all()
                    : storeKind.equals("window") ? d.getWindowStore(e.getKey()).all()
                    : d.getSessionStore(e.getKey()).fetch(null, null);
                try (it) {
                    while (it.hasNext()) {
                        KeyValue kv = (KeyValue) it.next();
                        Object key = kv.key instanceof Windowed ? windowedKey(kv.key) : kv.key;
                        list.addArray().add(json(key)).add(json(kv.value));
                    }
                }
            });
        }
        return answer;
    }
}
