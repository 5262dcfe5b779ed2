package deltastreams.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.KeyValueMapper;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.StreamJoined;

/**
 * The join shapes, each built from its parameters exactly as devtools/differential/join_shapes.py
 * builds it with deltastreams' DSL: stream-table, stream-stream (join windows), table-table and
 * stream-global table joins, inner, left and outer. A re-keyed side gets letter keys again
 * ({@link Functions#letterKey}), so re-keyed records still find partners.
 */
@SuppressWarnings({"unchecked", "rawtypes"})
final class JoinShapes {
  private JoinShapes() {}

  /** {@code selectKey(letterKey(m))} (optionally named) if {@code p} is an object. */
  static KStream<String, String> rekeyed(KStream<String, String> stream, JsonNode p) {
    if (!p.isObject()) {
      return stream;
    }
    var mapper = Functions.letterKey(p.get("m").asLong());
    String name = Shapes.name(p);
    return name == null ? stream.selectKey(mapper) : stream.selectKey(mapper, Named.as(name));
  }

  /** stream(topic) -> key-preserving chain -> [re-key], from a side's parameters. */
  static KStream<String, String> streamSide(StreamsBuilder builder, String topic, JsonNode p) {
    return rekeyed(Shapes.chain(Shapes.source(builder, topic, p), p.path("pre")), p.path("rekey"));
  }

  /**
   * table(topic) (store optionally named) or stream(topic) -> toTable(), then filters and value
   * mappers.
   */
  static KTable<String, String> tableSide(StreamsBuilder builder, String topic, JsonNode p) {
    return TableShapes.tableChain(TableShapes.tableFrom(builder, topic, p.get("from"), p), p.path("ops"));
  }

  /** Filters and value mappers for joined values ({@code left&right} text, not numbers). */
  static KTable<String, String> joinedChain(KTable<String, String> table, JsonNode ops) {
    for (JsonNode op : ops) {
      String name = Shapes.name(op);
      table = switch (op.get("op").asText()) {
        case "filter" -> {
          var predicate = Functions.contains(op.get("text").asText(), op.get("keep_null").asBoolean());
          yield name == null ? table.filter(predicate) : table.filter(predicate, Named.as(name));
        }
        case "filter_not" -> {
          var predicate = Functions.contains(op.get("text").asText(), op.get("keep_null").asBoolean());
          yield name == null ? table.filterNot(predicate) : table.filterNot(predicate, Named.as(name));
        }
        case "map_values" -> {
          var mapper = Functions.suffixed(op.get("suffix").asText());
          yield name == null ? table.mapValues(mapper) : table.mapValues(mapper, Named.as(name));
        }
        default -> throw new IllegalArgumentException("no table operator named " + op.get("op").asText());
      };
    }
    return table;
  }

  static void sinkStrings(KStream stream, JsonNode p, Outputs outputs) {
    Shapes.sink(stream, p, Serdes.String(), Serdes.String());
    outputs.add("out", Outputs.strings(), Outputs.strings());
  }

  /** stream("in") [re-keyed] join | leftJoin table("tin") -> to("out"). */
  static void streamTable(JsonNode p, StreamsBuilder builder, Outputs outputs) {
    KStream<String, String> stream;
    KTable<String, String> table;
    if (p.get("table_first").asBoolean()) {
      table = tableSide(builder, "tin", p.get("table"));
      stream = streamSide(builder, "in", p.get("stream"));
    } else {
      stream = streamSide(builder, "in", p.get("stream"));
      table = tableSide(builder, "tin", p.get("table"));
    }
    JsonNode join = p.get("join");
    String name = Shapes.name(join);
    Joined<String, String, String> joined = Joined.as(name);
    KStream<String, String> out = join.get("kind").asText().equals("join")
        ? (name == null ? stream.join(table, Functions.joined()) : stream.join(table, Functions.joined(), joined))
        : (name == null ? stream.leftJoin(table, Functions.joined()) : stream.leftJoin(table, Functions.joined(), joined));
    sinkStrings(out, p, outputs);
  }

  static JoinWindows joinWindows(JsonNode w) {
    Duration difference = Duration.ofMillis(w.get("difference").asLong());
    JsonNode grace = w.path("grace");
    JoinWindows windows = grace.isNumber()
        ? JoinWindows.ofTimeDifferenceAndGrace(difference, Duration.ofMillis(grace.asLong()))
        : JoinWindows.ofTimeDifferenceWithNoGrace(difference);
    if (w.has("before")) {
      windows = windows.before(Duration.ofMillis(w.get("before").asLong()));
    }
    if (w.has("after")) {
      windows = windows.after(Duration.ofMillis(w.get("after").asLong()));
    }
    return windows;
  }

