// LiveBus dashboard: draws what the daemon sends (Server-Sent Events from its libuv loop). Every rect comes from
// the daemon's layout engine (the same LayoutEngine call the phone makes); this page only scales and paints
// them, and ticks countdowns in each phone's own clock (the daemon sends its clock offset).
"use strict";

const SCALE = 0.42; // pixels per point, the same for every phone so sizes compare
const NS = "http://www.w3.org/2000/svg";
const token = new URLSearchParams(location.search).get("token") || "";
const q = token ? "?token=" + encodeURIComponent(token) : "";
const phones = new Map(); // id -> {data, el, receivedAt}
const logEntries = [];
const ROLE_FILL = {
  map: "#dbe9d5", header: "#e7e7ef", card: "#ffffff", cardColumn: "#eef3fb", mapButton: "#cfd8e6",
  pin: "#4a78c2", sheet: "#f9f3e6", textField: "#ffffff", tags: "#f0e6d0", toast: "#333a44",
  keyboard: "#c9ccd2", column: "#f3f3f8", content: "#f7f7fb", focusArea: "none", fittingArea: "none",
  hinge: "#888", reservedRegion: "#ffb3b3", dynamicIsland: "#000",
};

function el(tag, attrs, parent) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (parent) parent.appendChild(e);
  return e;
}

function phoneNow(p) {
  // The server's clock now (as of this message), plus the phone's offset from it.
  return Date.now() + (p.data.serverTimeMs - p.receivedAt) + p.data.clockOffsetMs;
}

function fmtCountdown(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  const two = (n) => String(n).padStart(2, "0");
  return h > 0 ? `${h}:${two(m)}:${two(r)}` : `${m}:${two(r)}`;
}

function lead(d) {
  return d.activities.find((a) => a.lockScreenPosition === 0) || d.activities[0] || null;
}

function ensurePhone(d) {
  let p = phones.get(d.id);
  if (!p) {
    const node = document.getElementById("phone-template").content.firstElementChild.cloneNode(true);
    node.dataset.phoneId = d.id;
    node.querySelectorAll("button[data-cmd]").forEach((b) => b.addEventListener("click", () => control(d.id, b.dataset.cmd)));
    document.getElementById("phones").appendChild(node);
    p = { el: node };
    phones.set(d.id, p);
  }
  return p;
}

function drawPhone(p) {
  const d = p.data, node = p.el, L = d.layout;
  node.dataset.name = d.name;
  node.dataset.seq = String(d.seq);
  node.querySelector(".title").textContent = `${d.name} · ${d.deviceName}`;
  const pos = d.posture || {};
  node.querySelector(".meta").textContent =
    `${pos.foldState || "flat"} · ${pos.orientation || "portrait"} · ${d.appState} · iOS ${d.os || "newest"}` +
    (L ? ` · ${L.arrangement} (${L.horizontalSizeClass})` : "");
  const a = lead(d);
  node.querySelector(".status").textContent = a ? a.statusText : "no activity";
  node.dataset.status = a ? a.status : "";
  node.dataset.eventSeq = String(a && a.sequence != null ? a.sequence : 0);
  node.dataset.staleDate = String(a && a.staleDateMs != null ? a.staleDateMs : 0);
  node.dataset.fold = pos.foldState || "flat";
  node.dataset.orientation = pos.orientation || "portrait";
  node.dataset.clockOffset = String(Math.round(d.clockOffsetMs));
  node.dataset.arrangement = L ? L.arrangement : "";
  const hasColumn = !!(L && L.rects.some((r) => r.role === "cardColumn"));
  node.dataset.cardColumn = String(hasColumn);
  node.dataset.panes = String(L ? L.panes.length : 0);
  const s = d.sync;
  node.querySelector(".sync").textContent =
    `sync: ${s.eventsSent} sent · ${s.coalesced} coalesced · ${s.outstandingBytes} B queued · clock ${d.clockOffsetMs >= 0 ? "+" : ""}${Math.round(d.clockOffsetMs)} ms` +
    (s.clockErrorBoundMs != null ? ` ±${Math.round(s.clockErrorBoundMs)} ms` : " (no estimate yet)") +
    (d.faults.length ? ` · faults: ${d.faults.join(", ")}` : "");
  drawDevice(node.querySelector(".drawing"), d);
  drawPresentations(node, d);
  drawLock(node.querySelector(".lock-body"), d);
  drawIsland(node.querySelector(".island-body"), d);
  const problems = node.querySelector(".problems");
  problems.textContent = "";
  if (d.layoutError) addProblem(problems, "layout", d.layoutError);
  if (L) {
    for (const inv of L.invariants.filter((i) => !i.holds)) addProblem(problems, inv.name, inv.detail);
    for (const t of L.truncations) addProblem(problems, "overflow " + t.element, `“${t.text}” needs ${t.measured} pt, ${t.available} pt available (${t.axis})`);
  }
  tick(p);
}

