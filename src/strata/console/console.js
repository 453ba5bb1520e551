// The strata console: a page over the JSON API, signed in with an API key.
//
// Two rules hold everywhere below:
// - The key lives in sessionStorage and travels only in the Authorization header of the
//   API's own requests: never in a URL (the hash holds view names, paths and ids only).
// - Data reaches the page only as text nodes (el(), textContent), never parsed as markup, so a
//   memory reading "<script>" is shown, not run.
"use strict";

const STORE = "strata.console.key";
// The app serves the console at <base>/console; the API is at <base>/v1.
const BASE = location.pathname.replace(/\/console(\/.*)?$/, "");
const STATUSES = ["active", "candidate", "superseded", "archived", "rejected"];
const KINDS = ["fact", "preference", "event", "instruction", "strategy", "assumption",
               "failure", "reflection", "summary"];
const QUIET = new Set(["meaningful_no_write"]);
const BROKEN = new Set(["llm_failed", "embed_failed", "db_write_failed"]);

let me = null; // GET /v1/me of the signed-in key
let principalNames = new Map(); // "principal:<id>" -> name, for owners (who may list them)

// ------------------------------------------------------------------ DOM helpers

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    // Through CSSOM, which the CSP (style-src 'self') allows, where a style attribute is refused.
    else if (name === "style") Object.assign(node.style, value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

const $ = (id) => document.getElementById(id);

function flash(message, kind) {
  const box = $("flash");
  box.textContent = message || "";
  box.className = kind || "";
}

function when(value) {
  if (!value) return "—";
  return String(value).replace("T", " ").replace(/\.\d+/, "").replace("+00:00", "Z");
}

function badge(text, kind) {
  return el("span", {class: `badge ${kind || text}`}, text);
}

// An id shown as its first 8 characters, the whole id on hover (title) and a button that
// copies it: people compare and paste ids, they do not read them.
function shortId(id, href, linkClass) {
  const full = String(id);
  const label = href ? el("a", {href, class: linkClass, title: full}, full.slice(0, 8))
    : el("code", {title: full}, full.slice(0, 8));
  return el("span", {class: "short-id", "data-id": full}, label,
    el("button", {type: "button", class: "copy", title: "Copy the full id", "aria-label": `Copy ${full}`,
                  onclick: () => copyText(full)}));
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
  } catch (e) {
    // No clipboard permission (an http origin other than localhost): a selected field is
    // the next best thing.
    const box = el("textarea", {readonly: true, class: "copy-box"}, text);
    document.body.append(box);
    box.select();
    document.execCommand("copy");
    box.remove();
  }
  flash(`Copied ${text.slice(0, 8)}…`, "ok");
}

function memoryLink(id, label) {
  return label ? el("a", {href: `#/memory/${id}`, class: "memory-link"}, label)
    : shortId(id, `#/memory/${id}`, "memory-link");
}

function receiptLink(id) {
  return shortId(id, `#/receipt/${id}`, "receipt-link");
}

const UUID = /(principal:)?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/gi;

