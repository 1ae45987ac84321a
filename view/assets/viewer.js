"use strict";
// rollgym view: the run overview, the rollout list, one rollout (messages and token strip), two side by side.
// Data lives in <script type="application/json"> blocks: the index is parsed at load, a rollout when opened.

const IDX = JSON.parse(document.getElementById("rg-index").textContent);
const ROWS = IDX.rows, META = IDX.meta, SUM = IDX.summary, VOCAB = IDX.vocab;
const app = document.getElementById("app"), tip = document.getElementById("tip");
const PAGE = 100;
const state = { task: "", stop: "", error: "", reward: "", version: "", q: "", page: 0, hits: null };
const parsed = new Map();
// A split page (big runs) keeps its data in <page>_files/: chunk files, loaded by script tags on demand.
const CHUNKS = META.chunks || null;
const chunkStore = new Map(), chunkLoads = new Map();
window.rgChunk = (name, blocks) => { for (const [k, v] of Object.entries(blocks)) chunkStore.set(k, v); };
function chunkName(id) { const [, kind, n] = id.split("-"); return `${kind}-${Math.floor(+n / CHUNKS.size)}.js`; }
function loadChunk(name) {
  if (!chunkLoads.has(name)) {
    chunkLoads.set(name, new Promise((resolve, reject) => {
      const el = document.createElement("script");
      el.src = `${encodeURIComponent(CHUNKS.dir)}/${name}`;
      el.onload = resolve;
      el.onerror = () => reject(new Error(`cannot read ${CHUNKS.dir}/${name}: keep the _files folder beside the page`));
      document.head.appendChild(el);
    }));
  }
  return chunkLoads.get(name);
}
// Resolves once the named blocks can be read with block() (at once for a single-file page).
function need(ids) { return CHUNKS ? Promise.all([...new Set(ids.map(chunkName))].map(loadChunk)) : Promise.resolve(); }

function block(id) {
  if (CHUNKS) return chunkStore.has(id) ? chunkStore.get(id) : null;
  if (!parsed.has(id)) {
    const el = document.getElementById(id);
    parsed.set(id, el ? JSON.parse(el.textContent) : null);
    if (parsed.size > 400) parsed.delete(parsed.keys().next().value); // keep memory bounded on big runs
  }
  return parsed.get(id);
}
const detail = (i) => block("rg-d-" + i), strip = (i) => block("rg-t-" + i), prompt = (k) => block("rg-p-" + k);
// Everything a rollout page shows: its detail, its strip, then the prompt the strip names.
async function needRollouts(list) {
  await need(list.flatMap((i) => ["rg-d-" + i, "rg-t-" + i]));
  await need(list.map((i) => "rg-p-" + strip(i).prompt));
}

function esc(s) {
  return String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}
const fmt = (x, d = 3) => (x === null || x === undefined ? "–" : typeof x === "number" ? (Number.isInteger(x) ? String(x) : x.toFixed(d)) : esc(x));
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const uniq = (xs) => [...new Set(xs)].sort();

// ---- routing -------------------------------------------------------------------------------------
let searchTimer = null;
async function route() {
  tip.hidden = true;
  clearTimeout(searchTimer);
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  try {
    if (parts[0] === "r" && ROWS[+parts[1]]) {
      await needRollouts([+parts[1]]);
      renderRollout(+parts[1]);
    } else if (parts[0] === "cmp" && ROWS[+parts[1]] && ROWS[+parts[2]] && +parts[1] !== +parts[2]) {
      await needRollouts([+parts[1], +parts[2]]);
      renderCompare(+parts[1], +parts[2]);
    } else renderOverview();
  } catch (err) {
    app.innerHTML = `<div class="errorbox">This page could not be shown: ${esc(err && err.message)}</div>`;
    return;
  }
  window.scrollTo(0, 0);
}
window.addEventListener("hashchange", route);
document.getElementById("source").textContent = `${META.source} · ${ROWS.length} rollouts · written ${META.generated_at}`;

