package deltastreams.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.SessionWindowedKStream;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindowedKStream;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;

/**
 * The catalogue of topology shapes, each built from its parameters exactly as
 * devtools/differential/shapes.py builds it with deltastreams' DSL. A parameter {@code name}, where
 * present, names the operator as deltastreams' {@code name=} does: {@code Named.as} for
 * processors, {@code Materialized.as} for aggregation stores, {@code Grouped.as} for groupings,
 * {@code Produced.as} for sinks, {@code Consumed.as} for sources.
 */
@SuppressWarnings({"unchecked", "rawtypes"})
final class Shapes {
  private Shapes() {}

  static void build(String shape, JsonNode p, StreamsBuilder builder, Outputs outputs) {
    switch (shape) {
      case "stateless" -> stateless(p, builder, outputs);
      case "aggregate" -> aggregate(p, builder, outputs);
      case "cogroup" -> CogroupShapes.cogroup(p, builder, outputs);
      case "job-pageview", "job-enrich", "job-clicks", "job-dedup" -> JobTopologies.build(shape, p, builder);
      case "table" -> TableShapes.table(p, builder, outputs);
      case "stream_table_join" -> JoinShapes.streamTable(p, builder, outputs);
      case "stream_stream_join" -> JoinShapes.streamStream(p, builder, outputs);
      case "table_table_join" -> JoinShapes.tableTable(p, builder, outputs);
      case "global_table_join" -> JoinShapes.globalTable(p, builder, outputs);
      case "fk_join" -> ForeignKeyShapes.fkJoin(p, builder, outputs);
      case "merge_split" -> ProcessorShapes.mergeSplit(p, builder, outputs);
      case "processor" -> ProcessorShapes.processor(p, builder, outputs);
      case "windowed_table" -> WindowedTableShapes.windowedTable(p, builder, outputs);
      default -> throw new IllegalArgumentException("no shape named " + shape);
    }
  }

  // -- building blocks ---------------------------------------------------------------------------

  static String name(JsonNode p) {
    JsonNode name = p.path("name");
    return name.isTextual() ? name.asText() : null;
  }

  static KStream<String, String> source(StreamsBuilder builder, String topic, JsonNode p) {
    String name = name(p.path("source"));
    return name == null ? builder.stream(topic) : builder.stream(topic, Consumed.as(name));
  }

  /** A chain of stateless operators: {@code [{"op": ..., parameters..., "name"?}, ...]}. */
  static KStream<String, String> chain(KStream<String, String> stream, JsonNode ops) {
    for (JsonNode op : ops) {
      String name = name(op);
      Named named = name == null ? null : Named.as(name);
      stream = switch (op.get("op").asText()) {
        case "filter" -> {
          var predicate = Functions.filter(op.get("m").asLong(), op.get("r").asLong(), op.get("keep_null").asBoolean());
          yield named == null ? stream.filter(predicate) : stream.filter(predicate, named);
        }
        case "filter_not" -> {
          var predicate = Functions.filter(op.get("m").asLong(), op.get("r").asLong(), op.get("keep_null").asBoolean());
          yield named == null ? stream.filterNot(predicate) : stream.filterNot(predicate, named);
        }
        case "map_values" -> {
          var mapper = Functions.addToValue(op.get("a").asLong());
          yield named == null ? stream.mapValues(mapper) : stream.mapValues(mapper, named);
        }
        case "select_key" -> {
          var mapper = Functions.keyFromValue("k", op.get("m").asLong());
          yield named == null ? stream.selectKey(mapper) : stream.selectKey(mapper, named);
        }
        case "map" -> {
          var mapper = Functions.map(op.get("m").asLong(), op.get("a").asLong());
          yield named == null ? stream.map(mapper) : stream.map(mapper, named);
        }
        case "flat_map_values" -> {
          var mapper = Functions.flatMapValues(op.get("n").asInt());
          yield named == null ? stream.flatMapValues(mapper) : stream.flatMapValues(mapper, named);
        }
        case "flat_map" -> {
          var mapper = Functions.flatMap(op.get("n").asInt(), op.get("m").asLong());
          yield named == null ? stream.flatMap(mapper) : stream.flatMap(mapper, named);
        }
        case "peek" -> named == null ? stream.peek((k, v) -> { }) : stream.peek((k, v) -> { }, named);
        case "repartition" -> name == null ? stream.repartition() : stream.repartition(Repartitioned.as(name));
        default -> throw new IllegalArgumentException("no stateless operator named " + op.get("op").asText());
      };
    }
    return stream;
  }