// Free text from the API (a reason, a cause, an actor) with the ids in it made readable: a
// principal by its name when this key may list them, any other id shortened behind its title.
function readable(text) {
  if (text === undefined || text === null) return "—";
  const t = String(text);
  const parts = [];
  let last = 0;
  for (const m of t.matchAll(UUID)) {
    parts.push(t.slice(last, m.index));
    parts.push(m[1] ? who(m[0]) : shortId(m[2]));
    last = m.index + m[0].length;
  }
  parts.push(t.slice(last));
  return el("span", {class: "readable"}, parts);
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

// "2 Mar 2026 09:00 UTC": a date people read, in UTC as every other time on the page.
function day(value) {
  const d = new Date(value);
  if (!value || Number.isNaN(d.getTime())) return "an unknown time";
  const hm = d.toISOString().slice(11, 16);
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()} ${hm} UTC`;
}

// What situates a memory (the message it answers, the passage it came from): matched by
// search beside the content, never part of it. Shown as text, like the content.
function contextNote(text) {
  return text ? el("p", {class: "context"}, el("span", {class: "muted"}, "context: "), text) : null;
}

function field(label, value) {
  return [el("dt", {}, label), el("dd", {}, value === undefined || value === null ? "—" : value)];
}

// A JSON value (evidence, meta) as nested lists of text.
function jsonView(value) {
  if (value === null || typeof value !== "object") return el("span", {class: "json"}, JSON.stringify(value));
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  if (!entries.length) return el("span", {class: "json"}, Array.isArray(value) ? "[]" : "{}");
  // Ids the console has a page for become links to it (evidence names its receipt).
  const linked = (k, v) => (k === "receipt_id" && typeof v === "string" ? receiptLink(v)
    : k === "memory_id" && typeof v === "string" ? memoryLink(v) : jsonView(v));
  return el("ul", {class: "json"}, entries.map(([k, v]) =>
    el("li", {}, Array.isArray(value) ? null : el("span", {class: "json-key"}, `${k}: `), linked(k, v))));
}

// ------------------------------------------------------------------ the API

class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code;
    this.field = error.field;
  }
}

async function api(method, path, body) {
  const key = sessionStorage.getItem(STORE);
  const headers = {Authorization: `Bearer ${key}`};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(BASE + path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer",
  });
  const data = await response.json().catch(() => null);
  if (response.status === 401) {
    signOut("The key was refused (revoked, expired or mistyped). Sign in again.");
    throw new ApiError(401, data);
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

function query(params) {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") q.set(name, value);
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

// Every page of a list.
async function all(path, params, cap = 20) {
  const items = [];
  let cursor = null;
  for (let i = 0; i < cap; i++) {
    const page = await api("GET", path + query({...params, cursor}));
    items.push(...page.items);
    if (!page.next_cursor) break;
    cursor = page.next_cursor;
  }
  return items;
}

// Who decided or changed something: the name, when this key may list principals.
function who(actor) {
  if (!actor) return "—";
  const name = principalNames.get(actor);
  if (name) return el("span", {class: "who", title: actor}, name);
  const [kind, id] = String(actor).split(":");
  return id ? el("span", {class: "who"}, `${kind} `, shortId(id)) : el("span", {class: "who"}, actor);
}

async function loadPrincipals() {
  principalNames = new Map();
  if (!isOwner()) return;
  try {
    for (const p of (await api("GET", "/v1/principals")).items) principalNames.set(`principal:${p.id}`, p.name);
  } catch (e) {
    if (e.status === 401) throw e;
  }
}

// ------------------------------------------------------------------ signing in

function isOwner() {
  return !!me && me.access.some((a) => a.level === "owner");
}

function isRootOwner() {
  return !!me && me.access.some((a) => a.level === "owner" && a.path === "");
}

function signOut(message) {
  sessionStorage.removeItem(STORE);
  me = null;
  showSignedIn(false);
  $("signin-error").textContent = message || "";
}

function showSignedIn(on) {
  $("signin").hidden = on;
  $("nav").hidden = !on;
  $("whoami").hidden = !on;
  $("nav-admin").hidden = !(on && isOwner());
  if (!on) {
    clear($("view"));
    flash("");
  }
}

async function signIn(key) {
  sessionStorage.setItem(STORE, key);
  try {
    me = await api("GET", "/v1/me");
  } catch (e) {
    sessionStorage.removeItem(STORE);
    $("signin-error").textContent = e.status === 401 ? "That key was refused." : e.message;
    return false;
  }
  const access = me.access.map((a) => `${a.path || "(root)"}: ${a.level}`).join(", ");
  // The key as the keys table shows it: its public prefix, not its id.
  $("whoami-text").replaceChildren("key ", el("code", {id: "whoami-key", title: `id ${me.key_id}`},
    me.key_prefix || String(me.key_id).slice(0, 8)), ` · ${access || "no access"}`);
  $("signin-error").textContent = "";
  await loadPrincipals().catch(() => null);
  showSignedIn(true);
  return true;
}

// ------------------------------------------------------------------ routing

function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [where, qs] = hash.split("?");
  const parts = where.split("/").filter(Boolean);
  return {parts, params: new URLSearchParams(qs || "")};
}

async function render() {
  if (!me) return;
  const {parts, params} = route();
  // A container of this render's own: a render still awaiting answers when the hash moves
  // on fills a container that is no longer in the page, instead of mixing into the new one.
  const view = el("div", {class: "view"});
  clear($("view")).append(view);
  flash("");
  const name = parts[0] || "memories";
  for (const link of document.querySelectorAll("#nav a")) {
    link.classList.toggle("current", link.getAttribute("href") === `#/${name}`);
  }
  try {
    if (name === "memories") await memoriesView(view, params);
    else if (name === "memory") await memoryView(view, parts[1]);
    else if (name === "search") searchView(view, params);
    else if (name === "review") await reviewView(view);
    else if (name === "receipts") await receiptsView(view, params);
    else if (name === "receipt") await receiptView(view, parts[1]);
    else if (name === "admin") await adminView(view);
    else view.append(el("p", {}, "Nothing here."));
  } catch (e) {
    if (e.status !== 401) view.append(el("p", {class: "error"}, e.message));
  }
}

function go(hash) {
  if (location.hash === hash) render();
  else location.hash = hash;
}

// ------------------------------------------------------------------ memories by path

// Paths with counts per status -> a tree of labels, each node with its subtree's counts per
// status. The tree counts what the list beside it shows (the status filtered on, active by
// default), and says how many more lie in the other statuses: a total of every status would
// not match the list.
function buildTree(items) {
  const node = (label, path) => ({label, path, counts: {}, own: null, children: new Map()});
  const add = (target, counts) => {
    for (const [s, n] of Object.entries(counts)) target.counts[s] = (target.counts[s] || 0) + n;
  };
  const root = node("", "");
  for (const item of items) {
    let at = root;
    add(root, item.counts);
    const labels = item.path.split(".");
    labels.forEach((label, i) => {
      if (!at.children.has(label)) at.children.set(label, node(label, labels.slice(0, i + 1).join(".")));
      at = at.children.get(label);
      add(at, item.counts);
    });
    at.own = item;
  }
  return root;
}

// "(3)" for the status shown, "+2" for the others, the split on hover.
function treeCount(counts, status) {
  const all = Object.values(counts).reduce((a, b) => a + b, 0);
  const shown = status === "all" ? all : counts[status] || 0;
  const split = Object.entries(counts).map(([s, n]) => `${s} ${n}`).join(", ");
  return el("span", {class: "count", "data-shown": shown, title: split || "none"}, `(${shown})`,
    all > shown ? el("span", {class: "other"}, ` +${all - shown}`) : null);
}

function treeList(node, selected, params, status) {
  const children = [...node.children.values()];
  if (!children.length) return null;
  return el("ul", {class: "tree"}, children.map((child) => {
    const link = el("a", {
      href: "#/memories" + query({path: child.path, status: params.get("status"),
                                   kind: params.get("kind"), tags: params.get("tags")}),
      class: child.path === selected ? "selected" : null, "data-path": child.path,
    }, child.label, " ", treeCount(child.counts, status));
    return el("li", {}, link, treeList(child, selected, params, status));
  }));
}