// ---- overview ------------------------------------------------------------------------------------
function card(k, v) { return `<div class="card"><div class="k">${esc(k)}</div><div class="v">${v}</div></div>`; }
function counts(obj) {
  const entries = Object.entries(obj || {});
  return entries.length ? entries.map(([k, v]) => `<span class="badge">${esc(k === "null" ? "none" : k)}: ${v}</span>`).join(" ") : "none";
}

function renderOverview() {
  const passk = Object.keys(SUM).filter((k) => k.startsWith("pass@"));
  const tokens = sum(ROWS.map((r) => r.sampled)), envTokens = sum(ROWS.map((r) => r.env));
  const genS = sum(ROWS.map((r) => r.gen_s)), envS = sum(ROWS.map((r) => r.env_s));
  app.innerHTML = `
    <h1>${esc(META.title)}</h1>
    ${META.token_texts ? "" : `<p class="note">No tokenizer was available when this page was written: the token strip shows ids only (rerun <code>rollgym view</code> with <code>--tokenizer</code>).</p>`}
    <section id="summary" class="cards">
      ${card("rollouts", SUM.rollouts ?? 0)}${card("tasks", SUM.tasks ?? 0)}${card("reward mean", fmt(SUM.reward_mean))}
      ${passk.map((k) => card(k, fmt(SUM[k]))).join("")}
      ${card("resolved rate", fmt(SUM.resolved_rate))}${card("turns mean", fmt(SUM.turns_mean, 2))}
      ${card("sampled tokens", tokens)}${card("environment tokens", envTokens)}
      ${card("tool calls (failed)", `${sum(ROWS.map((r) => r.calls))} (${sum(ROWS.map((r) => r.failed))})`)}
    </section>
    <p><b>Stop reasons</b> ${counts(SUM.stop_reasons)} &nbsp; <b>Errors by category</b> ${counts(SUM.errors)}</p>
    <section class="plots">
      ${plot("Reward", histogram(ROWS.map((r) => r.reward), "reward"), `mean ${fmt(SUM.reward_mean)}`)}
      ${plot("Turns per rollout", histogram(ROWS.map((r) => r.turns), "turns", true), `mean ${fmt(SUM.turns_mean, 2)}`)}
      ${plot("Tokens: sampled vs environment", scatter(ROWS.map((r) => [r.sampled, r.env]), "sampled", "environment"), `${tokens} sampled, ${envTokens} environment`)}
      ${plot("Time: engine vs tools (s)", scatter(ROWS.map((r) => [r.gen_s, r.env_s]), "engine s", "tools s"), `${fmt(genS, 1)} s in the engine, ${fmt(envS, 1)} s in tools`)}
    </section>
    ${renderVersions()}
    <h2>Rollouts</h2>
    <div class="filters">
      <label>task ${select("f-task", uniq(ROWS.map((r) => orNone(r.task))), state.task)}</label>
      <label>reward ${select("f-reward", rewardChoices(), state.reward)}</label>
      <label>stop reason ${select("f-stop", uniq(ROWS.map((r) => orNone(r.stop))), state.stop)}</label>
      <label>error ${select("f-error", uniq(ROWS.map((r) => r.error)).filter(Boolean).concat(["(any error)", "(no error)"]), state.error)}</label>
      ${versioned() ? `<label>policy version ${select("f-version", versionStats().map((v) => String(v.version)), state.version)}</label>` : ""}
      <label>search <input id="f-q" type="search" placeholder="text in messages" value="${esc(state.q)}"></label>
    </div>
    <div id="list"></div>`;
  for (const [id, key] of [["f-task", "task"], ["f-reward", "reward"], ["f-stop", "stop"], ["f-error", "error"], ["f-version", "version"]]) {
    if (!document.getElementById(id)) continue;  // the version filter exists only when rollouts carry versions
    document.getElementById(id).addEventListener("change", (e) => { state[key] = e.target.value; state.page = 0; renderList(); });
  }
  document.getElementById("f-q").addEventListener("input", (e) => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => { state.q = e.target.value; state.page = 0; renderList(); }, 200);
  });
  renderList();
}

