/**
 * A topology built without the DSL (Kafka Streams' `Topology.addSource /
 * addProcessor / addSink / addStateStore`): `app.topology()`. Each call is
 * one Build call, queued in program order as the DSL's are; a refused call
 * is reported by the next describe(), start(), run() or built().
 */

import type { Builder, KeyValueOptions } from "./dsl.js";
import type { AnyFunction } from "./outcomes.js";
import { type ProcessorSupplier, type StoreBuilder, addStateStoreOp } from "./processor.js";
import { typeName } from "./errors.js";
import type { SerdeName } from "./serde.js";

/** Options of Topology.addSource: the topics' serdes (default `bytes`). */
export interface SourceOptions {
  key?: SerdeName;
  value?: SerdeName;
}

function nodeName(name: unknown, call: string): string {
  if (typeof name !== "string" || name === "") {
    throw new TypeError(`${call}: a node name is a non-empty string, not ${typeName(name)}`);
  }
  return name;
}

function names(list: readonly unknown[], call: string, what: string): string[] {
  for (const p of list) {
    if (typeof p !== "string" || p === "") {
      throw new TypeError(`${call}: ${what} are non-empty strings, not ${typeName(p)}`);
    }
  }
  return list as string[];
}

/** Builds a topology node by node; every method returns the topology, for chaining. */
export class Topology {
  /** @internal */
  constructor(
    private readonly builder: Builder,
    private readonly onSource: (topics: readonly string[], options: SourceOptions, pattern?: RegExp) => void,
    private readonly onStore: (store: StoreBuilder) => void = () => {},
  ) {}

  /**
   * A source node reading `topics` (`Topology.addSource(name, topics...)`),
   * or every topic whose whole name a RegExp matches
   * (`Topology.addSource(name, Pattern)`; see App.stream).
   */
  addSource(name: string, topics: string | readonly string[] | RegExp, options: SourceOptions = {}): this {
    nodeName(name, "addSource");
    const pattern = topics instanceof RegExp ? topics : undefined;
    const list = pattern !== undefined ? [] : names(typeof topics === "string" ? [topics] : [...(topics as readonly string[])], "addSource", "topics");
    const topicPattern = pattern !== undefined ? patternOf(pattern) : "";
    this.onSource(list, options, pattern);
    this.builder.build("addSource", null, [], () => ({
      case: "addSource",
      value: { name, topics: list, topicPattern, keySerde: options.key ?? "", valueSerde: options.value ?? "" },
    }));
    return this;
  }

  /**
   * A processor node (`Topology.addProcessor(name, supplier, parentNames...)`)
   * fed by the named sources and processors: `supplier` makes one processor
   * per task.
   */
  addProcessor(name: string, supplier: ProcessorSupplier, ...parents: string[]): this {
    nodeName(name, "addProcessor");
    if (typeof supplier !== "function") {
      throw new TypeError(`addProcessor: node ${name}: want a processor supplier (() => new MyProcessor()), not ${typeName(supplier)}`);
    }
    const ps = names(parents, "addProcessor", "parent names");
    this.builder.build("addProcessor", null, [supplier as AnyFunction], (_input, [token]) => ({
      case: "addProcessor",
      value: { name, token: token!, parents: ps, stores: [], keySerde: "", valueSerde: "" },
    }));
    return this;
  }

  /**
   * A sink node writing to `topic` what its parents forward
   * (`Topology.addSink(name, topic, parentNames...)`); a last argument of
   * `{ key, value }` names the serdes to write with (default: the parents').
   */
  addSink(name: string, topic: string, ...parents: string[] | [...string[], KeyValueOptions]): this {
    nodeName(name, "addSink");
    if (typeof topic !== "string" || topic === "") {
      throw new TypeError(`addSink: node ${name}: a topic is a non-empty string, not ${typeName(topic)}`);
    }
    const last = parents[parents.length - 1];
    const options: KeyValueOptions = typeof last === "object" && last !== null ? (last as KeyValueOptions) : {};
    const ps = names(typeof last === "object" ? parents.slice(0, -1) : parents, "addSink", "parent names");
    this.builder.build("addSink", null, [], () => ({
      case: "addSink",
      value: { name, topic, parents: ps, keySerde: options.key ?? "", valueSerde: options.value ?? "" },
    }));
    return this;
  }

  /** A state store connected to the named processors (`Topology.addStateStore(store, processorNames...)`). */
  addStateStore(store: StoreBuilder, ...processors: string[]): this {
    const op = addStateStoreOp(store, names(processors, "addStateStore", "processor names"));
    this.onStore(store);
    this.builder.build("addStateStore", null, [], () => ({ case: "addStateStore", value: op }));
    return this;
  }
}

/**
 * The regular expression a pattern source sends the engine: the RegExp's
 * source, with its `i` and `s` flags as RE2's inline `(?i)` and `(?s)`.
 */
export function patternOf(re: RegExp): string {
  const other = re.flags.replace(/[isuv]/g, "");
  if (other !== "") {
    throw new TypeError(`stream: pattern /${re.source}/${re.flags} has flags ${JSON.stringify(other)}; a topic pattern takes only i and s`);
  }
  const inline = (re.flags.includes("i") ? "i" : "") + (re.flags.includes("s") ? "s" : "");
  return (inline ? `(?${inline})` : "") + re.source;
}