async function memoriesView(view, params) {
  const path = params.get("path") || "";
  const status = params.get("status") || "active";
  const kind = params.get("kind") || "";
  const tags = params.get("tags") || "";
  const paths = await all("/v1/paths", {limit: 1000});
  const tree = buildTree(paths);

  const filters = el("form", {class: "filters", id: "memory-filters", onsubmit: (ev) => {
    ev.preventDefault();
    const f = ev.target.elements;
    go("#/memories" + query({path, status: f.status.value, kind: f.kind.value,
                             tags: f.tags.value.trim()}));
  }},
    el("label", {}, "Status ", el("select", {name: "status"},
      [...STATUSES, "all"].map((s) => el("option", {value: s, selected: s === status}, s)))),
    el("label", {}, "Kind ", el("select", {name: "kind"}, el("option", {value: ""}, "any"),
      KINDS.map((k) => el("option", {value: k, selected: k === kind}, k)))),
    el("label", {}, "Tags ", el("input", {name: "tags", value: tags, placeholder: "a,b"})),
    el("button", {type: "submit"}, "Filter"));

  const list = el("div", {id: "memory-list"});
  view.append(el("div", {class: "columns"},
    el("aside", {id: "path-tree"}, el("h2", {}, "Paths"),
      el("a", {href: "#/memories" + query({status, kind, tags}), class: path ? null : "selected",
               id: "tree-all"}, "all readable ", treeCount(tree.counts, status)),
      el("p", {class: "muted legend"}, `counts: ${status}; +n in other statuses`),
      treeList(tree, path, params, status) || el("p", {class: "muted"}, "No memories this key can read.")),
    el("div", {class: "grow"}, el("h2", {}, path ? `Memories under ${path}` : "Memories"),
      filters, list)));

  let cursor = null;
  const more = el("button", {type: "button", hidden: true, onclick: () => load()}, "More");
  list.after(more);
  async function load() {
    const page = await api("GET", "/v1/memories" + query({
      path, status, kind, tags, cursor, limit: 50}));
    if (!cursor && !page.items.length) list.append(el("p", {class: "muted"}, "No memories match."));
    for (const m of page.items) list.append(memoryCard(m));
    cursor = page.next_cursor;
    more.hidden = !cursor;
  }
  await load();
}

function memoryCard(m) {
  return el("article", {class: "memory", "data-id": m.id},
    el("p", {class: "content"}, m.content),
    contextNote(m.context),
    el("p", {class: "meta"}, badge(m.status), " ", badge(m.kind, "kind"), " ",
      el("code", {}, m.path), " · ", memoryLink(m.id, "open"),
      m.tags && m.tags.length ? ` · tags: ${m.tags.join(", ")}` : ""));
}

// ------------------------------------------------------------------ search

function searchView(view, params) {
  const results = el("div", {id: "search-results"});
  const form = el("form", {class: "filters", id: "search-form", onsubmit: async (ev) => {
    ev.preventDefault();
    const f = ev.target.elements;
    const include = [];
    if (f.candidates.checked) include.push("candidates");
    if (f.history.checked) include.push("history");
    const body = {query: f.query.value, explain: true, limit: 20, include};
    if (f.paths.value.trim()) body.paths = f.paths.value.split(",").map((p) => p.trim()).filter(Boolean);
    clear(results);
    try {
      const answer = await api("POST", "/v1/search", body);
      if (!answer.results.length) results.append(el("p", {class: "muted"}, "Nothing found."));
      for (const hit of answer.results) results.append(hitCard(hit));
    } catch (e) {
      results.append(el("p", {class: "error"}, e.message));
    }
  }},
    el("input", {name: "query", placeholder: "what to look for", required: true, size: 40}),
    el("input", {name: "paths", placeholder: "paths (optional, comma-separated)"}),
    el("label", {}, el("input", {type: "checkbox", name: "candidates"}), " candidates"),
    el("label", {}, el("input", {type: "checkbox", name: "history"}), " history"),
    el("button", {type: "submit"}, "Search"));
  view.append(el("h2", {}, "Search"), form, results);
}

function hitCard(hit) {
  const x = hit.explain || {};
  const v = x.vector || {}, t = x.text || {}, f = x.fusion || {};
  const num = (n) => (typeof n === "number" ? n.toFixed(4) : "—");
  const rows = [
    ["vector", v.rank, num(v.score), num(v.normalized)],
    ["text (BM25)", t.rank, num(t.score), num(t.normalized)],
  ];
  const boosts = Object.entries(x.boosts || {}).map(([name, b]) => `${name} ${num(b.value)}`);
  // The breakdown behind a toggle, closed: a hit is read for its content first, and three
  // hits must fit a screen.
  return el("article", {class: "memory hit", "data-id": hit.id},
    el("p", {class: "content"}, hit.content),
    contextNote(hit.context),
    el("p", {class: "meta"}, el("strong", {}, `score ${num(hit.score)}`), " ", badge(hit.status),
      " ", badge(hit.kind, "kind"), " ", el("code", {}, hit.path), " · ", memoryLink(hit.id, "open")),
    el("details", {class: "explain"}, el("summary", {}, "Why this score"),
      el("table", {class: "explain"},
        el("thead", {}, el("tr", {}, ["arm", "rank", "raw score", "normalized"].map((h) => el("th", {}, h)))),
        el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c ?? "—")))))),
      el("p", {class: "muted"}, `fusion: vector weight ${num(f.vector_weight)}, text strength ${num(f.text_strength)}`,
        `, top cosine ${num(f.top_cosine)}`, v.route ? `, vector route ${v.route}` : "",
        boosts.length ? `; boosts: ${boosts.join(", ")}` : "")));
}

// ------------------------------------------------------------------ one memory

async function memoryView(view, id) {
  let memory = null;
  try {
    memory = await api("GET", `/v1/memories/${encodeURIComponent(id)}`);
  } catch (e) {
    if (e.status !== 404) throw e;
  }
  let history = [];
  try {
    history = (await api("GET", `/v1/memories/${encodeURIComponent(id)}/history`)).items;
  } catch (e) {
    if (e.status !== 404) throw e;
  }
  if (!memory && !history.length) {
    view.append(el("p", {class: "error"}, "No memory this key can read has that id."));
    return;
  }
  const related = memory ? (await api("GET", `/v1/memories/${id}/related`)).items : [];
  const shown = memory || history[history.length - 1].snapshot;

  view.append(el("h2", {}, "Memory ", shortId(id)));
  view.append(el("article", {class: "memory", id: "memory", "data-id": id},
    el("p", {class: "content", id: "memory-content"}, shown.content),
    el("dl", {class: "fields"},
      field("context", shown.context
        ? el("span", {class: "context", id: "memory-context"}, shown.context) : null),
      field("status", memory ? badge(memory.status) : badge("deleted")),
      field("kind", shown.kind), field("path", el("code", {}, shown.path)),
      field("slot", shown.slot ? `${shown.slot} = ${shown.value}` : null),
      field("confidence", shown.confidence), field("importance", shown.importance),
      field("origin", shown.origin), field("version", shown.version),
      field("tags", (shown.tags || []).join(", ") || null),
      field("meta", jsonView(shown.meta || {})))));
  if (!memory) {
    view.append(el("p", {}, "This memory was deleted. ",
      el("button", {type: "button", onclick: () => restore(id, null)}, "Restore it")));
  }

  view.append(el("h3", {}, "Timeline"), timeline(memory, shown, history, related));
  view.append(el("h3", {}, "Evidence"), evidenceList(shown.evidence));
  view.append(el("h3", {}, "Relationships"), relationsTable(related));
  view.append(el("h3", {}, "History"), historyTable(id, history, memory));
}

