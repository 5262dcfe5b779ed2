package deltastreams.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.function.Function;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The foreign-key join shape (inner or left), built from its parameters exactly as
 * devtools/differential/foreign_key_shapes.py builds it with deltastreams' DSL: table("tin") join
 * table("tin2") by the foreign key {@link #foreignKey} of the left value, optionally named
 * ({@code TableJoined.as}) and materialized ({@code Materialized.as}), then filters and value
 * mappers of the joined values, toStream, to("out").
 */
final class ForeignKeyShapes {
  private ForeignKeyShapes() {}

  /** The letter {@code "a"} + value mod {@code m}, or null where value mod 7 is {@code nullR}. */
  static Function<String, String> foreignKey(long m, long nullR) {
    return v -> Math.floorMod(Functions.num(v), 7) == nullR ? null : String.valueOf((char) ('a' + Math.floorMod(Functions.num(v), m)));
  }

  static void fkJoin(JsonNode p, StreamsBuilder builder, Outputs outputs) {
    KTable<String, String> left = JoinShapes.tableSide(builder, "tin", p.get("left"));
    KTable<String, String> right = JoinShapes.tableSide(builder, "tin2", p.get("right"));
    JsonNode join = p.get("join");
    String name = Shapes.name(join);
    String store = join.path("store_name").isTextual() ? join.get("store_name").asText() : null;
    Function<String, String> fk = foreignKey(join.get("m").asLong(), join.get("null_r").asLong());
    TableJoined<String, String> tableJoined = name == null ? TableJoined.with(null, null) : TableJoined.as(name);
    boolean leftJoin = join.path("kind").asText("join").equals("left_join");
    Materialized<String, String, KeyValueStore<Bytes, byte[]>> materialized = store == null
        ? null
        : Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(store).withKeySerde(Serdes.String()).withValueSerde(Serdes.String());
    KTable<String, String> joined;
    if (leftJoin) {
      joined = materialized == null
          ? left.leftJoin(right, fk, Functions.joined(), tableJoined)
          : left.leftJoin(right, fk, Functions.joined(), tableJoined, materialized);
    } else {
      joined = materialized == null
          ? left.join(right, fk, Functions.joined(), tableJoined)
          : left.join(right, fk, Functions.joined(), tableJoined, materialized);
    }
    joined = JoinShapes.joinedChain(joined, p.path("post"));
    String toStreamName = Shapes.name(p.path("to_stream"));
    JoinShapes.sinkStrings(toStreamName == null ? joined.toStream() : joined.toStream(Named.as(toStreamName)), p, outputs);
  }
}