  /**
   * stream("in") join | leftJoin | outerJoin stream("in2") (or itself) within join windows ->
   * to("out").
   */
  static void streamStream(JsonNode p, StreamsBuilder builder, Outputs outputs) {
    KStream<String, String> left = streamSide(builder, "in", p.get("left"));
    KStream<String, String> right = p.path("self").asBoolean() ? left : streamSide(builder, "in2", p.get("right"));
    JsonNode join = p.get("join");
    String name = Shapes.name(join);
    String storeName = join.path("store_name").isTextual() ? join.get("store_name").asText() : null;
    StreamJoined<String, String, String> streamJoined = StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String());
    if (name != null) {
      streamJoined = streamJoined.withName(name);
    }
    if (storeName != null) {
      streamJoined = streamJoined.withStoreName(storeName);
    }
    JoinWindows windows = joinWindows(p.get("windows"));
    KStream<String, String> out = switch (join.get("kind").asText()) {
      case "join" -> left.join(right, Functions.joined(), windows, streamJoined);
      case "left_join" -> left.leftJoin(right, Functions.joined(), windows, streamJoined);
      case "outer_join" -> left.outerJoin(right, Functions.joined(), windows, streamJoined);
      default -> throw new IllegalArgumentException("no join " + join.get("kind").asText());
    };
    sinkStrings(out, p, outputs);
  }

  /** table("tin") join | leftJoin | outerJoin table("tin2") -> [chain] -> toStream -> to("out"). */
  static void tableTable(JsonNode p, StreamsBuilder builder, Outputs outputs) {
    KTable<String, String> left = tableSide(builder, "tin", p.get("left"));
    KTable<String, String> right = tableSide(builder, "tin2", p.get("right"));
    JsonNode join = p.get("join");
    String name = Shapes.name(join);
    KTable<String, String> joined = switch (join.get("kind").asText()) {
      case "join" -> name == null ? left.join(right, Functions.joined()) : left.join(right, Functions.joined(), Named.as(name));
      case "left_join" -> name == null ? left.leftJoin(right, Functions.joined()) : left.leftJoin(right, Functions.joined(), Named.as(name));
      case "outer_join" -> name == null ? left.outerJoin(right, Functions.joined()) : left.outerJoin(right, Functions.joined(), Named.as(name));
      default -> throw new IllegalArgumentException("no join " + join.get("kind").asText());
    };
    joined = joinedChain(joined, p.path("post"));
    String toStreamName = Shapes.name(p.path("to_stream"));
    sinkStrings(toStreamName == null ? joined.toStream() : joined.toStream(Named.as(toStreamName)), p, outputs);
  }

  /** stream("in") -> chain -> join | leftJoin globalTable("gin") by a selected key -> to("out"). */
  static void globalTable(JsonNode p, StreamsBuilder builder, Outputs outputs) {
    String store = Shapes.name(p.path("global"));
    GlobalKTable<String, String> table;
    KStream<String, String> stream;
    if (p.get("global_first").asBoolean()) {
      table = store == null ? builder.globalTable("gin") : builder.globalTable("gin", Materialized.as(store));
      stream = Shapes.chain(Shapes.source(builder, "in", p), p.path("pre"));
    } else {
      stream = Shapes.chain(Shapes.source(builder, "in", p), p.path("pre"));
      table = store == null ? builder.globalTable("gin") : builder.globalTable("gin", Materialized.as(store));
    }
    JsonNode selector = p.get("selector");
    KeyValueMapper<String, String, String> select = selector.get("by").asText().equals("key")
        ? (k, v) -> k
        : Functions.letterKey(selector.get("m").asLong());
    JsonNode join = p.get("join");
    String name = Shapes.name(join);
    KStream<String, String> out = join.get("kind").asText().equals("join")
        ? (name == null ? stream.join(table, select, Functions.joined()) : stream.join(table, select, Functions.joined(), Named.as(name)))
        : (name == null ? stream.leftJoin(table, select, Functions.joined()) : stream.leftJoin(table, select, Functions.joined(), Named.as(name)));
    sinkStrings(out, p, outputs);
  }
}