function timeline(memory, shown, history, related) {
  const validFrom = memory ? memory.valid_from : null;
  const validTo = memory ? memory.valid_to : null;
  const events = [];
  const recorded = memory ? memory.recorded_at : shown.recorded_at;
  if (recorded) events.push({at: recorded, kind: "recorded", text: "strata learned it (record time)"});
  for (const h of history) {
    events.push({at: h.changed_at, kind: h.operation,
                 text: [`version ${h.version} ${h.erased ? "forgotten" : h.operation === "delete" ? "deleted" : "replaced"}`,
                   h.cause ? [" · cause ", readable(h.cause)] : "", h.actor ? [" · by ", who(h.actor)] : ""]});
  }
  for (const r of related) {
    const superseding = r.type === "SUPERSEDES";
    let text;
    if (superseding && r.direction === "incoming") text = "superseded by ";
    else if (superseding) text = "superseded ";
    else text = `${r.type.toLowerCase().replace("_", " ")} (${r.direction}) `;
    const kind = !superseding ? "relation" : r.direction === "incoming" ? "superseded-by" : "supersedes";
    events.push({at: r.created_at, kind, related: r, text});
  }
  events.sort((a, b) => String(a.at).localeCompare(String(b.at)));

  const chart = lifeChart(memory, shown, history, related);
  const times = el("dl", {class: "fields validity"},
    field("valid time", `${when(validFrom || validity(shown)[0])} → ${validTo ? when(validTo) : "now (still true)"}`),
    field("record time", `recorded ${when(recorded)}` + (memory ? ` · last changed ${when(memory.updated_at)}` : "")));
  const list = el("ol", {class: "timeline", id: "timeline"}, events.map((e) => el("li", {class: `event ${e.kind}`},
    el("time", {}, when(e.at)), " ",
    e.text,
    e.related ? [memoryLink(e.related.other_id), ` (${e.related.other_status})`,
      e.related.reason ? [" · reason: ", readable(e.related.reason)] : "",
      e.related.decided_by ? [" · decided by ", who(e.related.decided_by)] : "",
      e.related.confidence !== undefined && e.related.confidence !== null ? ` · confidence ${e.related.confidence}` : ""] : null)));
  if (validTo) {
    list.append(el("li", {class: "event closed"}, el("time", {}, when(validTo)), " stopped being valid"));
  }
  return el("div", {}, chart, times, list);
}

// [valid_from, valid_to] of a memory, or of a history snapshot (the stored row, whose valid
// time is one range, as PostgreSQL writes it: ["2026-03-02 09:00:00+00",)).
function validity(m) {
  if (m.valid_from !== undefined) return [m.valid_from, m.valid_to];
  const range = /^[[(]"?([^",]*)"?,"?([^")]*)"?[\])]$/.exec(m.valid || "");
  const instant = (v) => (v ? v.replace(" ", "T").replace(/([+-]\d\d)$/, "$1:00") : null);
  return range ? [instant(range[1]), instant(range[2])] : [null, null];
}

// The memory's life at a glance. Two lanes, each on its own axis, as they are two times:
// when the statement held in the world (valid time: a span from valid_from, open while it
// still holds), and what strata kept of it (record time: its versions in order, each ended by
// the change that replaced it: an edit, a deletion, a forget; the current one by a
// supersession when one came). Versions are laid out in order, not to scale: edits seconds
// apart would be slivers on a scale of months.
function lifeChart(memory, shown, history, related) {
  const time = (v) => (v ? new Date(v).getTime() : NaN);
  const now = Date.now();
  const [from0, to0] = validity(memory || shown);
  const validFrom = time(from0);
  const validTo = time(to0);
  const axisStart = Math.min(validFrom, Number.isNaN(validTo) ? now : validTo);
  const axisEnd = Math.max(now, Number.isNaN(validTo) ? now : validTo);
  const at = (t) => (axisEnd > axisStart ? ((t - axisStart) / (axisEnd - axisStart)) * 100 : 0);
  const open = Number.isNaN(validTo);
  const left = at(validFrom);
  const span = el("div", {class: `valid-span ${open ? "open" : "closed"}`,
    style: {left: `${left}%`, width: `${Math.max((open ? 100 : at(validTo)) - left, 1)}%`},
    title: `true from ${day(validFrom)} ${open ? "and still" : `to ${day(validTo)}`}`});
  const validLane = Number.isNaN(validFrom) ? null : el("div", {class: "lane valid-lane"},
    el("span", {class: "lane-label"}, "true in the world"),
    el("div", {class: "track"}, span),
    el("span", {class: "lane-ends"}, day(validFrom), " → ", open ? "now" : day(validTo)));

  const supersededBy = related.find((r) => r.type === "SUPERSEDES" && r.direction === "incoming");
  const segments = [];
  let from = (memory || shown).created_at || (history[0] && history[0].snapshot && history[0].snapshot.created_at);
  for (const h of history) {
    const end = h.erased ? "forgotten" : h.operation === "delete" ? "deleted" : "updated";
    segments.push({version: h.version, from, to: h.changed_at, end, cause: h.cause});
    from = h.changed_at;
  }
  if (memory) {
    segments.push({version: memory.version, from, to: supersededBy ? supersededBy.created_at : null,
                   end: supersededBy ? "superseded" : memory.status === "active" ? "current" : memory.status,
                   current: true});
  }
  const versions = el("div", {class: "track versions"}, segments.map((v) => el("div", {
    class: `version ${v.current ? "current" : ""} ends-${v.end}`, "data-version": v.version,
    "data-end": v.end,
    title: `version ${v.version}: from ${day(v.from)}${v.to ? ` until ${day(v.to)} (${v.end})` : ""}`
      + (v.cause ? ` · cause ${v.cause}` : "")},
    el("span", {class: "v"}, `v${v.version}`), " ", el("span", {class: "since"}, day(v.from).slice(0, -10)),
    v.end !== "current" ? el("span", {class: `mark ${v.end}`}, v.end) : null)));
  const versionLane = el("div", {class: "lane versions-lane"},
    el("span", {class: "lane-label"}, "versions strata kept"), versions,
    supersededBy ? el("span", {class: "lane-ends"}, "superseded by ", memoryLink(supersededBy.other_id))
      : el("span", {class: "lane-ends"}, memory ? "current" : "deleted"));
  return el("div", {class: "life", id: "life"}, validLane, versionLane);
}

