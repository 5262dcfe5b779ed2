package deltastreams.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.BranchedKStream;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/**
 * Shapes of record routing and user code, built from their parameters exactly as
 * devtools/differential/processor_shapes.py builds them with deltastreams' DSL: {@code merge_split}
 * (two streams merged, then split into branches, each to its own output topic) and
 * {@code processor} (the Processor API: a user processor with a key-value store and a
 * stream-time punctuation).
 */
@SuppressWarnings({"unchecked", "rawtypes"})
final class ProcessorShapes {
  private ProcessorShapes() {}

  /** A split's branches write to these, in branch order (the default branch last). */
  static final String[] BRANCH_OUTPUTS = {"out", "out2", "out3", "out4"};

  static void to(KStream<String, String> stream, int branch, JsonNode sink) {
    String name = Shapes.name(sink);
    Produced<String, String> produced = Produced.with(Serdes.String(), Serdes.String());
    stream.to(BRANCH_OUTPUTS[branch], name == null ? produced : produced.withName(name));
  }

  /**
   * merge(stream("in") -> chain, stream("in2") -> chain) -> split -> branch... -> [default]:
   * each branch to its own topic, its sink added with the branch ({@code via} consumer) or after
   * all of them, from the map of branches ({@code via} map).
   */
  static void mergeSplit(JsonNode p, StreamsBuilder builder, Outputs outputs) {
    JsonNode left = p.get("left");
    JsonNode right = p.get("right");
    KStream<String, String> l = Shapes.chain(Shapes.source(builder, "in", left), left.path("pre"));
    KStream<String, String> r = Shapes.chain(Shapes.source(builder, "in2", right), right.path("pre"));
    String mergeName = Shapes.name(p.path("merge"));
    KStream<String, String> merged = mergeName == null ? l.merge(r) : l.merge(r, Named.as(mergeName));
    String splitName = Shapes.name(p.path("split"));
    BranchedKStream<String, String> split = splitName == null ? merged.split() : merged.split(Named.as(splitName));
    boolean byConsumer = p.get("via").asText().equals("consumer");
    JsonNode sinks = p.get("sinks");
    List<JsonNode> branches = new ArrayList<>();
    p.get("branches").forEach(branches::add);
    boolean hasDefault = p.get("default").isObject();
    if (hasDefault) {
      branches.add(p.get("default"));
    }
    // Kafka's map of branches is a HashMap: the branches are collected in their order instead.
    List<KStream<String, String>> collected = new ArrayList<>();
    List<Branched<String, String>> branched = new ArrayList<>();
    for (int i = 0; i < branches.size(); i++) {
      int branch = i;
      String name = Shapes.name(branches.get(i));
      if (byConsumer) {
        branched.add(name == null
            ? Branched.withConsumer(s -> to(s, branch, sinks.get(branch)))
            : Branched.withConsumer(s -> to(s, branch, sinks.get(branch)), name));
      } else {
        branched.add(name == null
            ? Branched.withFunction(s -> { collected.add(s); return s; })
            : Branched.withFunction(s -> { collected.add(s); return s; }, name));
      }
      outputs.add(BRANCH_OUTPUTS[i], Outputs.strings(), Outputs.strings());
    }
    int i = 0;
    for (JsonNode b : p.get("branches")) {
      split = split.branch(Functions.filter(b.get("m").asLong(), b.get("r").asLong(), b.get("keep_null").asBoolean()), branched.get(i++));
    }
    if (hasDefault) {
      split.defaultBranch(branched.get(i));
    } else {
      split.noDefaultBranch();
    }
    for (int b = 0; b < collected.size(); b++) {
      to(collected.get(b), b, sinks.get(b));
    }
  }

  /**
   * stream("in") -> chain -> process | processValues(Summing, store) -> [groupByKey -> count ->
   * toStream] -> to("out"), the store added before or after the stream.
   */
  static void processor(JsonNode p, StreamsBuilder builder, Outputs outputs) {
    JsonNode store = p.get("store");
    String storeName = store.get("name").asText();
    StoreBuilder<KeyValueStore<String, String>> storeBuilder = Stores.keyValueStoreBuilder(
        store.get("persistent").asBoolean() ? Stores.persistentKeyValueStore(storeName) : Stores.inMemoryKeyValueStore(storeName),
        Serdes.String(), Serdes.String());
    if (p.get("store_first").asBoolean()) {
      builder.addStateStore(storeBuilder);
    }
    KStream<String, String> stream = Shapes.chain(Shapes.source(builder, "in", p), p.path("pre"));
    if (!p.get("store_first").asBoolean()) {
      builder.addStateStore(storeBuilder);
    }
    JsonNode proc = p.get("processor");
    long interval = proc.get("interval_ms").asLong();
    boolean forwardEach = proc.get("forward_each").asBoolean();
    boolean clear = proc.get("clear").asBoolean();
    String name = Shapes.name(proc);
    KStream<String, String> out;
    if (proc.get("fixed_key").asBoolean()) {
      out = name == null
          ? stream.processValues(() -> new Functions.SummingValues(storeName, interval, forwardEach, clear), storeName)
          : stream.processValues(() -> new Functions.SummingValues(storeName, interval, forwardEach, clear), Named.as(name), storeName);
    } else {
      out = name == null
          ? stream.process(() -> new Functions.Summing(storeName, interval, forwardEach, clear), storeName)
          : stream.process(() -> new Functions.Summing(storeName, interval, forwardEach, clear), Named.as(name), storeName);
    }
    KStream result = out;
    Serde values = Serdes.String();
    JsonNode post = p.path("post");
    if (post.isObject()) {
      String countStore = Shapes.name(post);
      var grouped = out.groupByKey();
      result = (countStore == null ? grouped.count() : grouped.count(Materialized.as(countStore))).toStream();
      values = Serdes.Long();
    }
    Shapes.sink(result, p, Serdes.String(), values);
    outputs.add("out", Outputs.strings(), values.deserializer());
  }
}
