package dev.polystreams.conformance;

import java.util.List;
import java.util.Map;

/** Helpers over natural values (String, Long, Double, byte[], Map, List, Boolean, null). */
final class Values {
  private Values() {}

  static String describe(Object v) {
    if (v == null) {
      return "null";
    }
    if (v instanceof String) {
      return "a string";
    }
    if (v instanceof Long) {
      return "an integer";
    }
    if (v instanceof Double) {
      return "a number";
    }
    if (v instanceof byte[]) {
      return "bytes";
    }
    if (v instanceof List) {
      return "an array";
    }
    if (v instanceof Map) {
      return "an object";
    }
    if (v instanceof Boolean) {
      return "a boolean";
    }
    return v.getClass().getSimpleName();
  }
}
