package dev.polystreams.conformance;

import java.nio.ByteBuffer;
import java.util.Arrays;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.streams.kstream.WindowedSerdes;

/** The Kafka serdes the executor gives Kafka Streams. */
final class CaseSerdes {
  private CaseSerdes() {}

  /** A case serde over natural values: the bytes every SDK writes and reads. */
  static Serde<Object> natural(String name) {
    String serde = Codec.check(name);
    Serializer<Object> ser = (topic, v) -> Codec.encode(serde, v);
    Deserializer<Object> de = (topic, b) -> Codec.decode(serde, b);
    return Serdes.serdeFrom(ser, de);
  }

  /** A key serde: the case serde, or Kafka's windowed serde around it. */
  @SuppressWarnings({"unchecked", "rawtypes"})
  static Serde keySerde(Handle h) {
    Serde<Object> inner = natural(h.keySerde);
    if (h.sessionWindowed) {
      return new WindowedSerdes.SessionWindowedSerde<>(inner);
    }
    if (h.windowSize != null) {
      return new WindowedSerdes.TimeWindowedSerde<>(inner, h.windowSize);
    }
    return inner;
  }

  /**
   * The default key and value serde (default.key.serde / default.value.serde):
   * stores and internal topics the case gives no serde for. It keeps a natural
   * value's type (a tag byte, then its bytes), so what comes back out of a
   * store is what went in; no case reads these bytes.
   */
  public static final class Universal implements Serde<Object> {
    private static final byte STRING = 1, LONG = 2, DOUBLE = 3, BYTES = 4, JSON = 5;

    @Override
    public Serializer<Object> serializer() {
      return (topic, v) -> {
        if (v == null) {
          return null;
        }
        byte tag;
        byte[] body;
        if (v instanceof String) {
          tag = STRING;
          body = Codec.encode("string", v);
        } else if (v instanceof Long) {
          tag = LONG;
          body = Codec.encode("long", v);
        } else if (v instanceof Double) {
          tag = DOUBLE;
          body = Codec.encode("double", v);
        } else if (v instanceof byte[] b) {
          tag = BYTES;
          body = b;
        } else {
          tag = JSON;
          body = Codec.encode("json", v);
        }
        return ByteBuffer.allocate(1 + body.length).put(tag).put(body).array();
      };
    }

    @Override
    public Deserializer<Object> deserializer() {
      return (topic, b) -> {
        if (b == null) {
          return null;
        }
        if (b.length == 0) {
          throw new IllegalArgumentException("universal serde: no tag byte");
        }
        byte[] body = Arrays.copyOfRange(b, 1, b.length);
        switch (b[0]) {
          case STRING:
            return Codec.decode("string", body);
          case LONG:
            return Codec.decode("long", body);
          case DOUBLE:
            return Codec.decode("double", body);
          case BYTES:
            return body;
          case JSON:
            return Codec.decode("json", body);
          default:
            throw new IllegalArgumentException("universal serde: unknown tag " + b[0]);
        }
      };
    }
  }
}
