package deltastreams.peers;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;

/**
 * The pageview job as a Kafka Streams user writes it, for the peers benchmark
 * (devtools/bench/peers/run.py): Kafka -> Kafka, JSON values as {@code python -m deltastreams.jobs.pageview generate
 * --kafka} writes them, filter duration_s >= 30, re-key by category, tumbling windows with grace,
 * count (RocksDB store and record cache: Kafka's defaults), windowed counts to the output topic
 * (key: Kafka's TimeWindowedSerializer of the category, value: a long). The re-keyed stream is
 * repartitioned into {@code --partitions} (3) partitions, as the deltastreams job's repartition
 * topic is (Kafka would otherwise take the input's 2).
 *
 * <pre>
 * java -cp ... deltastreams.peers.PageviewStreams --bootstrap-servers H:P --input pageview-events
 *     --output counts --application-id app --commit-interval-ms 100 [--threads 2] [--partitions 3] [--state-dir D]
 *     [--expect-input N | --expect-input-file F] [--keep-repartition]
 * </pre>
 *
 * <p>A streaming application never ends by itself; this one knows it is done when every record
 * of its input is processed and every result committed: the group's committed offsets of the
 * input topic reach its end (and the input holds at least {@code --expect-input} records), and
 * then those of the repartition topic reach its end (read_committed). The input's offsets commit
 * in the same transaction as the repartition records they produced, so once the input is done the
 * repartition topic no longer grows and its committed end means the last counts are committed.
 * On a live stream the number of input records to wait for is known only once the stream ends:
 * {@code --expect-input-file} names a file the benchmark writes it to then; until the file exists
 * the application keeps running. It then closes and prints one JSON line of wall-clock times (epoch ms): the JVM's start,
 * {@code start()}, RUNNING, the first input record processed, done, closed.
 *
 * <p>{@code --keep-repartition} turns off the purge of consumed repartition records (Kafka
 * Streams' deleteRecords every 30 s by default), so the benchmark can read back the order in which
 * the counting tasks saw their records and check the counts against it.
 */
public final class PageviewStreams {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String GROUPING = "by-category";

  @JsonIgnoreProperties(ignoreUnknown = true)
  public record PageView(String user_id, String page_id, String category, int duration_s) {}

  private PageviewStreams() {}