function addProblem(list, name, detail) {
  const li = document.createElement("li");
  li.textContent = name;
  li.title = detail;
  list.appendChild(li);
}

function drawDevice(svg, d) {
  svg.textContent = "";
  if (!d.screen) return;
  const W = d.screen.width, H = d.screen.height, pad = 6;
  svg.setAttribute("width", Math.ceil(W * SCALE + 2 * pad));
  svg.setAttribute("height", Math.ceil(H * SCALE + 2 * pad));
  const g = el("g", { transform: `translate(${pad},${pad}) scale(${SCALE})` }, svg);
  const radius = Math.min(W, H) * 0.12;
  el("rect", { x: 0, y: 0, width: W, height: H, rx: radius, fill: "#fafafa", stroke: "#111", "stroke-width": 6 }, g);
  const L = d.layout;
  const failedNames = new Map();
  if (L) for (const inv of L.invariants.filter((i) => !i.holds)) for (const o of inv.offenders || []) failedNames.set(o, `${inv.name}: ${inv.detail}`);
  if (L) for (const t of L.truncations) failedNames.set(t.element, `overflow: “${t.text}” ${t.measured} > ${t.available} pt`);
  const w = d.window || { x: 0, y: 0, width: W, height: H };
  const win = el("g", { transform: `translate(${w.x},${w.y})` }, g);
  el("rect", { x: 0, y: 0, width: w.width, height: w.height, fill: "none", stroke: "#777", "stroke-width": 2 }, win);
  if (L) {
    for (const r of L.rects) {
      if (r.role === "window" || r.role === "safeArea" || r.role === "dynamicIsland") continue;
      const fill = ROLE_FILL[r.role] || "#eee";
      const failed = failedNames.get(r.name);
      const dashed = r.role === "focusArea" || r.role === "fittingArea";
      const rect = el("rect", {
        x: r.rect.x, y: r.rect.y, width: Math.max(0, r.rect.width), height: Math.max(0, r.rect.height),
        fill: failed ? "rgba(220,0,0,0.25)" : fill,
        "fill-opacity": r.role === "reservedRegion" ? 0.6 : 1,
        stroke: failed ? "#d00" : dashed ? (r.role === "focusArea" ? "#1a7f37" : "#9a6700") : "#99a",
        "stroke-width": failed ? 5 : dashed ? 4 : 1.5,
        "stroke-dasharray": dashed ? "12 8" : "none",
        class: "r-" + r.role,
      }, win);
      rect.dataset.name = r.name;
      const title = el("title", {}, rect);
      title.textContent = `${r.name} (${r.role}) ${r.rect.x},${r.rect.y} ${r.rect.width}×${r.rect.height}` + (failed ? ` — ${failed}` : "");
      if (r.text && r.rect.height >= 18) {
        const t = el("text", { x: r.rect.x + 6, y: r.rect.y + Math.min(r.rect.height - 4, 30), "font-size": 24, fill: r.role === "toast" ? "#fff" : "#222" }, win);
        t.textContent = r.text;
      }
    }
  }
  if (d.safeArea) {
    const s = d.safeArea;
    el("rect", { x: s.left, y: s.top, width: w.width - s.left - s.right, height: w.height - s.top - s.bottom, fill: "none", stroke: "#0969da", "stroke-width": 2, "stroke-dasharray": "6 6" }, win);
  }
  if (d.reservedRegion) {
    const r = d.reservedRegion;
    const rr = el("rect", { x: r.x, y: r.y, width: r.width, height: r.height, fill: "#ff6b6b", "fill-opacity": 0.35, stroke: "#d00", "stroke-width": 2 }, g);
    el("title", {}, rr).textContent = "reserved region around the hinge (nothing interactive across it)";
  }
  if (d.hinge) {
    const h = d.hinge;
    el("rect", { x: h.x, y: h.y, width: Math.max(h.width, 2), height: Math.max(h.height, 2), fill: "#555" }, g);
  }
  if (d.dynamicIsland) {
    const di = d.dynamicIsland;
    el("rect", { x: di.x, y: di.y, width: di.width, height: di.height, rx: di.height / 2, fill: "#000" }, g);
  }
}