const NONE = "(none)";  // the filter value of an empty task or stop reason
const orNone = (v) => (v === "" || v === null || v === undefined ? NONE : v);
function select(id, values, current) {
  const opts = ["", ...values].map((v) => `<option value="${esc(v)}"${v === current ? " selected" : ""}>${v === "" ? "(all)" : esc(v)}</option>`);
  return `<select id="${id}">${opts.join("")}</select>`;
}
function rewardChoices() {
  const values = uniq(ROWS.map((r) => r.reward));
  return ["> 0", "= 0", "< 0", ...(values.length <= 12 ? values.map((v) => "= " + v) : [])].filter((c, k, a) => a.indexOf(c) === k);
}
function rewardOk(r, choice) {
  if (!choice) return true;
  const [op, v] = choice.split(" "), x = Number(v);
  return op === ">" ? r.reward > x : op === "<" ? r.reward < x : r.reward === x;
}

// Search reads each rollout's own text block (message contents, reasoning, tool arguments), lowercased when
// written; the matches of a query are kept, so paging and other filters do not search again.
function searchText(i) {
  return CHUNKS ? chunkStore.get("rg-s-" + i) : JSON.parse(document.getElementById("rg-s-" + i).textContent);
}
function hits() {
  if (!state.hits || state.hits.q !== state.q) {
    const needle = state.q.toLowerCase();
    state.hits = { q: state.q, set: new Set(ROWS.filter((r) => searchText(r.i).includes(needle)).map((r) => r.i)) };
  }
  return state.hits.set;
}
function filtered() {
  const found = state.q ? hits() : null;
  return ROWS.filter((r) => (!state.task || orNone(r.task) === state.task) && (!state.stop || orNone(r.stop) === state.stop) && rewardOk(r, state.reward)
    && (!state.error || (state.error === "(any error)" ? !!r.error : state.error === "(no error)" ? !r.error : r.error === state.error))
    && (!state.version || String(r.version) === state.version)
    && (!found || found.has(r.i)));
}

// Training: the rollouts of each weights version (the version of their oldest sampled token), with reward, tool-call
// success and sampled tokens per version, when the rollouts carry versions (asynchronous RL, a trainer's steps).
const versioned = () => ROWS.some((r) => r.version !== null && r.version !== undefined);
function versionStats() {
  const by = new Map();
  for (const r of ROWS) {
    if (r.version === null || r.version === undefined) continue;
    if (!by.has(r.version)) by.set(r.version, []);
    by.get(r.version).push(r);
  }
  return [...by.keys()].sort((a, b) => a - b).map((v) => {
    const rs = by.get(v), calls = sum(rs.map((r) => r.calls)), failed = sum(rs.map((r) => r.failed));
    return { version: v, rollouts: rs.length, reward: sum(rs.map((r) => r.reward)) / rs.length,
      success: calls ? (calls - failed) / calls : null, sampled: sum(rs.map((r) => r.sampled)) / rs.length };
  });
}
function renderVersions() {
  if (!versioned()) return "";
  const stats = versionStats(), withCalls = stats.filter((s) => s.success !== null);
  return `<h2>By policy version</h2><section id="by-version">
    <table id="versions"><thead><tr><th>version</th><th>rollouts</th><th>reward mean</th><th>tool-call success</th><th>sampled tokens mean</th></tr></thead>
    <tbody>${stats.map((s) => `<tr class="version" data-version="${s.version}"><td class="num">${s.version}</td><td class="num">${s.rollouts}</td>
      <td class="num">${fmt(s.reward)}</td><td class="num">${fmt(s.success)}</td><td class="num">${fmt(s.sampled, 1)}</td></tr>`).join("")}</tbody></table>
    <div class="plots">
      ${plot("Reward by policy version", scatter(stats.map((s) => [s.version, s.reward]), "version", "reward mean"), `${stats.length} versions`)}
      ${plot("Tool-call success by policy version", scatter(withCalls.map((s) => [s.version, s.success]), "version", "success"), `${withCalls.length} versions with tool calls`)}
      ${plot("Sampled tokens by policy version", scatter(stats.map((s) => [s.version, s.sampled]), "version", "tokens"), "mean per rollout")}
    </div></section>`;
}