  public static void main(String[] argv) throws Exception {
    Map<String, String> args = parse(argv);
    String bootstrap = required(args, "bootstrap-servers");
    String input = required(args, "input");
    String output = required(args, "output");
    String applicationId = required(args, "application-id");
    long windowMs = Long.parseLong(args.getOrDefault("window-ms", "5000"));
    long graceMs = Long.parseLong(args.getOrDefault("grace-ms", "10000"));
    int minDuration = Integer.parseInt(args.getOrDefault("min-duration-s", "30"));
    long expectInput = Long.parseLong(args.getOrDefault("expect-input", "0"));
    Path expectInputFile = args.containsKey("expect-input-file") ? Path.of(args.get("expect-input-file")) : null;
    int partitions = Integer.parseInt(args.getOrDefault("partitions", "3"));

    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, args.getOrDefault("commit-interval-ms", "100"));
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, args.getOrDefault("threads", "2"));
    props.put(StreamsConfig.STATE_DIR_CONFIG, args.getOrDefault("state-dir", System.getProperty("java.io.tmpdir") + "/kafka-streams"));
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    if (args.containsKey("keep-repartition")) {
      props.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, Long.MAX_VALUE);
    }

    AtomicLong firstRecord = new AtomicLong();
    Serde<PageView> views = Serdes.serdeFrom(new JsonSerializer(), new JsonDeserializer());
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(input, Consumed.with(Serdes.String(), views))
        .peek((user, view) -> {
          if (firstRecord.get() == 0) {
            firstRecord.compareAndSet(0, System.currentTimeMillis());
          }
        })
        .filter((user, view) -> view.duration_s() >= minDuration)
        .map((user, view) -> KeyValue.pair(view.category(), view))
        .repartition(Repartitioned.with(Serdes.String(), views).withName(GROUPING).withNumberOfPartitions(partitions))
        .groupByKey(Grouped.with(Serdes.String(), views))
        .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(windowMs), Duration.ofMillis(graceMs)))
        .count()
        .toStream()
        .to(output, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, windowMs), Serdes.Long()));

    Map<String, Long> times = new LinkedHashMap<>();
    times.put("jvm_start_ms", ManagementFactory.getRuntimeMXBean().getStartTime());
    AtomicLong running = new AtomicLong();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    KafkaStreams streams = new KafkaStreams(builder.build(), props);
    streams.setStateListener((now, before) -> {
      if (now == KafkaStreams.State.RUNNING) {
        running.compareAndSet(0, System.currentTimeMillis());
      }
    });
    streams.setUncaughtExceptionHandler(e -> {
      failure.compareAndSet(null, e);
      return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    });
    times.put("start_ms", System.currentTimeMillis());
    streams.start();
    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
      String repartition = applicationId + "-" + GROUPING + "-repartition";
      // Asked every 200 ms while input remains (the checks share the two cores with the job), then
      // every 20 ms: the end is timed to within one poll.
      boolean inputDone = false;
      while (!(inputDone && reached(committed(admin, applicationId), ends(admin, repartition)))) {
        if (failure.get() != null || streams.state() == KafkaStreams.State.ERROR || streams.state() == KafkaStreams.State.NOT_RUNNING) {
          streams.close(Duration.ofSeconds(30));
          System.err.println("Kafka Streams stopped before it was done: " + failure.get());
          System.exit(1);
        }
        if (!inputDone) {
          Map<TopicPartition, Long> inputEnds = ends(admin, input);
          long expected = expected(expectInput, expectInputFile);
          // The repartition topic's ends are asked after the input was seen done: no record can
          // reach it any more.
          inputDone = inputEnds.values().stream().mapToLong(Long::longValue).sum() >= expected
              && reached(committed(admin, applicationId), inputEnds)
              && admin.listTopics().names().get().contains(repartition);
        }
        Thread.sleep(inputDone ? 20 : 200);
      }
    }
    times.put("running_ms", running.get());
    times.put("first_record_ms", firstRecord.get());
    times.put("done_ms", System.currentTimeMillis());
    streams.close(Duration.ofSeconds(60));
    times.put("closed_ms", System.currentTimeMillis());
    System.out.println(JSON.writeValueAsString(times));
    System.out.flush();
    System.exit(0);
  }

  private static long expected(long given, Path file) throws IOException {
    if (file == null) {
      return given;
    }
    return Files.exists(file) ? Long.parseLong(Files.readString(file).strip()) : Long.MAX_VALUE;
  }

  private static Map<TopicPartition, OffsetAndMetadata> committed(Admin admin, String group) throws Exception {
    return admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
  }

  private static boolean reached(Map<TopicPartition, OffsetAndMetadata> committed, Map<TopicPartition, Long> ends) {
    for (Map.Entry<TopicPartition, Long> end : ends.entrySet()) {
      OffsetAndMetadata offset = committed.get(end.getKey());
      if (end.getValue() > 0 && (offset == null || offset.offset() < end.getValue())) {
        return false;
      }
    }
    return true;
  }

  private static Map<TopicPartition, Long> ends(Admin admin, String topic) throws Exception {
    TopicDescription description = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
    Map<TopicPartition, OffsetSpec> request = new HashMap<>();
    description.partitions().forEach(p -> request.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest()));
    Map<TopicPartition, Long> ends = new HashMap<>();
    admin.listOffsets(request, new ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).all().get()
        .forEach((tp, info) -> ends.put(tp, info.offset()));
    return ends;
  }

  private static final class JsonSerializer implements Serializer<PageView> {
    @Override
    public byte[] serialize(String topic, PageView view) {
      try {
        return view == null ? null : JSON.writeValueAsBytes(view);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  private static final class JsonDeserializer implements Deserializer<PageView> {
    @Override
    public PageView deserialize(String topic, byte[] bytes) {
      try {
        return bytes == null ? null : JSON.readValue(bytes, PageView.class);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  private static Map<String, String> parse(String[] argv) {
    Map<String, String> args = new HashMap<>();
    for (int i = 0; i < argv.length; i++) {
      if (!argv[i].startsWith("--")) {
        throw new IllegalArgumentException("unexpected argument " + argv[i]);
      }
      String name = argv[i].substring(2);
      boolean flag = i + 1 == argv.length || argv[i + 1].startsWith("--");
      args.put(name, flag ? "true" : argv[++i]);
    }
    return args;
  }

  private static String required(Map<String, String> args, String name) {
    String value = args.get(name);
    if (value == null) {
      throw new IllegalArgumentException("--" + name + " is required");
    }
    return value;
  }
}