// The Live Activity presentations as the layout engine placed them (points): the Dynamic Island's compact,
// minimal or expanded presentation (the lead activity's, as the planner assigned it) around the island, and the
// lock-screen presentation. Overflowing elements (the engine's truncations) in red, the reason on hover.
const PSCALE = 0.55; // lock screen, pixels per point
const ISCALE = 0.8; // Dynamic Island, pixels per point
function drawPresentations(node, d) {
  const L = d.layout, a = lead(d);
  const island = node.querySelector(".island-drawing"), lock = node.querySelector(".lock-drawing");
  island.textContent = "";
  lock.textContent = "";
  if (!L || !a) { island.setAttribute("height", 0); lock.setAttribute("height", 0); return; }
  const byKind = new Map(L.presentations.map((p) => [p.kind, p]));
  const over = new Map(L.truncations.map((t) => [t.element, t]));
  const kinds = a.island === "compact" ? ["compactLeading", "compactTrailing"]
    : a.island.startsWith("minimal") ? ["minimal"] : a.island === "expanded" ? ["expanded"] : [];
  const shown = kinds.map((k) => byKind.get(k)).filter(Boolean);
  if (shown.length && d.screen) {
    const left = Math.min(...shown.map((p) => p.frame.x)) - 10;
    const right = Math.max(...shown.map((p) => p.frame.x + p.frame.width)) + 10;
    const top = Math.min(...shown.map((p) => p.frame.y));
    const bottom = Math.max(...shown.map((p) => p.frame.y + p.frame.height));
    // Only the island's region of the screen, at the island scale.
    island.setAttribute("width", Math.ceil((right - left + 8) * ISCALE));
    island.setAttribute("height", Math.ceil((bottom - top + 8) * ISCALE));
    island.setAttribute("viewBox", `${left - 4} ${top - 4} ${right - left + 8} ${bottom - top + 8}`);
    el("rect", { x: left, y: top, width: right - left, height: bottom - top, rx: (bottom - top) / 2, fill: "#000" }, island);
    if (d.dynamicIsland && a.island === "compact") {
      const di = d.dynamicIsland;
      el("rect", { x: di.x, y: di.y, width: di.width, height: di.height, rx: di.height / 2, fill: "#222", stroke: "#444" }, island);
    }
    for (const p of shown) drawElements(island, p, over, a, "#fff");
  } else {
    island.setAttribute("height", 0);
  }
  const ls = byKind.get("lockScreen");
  if (ls) {
    const f = ls.frame;
    lock.setAttribute("width", Math.ceil(f.width * PSCALE));
    lock.setAttribute("height", Math.ceil(f.height * PSCALE));
    lock.setAttribute("viewBox", `${f.x} ${f.y} ${f.width} ${f.height}`);
    el("rect", { x: f.x, y: f.y, width: f.width, height: f.height, rx: 22, fill: "#2b2f36" }, lock);
    drawElements(lock, ls, over, a, "#fff");
  } else {
    lock.setAttribute("height", 0);
  }
}

function drawElements(svg, p, over, a, color) {
  for (const e of p.elements) {
    const r = e.rect;
    const t = over.get(e.name) || over.get(`${p.kind}.${e.name}`);
    if (e.role === "box") {
      const b = el("rect", { x: r.x, y: r.y, width: r.width, height: r.height, fill: "none", stroke: t ? "#f33" : "#555", "stroke-width": t ? 2 : 1 }, svg);
      if (t) el("title", {}, b).textContent = `overflow: “${t.text}” needs ${t.measured} pt, ${t.available} pt available`;
    } else if (e.role === "progress") {
      el("rect", { x: r.x, y: r.y, width: r.width, height: Math.max(r.height, 4), rx: 2, fill: "#555" }, svg);
      el("rect", { x: r.x, y: r.y, width: r.width * Math.max(0, Math.min(1, a.progress)), height: Math.max(r.height, 4), rx: 2, fill: "#4cd964" }, svg);
    } else if (e.role === "icon") {
      el("circle", { cx: r.x + r.width / 2, cy: r.y + r.height / 2, r: Math.min(r.width, r.height) / 3, fill: "#4cd964" }, svg);
    } else if (e.text) {
      const isTimer = /timer/.test(e.name);
      const tx = el("text", { x: r.x, y: r.y + r.height * 0.8, "font-size": Math.max(10, r.height * 0.8), fill: t ? "#f66" : color }, svg);
      if (isTimer) { tx.classList.add("countdown"); tx.dataset.order = a.orderID; }
      tx.textContent = e.text;
      if (t) el("title", {}, tx).textContent = `overflow: “${t.text}” needs ${t.measured} pt, ${t.available} pt available`;
    }
  }
}

