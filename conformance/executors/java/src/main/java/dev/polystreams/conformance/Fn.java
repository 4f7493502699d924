package dev.polystreams.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * A function of the conformance catalogue (conformance/README.md, and the
 * runner's catalogue.go for Go), over natural values: a name and its
 * argument. Each role is a method; a function used in a role it does not
 * have fails (the runner refuses such cases before they run). The functions
 * conformance/catalogue.json defines by an expr are built from it (Expr);
 * the others are written here.
 */
final class Fn {
  final String name;
  /** The argument as text (a case's string or integer argument), or null. */
  final String arg;
  /** The catalogue's definition of this function, or null for one written here. */
  private final Expr expr;

  private Fn(String name, String arg) {
    this.name = name;
    this.arg = arg;
    this.expr = Expr.of(name);
  }

  /** A case's function reference: "upper" or {"name": "prefix", "arg": "x-"}; null for none. */
  static Fn of(JsonNode ref) {
    if (ref == null || ref.isNull()) {
      return null;
    }
    if (ref.isTextual()) {
      return new Fn(ref.asText(), null);
    }
    JsonNode a = ref.get("arg");
    return new Fn(ref.get("name").asText(), a == null || a.isNull() ? null : a.isTextual() ? a.asText() : a.toString());
  }

  @Override
  public String toString() {
    return arg == null ? name : name + "(" + arg + ")";
  }

  /** The raise_error / raise_on failures, usable in every role but initializer. */
  private boolean raises(Object v) {
    if (name.equals("raise_error")) {
      throw new ConformanceException("conformance: raise_error on value " + Codec.text(v));
    }
    if (name.equals("raise_on")) {
      if (v instanceof String s && s.equals(arg)) {
        throw new ConformanceException("conformance: raise_on " + s);
      }
      return true; // passes the record on unchanged
    }
    return false;
  }

  /** A user function's failure, as a host function raises it. */
  static final class ConformanceException extends RuntimeException {
    ConformanceException(String message) {
      super(message);
    }
  }

  private IllegalStateException noRole(String role) {
    return new IllegalStateException("function " + this + " cannot be used as " + role);
  }

  Object map(Object v) {
    if (expr != null) {
      return expr.call("mapper", null, v);
    }
    if (raises(v)) {
      return v;
    }
    switch (name) {
      case "upper":
        return mapString(v, s -> s.toUpperCase(Locale.ROOT));
      case "lower":
        return mapString(v, s -> s.toLowerCase(Locale.ROOT));
      case "length": {
        String s = str(v);
        return (long) s.codePointCount(0, s.length());
      }
      case "prefix":
        return mapString(v, s -> arg + s);
      case "get_field":
        return field(v, arg);
      case "wrap_field": {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put(arg, v);
        return m;
      }
      case "twice":
        return arith(v, v, '+');
      case "to_text":
        if (v == null || v instanceof String) {
          return v;
        }
        if (v instanceof Long l) {
          return Long.toString(l);
        }
        throw fail("want a string or an integer, got " + Values.describe(v));
      case "reverse_bytes": {
        if (!(v instanceof byte[] b)) {
          throw fail("want bytes, got " + Values.describe(v));
        }
        byte[] out = new byte[b.length];
        for (int i = 0; i < b.length; i++) {
          out[b.length - 1 - i] = b[i];
        }
        return out;
      }
      default:
        throw noRole("mapper");
    }
  }

  List<Object> flat(Object v) {
    if (expr != null) {
      return expr.list("flat", null, v);
    }
    if (raises(v)) {
      return List.of(v);
    }
    switch (name) {
      case "split_words":
        return new ArrayList<>(words(str(v)));
      default:
        throw noRole("flat mapper");
    }
  }

  /** A mapper with key (ValueMapperWithKey): the new value. */
  Object mapWithKey(Object k, Object v) {
    if (expr != null) {
      return expr.call("mapper_with_key", k, v);
    }
    if (raises(v)) {
      return v;
    }
    throw noRole("mapper with key");
  }

  /** A flat mapper with key (ValueMapperWithKey): the new values. */
  List<Object> flatWithKey(Object k, Object v) {
    if (expr != null) {
      return expr.list("flat_with_key", k, v);
    }
    if (raises(v)) {
      return List.of(v);
    }
    throw noRole("flat mapper with key");
  }

  /** A flat key-value mapper (flatMap): the new pairs, in order. */
  List<Object[]> flatKeyValue(Object k, Object v) {
    if (expr != null) {
      List<Object[]> out = new ArrayList<>();
      for (Object kv : expr.list("flat_map", k, v)) {
        out.add(expr.pair(kv));
      }
      return out;
    }
    if (raises(v)) {
      return List.<Object[]>of(new Object[] {k, v});
    }
    throw noRole("flat key-value mapper");
  }

  boolean test(Object k, Object v) {
    if (expr != null) {
      Object b = expr.call("predicate", k, v);
      if (!(b instanceof Boolean t)) {
        throw new IllegalStateException("function " + this + ": its expr gave " + Values.describe(b) + ", want a boolean");
      }
      return t;
    }
    if (raises(v)) {
      return true;
    }
    switch (name) {
      case "is_even":
        if (v == null) {
          return false;
        }
        if (!(v instanceof Long l)) {
          throw fail("want an integer, got " + Values.describe(v));
        }
        return l % 2 == 0;
      case "is_long_word": {
        if (v == null) {
          return false;
        }
        String s = str(v);
        return s.codePointCount(0, s.length()) >= 5;
      }
      case "value_contains":
        return v != null && str(v).contains(arg);
      case "key_starts_with":
        return k != null && str(k).startsWith(arg);
      default:
        throw noRole("predicate");
    }
  }

  Object key(Object k, Object v) {
    if (expr != null) {
      return expr.call("key", k, v);
    }
    if (raises(v)) {
      return k;
    }
    switch (name) {
      case "first_word_key": {
        List<String> w = words(str(v));
        return w.isEmpty() ? null : w.get(0);
      }
      case "key_upper":
        return k == null ? null : mapString(k, s -> s.toUpperCase(Locale.ROOT));
      case "field_key":
        return field(v, arg);
      case "first_letter": {
        String s = str(v);
        return s.isEmpty() ? null : new String(Character.toChars(s.codePointAt(0)));
      }
      default:
        throw noRole("key selector");
    }
  }

  /** A key-value mapper: the new key and value, or null for no pair at all. */
  Object[] keyValue(Object k, Object v) {
    if (expr != null) {
      return expr.pair(expr.call("map", k, v));
    }
    if (raises(v)) {
      return new Object[] {k, v};
    }
    switch (name) {
      case "upper_both":
        return new Object[] {mapString(k, s -> s.toUpperCase(Locale.ROOT)), mapString(v, s -> s.toUpperCase(Locale.ROOT))};
      case "region_of":
        return new Object[] {field(v, "region"), v};
      case "region_or_none": {
        Object region = field(v, "region");
        return region == null ? null : new Object[] {region, v};
      }
      case "region_amount":
        return new Object[] {field(v, "region"), field(v, "amount")};
      default:
        throw noRole("key-value mapper");
    }
  }

  void act(Object k, Object v) {
    if (expr != null) {
      expr.call("action", k, v); // its value is ignored
      return;
    }
    if (!raises(v)) {
      throw noRole("action");
    }
  }

  Object init() {
    if (expr != null) {
      return expr.call("init", null, null);
    }
    throw noRole("initializer");
  }

  Object reduce(Object agg, Object v) {
    if (raises(v)) {
      return v;
    }
    switch (name) {
      case "add":
        return arith(agg, v, '+');
      case "subtract":
        return arith(agg, v, '-');
      case "concat":
        return concat(agg, v, false);
      case "longer": {
        String a = str(agg);
        String b = str(v);
        return b.codePointCount(0, b.length()) > a.codePointCount(0, a.length()) ? b : a;
      }
      default:
        throw noRole("reducer");
    }
  }

  Object aggregate(Object k, Object v, Object agg) {
    if (raises(v)) {
      return v;
    }
    switch (name) {
      case "add":
        return arith(agg, v, '+');
      case "subtract":
        return arith(agg, v, '-');
      case "concat":
        return concat(agg, v, true);
      case "count_agg":
        return arith(agg, 1L, '+');
      case "sum_field":
        return arith(agg, field(v, arg), '+');
      case "subtract_field":
        return arith(agg, field(v, arg), '-');
      case "append": {
        if (!(agg instanceof List<?> list)) {
          throw fail("want a list aggregate, got " + Values.describe(agg));
        }
        List<Object> out = new ArrayList<>(list);
        out.add(v);
        return out;
      }
      default:
        throw noRole("aggregator");
    }
  }

  Object merge(Object k, Object a1, Object a2) {
    if (name.equals("add")) {
      return arith(a1, a2, '+');
    }
    throw noRole("merger");
  }

  Object join(Object v, Object other) {
    if (raises(v)) {
      return v;
    }
    if (!name.equals("concat")) {
      throw noRole("joiner");
    }
    return concat(v == null ? "null" : v, other == null ? "null" : other, false);
  }

  private RuntimeException fail(String what) {
    return new ConformanceException(name + ": " + what);
  }

  private String str(Object v) {
    if (!(v instanceof String s)) {
      throw fail("want a string, got " + Values.describe(v));
    }
    return s;
  }

  /**
   * As a TimestampExtractor: the timestamp of a record with this key, value
   * and own timestamp, given its partition's time (-1 before any record).
   */
  long extract(Object k, Object v, long timestamp, long partitionTime) {
    switch (name) {
      case "field_timestamp":
        return fieldTimestamp(v, timestamp);
      case "field_or_partition_time":
        return fieldTimestamp(v, partitionTime);
      default:
        throw noRole("timestamp extractor");
    }
  }

  /** The JSON object value's integer field arg, or fallback for a null value or a missing or null field. */
  private long fieldTimestamp(Object v, long fallback) {
    Object f = v == null ? null : field(v, arg);
    if (f == null) {
      return fallback;
    }
    if (!(f instanceof Long || f instanceof Integer)) {
      throw fail("want an integer field " + arg + ", got " + Values.describe(f));
    }
    return ((Number) f).longValue();
  }

  private Object mapString(Object v, UnaryOperator<String> f) {
    return v == null ? null : f.apply(str(v));
  }

  private Object field(Object v, String field) {
    if (!(v instanceof Map<?, ?> m)) {
      throw fail("want a JSON object, got " + Values.describe(v));
    }
    return m.get(field);
  }

  /** Whitespace-separated words, as Go's strings.Fields. */
  private static List<String> words(String s) {
    List<String> out = new ArrayList<>();
    int i = 0;
    int n = s.length();
    while (i < n) {
      while (i < n && Character.isWhitespace(s.codePointAt(i))) {
        i += Character.charCount(s.codePointAt(i));
      }
      int start = i;
      while (i < n && !Character.isWhitespace(s.codePointAt(i))) {
        i += Character.charCount(s.codePointAt(i));
      }
      if (i > start) {
        out.add(s.substring(start, i));
      }
    }
    return out;
  }

  /** a + b or a - b: two integers stay an integer. */
  private Object arith(Object a, Object b, char op) {
    if (a instanceof Long x && b instanceof Long y) {
      return op == '-' ? x - y : x + y;
    }
    if (!(a instanceof Long || a instanceof Double) || !(b instanceof Long || b instanceof Double)) {
      throw fail("want numbers, got " + Values.describe(a) + " and " + Values.describe(b));
    }
    double x = ((Number) a).doubleValue();
    double y = ((Number) b).doubleValue();
    return op == '-' ? x - y : x + y;
  }

  private Object concat(Object agg, Object v, boolean aggregator) {
    String a = str(agg);
    String b = str(v);
    if (aggregator && a.isEmpty()) {
      return b;
    }
    return a + (arg == null ? "" : arg) + b;
  }
}
