package dev.polystreams.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A catalogue function defined by data: its expr in conformance/catalogue.json
 * ("The catalogue" in conformance/README.md), which the Python, Node and Rust
 * executors build their functions from too. The file is built into the jar
 * (pom.xml copies it beside this class), and the runner's cache key covers it.
 * An expr is {"var": "key"|"value"}, {"const": JSON}, {"list": [expr...]} or
 * {"not_null": expr}; a mapper and a flat mapper see the value, an
 * initializer nothing, the other roles an expr has (predicate, key, map,
 * action and the with-key mappers; no reducer, aggregator, merger or joiner
 * is an expr) the key and the value. Immutable, safe for concurrent use.
 */
final class Expr {
  /** name -> the function, for the catalogue's functions that have an expr. */
  private static final Map<String, Expr> CATALOGUE = load();

  final String name;
  private final Set<String> roles;
  private final JsonNode expr;

  private Expr(String name, Set<String> roles, JsonNode expr) {
    this.name = name;
    this.roles = roles;
    this.expr = expr;
  }

  /** The function the catalogue defines by an expr under that name, or null (a hand-written one). */
  static Expr of(String name) {
    return CATALOGUE.get(name);
  }

  private static Map<String, Expr> load() {
    try (InputStream in = Expr.class.getResourceAsStream("catalogue.json")) {
      if (in == null) {
        throw new IllegalStateException("catalogue.json is not in the executor's jar (pom.xml copies conformance/catalogue.json)");
      }
      Map<String, Expr> out = new HashMap<>();
      JsonNode functions = Codec.JSON.readTree(in).get("functions");
      for (Map.Entry<String, JsonNode> e : functions.properties()) {
        JsonNode expr = e.getValue().get("expr");
        if (expr == null) {
          continue;
        }
        Set<String> roles = new HashSet<>();
        e.getValue().get("roles").forEach(r -> roles.add(r.asText()));
        out.put(e.getKey(), new Expr(e.getKey(), Set.copyOf(roles), expr));
      }
      return Map.copyOf(out);
    } catch (IOException e) {
      throw new UncheckedIOException("reading catalogue.json", e);
    }
  }

  /**
   * The function's value called in role (the catalogue's role names:
   * mapper, flat, predicate, key, map, action, init, mapper_with_key,
   * flat_with_key, flat_map, ...) on a record's key and value.
   */
  Object call(String role, Object key, Object value) {
    if (!roles.contains(role)) {
      throw new IllegalStateException("function " + name + " cannot be used as " + role);
    }
    Map<String, Object> env = new HashMap<>();
    switch (role) {
      case "init":
        break;
      case "mapper":
      case "flat":
        env.put("value", value);
        break;
      default:
        env.put("key", key);
        env.put("value", value);
    }
    return eval(expr, env);
  }

  /** A list the function returned in role (a flat mapper's values, a pair). */
  List<Object> list(String role, Object key, Object value) {
    Object v = call(role, key, value);
    if (!(v instanceof List<?> l)) {
      throw new IllegalStateException("function " + name + " as " + role + ": its expr gave " + Values.describe(v) + ", want an array");
    }
    return new ArrayList<>(l);
  }

  /** A [key, value] pair as an array, or null for a null expr value. */
  Object[] pair(Object v) {
    if (v == null) {
      return null;
    }
    if (!(v instanceof List<?> l) || l.size() != 2) {
      throw new IllegalStateException("function " + name + ": its expr gave " + Codec.text(v) + ", want a [key, value] pair");
    }
    return new Object[] {l.get(0), l.get(1)};
  }

  private Object eval(JsonNode e, Map<String, Object> env) {
    if (e.has("var")) {
      String var = e.get("var").asText();
      if (!env.containsKey(var)) {
        throw new IllegalStateException("function " + name + ": its expr reads " + var + ", which this role does not give");
      }
      return env.get(var);
    }
    if (e.has("const")) {
      try {
        return Codec.JSON.treeToValue(e.get("const"), Object.class); // a fresh value each call
      } catch (IOException x) {
        throw new UncheckedIOException("function " + name + ": const " + e.get("const"), x);
      }
    }
    if (e.has("list")) {
      List<Object> out = new ArrayList<>();
      e.get("list").forEach(x -> out.add(eval(x, env)));
      return out;
    }
    if (e.has("not_null")) {
      return eval(e.get("not_null"), env) != null;
    }
    throw new IllegalStateException("function " + name + ": unknown expr " + e);
  }
}