function evidenceList(evidence) {
  if (!evidence || !evidence.length) return el("p", {class: "muted"}, "No evidence recorded.");
  return el("ol", {class: "evidence"}, evidence.map((e) => el("li", {
    "data-source": e && e.source, title: e && e.message !== undefined ? `message ${e.message} of the conversation` : null,
  }, evidenceSentence(e))));
}

const SURFACES = {http: "the API", mcp: "MCP", cli: "the CLI"};

// One piece of evidence as a sentence, from the fields the write paths record (source,
// surface, principal_id, at; ingest adds receipt_id, message and role; import from_id). A
// source this console does not know is shown as its fields.
function evidenceSentence(e) {
  if (!e || typeof e !== "object" || !e.source) return jsonView(e);
  const by = e.principal_id ? [" by ", who(`principal:${e.principal_id}`)] : "";
  const via = e.surface ? ` through ${SURFACES[e.surface] || e.surface}` : "";
  const on = e.at ? ` on ${day(e.at)}` : "";
  const said = {
    "api": ["written", via, by, on],
    "api.update": ["edited", via, by, on],
    "review.promote": ["promoted on review", by, on],
    "review.merge": ["merged into this on review", by, on],
    "restore": ["restored from its history", via, by, on],
    "import": ["imported", e.from_id ? [" from memory ", shortId(e.from_id)] : "", via, on],
    "reflects": ["drawn as a reflection", via, by, on],
    "consolidates": ["made by consolidating memories", via, by, on],
  }[e.source];
  if (e.source === "ingest") {
    const speaker = e.role ? `the ${e.role}` : "someone in the conversation";
    return el("span", {class: "sentence"}, e.message !== undefined ? `said by ${speaker}` : "taken from a conversation",
      on, e.receipt_id ? [" in receipt ", receiptLink(e.receipt_id)] : "");
  }
  return said ? el("span", {class: "sentence"}, said) : jsonView(e);
}

function relationsTable(related) {
  if (!related.length) return el("p", {class: "muted"}, "No relationships this key can see.");
  return el("table", {class: "relations"},
    el("thead", {}, el("tr", {}, ["type", "direction", "other", "reason", "decided by", "confidence", "at"]
      .map((h) => el("th", {}, h)))),
    el("tbody", {}, related.map((r) => el("tr", {},
      el("td", {}, r.type), el("td", {}, r.direction),
      el("td", {}, memoryLink(r.other_id), ` (${r.other_status})`),
      el("td", {}, readable(r.reason)), el("td", {}, who(r.decided_by)),
      el("td", {}, r.confidence ?? "—"), el("td", {}, when(r.created_at))))));
}

function historyTable(id, history, memory) {
  if (!history.length) return el("p", {class: "muted"}, "No earlier versions.");
  return el("table", {class: "history"},
    el("thead", {}, el("tr", {}, ["version", "until", "operation", "cause", "actor", "content then", ""]
      .map((h) => el("th", {}, h)))),
    el("tbody", {}, history.map((h) => el("tr", {},
      el("td", {}, h.version), el("td", {}, when(h.changed_at)), el("td", {}, h.operation),
      el("td", {}, readable(h.cause)), el("td", {}, who(h.actor)),
      el("td", {}, h.erased ? "(erased)" : (h.snapshot && h.snapshot.content) || "—",
        h.erased || !h.snapshot ? null : contextNote(h.snapshot.context)),
      el("td", {}, memory && !h.erased && h.operation === "update"
        ? el("button", {type: "button", onclick: () => restore(id, h.version)}, `Restore version ${h.version}`)
        : null)))));
}

async function restore(id, version) {
  try {
    await api("POST", `/v1/memories/${id}/restore`, version === null ? {} : {version});
    await render();
    flash(version === null ? "Restored." : `Rolled back to version ${version}.`, "ok");
  } catch (e) {
    flash(`Restore refused: ${e.message}`, "error");
  }
}

// ------------------------------------------------------------------ review queue

async function reviewView(view) {
  const items = await all("/v1/review", {limit: 200}, 5);
  view.append(el("h2", {}, `Review queue (${items.length})`));
  if (!items.length) {
    view.append(el("p", {class: "muted"}, "No candidates waiting."));
    return;
  }
  const list = el("div", {id: "review-list"});
  view.append(list);
  for (const c of items) list.append(await candidateCard(c));
}