async function renderList() {
  const list = document.getElementById("list");
  if (!list) return;
  if (state.q && CHUNKS && (!state.hits || state.hits.q !== state.q)) {  // a new search: load every text chunk first
    list.innerHTML = `<p id="count">searching ${ROWS.length} rollouts…</p>`;
    try { await need(ROWS.map((r) => "rg-s-" + r.i)); } catch (err) { if (list.isConnected) list.innerHTML = `<div class="errorbox">${esc(err.message)}</div>`; return; }
    if (!list.isConnected) return;  // the reader went elsewhere meanwhile
  }
  const rows = filtered(), pages = Math.max(1, Math.ceil(rows.length / PAGE));
  state.page = Math.min(state.page, pages - 1);
  const shown = rows.slice(state.page * PAGE, (state.page + 1) * PAGE);
  const groups = groupIndex();
  list.innerHTML = `
    <div class="pager"><span id="count">${rows.length} of ${ROWS.length} rollouts</span>
      <button id="prev"${state.page === 0 ? " disabled" : ""}>‹ previous</button>
      <span>page ${state.page + 1} of ${pages}</span>
      <button id="next"${state.page >= pages - 1 ? " disabled" : ""}>next ›</button></div>
    <table id="rollouts"><thead><tr><th>#</th><th>task</th><th>sample</th><th>reward</th><th>stop reason</th><th>error</th>
      <th>turns</th><th>tool calls (failed)</th><th>sampled / env tokens</th><th>wall s</th><th></th></tr></thead>
    <tbody>${shown.map((r) => {
      const other = (groups.get(groupKey(r)) || []).find((j) => j !== r.i);
      return `<tr class="rollout${r.error ? " err" : ""}" data-i="${r.i}"><td><a href="#/r/${r.i}">${r.i}</a></td><td>${esc(r.task || (r.session ? `session ${r.session}${r.segment === null || r.segment === undefined ? "" : ` · segment ${r.segment}`}` : ""))}</td>
        <td class="num">${r.sample}</td><td class="num">${fmt(r.reward)}</td><td>${esc(r.stop)}</td><td>${r.error ? `<span class="badge bad">${esc(r.error)}</span>` : ""}</td>
        <td class="num">${r.turns}</td><td class="num">${r.calls} (${r.failed})</td><td class="num">${r.sampled} / ${r.env}</td>
        <td class="num">${fmt(r.wall_s, 1)}</td><td>${other !== undefined ? `<a href="#/cmp/${r.i}/${other}">compare</a>` : ""}</td></tr>`;
    }).join("")}</tbody></table>`;
  document.getElementById("prev").onclick = () => { state.page--; renderList(); };
  document.getElementById("next").onclick = () => { state.page++; renderList(); };
}

// A GRPO group: the rollouts of one task (its group id, else its task id); rollouts with neither are not grouped.
const groupKey = (r) => r.group || r.task || "";
let _groups = null;
function groupIndex() {
  if (!_groups) {
    _groups = new Map();
    for (const r of ROWS) {
      const k = groupKey(r);
      if (!k) continue;
      if (!_groups.has(k)) _groups.set(k, []);
      _groups.get(k).push(r.i);
    }
  }
  return _groups;
}