function drawLock(box, d) {
  box.textContent = "";
  const ordered = d.activities.filter((a) => a.lockScreenPosition >= 0);
  if (!ordered.length) { const p = document.createElement("p"); p.textContent = "—"; box.appendChild(p); return; }
  for (const a of ordered) {
    const lines = a.lockScreen.length ? a.lockScreen : [a.statusText];
    for (const line of lines) box.appendChild(withCountdown("p", line, a));
  }
}

// A line the daemon rendered with the countdown as it was when sent: that part ticks here, in the phone's clock.
function withCountdown(tag, line, a) {
  const e = document.createElement(tag);
  const at = a.compactTrailing ? line.indexOf(a.compactTrailing) : -1;
  if (at < 0) { e.textContent = line; return e; }
  const c = document.createElement("span");
  c.className = "countdown";
  c.dataset.order = a.orderID;
  c.textContent = a.compactTrailing;
  e.append(line.slice(0, at), c, line.slice(at + a.compactTrailing.length));
  return e;
}

function drawIsland(box, d) {
  box.textContent = "";
  const shown = d.activities.filter((a) => a.island !== "none");
  if (!shown.length) { const p = document.createElement("p"); p.textContent = "(empty)"; box.appendChild(p); return; }
  for (const a of shown) {
    const pill = document.createElement("div");
    pill.className = "pill";
    const left = document.createElement("span");
    const right = document.createElement("span");
    right.className = "countdown island-countdown";
    right.dataset.order = a.orderID;
    if (a.island.startsWith("minimal")) left.textContent = `${a.island}: ${a.minimal || ""}`;
    else if (a.island === "expanded") left.appendChild(withCountdown("span", a.expanded.join(" · "), a));
    else left.textContent = `${a.island}: ${a.compactLeading.join(" ")}`;
    pill.append(left, right);
    box.appendChild(pill);
  }
}

function tick(p) {
  const d = p.data, now = phoneNow(p), node = p.el;
  const a = lead(d);
  let stale = false;
  for (const act of d.activities) {
    const ended = act.state === "ended" || act.state === "dismissed" || act.status === "delivered" || act.status === "canceled";
    const text = ended ? "" : fmtCountdown(act.etaTargetMs - now);
    node.querySelectorAll(`.countdown[data-order="${CSS.escape(act.orderID)}"]`).forEach((c) => (c.textContent = text));
    const isStale = act.state === "stale" || (act.staleDateMs != null && now >= act.staleDateMs && !ended);
    if (act === a) stale = isStale;
  }
  node.querySelector(".status-line .countdown").textContent =
    a && !(a.state === "ended" || a.state === "dismissed") && a.status !== "delivered" && a.status !== "canceled" ? fmtCountdown(a.etaTargetMs - now) : "";
  node.dataset.stale = String(stale);
}

setInterval(() => phones.forEach((p) => p.data && tick(p)), 100);

// The phone's clock now, ms since the epoch (for tests and the curious: the same value the countdowns use).
window.livebusPhoneNow = (name) => {
  for (const p of phones.values()) if (p.data && p.data.name === name) return phoneNow(p);
  return null;
};

async function control(id, cmd) {
  const p = phones.get(id);
  if (!p) return;
  const d = p.data, name = d.name, pos = d.posture || {};
  const bodies = {
    fold: ["session.posture", { session: name, posture: { foldState: "folded" } }],
    unfold: ["session.posture", { session: name, posture: { foldState: "flat" } }],
    "half-open": ["session.posture", { session: name, posture: { foldState: "half-opened" } }],
    rotate: ["session.posture", { session: name, posture: { foldState: pos.foldState || "flat", orientation: pos.orientation === "landscape" ? "portrait" : "landscape" } }],
    background: ["session.app-state", { session: name, appState: "background" }],
    foreground: ["session.app-state", { session: name, appState: "foreground" }],
    "clock+30s": ["session.clock", { session: name, stepMs: 30000 }],
    "clock-30s": ["session.clock", { session: name, stepMs: -30000 }],
    preset: ["fault.preset", { session: name, preset: p.el.querySelector(".preset").value }],
    clear: ["fault.remove", { id: p.el.querySelector(".preset").value }],
  };
  const [command, args] = bodies[cmd];
  const answer = p.el.querySelector(".answer");
  answer.className = "answer";
  answer.textContent = `${cmd}…`;
  try {
    const r = await fetch("/api/command" + q, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ command, args }) });
    const j = await r.json();
    const failed = !j.ok || (j.data && Array.isArray(j.data.sessions) && j.data.sessions.some((s) => s.ok === false));
    answer.className = failed ? "answer error" : "answer";
    answer.textContent = failed ? `${cmd}: ${(j.error && j.error.message) || JSON.stringify(j.data)}` : `${cmd}: ok`;
  } catch (e) {
    answer.className = "answer error";
    answer.textContent = `${cmd}: ${e}`;
  }
}

