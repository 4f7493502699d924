// The package's modules import one another without circles: read from the
// sources (every relative import and re-export counts, type-only ones
// too), the graph of src/*.ts modules (tests and generated code aside) has
// no cycle.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const SRC = fileURLToPath(new URL(".", import.meta.url));

type Graph = Map<string, Set<string>>;

/**
 * The modules a source imports or re-exports: `from "./x.js"`,
 * `import("./x.js")`, `import "./x.js"`, in either quotes.
 */
function importsOf(source: string): Set<string> {
  const out = new Set<string>();
  for (const m of source.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])\.\/([\w-]+)\.js\1/g)) {
    out.add(m[2]!);
  }
  return out;
}

function graph(): Graph {
  const modules = readdirSync(SRC)
    .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts") && !f.endsWith(".d.ts"))
    .map((f) => f.slice(0, -3));
  const known = new Set(modules);
  return new Map(
    modules.map((m) => [m, new Set([...importsOf(readFileSync(join(SRC, `${m}.ts`), "utf8"))].filter((d) => known.has(d) && d !== m))]),
  );
}

/** A cycle of g, as the modules along it, or null. */
function cycle(g: Graph): string[] | null {
  const state = new Map<string, 1 | 2>();
  const path: string[] = [];
  const visit = (m: string): string[] | null => {
    state.set(m, 1);
    path.push(m);
    for (const n of [...(g.get(m) ?? [])].sort()) {
      if (state.get(n) === 1) {
        return [...path.slice(path.indexOf(n)), n];
      }
      if (!state.has(n)) {
        const c = visit(n);
        if (c !== null) {
          return c;
        }
      }
    }
    path.pop();
    state.set(m, 2);
    return null;
  };
  for (const m of [...g.keys()].sort()) {
    if (!state.has(m)) {
      const c = visit(m);
      if (c !== null) {
        return c;
      }
    }
  }
  return null;
}

test("the modules import one another without circles", () => {
  const g = graph();
  for (const m of ["app", "dsl", "bundle", "program", "serde", "windows", "store"]) {
    assert.ok(g.has(m), `no module ${m}`);
  }
  const c = cycle(g);
  assert.equal(c, null, `import circle: ${(c ?? []).join(" -> ")}`);
});

test("the check sees a circle", () => {
  const g: Graph = new Map([
    ["a", new Set(["b"])],
    ["b", new Set(["c"])],
    ["c", new Set(["a"])],
  ]);
  assert.deepEqual(cycle(g), ["a", "b", "c", "a"]);
  assert.deepEqual(
    [
      ...importsOf(
        'import { x } from "./bundle.js";\nimport type { Y } from "./serde.js";\nexport { z } from "./windows.js";\n' +
          "import './program.js';\nconst s = await import(\"./store.js\");\nimport {\n  a,\n} from './app.js';",
      ),
    ].sort(),
    ["app", "bundle", "program", "serde", "store", "windows"],
  );
});