  static void sink(KStream stream, JsonNode p, Serde keys, Serde values) {
    String name = name(p.path("sink"));
    Produced produced = Produced.with(keys, values);
    stream.to("out", name == null ? produced : produced.withName(name));
  }

  // -- shapes ------------------------------------------------------------------------------------

  /** stream("in") -> chain -> to("out"). */
  static void stateless(JsonNode p, StreamsBuilder builder, Outputs outputs) {
    sink(chain(source(builder, "in", p), p.path("chain")), p, Serdes.String(), Serdes.String());
    outputs.add("out", Outputs.strings(), Outputs.strings());
  }

  /**
   * stream("in") -> pre chain -> group_by_key | group_by -> [windowed_by] -> count | reduce |
   * aggregate -> [suppress] -> to_stream -> [post] -> to("out").
   */
  static void aggregate(JsonNode p, StreamsBuilder builder, Outputs outputs) {
    KStream<String, String> stream = chain(source(builder, "in", p), p.path("pre"));
    JsonNode grouping = p.get("grouping");
    // Serdes given explicitly (naming is unchanged by them): a windowed table's key serde comes
    // from the grouping's, and suppress() needs one.
    Grouped<String, String> grouped = Grouped.<String, String>as(name(grouping))
        .withKeySerde(Serdes.String()).withValueSerde(Serdes.String());
    KGroupedStream<String, String> groups = grouping.get("by").asText().equals("key")
        ? stream.groupByKey(grouped)
        : stream.groupBy(Functions.keyFromValue("g", grouping.get("m").asLong()), grouped);
    JsonNode windows = p.get("windows");
    String type = windows.get("type").asText();
    JsonNode aggregation = p.get("aggregation");
    String kind = aggregation.get("kind").asText();
    String store = name(aggregation);
    boolean emitFinal = p.path("emit").asText("update").equals("final");
    // Only the Kafka-equivalent scenarios of devtools/differential/known.py set it (deltastreams has no
    // store retention to set): a window store keeping windows that long.
    Materialized materialized = materialized(store, windows.path("kafka_retention_ms"));
    KTable table = switch (type) {
      case "none" -> aggregateBy(groups, kind, store);
      case "tumbling", "hopping" -> {
        TimeWindows spec = TimeWindows.ofSizeAndGrace(ms(windows, "size"), ms(windows, "grace"));
        if (type.equals("hopping")) {
          spec = spec.advanceBy(ms(windows, "advance"));
        }
        TimeWindowedKStream<String, String> windowed = groups.windowedBy(spec);
        if (emitFinal) {
          windowed = windowed.emitStrategy(EmitStrategy.onWindowClose());
        }
        yield aggregateWindows(windowed, kind, materialized);
      }
      case "sliding" -> {
        TimeWindowedKStream<String, String> windowed =
            groups.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(windows, "difference"), ms(windows, "grace")));
        if (emitFinal) {
          windowed = windowed.emitStrategy(EmitStrategy.onWindowClose());
        }
        yield aggregateWindows(windowed, kind, materialized);
      }
      case "session" -> {
        SessionWindowedKStream<String, String> windowed =
            groups.windowedBy(SessionWindows.ofInactivityGapAndGrace(ms(windows, "gap"), ms(windows, "grace")));
        if (emitFinal) {
          windowed = windowed.emitStrategy(EmitStrategy.onWindowClose());
        }
        yield aggregateSessions(windowed, kind, materialized);
      }
      default -> throw new IllegalArgumentException("no windows of type " + type);
    };
    JsonNode suppress = p.path("suppress");
    if (suppress.isObject()) {
      table = table.suppress(suppressed(suppress));
    }
    String toStreamName = name(p.path("to_stream"));
    KStream out = toStreamName == null ? table.toStream() : table.toStream(Named.as(toStreamName));
    Serde keys = switch (type) {
      case "none" -> Serdes.String();
      case "session" -> WindowedSerdes.sessionWindowedSerdeFrom(String.class);
      case "sliding" -> WindowedSerdes.timeWindowedSerdeFrom(String.class, windows.get("difference").asLong());
      default -> WindowedSerdes.timeWindowedSerdeFrom(String.class, windows.get("size").asLong());
    };
    Serde values = kind.equals("count") ? Serdes.Long() : Serdes.String();
    if (p.path("post").asText("").equals("to_strings")) {
      out = out.map((k, v) -> KeyValue.pair(keyText(k), v == null ? null : v.toString()));
      keys = Serdes.String();
      values = Serdes.String();
    }
    sink(out, p, keys, values);
    outputs.add("out", keys.deserializer(), values.deserializer());
  }

  /** A windowed key as {@code key@start/end}, a plain key as itself. */
  static String keyText(Object key) {
    if (key instanceof Windowed<?> w) {
      return w.key() + "@" + w.window().start() + "/" + w.window().end();
    }
    return (String) key;
  }

  static Duration ms(JsonNode p, String field) {
    return Duration.ofMillis(p.get(field).asLong());
  }

  static Materialized materialized(String store) {
    return Materialized.as(store);
  }

  /** The store's Materialized: named, with a retention, both or neither (null). */
  static Materialized materialized(String store, JsonNode retentionMs) {
    if (retentionMs.isMissingNode() || retentionMs.isNull()) {
      return store == null ? null : materialized(store);
    }
    Materialized materialized = store == null ? Materialized.with(null, null) : materialized(store);
    return materialized.withRetention(Duration.ofMillis(retentionMs.asLong()));
  }

  static KTable aggregateBy(KGroupedStream<String, String> grouped, String kind, String store) {
    return switch (kind) {
      case "count" -> store == null ? grouped.count() : grouped.count(materialized(store));
      case "reduce" -> store == null ? grouped.reduce(Functions.sum()) : grouped.reduce(Functions.sum(), materialized(store));
      case "aggregate" -> store == null
          ? grouped.aggregate(Functions.zero(), Functions.append())
          : grouped.aggregate(Functions.zero(), Functions.append(), materialized(store));
      default -> throw new IllegalArgumentException("no aggregation " + kind);
    };
  }

  static KTable aggregateWindows(TimeWindowedKStream<String, String> windowed, String kind, Materialized materialized) {
    return switch (kind) {
      case "count" -> materialized == null ? windowed.count() : windowed.count(materialized);
      case "reduce" -> materialized == null ? windowed.reduce(Functions.sum()) : windowed.reduce(Functions.sum(), materialized);
      case "aggregate" -> materialized == null
          ? windowed.aggregate(Functions.zero(), Functions.append())
          : windowed.aggregate(Functions.zero(), Functions.append(), materialized);
      default -> throw new IllegalArgumentException("no aggregation " + kind);
    };
  }

  static KTable aggregateSessions(SessionWindowedKStream<String, String> windowed, String kind, Materialized materialized) {
    return switch (kind) {
      case "count" -> materialized == null ? windowed.count() : windowed.count(materialized);
      case "reduce" -> materialized == null ? windowed.reduce(Functions.sum()) : windowed.reduce(Functions.sum(), materialized);
      case "aggregate" -> materialized == null
          ? windowed.aggregate(Functions.zero(), Functions.append(), Functions.mergeSessions())
          : windowed.aggregate(Functions.zero(), Functions.append(), Functions.mergeSessions(), materialized);
      default -> throw new IllegalArgumentException("no aggregation " + kind);
    };
  }

  /** As shapes.py's {@code _suppressed}. */
  static Suppressed suppressed(JsonNode s) {
    boolean bounded = s.has("max_records");
    Suppressed suppressed;
    if (s.get("until").asText().equals("window_close")) {
      Suppressed.StrictBufferConfig buffer = bounded
          ? Suppressed.BufferConfig.maxRecords(s.get("max_records").asLong()).shutDownWhenFull()
          : Suppressed.BufferConfig.unbounded();
      suppressed = Suppressed.untilWindowCloses(buffer);
    } else {
      Suppressed.BufferConfig buffer = Suppressed.BufferConfig.unbounded();
      if (bounded) {
        var records = Suppressed.BufferConfig.maxRecords(s.get("max_records").asLong());
        buffer = s.path("when_full").asText("emit_early").equals("shut_down") ? records.shutDownWhenFull() : records.emitEarlyWhenFull();
      }
      suppressed = Suppressed.untilTimeLimit(Duration.ofMillis(s.get("limit_ms").asLong()), buffer);
    }
    String name = name(s);
    return name == null ? suppressed : suppressed.withName(name);
  }
}