function addLog(entry) {
  logEntries.push(entry);
  if (logEntries.length > 500) logEntries.shift();
  const li = document.createElement("li");
  if (entry.failed) li.className = "failed";
  li.dataset.kind = entry.kind;
  const k = document.createElement("span");
  k.className = "k";
  k.textContent = entry.kind;
  const t = new Date(entry.t).toISOString().slice(11, 19);
  li.append(k, ` ${t} ${entry.phone ? entry.phone + " " : ""}${entry.text}`);
  const log = document.getElementById("log");
  log.insertBefore(li, log.firstChild);
  while (log.children.length > 300) log.removeChild(log.lastChild);
  drawTimeline();
}

const KIND_COLOR = { event: "#0969da", push: "#8250df", fault: "#d00", clock: "#bf8700", control: "#1a7f37" };
function drawTimeline() {
  const svg = document.getElementById("timeline");
  svg.textContent = "";
  if (!logEntries.length) return;
  const names = [...new Set(logEntries.map((e) => e.phone || "daemon"))];
  const t0 = logEntries[0].t, t1 = Math.max(logEntries[logEntries.length - 1].t, t0 + 1000);
  const W = 380, rowH = Math.min(24, 110 / names.length), left = 70;
  svg.setAttribute("viewBox", `0 0 ${W} ${names.length * rowH + 14}`);
  names.forEach((n, i) => {
    const t = el("text", { x: 2, y: i * rowH + rowH / 2 + 4, "font-size": 10, fill: "#333" }, svg);
    t.textContent = n.length > 11 ? n.slice(0, 10) + "…" : n;
    el("line", { x1: left, x2: W - 4, y1: i * rowH + rowH / 2, y2: i * rowH + rowH / 2, stroke: "#ddd" }, svg);
  });
  for (const e of logEntries) {
    const x = left + ((e.t - t0) / (t1 - t0)) * (W - left - 8);
    const y = names.indexOf(e.phone || "daemon") * rowH + rowH / 2;
    const c = el("circle", { cx: x, cy: y, r: 3, fill: e.failed ? "#d00" : KIND_COLOR[e.kind] || "#555" }, svg);
    el("title", {}, c).textContent = `${e.kind}: ${e.text}`;
  }
  const sec = Math.round((t1 - t0) / 1000);
  const label = el("text", { x: W - 4, y: names.length * rowH + 12, "font-size": 9, "text-anchor": "end", fill: "#666" }, svg);
  label.textContent = `${sec} s`;
}

function connect() {
  const conn = document.getElementById("conn");
  const es = new EventSource("/events" + q);
  es.addEventListener("open", () => { conn.textContent = "live"; conn.dataset.state = "open"; });
  es.addEventListener("error", () => { conn.textContent = "disconnected (retrying)"; conn.dataset.state = "closed"; });
  es.addEventListener("hello", (ev) => {
    const h = JSON.parse(ev.data);
    document.getElementById("scenario").textContent = `scenario ${h.scenario}`;
    document.getElementById("log").textContent = "";
    logEntries.length = 0;
  });
  es.addEventListener("phone", (ev) => {
    const d = JSON.parse(ev.data);
    const p = ensurePhone(d);
    p.data = d;
    p.receivedAt = Date.now();
    drawPhone(p);
  });
  es.addEventListener("gone", (ev) => {
    const d = JSON.parse(ev.data);
    const p = phones.get(d.id);
    if (p) { p.el.remove(); phones.delete(d.id); }
  });
  es.addEventListener("log", (ev) => addLog(JSON.parse(ev.data)));
}
connect();