// ---- plots (inline SVG) ----------------------------------------------------------------------------
function plot(title, svg, caption) { return `<div class="plot"><h3>${esc(title)}</h3>${svg}<div class="cap">${caption}</div></div>`; }
const W = 320, H = 160, PAD = 28;
function axes(xlabel, ylabel, xmin, xmax, ymax) {
  return `<line x1="${PAD}" y1="${H - PAD}" x2="${W - 6}" y2="${H - PAD}" stroke="#9ca3af"/><line x1="${PAD}" y1="8" x2="${PAD}" y2="${H - PAD}" stroke="#9ca3af"/>
    <text x="${PAD}" y="${H - 12}" font-size="10">${fmt(xmin, 2)}</text><text x="${W - 6}" y="${H - 12}" font-size="10" text-anchor="end">${fmt(xmax, 2)}</text>
    <text x="${(W + PAD) / 2}" y="${H - 2}" font-size="10" text-anchor="middle">${esc(xlabel)}</text>
    <text x="${PAD - 3}" y="14" font-size="10" text-anchor="end">${fmt(ymax, 0)}</text><text x="4" y="${H / 2}" font-size="10" transform="rotate(-90 8 ${H / 2})">${esc(ylabel)}</text>`;
}
function histogram(values, xlabel, integer = false) {
  if (!values.length) return "<svg></svg>";
  let lo = Math.min(...values), hi = Math.max(...values);
  if (lo === hi) { lo -= 0.5; hi += 0.5; }
  const n = integer ? Math.min(30, Math.round(hi - lo) + 1) : 20, width = (hi - lo) / n;
  const bins = new Array(n).fill(0);
  for (const v of values) bins[Math.min(n - 1, Math.floor((v - lo) / width))]++;
  const top = Math.max(...bins), bw = (W - PAD - 8) / n;
  const bars = bins.map((c, k) => {
    const h = (c / top) * (H - PAD - 10);
    return `<rect x="${PAD + 1 + k * bw}" y="${H - PAD - h}" width="${Math.max(1, bw - 1)}" height="${h}" fill="#2563eb"><title>${fmt(lo + k * width, 2)}–${fmt(lo + (k + 1) * width, 2)}: ${c}</title></rect>`;
  });
  return `<svg viewBox="0 0 ${W} ${H}" role="img">${axes(xlabel, "rollouts", lo, hi, top)}${bars.join("")}</svg>`;
}
function scatter(points, xlabel, ylabel) {
  if (!points.length) return "<svg></svg>";
  const step = Math.max(1, Math.ceil(points.length / 2000)); // at most 2,000 dots
  const xs = points.map((p) => p[0]), ys = points.map((p) => p[1]);
  const xmax = Math.max(...xs, 1e-9), ymax = Math.max(...ys, 1e-9);
  const dots = [];
  for (let k = 0; k < points.length; k += step) {
    const [x, y] = points[k];
    dots.push(`<circle cx="${PAD + 2 + (x / xmax) * (W - PAD - 12)}" cy="${H - PAD - 2 - (y / ymax) * (H - PAD - 12)}" r="2.5" fill="#2563eb" fill-opacity=".5"/>`);
  }
  return `<svg viewBox="0 0 ${W} ${H}" role="img">${axes(xlabel, ylabel, 0, xmax, ymax)}${dots.join("")}</svg>`;
}

// ---- one rollout ------------------------------------------------------------------------------------
function renderRollout(i) {
  const d = detail(i), row = ROWS[i];
  const siblings = (groupIndex().get(groupKey(row)) || []).filter((j) => j !== i);
  app.innerHTML = `
    <p><a href="#/">‹ all rollouts</a> ${i > 0 ? `· <a href="#/r/${i - 1}">previous</a>` : ""} ${i + 1 < ROWS.length ? `· <a href="#/r/${i + 1}">next</a>` : ""}</p>
    <h1>Rollout ${i}: ${esc(d.task)} · sample ${d.sample}</h1>
    ${header(d, row)}
    ${siblings.length ? `<p>Same task (GRPO group): ${siblings.map((j) => `<a href="#/cmp/${i}/${j}">compare with sample ${ROWS[j].sample} (reward ${fmt(ROWS[j].reward)})</a>`).join(" · ")}</p>` : ""}
    <h2>Token strip</h2>
    ${legend()}
    <div id="strip-${i}" class="strip"></div>
    <h2>Conversation</h2>
    <div id="conversation">${conversation(d)}</div>`;
  fillStrip(document.getElementById("strip-" + i), i);
}

