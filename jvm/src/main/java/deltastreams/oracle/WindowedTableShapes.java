package deltastreams.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedTable;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;

/**
 * The {@code windowed_table} shape, built exactly as devtools/differential/windowed_table_shapes.py
 * builds it: two windowed reductions (the first filtered now and then), joined table-table on
 * their Windowed keys, or the first re-grouped by its record key into a reduce with a subtractor.
 */
@SuppressWarnings({"unchecked", "rawtypes"})
final class WindowedTableShapes {
  private WindowedTableShapes() {}

  static KTable<Windowed<String>, String> side(StreamsBuilder builder, String topic, JsonNode side) {
    TimeWindows spec = TimeWindows.ofSizeAndGrace(Duration.ofMillis(side.get("size").asLong()), Duration.ofMillis(side.get("grace").asLong()));
    if (side.has("advance")) {
      spec = spec.advanceBy(Duration.ofMillis(side.get("advance").asLong()));
    }
    KStream<String, String> stream = Shapes.source(builder, topic, side).filter((k, v) -> v != null);
    String store = Shapes.name(side.path("store"));
    var windowed = stream.groupByKey(Grouped.with(Serdes.String(), Serdes.String())).windowedBy(spec);
    KTable<Windowed<String>, String> table = store == null
        ? windowed.reduce(Functions.sum())
        : windowed.reduce(Functions.sum(), Materialized.as(store));
    JsonNode filter = side.path("filter");
    if (filter.isObject()) {
      var predicate = Functions.filter(filter.get("m").asLong(), filter.get("r").asLong(), false);
      String name = Shapes.name(filter);
      table = name == null
          ? table.filter((k, v) -> predicate.test(k.key(), v))
          : table.filter((k, v) -> predicate.test(k.key(), v), Named.as(name));
    }
    return table;
  }

  static void windowedTable(JsonNode p, StreamsBuilder builder, Outputs outputs) {
    KTable<Windowed<String>, String> left = side(builder, "in", p.get("left"));
    JsonNode then = p.get("then");
    String name = Shapes.name(then);
    KTable table;
    String kind = then.get("kind").asText();
    if (kind.equals("group_by")) {
      Grouped<String, String> grouped = Grouped.with(name, Serdes.String(), Serdes.String());
      KGroupedTable<String, String> groups = left.groupBy((wk, v) -> KeyValue.pair(wk.key(), v), grouped);
      String store = Shapes.name(then.path("store"));
      table = store == null
          ? groups.reduce(Functions.sum(), Functions.difference())
          : groups.reduce(Functions.sum(), Functions.difference(), Materialized.as(store));
    } else {
      KTable<Windowed<String>, String> right = side(builder, "in2", p.get("right"));
      table = switch (kind) {
        case "join" -> name == null ? left.join(right, Functions.joined()) : left.join(right, Functions.joined(), Named.as(name));
        case "left_join" -> name == null ? left.leftJoin(right, Functions.joined()) : left.leftJoin(right, Functions.joined(), Named.as(name));
        case "outer_join" -> name == null ? left.outerJoin(right, Functions.joined()) : left.outerJoin(right, Functions.joined(), Named.as(name));
        default -> throw new IllegalArgumentException("no join " + kind);
      };
    }
    String toStreamName = Shapes.name(p.path("to_stream"));
    KStream out = toStreamName == null ? table.toStream() : table.toStream(Named.as(toStreamName));
    out = out.map((k, v) -> KeyValue.pair(Shapes.keyText(k), v));
    JoinShapes.sinkStrings(out, p, outputs);
  }
}
