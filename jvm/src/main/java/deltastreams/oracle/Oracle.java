package deltastreams.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Stream;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.internals.StreamTask;
import org.apache.kafka.streams.state.internals.ThreadCache;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Kafka Streams' own TopologyTestDriver as the differential oracle for deltastreams.
 *
 * <p>Reads scenarios, one JSON object per line on stdin: {@code {"id", "shape", "params",
 * "caching", "inputs": [{"topic", "key", "value", "timestamp", "headers": [[k, v], ...]} |
 * {"advance_ms": n}]}}. For each it builds the shape's topology (see {@link Shapes}), pipes the
 * inputs in order through a fresh driver and prints one JSON line: {@code {"id", "describe",
 * "outputs": [{"topic", "key", "window_start"?, "window_end"?, "value", "timestamp",
 * "headers"}], "dropped", "error"}}. Output topics are read after the last input, each in its
 * own order. One JVM serves any number of scenarios, so a run of thousands pays one start.
 */
public final class Oracle {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long CACHE_BYTES = 10L * 1024 * 1024;

  private Oracle() {}

  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    // Kafka's own logging goes to stderr (slf4j-simple); stdout carries results only.
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
    Path stateRoot = Files.createTempDirectory("deltastreams-oracle-");
    try {
      String line;
      while ((line = in.readLine()) != null) {
        if (line.isBlank()) {
          continue;
        }
        out.println(JSON.writeValueAsString(run(JSON.readTree(line), stateRoot)));
        out.flush();
      }
    } finally {
      deleteTree(stateRoot);
    }
  }

  static ObjectNode run(JsonNode scenario, Path stateRoot) throws Exception {
    ObjectNode result = JSON.createObjectNode();
    result.set("id", scenario.get("id"));
    Outputs outputs = new Outputs();
    Topology topology;
    try {
      StreamsBuilder builder = new StreamsBuilder();
      Shapes.build(scenario.get("shape").asText(), scenario.get("params"), builder, outputs);
      topology = builder.build();
      result.put("describe", topology.describe().toString());
    } catch (RuntimeException e) {
      result.put("error", "topology: " + describe(e));
      return result;
    }
    ArrayNode records = result.putArray("outputs");
    Path stateDir = Files.createTempDirectory(stateRoot, "state-");
    try {
      TopologyTestDriver driver = new TopologyTestDriver(topology, properties(scenario, stateDir), Instant.EPOCH);
      try {
        pipe(driver, scenario.get("inputs"), scenario.path("params").path("kafka_cache_forgets_flushed").asBoolean(false));
      } catch (RuntimeException e) {
        result.put("error", describe(e));
      }
      for (Outputs.Output output : outputs.all()) {
        read(driver, output, records);
      }
      result.put("dropped", droppedRecords(driver));
      try {
        driver.close();
      } catch (RuntimeException e) {
        // After a failed record, closing flushes caches into processors already closed; that
        // second failure is the first one's consequence. Without a first, it is the error.
        if (!result.has("error")) {
          result.put("error", "close: " + describe(e));
        }
      }
    } finally {
      deleteTree(stateDir);
    }
    return result;
  }

  private static Properties properties(JsonNode scenario, Path stateDir) {
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, "test-application");
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:9092");
    props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
    boolean caching = scenario.path("caching").asBoolean(true);
    props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, caching ? CACHE_BYTES : 0L);
    return props;
  }

  /**
   * Pipes the inputs in order. {@code forgetFlushed}: after each input (the driver commits after
   * each, so every cache entry is flushed by then), the record cache drops its entries, as a
   * cache that keeps nothing once flushed would; only the Kafka-equivalent scenarios of
   * devtools/differential/known.py ask for it (Kafka's cache keeps flushed entries, which its stores
   * then still return past their retention; deltastreams has no such cache).
   */
  private static void pipe(TopologyTestDriver driver, JsonNode inputs, boolean forgetFlushed) throws ReflectiveOperationException {
    Map<String, TestInputTopic<String, String>> topics = new HashMap<>();
    ThreadCache cache = forgetFlushed ? cache(driver) : null;
    for (JsonNode input : inputs) {
      if (cache != null) {
        cache.resize(0);
        cache.resize(CACHE_BYTES);
      }
      if (input.has("advance_ms")) {
        driver.advanceWallClockTime(Duration.ofMillis(input.get("advance_ms").asLong()));
        continue;
      }
      RecordHeaders headers = new RecordHeaders();
      for (JsonNode header : input.path("headers")) {
        headers.add(header.get(0).asText(), header.get(1).asText().getBytes(StandardCharsets.UTF_8));
      }
      TestInputTopic<String, String> topic = topics.computeIfAbsent(
          input.get("topic").asText(),
          name -> driver.createInputTopic(name, new StringSerializer(), new StringSerializer()));
      topic.pipeInput(new TestRecord<>(text(input.get("key")), text(input.get("value")), headers, input.get("timestamp").asLong()));
    }
  }

  /** The driver's record cache (its task's; the driver does not expose it). */
  private static ThreadCache cache(TopologyTestDriver driver) throws ReflectiveOperationException {
    Field task = TopologyTestDriver.class.getDeclaredField("task");
    task.setAccessible(true);
    return ((StreamTask) task.get(driver)).processorContext().cache();
  }

  private static void read(TopologyTestDriver driver, Outputs.Output output, ArrayNode records) {
    TestOutputTopic<?, ?> topic = driver.createOutputTopic(output.topic(), output.keys(), output.values());
    for (TestRecord<?, ?> record : topic.readRecordsToList()) {
      ObjectNode row = records.addObject();
      row.put("topic", output.topic());
      Object key = record.key();
      if (key instanceof Windowed<?> windowed) {
        putScalar(row, "key", windowed.key());
        row.put("window_start", windowed.window().start());
        row.put("window_end", windowed.window().end());
      } else {
        putScalar(row, "key", key);
      }
      putScalar(row, "value", record.value());
      row.put("timestamp", record.timestamp());
      ArrayNode headers = row.putArray("headers");
      for (Header header : record.headers()) {
        headers.addArray().add(header.key()).add(header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8));
      }
    }
  }

  private static double droppedRecords(TopologyTestDriver driver) {
    return driver.metrics().entrySet().stream()
        .filter(e -> e.getKey().name().equals("dropped-records-total"))
        .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue())
        .sum();
  }

  private static void putScalar(ObjectNode row, String field, Object value) {
    if (value == null) {
      row.putNull(field);
    } else if (value instanceof Long number) {
      row.put(field, number);
    } else if (value instanceof Integer number) {
      row.put(field, number);
    } else {
      row.put(field, value.toString());
    }
  }

  private static String text(JsonNode node) {
    return node == null || node.isNull() ? null : node.asText();
  }

  private static String describe(Throwable e) {
    StringBuilder text = new StringBuilder(e.getClass().getSimpleName() + ": " + e.getMessage());
    for (Throwable cause = e.getCause(); cause != null && cause != cause.getCause(); cause = cause.getCause()) {
      text.append(" <- ").append(cause.getClass().getSimpleName()).append(": ").append(cause.getMessage());
    }
    return text.toString();
  }

  private static void deleteTree(Path root) throws Exception {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(path);
      }
    }
  }
}
