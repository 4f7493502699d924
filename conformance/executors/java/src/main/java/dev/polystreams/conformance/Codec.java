package dev.polystreams.conformance;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/**
 * The serdes of the conformance cases over natural values, as every executor
 * has them (conformance/README.md): string (String, UTF-8), json (any JSON:
 * Map, List, String, Long, Double, Boolean), long (Long, 8 bytes big-endian),
 * integer (Long, 4 bytes big-endian), double (Double, 8 bytes IEEE 754
 * big-endian), bytes (byte[]). A null value is a Kafka null under every serde.
 */
final class Codec {
  static final ObjectMapper JSON =
      new ObjectMapper().enable(DeserializationFeature.USE_LONG_FOR_INTS);

  static final List<String> NAMES = List.of("bytes", "string", "json", "long", "integer", "double");

  private Codec() {}

  /** Refuses a serde name that is not one of NAMES. */
  static String check(String serde) {
    if (!NAMES.contains(serde)) {
      throw new IllegalArgumentException("serde \"" + serde + "\" is not known (known: " + String.join(", ", NAMES) + ")");
    }
    return serde;
  }

  static byte[] encode(String serde, Object v) {
    if (v == null) {
      return null;
    }
    switch (serde) {
      case "string":
        if (!(v instanceof String s)) {
          throw new IllegalArgumentException("string serde: want a string, got " + Values.describe(v));
        }
        return s.getBytes(StandardCharsets.UTF_8);
      case "json":
        try {
          return JSON.writeValueAsBytes(v);
        } catch (JsonProcessingException e) {
          throw new IllegalArgumentException("json serde: " + e.getMessage(), e);
        }
      case "long":
        return ByteBuffer.allocate(8).putLong(integral(serde, v)).array();
      case "integer": {
        long i = integral(serde, v);
        if (i < Integer.MIN_VALUE || i > Integer.MAX_VALUE) {
          throw new IllegalArgumentException("integer serde: " + i + " does not fit in 32 bits");
        }
        return ByteBuffer.allocate(4).putInt((int) i).array();
      }
      case "double":
        if (v instanceof Long l) {
          return ByteBuffer.allocate(8).putDouble(l.doubleValue()).array();
        }
        if (v instanceof Double d) {
          return ByteBuffer.allocate(8).putDouble(d).array();
        }
        throw new IllegalArgumentException("double serde: want a number, got " + Values.describe(v));
      case "bytes":
        if (v instanceof byte[] b) {
          return b;
        }
        if (v instanceof String s) {
          return Base64.getDecoder().decode(s);
        }
        throw new IllegalArgumentException("bytes serde: want base64 text, got " + Values.describe(v));
      default:
        throw new IllegalArgumentException("serde \"" + serde + "\" is not known");
    }
  }

  private static long integral(String serde, Object v) {
    if (v instanceof Long l) {
      return l;
    }
    if (v instanceof Double d && d == Math.rint(d) && Math.abs(d) <= (double) (1L << 62)) {
      return d.longValue();
    }
    throw new IllegalArgumentException(serde + " serde: want an integer, got " + Values.describe(v));
  }

  static Object decode(String serde, byte[] b) {
    if (b == null) {
      return null;
    }
    switch (serde) {
      case "string":
        try {
          return StandardCharsets.UTF_8.newDecoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .decode(ByteBuffer.wrap(b))
              .toString();
        } catch (CharacterCodingException e) {
          throw new IllegalArgumentException("string serde: not UTF-8");
        }
      case "json":
        try {
          return JSON.readValue(b, Object.class);
        } catch (IOException e) {
          throw new IllegalArgumentException("json serde: " + e.getMessage(), e);
        }
      case "long":
        if (b.length != 8) {
          throw new IllegalArgumentException("long serde: want 8 bytes, got " + b.length);
        }
        return ByteBuffer.wrap(b).getLong();
      case "integer":
        if (b.length != 4) {
          throw new IllegalArgumentException("integer serde: want 4 bytes, got " + b.length);
        }
        return (long) ByteBuffer.wrap(b).getInt();
      case "double":
        if (b.length != 8) {
          throw new IllegalArgumentException("double serde: want 8 bytes, got " + b.length);
        }
        return ByteBuffer.wrap(b).getDouble();
      case "bytes":
        return b;
      default:
        throw new IllegalArgumentException("serde \"" + serde + "\" is not known");
    }
  }

  /**
   * The value as a step's serde carries it on: encoded and decoded, as the
   * SDKs' executors do between operators (a Long given to a double serde
   * goes on as a Double; a value the serde cannot encode fails the record).
   */
  static Object coerce(String serde, Object v) {
    return decode(serde, encode(serde, v));
  }

  /** A natural value as a JSON-able value, for messages. */
  static String text(Object v) {
    try {
      if (v instanceof byte[] b) {
        return JSON.writeValueAsString(Base64.getEncoder().encodeToString(b));
      }
      if (v instanceof Map || v instanceof List || v == null || v instanceof String || v instanceof Number || v instanceof Boolean) {
        return JSON.writeValueAsString(v);
      }
      return String.valueOf(v);
    } catch (JsonProcessingException e) {
      return String.valueOf(v);
    }
  }
}
