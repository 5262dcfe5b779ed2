package deltastreams.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Aggregator;
import org.apache.kafka.streams.kstream.Initializer;
import org.apache.kafka.streams.kstream.KeyValueMapper;
import org.apache.kafka.streams.kstream.Merger;
import org.apache.kafka.streams.kstream.Predicate;
import org.apache.kafka.streams.kstream.Reducer;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.kstream.ValueMapper;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The user functions of the scenario catalogue. Each is a family with parameters, and
 * devtools/differential/functions.py defines the same families in Python: the two must agree
 * exactly, so each is spelled out here as it is there. Values are decimal strings of small
 * integers (or null; sums and differences may go negative: {@code mod} is Python's, {@link
 * Math#floorMod}); keys are short strings (or null).
 */
final class Functions {
  private Functions() {}

  static long num(String value) {
    return Long.parseLong(value);
  }

  /** Keeps a record whose value mod {@code m} is not {@code r}; a null value: {@code keepNull}. */
  static Predicate<String, String> filter(long m, long r, boolean keepNull) {
    return (k, v) -> v == null ? keepNull : Math.floorMod(num(v), m) != r;
  }

  static ValueMapper<String, String> addToValue(long a) {
    return v -> v == null ? null : String.valueOf(num(v) + a);
  }

  /** The new key {@code "k" + value mod m}; a null value keeps its key. */
  static KeyValueMapper<String, String, String> keyFromValue(String prefix, long m) {
    return (k, v) -> v == null ? k : prefix + Math.floorMod(num(v), m);
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

  /**
   * The key {@code "a"} + value mod {@code m} (a letter, the domain input keys are drawn from, so
   * a re-keyed record still finds partners); a null value keeps its key.
   */
  static KeyValueMapper<String, String, String> letterKey(long m) {
    return (k, v) -> v == null ? k : String.valueOf((char) ('a' + Math.floorMod(num(v), m)));
  }

  /**
   * A table's re-grouping: the row's value under the key {@code "g"} + value mod {@code m}, or
   * its own key for {@code m} 0 (Kafka calls it with non-null values only).
   */
  static KeyValueMapper<String, String, KeyValue<String, String>> regroup(long m) {
    return (k, v) -> KeyValue.pair(m == 0 ? k : "g" + Math.floorMod(num(v), m), v);
  }

  /** {@code left&right}, a missing side as {@code -}: shows which side is which, and which is absent. */
  static ValueJoiner<String, String, String> joined() {
    return (left, right) -> (left == null ? "-" : left) + "&" + (right == null ? "-" : right);
  }

  /**
   * Keeps a record whose value contains {@code text}; a null value: {@code keepNull}. For values
   * that are not numbers (joined ones).
   */
  static Predicate<String, String> contains(String text, boolean keepNull) {
    return (k, v) -> v == null ? keepNull : v.contains(text);
  }

  static ValueMapper<String, String> suffixed(String text) {
    return v -> v == null ? null : v + text;
  }

  /**
   * A user processor: keeps the sum of each key's values in the store {@code store} (a null
   * value deletes the key; a null key is not stored), forwards each record with the key's new
   * sum as {@code key=sum} if {@code forwardEach}, and every {@code intervalMs} of stream time (0:
   * never) forwards every entry of the store, in store order, stamped with the punctuation's
   * time, then empties the store if {@code clear}.
   */
  static final class Summing implements Processor<String, String, String, String> {
    private final Sums sums;
    private ProcessorContext<String, String> context;

    Summing(String store, long intervalMs, boolean forwardEach, boolean clear) {
      sums = new Sums(store, intervalMs, forwardEach, clear);
    }

    @Override
    public void init(ProcessorContext<String, String> context) {
      this.context = context;
      sums.init(context.getStateStore(sums.storeName));
      if (sums.intervalMs > 0) {
        context.schedule(Duration.ofMillis(sums.intervalMs), PunctuationType.STREAM_TIME, timestamp -> {
          for (KeyValue<String, String> entry : sums.punctuate()) {
            context.forward(new Record<>(entry.key, entry.value, timestamp));
          }
        });
      }
    }

    @Override
    public void process(Record<String, String> record) {
      String forwarded = sums.process(record.key(), record.value());
      if (sums.forwardEach) {
        context.forward(record.key() == null ? record : record.withValue(forwarded));
      }
    }
  }

  /**
   * {@link Summing} for {@code processValues}: its punctuation forwards nothing (a
   * FixedKeyProcessor can only forward records it was given) but still clears.
   */
  static final class SummingValues implements FixedKeyProcessor<String, String, String> {
    private final Sums sums;
    private FixedKeyProcessorContext<String, String> context;

    SummingValues(String store, long intervalMs, boolean forwardEach, boolean clear) {
      sums = new Sums(store, intervalMs, forwardEach, clear);
    }

    @Override
    public void init(FixedKeyProcessorContext<String, String> context) {
      this.context = context;
      sums.init(context.getStateStore(sums.storeName));
      if (sums.intervalMs > 0) {
        context.schedule(Duration.ofMillis(sums.intervalMs), PunctuationType.STREAM_TIME, timestamp -> sums.punctuate());
      }
    }

    @Override
    public void process(FixedKeyRecord<String, String> record) {
      String forwarded = sums.process(record.key(), record.value());
      if (sums.forwardEach) {
        context.forward(record.key() == null ? record : record.withValue(forwarded));
      }
    }
  }

  /** What {@link Summing} and {@link SummingValues} share: the store and its sums. */
  private static final class Sums {
    final String storeName;
    final long intervalMs;
    final boolean forwardEach;
    final boolean clear;
    private KeyValueStore<String, String> store;

    Sums(String storeName, long intervalMs, boolean forwardEach, boolean clear) {
      this.storeName = storeName;
      this.intervalMs = intervalMs;
      this.forwardEach = forwardEach;
      this.clear = clear;
    }

    void init(KeyValueStore<String, String> store) {
      this.store = store;
    }

    /** Updates the key's sum; returns {@code key=sum} ({@code key=-} once deleted). */
    String process(String key, String value) {
      if (key == null) {
        return null;
      }
      String total = null;
      if (value == null) {
        store.delete(key);
      } else {
        String before = store.get(key);
        total = String.valueOf((before == null ? 0 : num(before)) + num(value));
        store.put(key, total);
      }
      return key + "=" + (total == null ? "-" : total);
    }

    /** The store's entries in store order, removed from it if {@code clear}. */
    List<KeyValue<String, String>> punctuate() {
      List<KeyValue<String, String>> entries = new ArrayList<>();
      try (KeyValueIterator<String, String> all = store.all()) {
        all.forEachRemaining(entries::add);
      }
      if (clear) {
        for (KeyValue<String, String> entry : entries) {
          store.delete(entry.key);
        }
      }
      return entries;
    }
  }
}