async function candidateCard(c) {
  const targets = [];
  for (const edge of c.contradicts || []) {
    let target = null;
    try {
      target = await api("GET", `/v1/memories/${edge.target_id}`);
    } catch (e) {
      if (e.status !== 404) throw e;
    }
    targets.push({edge, target});
  }
  const into = el("select", {name: "into"}, targets.filter((t) => t.target).map((t) =>
    el("option", {value: t.edge.target_id}, t.target.content.slice(0, 60))));
  const intoId = el("input", {name: "into-id", placeholder: "or a memory id", size: 36});
  // Suppression until an instant (empty: for good); after it the value may come back, as a
  // candidate for review.
  const until = el("input", {type: "datetime-local", name: "until",
    title: "suppress until (empty: for good)"});
  const suppression = () => until.value
    ? {suppress: true, until: new Date(until.value).toISOString()} : {suppress: true};
  const decide = (action, body) => async () => {
    try {
      const path = action === "suppress" ? "reject" : action;
      await api("POST", `/v1/review/${c.id}/${path}`, body ? body() : undefined);
      await render();
      flash(`${action}: done.`, "ok");
    } catch (e) {
      flash(`${action} refused: ${e.message}`, "error");
    }
  };
  return el("article", {class: "memory candidate", "data-id": c.id},
    el("p", {class: "content"}, c.content),
    el("p", {class: "meta"}, badge(c.status), " ", badge(c.kind, "kind"), " ", el("code", {}, c.path),
      ` · confidence ${c.confidence} · held ${when(c.created_at)} · `, memoryLink(c.id, "open")),
    el("details", {class: "evidence"}, el("summary", {}, `Evidence (${(c.evidence || []).length})`),
      evidenceList(c.evidence)),
    el("div", {class: "contradicts"}, el("h4", {}, "Contradicts"),
      targets.length ? el("ul", {}, targets.map(({edge, target}) => el("li", {"data-target": edge.target_id},
        target ? el("span", {class: "content"}, target.content) : "(a memory this key cannot read)",
        " ", target ? badge(target.status) : null, " ", memoryLink(edge.target_id, "open"),
        edge.reason ? [" · reason: ", readable(edge.reason)] : "",
        edge.decided_by ? [" · decided by ", who(edge.decided_by)] : "")))
        : el("p", {class: "muted"}, "Nothing active that this key can read.")),
    el("div", {class: "actions"},
      el("button", {type: "button", class: "promote", onclick: decide("promote")}, "Promote"),
      el("button", {type: "button", class: "reject", onclick: decide("reject", () => ({suppress: false}))}, "Reject"),
      el("label", {class: "until"}, "until ", until),
      el("button", {type: "button", class: "suppress", onclick: decide("suppress", suppression)},
        "Reject and suppress"),
      el("span", {class: "merge"}, into, intoId,
        el("button", {type: "button", class: "merge", onclick: decide("merge", () => ({into: intoId.value.trim() || into.value}))},
          "Merge into"))));
}

// ------------------------------------------------------------------ ingest receipts

function receiptKind(status) {
  if (BROKEN.has(status)) return "broken";
  if (QUIET.has(status)) return "quiet";
  if (status === "wrote") return "wrote";
  return "pending";
}

async function receiptsView(view, params) {
  const status = params.get("status") || "";
  const page = await api("GET", "/v1/ingest" + query({status, limit: 50}));
  view.append(el("h2", {}, "Ingest receipts"),
    el("form", {class: "filters", onsubmit: (ev) => {
      ev.preventDefault();
      go("#/receipts" + query({status: ev.target.elements.status.value}));
    }}, el("label", {}, "Status ", el("select", {name: "status"}, el("option", {value: ""}, "any"),
      ["queued", "running", "wrote", "meaningful_no_write", "llm_failed", "embed_failed", "db_write_failed"]
        .map((s) => el("option", {value: s, selected: s === status}, s)))),
      el("button", {type: "submit"}, "Filter")));
  if (!page.items.length) view.append(el("p", {class: "muted"}, "No receipts this key can read."));
  const list = el("div", {id: "receipt-list"});
  view.append(list);
  let cursor = page.next_cursor;
  const more = el("button", {type: "button", hidden: !cursor, onclick: async () => {
    const next = await api("GET", "/v1/ingest" + query({status, limit: 50, cursor}));
    for (const r of next.items) list.append(await receiptCard(r));
    cursor = next.next_cursor;
    more.hidden = !cursor;
  }}, "More");
  view.append(more);
  for (const r of page.items) list.append(await receiptCard(r));
}

async function receiptView(view, id) {
  const r = await api("GET", `/v1/ingest/${encodeURIComponent(id)}`);
  view.append(el("h2", {}, "Ingest receipt ", shortId(r.id)), await receiptCard(r));
}

async function receiptCard(r) {
  const kind = receiptKind(r.status);
  const headline = {
    broken: "FAILED: nothing from this conversation was written",
    quiet: "Ran cleanly; nothing worth keeping",
    wrote: "Wrote memories",
    pending: "Still running",
  }[kind];
  const items = [];
  for (const item of r.items) {
    let content = null;
    if (item.memory_id) {
      try {
        content = (await api("GET", `/v1/memories/${item.memory_id}`)).content;
      } catch (e) {
        if (e.status !== 404) throw e;
      }
    }
    const kept = ["created", "reinforced", "merged", "superseded_existing", "candidate",
                  "stored_as_superseded"].includes(item.outcome);
    items.push(el("li", {class: `item ${kept ? "kept" : "not-kept"}`},
      badge(item.outcome, kept ? "kept" : "not-kept"), " ",
      content !== null ? el("span", {class: "content"}, content) : null,
      item.reason ? el("span", {class: "reason"}, " · reason: ", readable(item.reason)) : null,
      item.memory_id ? [" · ", memoryLink(item.memory_id, "open")] : null));
  }
  for (const n of r.not_kept || []) {
    items.push(el("li", {class: "item not-kept"}, badge("not kept", "not-kept"), " ",
      n.text !== null && n.text !== undefined ? el("span", {class: "content"}, n.text) : el("em", {}, "(withheld)"),
      el("span", {class: "reason"}, ` · reason: ${n.reason}`), ` · message ${n.message}`));
  }
  const counts = Object.entries(r.counts || {}).map(([k, v]) => `${k} ${v}`).join(", ");
  return el("article", {class: `receipt ${kind}`, "data-id": r.id, "data-status": r.status},
    el("p", {class: "headline"}, badge(r.status, kind), " ", el("strong", {}, headline)),
    el("p", {class: "meta"}, el("code", {}, r.path), ` · ${when(r.created_at)} · extractor ${r.extractor || "—"}`,
      counts ? ` · ${counts}` : "", " · receipt ", receiptLink(r.id)),
    r.error ? el("p", {class: "error"}, `error: ${r.error}`) : null,
    r.notes && r.notes.length ? el("ul", {class: "notes"}, r.notes.map((n) => el("li", {}, n))) : null,
    items.length ? el("ul", {class: "items"}, items) : el("p", {class: "muted"}, "No items."));
}