function header(d, row) {
  const comps = Object.entries(d.reward_components || {});
  const t = d.timings || {};
  const meta = d.meta || {};
  return `
    ${d.error ? `<div class="errorbox" id="error"><b>${esc(d.error.category)} error</b> (${esc(d.error.type)}${d.error.turn !== null && d.error.turn !== undefined ? `, turn ${d.error.turn}` : ""}): ${esc(d.error.message)}</div>` : ""}
    <div class="cards">
      ${card("reward", fmt(d.reward))}${card("stop reason", esc(d.stop || "–"))}${card("turns", row.turns)}
      ${card("tool calls (failed)", `${row.calls} (${row.failed})`)}${card("sampled / env tokens", `${row.sampled} / ${row.env}`)}
      ${card("token exact", d.token_exact ? '<span class="badge ok">yes</span>' : '<span class="badge bad">no</span>')}
    </div>
    <table class="kv"><tbody>
      ${comps.length ? `<tr><td>reward components</td><td>${comps.map(([k, v]) => `${esc(k)} = ${fmt(v)}`).join(", ")}</td></tr>` : ""}
      <tr><td>timings (s)</td><td>wall ${fmt(t.wall_s, 2)} · engine ${fmt(t.generate_s, 2)} · tools ${fmt(t.env_s, 2)} · reset ${fmt(t.reset_s, 2)}</td></tr>
      <tr><td>model · engine</td><td>${esc(d.model)} · ${esc(d.engine)}</td></tr>
      <tr><td>environment</td><td>${esc(d.env)} · tools: ${esc((d.tools || []).join(", ") || "none")}</td></tr>
      <tr><td>sampling</td><td>${esc(JSON.stringify(d.sampling || {}))}</td></tr>
      ${d.limits && Object.keys(d.limits).length ? `<tr><td>limits</td><td>${esc(JSON.stringify(d.limits))}</td></tr>` : ""}
      ${meta.proxy_session ? `<tr><td>proxy session</td><td>${esc(meta.proxy_session)} · segment ${esc(meta.segment)}: ${esc(meta.segment_reason || "continued")}</td></tr>` : ""}
      <tr><td>rollout id</td><td>${esc(d.id)}</td></tr>
    </tbody></table>`;
}

function legend() {
  return `<div class="legend"><span><span class="sw" style="background:hsl(120,70%,82%)"></span>sampled, likely</span>
    <span><span class="sw" style="background:hsl(0,70%,82%)"></span>sampled, unlikely (shade = sampling probability)</span>
    <span><span class="sw" style="background:#e5e7eb"></span>environment (env_mask 0)</span><span><span class="sw" style="background:#f3f4f6"></span>prompt</span>
    <span><span class="mk turn">turn</span><span class="mk bridge">bridge</span><span class="mk segment">proxy segment</span><span class="mk version">weights version</span> where each begins</span>
    <span>hover a token for its id and logprob</span></div>`;
}

function tokenText(id) {
  const t = VOCAB[id];
  if (t === undefined) return `⟨${id}⟩`;
  if (t === "") return "∅";
  return t.replace(/\n/g, "↵\n").replace(/\t/g, "→\t");
}
function shade(lp) { const p = Math.exp(lp ?? 0); return `hsl(${Math.round(120 * p)},70%,82%)`; }

