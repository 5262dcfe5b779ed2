package deltastreams.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.Stores;

/**
 * The topologies of the applications in jobs/ (pageview, enrich, clicks, dedup), written as a
 * Kafka Streams user would write them, for their describe() only: names and structure must be
 * Kafka's exactly. Topic names and options come from the scenario's parameters, which
 * tests/topology/test_describe_against_kafka.py takes from the jobs' own modules.
 */
final class JobTopologies {
  private JobTopologies() {}

  static void build(String job, JsonNode p, StreamsBuilder builder) {
    switch (job) {
      case "job-pageview" -> pageview(p, builder);
      case "job-enrich" -> enrich(p, builder);
      case "job-clicks" -> clicks(p, builder);
      case "job-dedup" -> dedup(p, builder);
      default -> throw new IllegalArgumentException("no job topology named " + job);
    }
  }

  private static void pageview(JsonNode p, StreamsBuilder builder) {
    KStream<String, String> views = builder.<String, String>stream(p.get("input").asText()).filter((k, v) -> true);
    if (p.get("hops").asInt() == 3) {
      views = views.map(KeyValue::pair).repartition(Repartitioned.as("pageviews-by-page"));
    }
    KTable<Windowed<String>, Long> counts = views.map(KeyValue::pair)
        .groupByKey()
        .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(p.get("window_ms").asLong()), Duration.ofMillis(p.get("grace_ms").asLong())))
        .count();
    if (p.get("emit").asText().equals("final")) {
      counts = counts.suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()));
    }
    counts.toStream().to(p.get("output").asText());
  }

  private static void enrich(JsonNode p, StreamsBuilder builder) {
    KStream<String, String> views = builder.stream(p.get("views").asText());
    KTable<String, String> users = builder.table(p.get("users").asText(), Materialized.as("users-store"));
    views.leftJoin(users, (view, user) -> user == null ? "unknown" : user)
        .map((user, region) -> KeyValue.pair(region, "1"))
        .groupByKey(Grouped.as("views-by-region"))
        .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(p.get("window_ms").asLong()), Duration.ofMillis(p.get("grace_ms").asLong())))
        .count(Materialized.as("views-per-region-store"))
        .toStream()
        .to(p.get("output").asText());
  }

  private static void clicks(JsonNode p, StreamsBuilder builder) {
    KStream<String, String> impressions = builder.stream(p.get("impressions").asText());
    KStream<String, String> clicks = builder.stream(p.get("clicks").asText());
    impressions.leftJoin(
            clicks,
            (impression, click) -> impression + "|" + click,
            JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(p.get("window_ms").asLong()), Duration.ofMillis(p.get("grace_ms").asLong())),
            StreamJoined.<String, String, String>as("attribution").withName("attribution"))
        .to(p.get("output").asText());
  }

  private static void dedup(JsonNode p, StreamsBuilder builder) {
    String store = p.get("store").asText();
    builder.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(store), Serdes.String(), Serdes.Long()));
    KStream<String, String> events = builder.stream(p.get("input").asText());
    events.process(() -> new Processor<String, String, String, String>() {
      @Override
      public void process(Record<String, String> record) {}
    }, Named.as("dedup"), store).to(p.get("output").asText());
  }
}