// ------------------------------------------------------------------ owners: keys, grants, audit

async function adminView(view) {
  view.append(el("h2", {}, "Keys, grants, rules and audit"));
  const sections = [["Keys", keysSection], ["Grants", grantsSection], ["Rules", rulesSection],
                    ["Audit chain", auditSection]];
  for (const [title, build] of sections) {
    const box = el("section", {class: "admin", id: `admin-${title.split(" ")[0].toLowerCase()}`}, el("h3", {}, title));
    view.append(box);
    try {
      await build(box);
    } catch (e) {
      if (e.status === 401) throw e;
      box.append(el("p", {class: "muted"}, e.status === 403 ? `Not for this key: ${e.message}` : e.message));
    }
  }
}

async function principalsById() {
  try {
    return new Map((await api("GET", "/v1/principals")).items.map((p) => [p.id, p]));
  } catch (e) {
    if (e.status === 403) return new Map();
    throw e;
  }
}

async function keysSection(box) {
  const [keys, principals] = [(await api("GET", "/v1/keys")).items, await principalsById()];
  const shown = el("div", {id: "minted"});
  const form = el("form", {class: "filters", id: "mint-form", onsubmit: async (ev) => {
    ev.preventDefault();
    const f = ev.target.elements;
    const body = {principal_id: f.principal.value};
    if (f.name.value.trim()) body.name = f.name.value.trim();
    if (f.ceiling.value.trim()) {
      body.ceiling = f.ceiling.value.split(",").map((s) => s.trim()).filter(Boolean).map((s) => {
        const at = s.lastIndexOf(":");
        return {path: s.slice(0, at), level: s.slice(at + 1)};
      });
    }
    if (f.default_path.value.trim()) body.default_path = f.default_path.value.trim();
    if (f.days.value) body.expires_at = new Date(Date.now() + Number(f.days.value) * 86400000).toISOString();
    try {
      const made = await api("POST", "/v1/keys", body);
      await render();
      // Shown once, in a field (not a URL, not storage), for the owner to copy.
      $("flash").replaceChildren(el("span", {}, `Key ${made.prefix} minted. Copy it now; it is not shown again: `),
        el("input", {readonly: true, value: made.key, size: 60, id: "new-key"}));
      $("flash").className = "ok";
    } catch (e) {
      flash(`Not minted: ${e.message}`, "error");
    }
  }},
    el("label", {}, "Principal ", el("select", {name: "principal", required: true},
      [...principals.values()].map((p) => el("option", {value: p.id, selected: p.id === me.principal_id}, `${p.name} (${p.kind})`)),
      principals.size ? null : el("option", {value: me.principal_id}, "this key's principal"))),
    el("input", {name: "name", placeholder: "name"}),
    el("input", {name: "ceiling", placeholder: "ceiling, e.g. users.alice:read"}),
    el("input", {name: "default_path", placeholder: "default path"}),
    el("input", {name: "days", type: "number", min: 1, placeholder: "expires in days"}),
    el("button", {type: "submit"}, "Mint key"));
  box.append(form, shown, el("table", {class: "keys"},
    el("thead", {}, el("tr", {}, ["prefix", "name", "principal", "ceiling", "created", "expires", "state", ""]
      .map((h) => el("th", {}, h)))),
    el("tbody", {}, keys.map((k) => el("tr", {"data-id": k.id},
      el("td", {}, el("code", {}, k.prefix)), el("td", {}, k.name || "—"),
      el("td", {}, principals.has(k.principal_id) ? principals.get(k.principal_id).name : shortId(k.principal_id)),
      el("td", {}, k.ceiling ? k.ceiling.map((c) => `${c.path || "(root)"}:${c.level}`).join(", ") : "holder's access"),
      el("td", {}, when(k.created_at)), el("td", {}, when(k.expires_at)),
      el("td", {}, k.revoked_at ? `revoked ${when(k.revoked_at)}` : k.id === me.key_id ? "this key" : "live"),
      el("td", {}, !k.revoked_at && k.id !== me.key_id ? el("button", {type: "button", onclick: async () => {
        try {
          await api("DELETE", `/v1/keys/${k.id}`);
          await render();
          flash(`Key ${k.prefix} revoked.`, "ok");
        } catch (e) {
          flash(`Not revoked: ${e.message}`, "error");
        }
      }}, "Revoke") : null))))));
}

async function grantsSection(box) {
  const [grants, principals] = [(await api("GET", "/v1/grants")).items, await principalsById()];
  const form = el("form", {class: "filters", id: "grant-form", onsubmit: async (ev) => {
    ev.preventDefault();
    const f = ev.target.elements;
    try {
      await api("POST", "/v1/grants", {principal_id: f.principal.value, path: f.path.value.trim(),
                                       level: f.level.value});
      await render();
      flash("Granted.", "ok");
    } catch (e) {
      flash(`Not granted: ${e.message}`, "error");
    }
  }},
    el("select", {name: "principal", required: true}, [...principals.values()].map((p) =>
      el("option", {value: p.id}, `${p.name} (${p.kind})`))),
    el("input", {name: "path", placeholder: "path ('' is the root)"}),
    el("select", {name: "level"}, ["read", "write", "owner"].map((l) => el("option", {value: l}, l))),
    el("button", {type: "submit"}, "Grant"));
  box.append(form, el("table", {class: "grants"},
    el("thead", {}, el("tr", {}, ["principal", "path", "level", "since", ""].map((h) => el("th", {}, h)))),
    el("tbody", {}, grants.map((g) => el("tr", {"data-id": g.id},
      el("td", {}, principals.has(g.principal_id) ? principals.get(g.principal_id).name : shortId(g.principal_id)),
      el("td", {}, el("code", {}, g.path || "(root)")), el("td", {}, g.level), el("td", {}, when(g.created_at)),
      el("td", {}, el("button", {type: "button", onclick: async () => {
        try {
          await api("DELETE", `/v1/grants/${g.id}`);
          await render();
          flash("Grant removed.", "ok");
        } catch (e) {
          flash(`Not removed: ${e.message}`, "error");
        }
      }}, "Remove")))))));
}

