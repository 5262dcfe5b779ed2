package deltastreams.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.CogroupedKStream;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.SessionWindowedCogroupedKStream;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.TimeWindowedCogroupedKStream;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;

/**
 * The {@code cogroup} shape, built from its parameters exactly as
 * devtools/differential/cogroup_shapes.py builds it with deltastreams' DSL: two or three inputs
 * ({@code "in"}, {@code "in2"}, {@code "in3"}), each with its own pre-chain (possibly re-keying,
 * so a repartition topic of its own) and grouping, cogrouped with an aggregator of its own;
 * optionally windowed (tumbling, hopping, sliding, session); the aggregate optionally named
 * ({@code Materialized.as}, {@code Named.as}); optionally suppressed; to_stream, an optional post
 * map, to("out").
 */
@SuppressWarnings({"unchecked", "rawtypes"})
final class CogroupShapes {
  private CogroupShapes() {}

  static void cogroup(JsonNode p, StreamsBuilder builder, Outputs outputs) {
    CogroupedKStream<String, String> cogrouped = null;
    for (JsonNode input : p.get("inputs")) {
      KStream<String, String> stream = Shapes.chain(Shapes.source(builder, input.get("topic").asText(), input), input.path("pre"));
      JsonNode grouping = input.get("grouping");
      Grouped<String, String> grouped = Grouped.<String, String>as(Shapes.name(grouping))
          .withKeySerde(Serdes.String()).withValueSerde(Serdes.String());
      KGroupedStream<String, String> groups = grouping.get("by").asText().equals("key")
          ? stream.groupByKey(grouped)
          : stream.groupBy(Functions.keyFromValue("g", grouping.get("m").asLong()), grouped);
      var aggregator = Functions.tagged(input.get("tag").asText());
      cogrouped = cogrouped == null ? groups.cogroup(aggregator) : cogrouped.cogroup(groups, aggregator);
    }
    JsonNode aggregate = p.path("aggregate");
    String store = Shapes.name(aggregate);
    String processor = aggregate.path("processor_name").isTextual() ? aggregate.get("processor_name").asText() : null;
    Named named = processor == null ? null : Named.as(processor);
    // Serdes given explicitly: a cogroup's table takes its key serde from its Materialized alone,
    // and suppress() needs one (naming is unchanged by them).
    Materialized materialized = store == null ? Materialized.with(null, null) : Materialized.as(store);
    materialized = materialized.withKeySerde(Serdes.String()).withValueSerde(Serdes.String());
    JsonNode windows = p.get("windows");
    String type = windows.get("type").asText();
    KTable table = switch (type) {
      case "none" -> aggregate(cogrouped, named, materialized);
      case "tumbling", "hopping" -> {
        TimeWindows spec = TimeWindows.ofSizeAndGrace(Shapes.ms(windows, "size"), Shapes.ms(windows, "grace"));
        if (type.equals("hopping")) {
          spec = spec.advanceBy(Shapes.ms(windows, "advance"));
        }
        yield aggregate(cogrouped.windowedBy(spec), named, materialized);
      }
      case "sliding" -> aggregate(
          cogrouped.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Shapes.ms(windows, "difference"), Shapes.ms(windows, "grace"))),
          named, materialized);
      case "session" -> aggregate(
          cogrouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(Shapes.ms(windows, "gap"), Shapes.ms(windows, "grace"))),
          named, materialized);
      default -> throw new IllegalArgumentException("no windows of type " + type);
    };
    JsonNode suppress = p.path("suppress");
    if (suppress.isObject()) {
      table = table.suppress(Shapes.suppressed(suppress));
    }
    String toStreamName = Shapes.name(p.path("to_stream"));
    KStream out = toStreamName == null ? table.toStream() : table.toStream(Named.as(toStreamName));
    Serde keys = switch (type) {
      case "none" -> Serdes.String();
      case "session" -> WindowedSerdes.sessionWindowedSerdeFrom(String.class);
      case "sliding" -> WindowedSerdes.timeWindowedSerdeFrom(String.class, windows.get("difference").asLong());
      default -> WindowedSerdes.timeWindowedSerdeFrom(String.class, windows.get("size").asLong());
    };
    Serde values = Serdes.String();
    if (p.path("post").asText("").equals("to_strings")) {
      out = out.map((k, v) -> KeyValue.pair(Shapes.keyText(k), v == null ? null : v.toString()));
      keys = Serdes.String();
    }
    Shapes.sink(out, p, keys, values);
    outputs.add("out", keys.deserializer(), values.deserializer());
  }

  static KTable aggregate(CogroupedKStream<String, String> cogrouped, Named named, Materialized materialized) {
    if (named == null) {
      return materialized == null ? cogrouped.aggregate(Functions.zero()) : cogrouped.aggregate(Functions.zero(), materialized);
    }
    return materialized == null ? cogrouped.aggregate(Functions.zero(), named) : cogrouped.aggregate(Functions.zero(), named, materialized);
  }

  static KTable aggregate(TimeWindowedCogroupedKStream<String, String> windowed, Named named, Materialized materialized) {
    if (named == null) {
      return materialized == null ? windowed.aggregate(Functions.zero()) : windowed.aggregate(Functions.zero(), materialized);
    }
    return materialized == null ? windowed.aggregate(Functions.zero(), named) : windowed.aggregate(Functions.zero(), named, materialized);
  }

  static KTable aggregate(SessionWindowedCogroupedKStream<String, String> windowed, Named named, Materialized materialized) {
    var merger = Functions.mergeSessions();
    if (named == null) {
      return materialized == null ? windowed.aggregate(Functions.zero(), merger) : windowed.aggregate(Functions.zero(), merger, materialized);
    }
    return materialized == null ? windowed.aggregate(Functions.zero(), merger, named) : windowed.aggregate(Functions.zero(), merger, named, materialized);
  }
}
