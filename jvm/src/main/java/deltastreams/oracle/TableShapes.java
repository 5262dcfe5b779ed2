package deltastreams.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedTable;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;

/**
 * The {@code table} shape, built from its parameters exactly as devtools/differential/table_shapes.py
 * builds it with deltastreams' DSL: a KTable from {@code builder.table} or {@code toTable}, a
 * chain of filters and value mappers, optionally re-grouped and aggregated with a subtractor,
 * optionally suppressed, then its changes out.
 */
@SuppressWarnings({"unchecked", "rawtypes"})
final class TableShapes {
  private TableShapes() {}

  /** A chain of KTable operators: {@code [{"op": filter | filter_not | map_values, ..., "name"?}]}. */
  static KTable<String, String> tableChain(KTable<String, String> table, JsonNode ops) {
    for (JsonNode op : ops) {
      String name = Shapes.name(op);
      table = switch (op.get("op").asText()) {
        case "filter" -> {
          var predicate = Functions.filter(op.get("m").asLong(), op.get("r").asLong(), op.get("keep_null").asBoolean());
          yield name == null ? table.filter(predicate) : table.filter(predicate, Named.as(name));
        }
        case "filter_not" -> {
          var predicate = Functions.filter(op.get("m").asLong(), op.get("r").asLong(), op.get("keep_null").asBoolean());
          yield name == null ? table.filterNot(predicate) : table.filterNot(predicate, Named.as(name));
        }
        case "map_values" -> {
          var mapper = Functions.addToValue(op.get("a").asLong());
          yield name == null ? table.mapValues(mapper) : table.mapValues(mapper, Named.as(name));
        }
        default -> throw new IllegalArgumentException("no table operator named " + op.get("op").asText());
      };
    }
    return table;
  }

  /**
   * {@code builder.table(topic)} (its store named by {@code origin.name}, {@code Materialized.as}),
   * or {@code stream(topic) -> pre chain -> toTable()} (the processor named, {@code Named.as}).
   */
  static KTable<String, String> tableFrom(StreamsBuilder builder, String topic, JsonNode origin, JsonNode p) {
    String name = Shapes.name(origin);
    if (origin.get("kind").asText().equals("table")) {
      return name == null ? builder.table(topic) : builder.table(topic, Materialized.as(name));
    }
    KStream<String, String> stream = Shapes.chain(Shapes.source(builder, topic, p), origin.path("pre"));
    return name == null ? stream.toTable() : stream.toTable(Named.as(name));
  }

  /**
   * table("tin") | stream("tin") -> chain -> toTable() -> table chain -> [groupBy -> count |
   * reduce | aggregate -> table chain] -> [suppress] -> toStream -> to("out").
   */
  static void table(JsonNode p, StreamsBuilder builder, Outputs outputs) {
    KTable table = tableChain(tableFrom(builder, "tin", p.get("from"), p), p.path("ops"));
    JsonNode then = p.get("then");
    Serde values = Serdes.String();
    if (then.get("kind").asText().equals("group_by")) {
      String groupName = Shapes.name(then);
      var selector = Functions.regroup(then.get("m").asLong());
      KGroupedTable<String, String> grouped = groupName == null
          ? ((KTable<String, String>) table).groupBy(selector)
          : ((KTable<String, String>) table).groupBy(selector, Grouped.as(groupName));
      JsonNode aggregation = then.get("aggregation");
      String store = Shapes.name(aggregation);
      table = switch (aggregation.get("kind").asText()) {
        case "count" -> store == null ? grouped.count() : grouped.count(Materialized.as(store));
        case "reduce" -> store == null
            ? grouped.reduce(Functions.sum(), Functions.difference())
            : grouped.reduce(Functions.sum(), Functions.difference(), Materialized.as(store));
        case "aggregate" -> store == null
            ? grouped.aggregate(Functions.zero(), Functions.append(), Functions.appendRemoval())
            : grouped.aggregate(Functions.zero(), Functions.append(), Functions.appendRemoval(), Materialized.as(store));
        default -> throw new IllegalArgumentException("no aggregation " + aggregation.get("kind").asText());
      };
      if (aggregation.get("kind").asText().equals("count")) {
        values = Serdes.Long();
      }
      table = tableChain(table, then.path("post_ops"));
    }
    JsonNode suppress = then.path("suppress");
    if (suppress.isObject()) {
      table = table.suppress(Shapes.suppressed(suppress));
    }
    String toStreamName = Shapes.name(p.path("to_stream"));
    KStream out = toStreamName == null ? table.toStream() : table.toStream(Named.as(toStreamName));
    Shapes.sink(out, p, Serdes.String(), values);
    outputs.add("out", Outputs.strings(), values.deserializer());
  }
}