// A stored strip is per turn (sampled ids, logprobs in milli-nats, bridge ids): rebuild TRL's view and the marks.
function expand(stored) {
  const s = { ids: [], logprobs: [], mask: [], marks: [] };
  if (stored.segment) s.marks.push({ pos: 0, kind: "segment", label: stored.segment });
  for (const t of stored.turns) {
    const start = s.ids.length;
    s.marks.push({ pos: start, kind: "turn", label: `turn ${t.index}: sampled, ${t.finish}${t.v === undefined ? "" : `, weights v${t.v}`}` });
    for (const [at, v] of t.vc || []) s.marks.push({ pos: start + (at ?? 0), kind: "version", label: `weights v${v}${at === null ? " (somewhere in this turn)" : ""}` });
    for (let k = 0; k < t.ids.length; k++) { s.ids.push(t.ids[k]); s.logprobs.push(t.lp[k] / 1000); s.mask.push(1); }
    if (t.bridge.length) {
      s.marks.push({ pos: s.ids.length, kind: "bridge", label: `turn ${t.index}: environment reply` });
      for (const id of t.bridge) { s.ids.push(id); s.logprobs.push(0); s.mask.push(0); }
    }
  }
  return s;
}

function fillStrip(el, i) {
  const stored = strip(i), s = expand(stored), p = prompt(stored.prompt) || [];
  const marks = new Map(s.marks.map((m) => [m.pos, []]));
  for (const m of s.marks) marks.get(m.pos).push(m);
  const parts = [`<details class="prompt"><summary>prompt: ${p.length} ids (environment)</summary>`];
  for (let k = 0; k < p.length; k++) parts.push(`<span class="tk p" data-k="p${k}">${esc(tokenText(p[k]))}</span>`);
  parts.push("</details>");
  for (let k = 0; k < s.ids.length; k++) {
    for (const m of marks.get(k) || []) parts.push(`<span class="mk ${m.kind}" title="${esc(m.label)}">${esc(m.label)}</span>`);
    parts.push(s.mask[k] ? `<span class="tk s" data-k="${k}" style="background:${shade(s.logprobs[k])}">${esc(tokenText(s.ids[k]))}</span>`
      : `<span class="tk e" data-k="${k}">${esc(tokenText(s.ids[k]))}</span>`);
  }
  for (const m of marks.get(s.ids.length) || []) parts.push(`<span class="mk ${m.kind}" title="${esc(m.label)}">${esc(m.label)}</span>`);
  el.innerHTML = parts.join("");
  const sampled = sum(s.mask);
  el.dataset.sampled = sampled; el.dataset.environment = s.ids.length - sampled; el.dataset.prompt = p.length;
  el.insertAdjacentHTML("beforebegin", `<p class="stripcount">${p.length} prompt ids · ${sampled} sampled (env_mask 1) · ${s.ids.length - sampled} environment (env_mask 0)</p>`);
  el.addEventListener("mouseover", (e) => {
    const tk = e.target.closest(".tk");
    if (!tk) return;
    const k = tk.dataset.k, isPrompt = k[0] === "p", n = isPrompt ? +k.slice(1) : +k;
    const id = isPrompt ? p[n] : s.ids[n];
    const kind = isPrompt ? "prompt" : s.mask[n] ? "sampled (env_mask 1)" : "environment (env_mask 0)";
    const lp = !isPrompt && s.mask[n] ? s.logprobs[n] : null;
    tip.textContent = `id ${id}  ${JSON.stringify(VOCAB[id] ?? null)}\n${kind}, position ${isPrompt ? n : p.length + n}` +
      (lp !== null && lp !== undefined ? `\nlogprob ${lp.toFixed(3)}  (p = ${Math.exp(lp).toFixed(3)})` : "");
    tip.hidden = false;
    const r = tk.getBoundingClientRect();
    tip.style.left = Math.min(r.left, window.innerWidth - 430) + "px";
    tip.style.top = (r.bottom + 6) + "px";
  });
  el.addEventListener("mouseleave", () => { tip.hidden = true; });
}