const CATEGORIES = ["health", "credentials", "finances", "other_people", "location"];

// Memory rules (README "Memory rules"): listed where this key reads, set and removed by an
// owner of the path (the API answers 403 otherwise, and the flash says so).
async function rulesSection(box) {
  const rules = (await api("GET", "/v1/rules")).items;
  const checks = (name) => el("span", {class: "checks"}, `${name}: `, CATEGORIES.map((c) =>
    el("label", {}, el("input", {type: "checkbox", name, value: c}), ` ${c} `)));
  const form = el("form", {class: "filters", id: "rule-form", onsubmit: async (ev) => {
    ev.preventDefault();
    const f = ev.target;
    const e = f.elements;
    const picked = (name) => [...f.querySelectorAll(`input[name=${name}]:checked`)].map((i) => i.value);
    const body = {path: e.path.value.trim(), capture: e.capture.value,
                  exclude_categories: picked("exclude"), include_categories: picked("include"),
                  exclude_patterns: e.patterns.value.split("\n").map((s) => s.trim()).filter(Boolean)};
    if (e.instructions.value.trim()) body.instructions = e.instructions.value.trim();
    if (e.retention.value) body.retention_days = Number(e.retention.value);
    try {
      const rule = await api("PUT", "/v1/rules", body);
      await render();
      flash(`Rule at ${rule.path || "(root)"} set (version ${rule.version}).`, "ok");
    } catch (err) {
      flash(`Not set: ${err.field ? `${err.field}: ` : ""}${err.message}`, "error");
    }
  }},
    el("input", {name: "path", placeholder: "path ('' is the root)"}),
    el("select", {name: "capture"}, ["on", "off", "review_only"].map((c) => el("option", {value: c}, c))),
    checks("exclude"), checks("include"),
    el("textarea", {name: "patterns", rows: 2, placeholder: "exclude patterns, one a line: text or /regex/"}),
    el("input", {name: "instructions", placeholder: "instructions for the model"}),
    el("input", {name: "retention", type: "number", min: 1, placeholder: "retention days"}),
    el("button", {type: "submit"}, "Set rule"));
  const list = (values) => (values.length ? values.join(", ") : "—");
  box.append(form, el("table", {class: "rules"},
    el("thead", {}, el("tr", {}, ["path", "capture", "excludes", "patterns", "includes", "instructions",
                                  "retention", "version", ""].map((h) => el("th", {}, h)))),
    el("tbody", {}, rules.map((r) => el("tr", {"data-id": r.id},
      el("td", {}, el("code", {}, r.path || "(root)")), el("td", {}, r.capture),
      el("td", {}, list(r.exclude_categories)), el("td", {}, list(r.exclude_patterns)),
      el("td", {}, list(r.include_categories)), el("td", {}, r.instructions || "—"),
      el("td", {}, r.retention_days ? `${r.retention_days} days` : "—"), el("td", {}, r.version),
      el("td", {}, el("button", {type: "button", onclick: async () => {
        try {
          await api("DELETE", `/v1/rules/${r.id}`);
          await render();
          flash("Rule removed.", "ok");
        } catch (err) {
          flash(`Not removed: ${err.message}`, "error");
        }
      }}, "Remove")))))));
}

async function auditSection(box) {
  const s = await api("GET", "/v1/audit/status");
  const run = (r) => (r ? `${r.ok === true ? "ok" : r.ok === false ? "FAILED" : "unfinished"}`
    + ` · started ${when(r.started_at)} · finished ${when(r.completed_at)}`
    + (r.mode ? ` · ${r.mode}` : "") + (r.problems.length ? ` · ${r.problems.join("; ")}` : "") : "never");
  const result = el("div", {id: "verify-result"});
  box.append(el("dl", {class: "fields", id: "audit-status"},
    field("head", `seq ${s.head_seq}`),
    field("verified up to", s.verified ? `seq ${s.verified.seq} (${when(s.verified.at)})` : "not yet"),
    field("pruned up to", s.pruned ? `seq ${s.pruned.seq} (${when(s.pruned.at)})` : "nothing pruned"),
    field("last scheduled verification", run(s.last_verification)),
    field("last digest", run(s.last_digest))),
  el("button", {type: "button", id: "verify-now", onclick: async () => {
    clear(result).append(el("p", {class: "muted"}, "Walking the whole chain…"));
    try {
      const v = await api("POST", "/v1/audit/verify");
      clear(result).append(el("p", {class: v.ok ? "ok" : "error"},
        v.ok ? `Verified: ${v.checked} entries, head seq ${v.head_seq}.`
             : `Does NOT verify (${v.failed.join(", ")}): ${v.problems.join("; ")}`));
    } catch (e) {
      clear(result).append(el("p", {class: "error"}, e.message));
    }
  }}, "Verify the whole chain now"), result);
}

// ------------------------------------------------------------------ start

document.addEventListener("DOMContentLoaded", async () => {
  $("signin").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const input = $("key");
    const key = input.value.trim();
    input.value = "";
    if (key && await signIn(key)) render();
  });
  $("signout").addEventListener("click", () => signOut());
  window.addEventListener("hashchange", render);
  if (sessionStorage.getItem(STORE) && await signIn(sessionStorage.getItem(STORE))) render();
  else showSignedIn(false);
});
