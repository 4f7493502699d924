package dev.polystreams.conformance;

/**
 * What a step made, as the DSL types it, with the serde names its keys and
 * values carry (the functions' inputs are decoded with them; a sink writes
 * with them).
 */
final class Handle {
  enum Kind {
    STREAM,
    GROUPED_STREAM,
    TIME_WINDOWED,
    SESSION_WINDOWED,
    TABLE,
    GROUPED_TABLE,
    GLOBAL_TABLE,
    BRANCHES,
    /** A CogroupedKStream and its windowed forms; dsl is a CaseTopology.Cogroup. */
    COGROUPED,
    TIME_WINDOWED_COGROUPED,
    SESSION_WINDOWED_COGROUPED
  }

  final Kind kind;
  final Object dsl;
  final String keySerde;
  final String valueSerde;
  /** A time-windowed key's window size (ms), or null. */
  final Long windowSize;
  final boolean sessionWindowed;

  Handle(Kind kind, Object dsl, String keySerde, String valueSerde, Long windowSize, boolean sessionWindowed) {
    this.kind = kind;
    this.dsl = dsl;
    this.keySerde = keySerde;
    this.valueSerde = valueSerde;
    this.windowSize = windowSize;
    this.sessionWindowed = sessionWindowed;
  }

  /** The same keys (windowing included), another DSL object, kind and value serde. */
  Handle with(Kind kind, Object dsl, String valueSerde) {
    return new Handle(kind, dsl, keySerde, valueSerde, windowSize, sessionWindowed);
  }

  boolean windowed() {
    return windowSize != null || sessionWindowed;
  }
}
