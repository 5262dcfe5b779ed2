package deltastreams.oracle;

import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Aggregator;
import org.apache.kafka.streams.kstream.Initializer;
import org.apache.kafka.streams.kstream.KeyValueMapper;
import org.apache.kafka.streams.kstream.Merger;
import org.apache.kafka.streams.kstream.Predicate;
import org.apache.kafka.streams.kstream.Reducer;
import org.apache.kafka.streams.kstream.ValueMapper;

/**
 * The user functions of the scenario catalogue. Each is a family with parameters, and
 * jobs/differential/functions.py defines the same families in Python: the two must agree
 * exactly, so each is spelled out here as it is there. Values are decimal strings of small
 * non-negative integers (or null); keys are short strings (or null).
 */
final class Functions {
  private Functions() {}

  static long num(String value) {
    return Long.parseLong(value);
  }

  /** Keeps a record whose value mod {@code m} is not {@code r}; a null value: {@code keepNull}. */
  static Predicate<String, String> filter(long m, long r, boolean keepNull) {
    return (k, v) -> v == null ? keepNull : num(v) % m != r;
  }

  static ValueMapper<String, String> addToValue(long a) {
    return v -> v == null ? null : String.valueOf(num(v) + a);
  }

  /** The new key {@code "k" + value mod m}; a null value keeps its key. */
  static KeyValueMapper<String, String, String> keyFromValue(String prefix, long m) {
    return (k, v) -> v == null ? k : prefix + (num(v) % m);
  }

  static KeyValueMapper<String, String, KeyValue<String, String>> map(long m, long a) {
    KeyValueMapper<String, String, String> key = keyFromValue("k", m);
    ValueMapper<String, String> value = addToValue(a);
    return (k, v) -> KeyValue.pair(key.apply(k, v), value.apply(v));
  }

  static ValueMapper<String, Iterable<String>> flatMapValues(int n) {
    return v -> {
      List<String> values = new ArrayList<>();
      if (v != null) {
        for (int i = 0; i < n; i++) {
          values.add(String.valueOf(num(v) + i));
        }
      }
      return values;
    };
  }

  static KeyValueMapper<String, String, Iterable<KeyValue<String, String>>> flatMap(int n, long m) {
    return (k, v) -> {
      List<KeyValue<String, String>> records = new ArrayList<>();
      if (v != null) {
        for (int i = 0; i < n; i++) {
          long value = num(v) + i;
          records.add(KeyValue.pair("k" + (value % m), String.valueOf(value)));
        }
      }
      return records;
    };
  }

  /** Sums decimal strings. */
  static Reducer<String> sum() {
    return (aggregate, v) -> String.valueOf(num(aggregate) + num(v));
  }

  /** Takes the right operand away: a subtractor for {@link #sum()}. */
  static Reducer<String> difference() {
    return (aggregate, v) -> String.valueOf(num(aggregate) - num(v));
  }

  static Initializer<String> zero() {
    return () -> "0";
  }

  /** Appends {@code "+" + value}: order-sensitive, so any difference in fold order shows. */
  static Aggregator<String, String, String> append() {
    return (k, v, aggregate) -> aggregate + "+" + v;
  }

  /** Appends {@code "-" + value}: the subtractor for {@link #append()} in table aggregations. */
  static Aggregator<String, String, String> appendRemoval() {
    return (k, v, aggregate) -> aggregate + "-" + v;
  }

  /** Joins two session aggregates with {@code "|"}, left first: shows which one is which. */
  static Merger<String, String> mergeSessions() {
    return (k, left, right) -> left + "|" + right;
  }

  /** Appends {@code tag + value}: each input of a cogroup folds with its own tag. */
  static Aggregator<String, String, String> tagged(String tag) {
    return (k, v, aggregate) -> aggregate + tag + v;
  }
}
