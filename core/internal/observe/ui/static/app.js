// The engine's live page: polls /ui/api/status and shows each application.
"use strict";

const POLL_MS = 1000;
const prev = new Map(); // application.id -> {t, nodes: Map(name -> records)}
const sections = new Map(); // application.id -> {el, session}

function fmt(n) {
  if (n === null || n === undefined || n < 0) return "–";
  if (n >= 1e6) return (n / 1e6).toFixed(2) + "M";
  if (n >= 1e4) return (n / 1e3).toFixed(1) + "k";
  return String(Math.round(n));
}

function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

function errorsInto(ul, entries) {
  ul.replaceChildren();
  for (const e of (entries || []).slice().reverse()) {
    const li = document.createElement("li");
    li.className = e.level;
    const attrs = Object.entries(e.attrs || {}).map(([k, v]) => `${k}=${v}`).join(" ");
    li.textContent = `${e.time.replace("T", " ").slice(0, 19)} ${e.level} ${e.message} ${attrs}`;
    ul.appendChild(li);
  }
}

function sectionFor(a) {
  let s = sections.get(a.application_id);
  if (!s) {
    const el = document.getElementById("app-template").content.firstElementChild.cloneNode(true);
    el.dataset.app = a.application_id;
    el.querySelector(".app-id").textContent = a.application_id;
    document.getElementById("apps").appendChild(el);
    s = { el, session: null };
    sections.set(a.application_id, s);
  }
  if (s.session !== a.session) {
    s.session = a.session;
    s.el.querySelector(".graph").innerHTML = a.svg || "";
    prev.delete(a.application_id);
  }
  return s.el;
}

function render(st) {
  document.getElementById("engine-version").textContent = "engine " + st.version;
  document.getElementById("engine-uptime").textContent = "up " + Math.round(st.uptime_seconds) + " s";
  document.getElementById("no-apps").hidden = st.applications.length > 0;
  errorsInto(document.getElementById("engine-errors"), st.errors);
  const seen = new Set();
  const now = Date.parse(st.time);
  for (const a of st.applications) {
    seen.add(a.application_id);
    const el = sectionFor(a);
    const state = el.querySelector(".state");
    state.textContent = a.state;
    state.className = "state " + a.state;
    el.querySelector(".app-error").textContent = a.error || "";
    const down = el.querySelector(".brokers-down");
    down.hidden = !a.brokers.unreachable;
    down.textContent = a.brokers.unreachable
      ? `degraded: no broker (${a.brokers.addresses.join(", ")}) has answered for ${Math.round(a.brokers.unreachable_seconds)} s; processing waits and goes on by itself once one answers`
      : "";
    el.querySelector(".dropped").textContent = fmt(a.dropped_records);
    el.querySelector(".failed").textContent = fmt(a.failed_records);
    el.querySelector(".metrics-off").hidden = a.metrics_enabled || a.state === "created";
    const r = a.restore;
    el.querySelector(".restore-bar").max = Math.max(r.total_records, 1);
    el.querySelector(".restore-bar").value = r.total_partitions === 0 ? 1 : r.restored_records;
    el.querySelector(".restore-text").textContent = r.total_partitions === 0 ? "nothing to restore"
      : `${fmt(r.restored_records)} / ${fmt(r.total_records)} records, ${r.total_partitions - r.restoring_partitions} / ${r.total_partitions} store partitions`;

    // Rates: the change in each node's count since the last poll.
    const p = prev.get(a.application_id);
    const dt = p ? (now - p.t) / 1000 : 0;
    const counts = new Map();
    const rates = new Map();
    for (const n of a.nodes) {
      counts.set(n.name, n.records);
      if (p && dt > 0 && p.nodes.has(n.name)) rates.set(n.name, Math.max(0, (n.records - p.nodes.get(n.name)) / dt));
    }
    prev.set(a.application_id, { t: now, nodes: counts });
    let rateIn = p ? 0 : null;
    const tbody = el.querySelector("table.nodes tbody");
    tbody.replaceChildren();
    for (const n of a.nodes) {
      const tr = document.createElement("tr");
      tr.dataset.node = n.name;
      cell(tr, n.name);
      const rate = n.fused_into ? null : rates.get(n.name);
      if (n.fused_into) {
        cell(tr, "fused into " + n.fused_into, "muted").colSpan = 4;
      } else {
        cell(tr, rate === undefined ? "–" : fmt(rate), "num rate");
        cell(tr, fmt(n.records), "num records");
        cell(tr, n.bundles ? fmt(n.bundles) : "", "num");
        cell(tr, n.bundles ? (n.mean_crossing_seconds * 1000).toFixed(2) + " ms" : "", "num");
      }
      tbody.appendChild(tr);
      const isSource = a.topology && a.topology.subtopologies.some((s) => s.nodes.some((x) => x.name === n.name && x.type === "source"));
      if (isSource && rate !== undefined && rateIn !== null) rateIn += rate;
      const label = el.querySelector(`.graph text.ps-stat[data-node="${CSS.escape(n.name)}"]`);
      if (label) label.textContent = n.fused_into ? "" : (rate === undefined ? fmt(n.records) + " rec" : fmt(rate) + " rec/s");
    }
    el.querySelector(".rate-in").textContent = rateIn === null ? "–" : fmt(rateIn);

    let lagTotal = -1;
    const storeEntries = new Map();
    const tt = el.querySelector("table.tasks tbody");
    tt.replaceChildren();
    for (const t of a.tasks) {
      const tr = document.createElement("tr");
      tr.dataset.task = t.id;
      cell(tr, t.id);
      cell(tr, fmt(t.lag), "num lag");
      cell(tr, t.inputs.map((i) => `${i.topic}/${i.partition}@${i.position < 0 ? "–" : i.position}`).join(" "));
      cell(tr, (t.stores || []).map((s) => `${s.name}: ${fmt(s.entries)}`).join(", "), "stores");
      cell(tr, t.restored ? "yes" : "restoring");
      tt.appendChild(tr);
      if (t.lag >= 0) lagTotal = Math.max(lagTotal, 0) + t.lag;
      for (const s of t.stores || []) storeEntries.set(s.name, (storeEntries.get(s.name) || 0) + Math.max(s.entries, 0));
    }
    el.querySelector(".lag-total").textContent = fmt(lagTotal);
    for (const [name, n] of storeEntries) {
      const label = el.querySelector(`.graph text.ps-stat[data-store="${CSS.escape(name)}"]`);
      if (label) label.textContent = fmt(n) + " entries";
    }
    errorsInto(el.querySelector(".app-errors"), a.errors);
  }
  for (const [id, s] of sections) {
    if (!seen.has(id)) {
      s.el.remove();
      sections.delete(id);
      prev.delete(id);
    }
  }
}

async function poll() {
  const status = document.getElementById("poll-status");
  try {
    const res = await fetch("api/status", { cache: "no-store" });
    if (!res.ok) throw new Error("HTTP " + res.status);
    render(await res.json());
    status.textContent = "live";
    document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1);
  } catch (e) {
    status.textContent = "engine unreachable (" + e.message + ")";
  }
  setTimeout(poll, POLL_MS);
}

poll();