function content(c) {
  if (c === null || c === undefined) return "";
  if (typeof c === "string") return c;
  if (Array.isArray(c)) return c.map((part) => (typeof part === "string" ? part : part.text ?? JSON.stringify(part))).join("");
  return JSON.stringify(c);
}
function message(m, calls) {
  const role = m.role || "?";
  const reasoning = m.reasoning_content || m.reasoning;
  const toolCalls = (m.tool_calls || []).map((tc) => {
    const rec = calls && calls.find((c) => c.id === tc.id);
    return renderCall(tc.function ? tc.function.name : tc.name, tc.function ? tc.function.arguments : tc.arguments, rec);
  });
  const name = role === "tool" && m.name ? ` · ${esc(m.name)}` : "";
  const failed = role === "tool" && calls && calls.some((c) => c.id === m.tool_call_id && c.failed);
  return `<div class="msg ${esc(role)}${failed ? " failedresult" : ""}"><div class="role">${esc(role)}${name}${failed ? ' <span class="badge bad">failed</span>' : ""}</div>
    ${reasoning ? `<pre class="reasoning">${esc(reasoning)}</pre>` : ""}${content(m.content) ? `<pre>${esc(content(m.content))}</pre>` : ""}${toolCalls.join("")}</div>`;
}
function renderCall(name, args, rec) {
  let shown = args;
  try { shown = JSON.stringify(typeof args === "string" ? JSON.parse(args) : args, null, 2); } catch (_) { /* not JSON: show as sent */ }
  const failed = rec && rec.failed;
  return `<div class="call${failed ? " failed" : ""}"><b>${esc(name)}</b>${failed ? ' <span class="badge bad">failed</span>' : rec ? ' <span class="badge ok">executed</span>' : ""}
    ${rec ? ` <span class="cap">${fmt(rec.duration_s, 2)} s</span>` : ""}<pre>${esc(shown)}</pre></div>`;
}
// The weights that sampled a turn (asynchronous RL): its version, and any that took over inside it.
function versionNote(t) {
  if (t.policy_version === null || t.policy_version === undefined) return "";
  const changes = (t.version_changes || []).map((c) => ` → v${c.version}${c.at === null ? " (inside)" : ` at id ${c.at}`}`).join("");
  return ` · <span class="version">weights v${t.policy_version}${changes}</span>`;
}
function conversation(d) {
  const out = (d.initial_messages || []).map((m) => message(m, null));
  for (const t of d.turns) {
    out.push(`<div class="turnhead">Turn ${t.index} · ${t.n_sampled} ids sampled (${esc(t.finish_reason)}) · ${t.n_bridge} environment ids · engine ${fmt(t.generate_s, 2)} s · tools ${fmt(t.env_s, 2)} s${t.reward ? ` · reward ${fmt(t.reward)}` : ""}${versionNote(t)}</div>`);
    if (t.message && Object.keys(t.message).length) out.push(message(t.message, t.tool_calls));
    for (const e of t.parse_errors || []) out.push(`<div class="errorbox">could not parse a tool call: ${esc(e)}</div>`);
    for (const m of t.env_messages || []) out.push(message(m, t.tool_calls));
  }
  return out.join("");
}

// ---- two samples of one task ---------------------------------------------------------------------------
function renderCompare(a, b) {
  const col = (i) => {
    const d = detail(i), row = ROWS[i];
    return `<div class="cmpcol" data-i="${i}"><h2><a href="#/r/${i}">Rollout ${i}</a>: sample ${d.sample}, reward ${fmt(d.reward)}</h2>
      ${header(d, row)}<h3>Token strip</h3><div id="strip-${i}" class="strip"></div><h3>Conversation</h3>${conversation(d)}</div>`;
  };
  app.innerHTML = `<p><a href="#/">‹ all rollouts</a></p><h1>${esc(ROWS[a].task)}: two samples side by side</h1>${legend()}
    <div class="cols">${col(a)}${col(b)}</div>`;
  fillStrip(document.getElementById("strip-" + a), a);
  fillStrip(document.getElementById("strip-" + b), b);
}

route();
