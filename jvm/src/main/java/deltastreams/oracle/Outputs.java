package deltastreams.oracle;

import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.kstream.SessionWindowedDeserializer;
import org.apache.kafka.streams.kstream.TimeWindowedDeserializer;

/** The output topics a shape writes, with the deserializers its records are read back with. */
final class Outputs {
  record Output(String topic, Deserializer<?> keys, Deserializer<?> values) {}

  private final List<Output> outputs = new ArrayList<>();

  List<Output> all() {
    return outputs;
  }

  void add(String topic, Deserializer<?> keys, Deserializer<?> values) {
    outputs.add(new Output(topic, keys, values));
  }

  static Deserializer<String> strings() {
    return new StringDeserializer();
  }

  static Deserializer<Long> longs() {
    return new LongDeserializer();
  }

  /** Time-windowed String keys: the window end is the start plus {@code sizeMs}. */
  static Deserializer<?> timeWindowed(long sizeMs) {
    return new TimeWindowedDeserializer<>(new StringDeserializer(), sizeMs);
  }

  static Deserializer<?> sessionWindowed() {
    return new SessionWindowedDeserializer<>(new StringDeserializer());
  }
}
