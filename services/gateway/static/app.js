// Progressive enhancement of the server-rendered pages: the live chunk list
// (server-sent events), instant filters, one chunk detail at a time on the
// file page, candidate sorting and thresholds. Every HTML fragment inserted
// here was rendered (and escaped) by the server; data from the project is
// only ever set as text.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

function fragment(html) {
  const t = document.createElement("template");
  t.innerHTML = html.trim();
  return t.content.firstElementChild;
}

// ------------------------------------------------------------------ analysis page

function chunkFilter(form) {
  const f = new FormData(form);
  return {status: f.get("status") || "", signal: f.get("signal") || "", file: f.get("file") || "", migration: f.get("migration") || ""};
}

function keeps(tr, f) {
  const d = tr.dataset;
  return (!f.status || d.status === f.status) && (!f.signal || d.signal === f.signal) && (!f.file || d.file === f.file)
    && (!f.migration || d.migration === f.migration);
}

function applyFilter(form) {
  const f = chunkFilter(form);
  let shown = 0;
  const rows = $$("#chunk-table tbody tr[data-chunk]");
  for (const tr of rows) {
    tr.hidden = !keeps(tr, f);
    if (!tr.hidden) shown++;
  }
  $("#shown-count").textContent = `${shown} of ${rows.length} shown`;
  const q = new URLSearchParams(Object.entries(f).filter(([, v]) => v)).toString();
  for (const a of $$(".export a", form)) a.search = q ? "?" + q : "";
  if (location.search !== (q ? "?" + q : "")) history.replaceState(null, "", location.pathname + (q ? "?" + q : "") + location.hash);
}

function placeRow(tbody, tr) {
  const old = $(`tr[data-chunk="${CSS.escape(tr.dataset.chunk)}"]`, tbody);
  if (old) { old.replaceWith(tr); return; }
  const after = $$("tr[data-chunk]", tbody).find((r) => r.dataset.order > tr.dataset.order);
  tbody.insertBefore(tr, after || null);
}

function liveList(root) {
  const aid = root.dataset.analysis;
  const form = $("#chunk-filter");
  form.addEventListener("change", () => applyFilter(form));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); applyFilter(form); });
  if (root.dataset.status !== "running") return;
  const tbody = $("#chunk-table tbody");
  const since = root.dataset.cursor ? "?since=" + encodeURIComponent(root.dataset.cursor) : "";
  const es = new EventSource(`/a/${encodeURIComponent(aid)}/events${since}`);
  root.dataset.live = "open";
  es.addEventListener("chunks", (ev) => {
    const f = chunkFilter(form);
    for (const item of JSON.parse(ev.data)) {
      const tr = fragment(item.html);
      tr.hidden = !keeps(tr, f);
      tr.classList.add("flash");
      placeRow(tbody, tr);
    }
    applyFilter(form);
  });
  es.addEventListener("files", (ev) => {
    for (const item of JSON.parse(ev.data)) {
      const old = $(`.fmeta[data-file="${CSS.escape(item.path)}"]`);
      if (old) old.replaceWith(fragment(item.html));
    }
  });
  es.addEventListener("progress", (ev) => {
    const p = JSON.parse(ev.data);
    for (const [k, v] of Object.entries(p.counts || {})) {
      const dd = $(`dd[data-count="${k}"]`);
      if (dd) dd.textContent = String(v);
    }
    for (const k of ["throughput", "eta", "elapsed"]) {
      const dd = $(`dd[data-progress="${k}"]`);
      if (dd) dd.textContent = p[k];
    }
    $("#p-bar").value = p.percent;
  });
  es.addEventListener("end", async () => {
    es.close();
    root.dataset.live = "ended";
    root.dataset.status = "done";
    $("#live-state").textContent = "Finished.";
    const r = await fetch(`/a/${encodeURIComponent(aid)}/part/verdict`);
    if (r.ok) $("#verdict").innerHTML = await r.text();
    const badge = $("h1 .badge");
    if (badge) { badge.className = "badge b-done"; badge.textContent = "done"; }
  });
  es.onerror = () => { root.dataset.live = "reconnecting"; };
  es.onopen = () => { root.dataset.live = "open"; };
}

// ------------------------------------------------------------------ file page

function parseRange(hash) {
  const m = /^#?L(\d+)(?:-L?(\d+))?$/.exec(hash);
  if (!m) return null;
  const start = Number(m[1]);
  return [start, Number(m[2] || start)];
}

function selectChunk(initial) {
  const segs = $$(".seg.chunk");
  const note = $("#range-note");
  note.hidden = true;
  for (const el of $$(".seg.current, .chunk-detail.current")) el.classList.remove("current");
  const range = parseRange(location.hash);
  if (!range) return;
  const name = `L${range[0]}-L${range[1]}`;
  let seg = segs.find((s) => s.dataset.range === name);
  if (!seg) {
    seg = segs.find((s) => {
      const [a, b] = parseRange(s.dataset.range);
      return a <= range[0] && range[0] <= b;
    });
    note.textContent = seg
      ? `No chunk spans exactly ${name} in this analysis (the file or its chunking changed): showing ${seg.dataset.range}, the chunk that holds line ${range[0]}.`
      : `No chunk of this analysis covers ${name}.`;
    note.hidden = false;
  }
  if (!seg) return;
  seg.classList.add("current");
  const detail = document.getElementById("detail-" + seg.dataset.range);
  if (detail) detail.classList.add("current");
  if (initial || !seg.matches(":target")) seg.scrollIntoView({block: "nearest"});
}

function filePage() {
  window.addEventListener("hashchange", () => selectChunk(false));
  selectChunk(true);
  document.addEventListener("keydown", (ev) => {
    if (ev.target.closest("input, textarea, select") || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key !== "j" && ev.key !== "k") return;
    const segs = $$(".seg.chunk");
    const i = segs.findIndex((s) => s.classList.contains("current"));
    const next = segs[ev.key === "j" ? Math.min(segs.length - 1, i + 1) : Math.max(0, i - 1)];
    if (next) { location.hash = next.dataset.range; $(".seg-head", next).focus(); }
  });
}

// ------------------------------------------------------------------ candidate tables

function sortValue(tr, key) {
  if (key === "table" || key === "record" || key === "title") return tr.dataset[key] || "";
  const v = tr.dataset[key];
  return v === "" || v === undefined ? null : Number(v);
}

function candidateTable(table) {
  const tbody = $("tbody", table);
  for (const btn of $$("th button[data-sort]", table)) {
    btn.addEventListener("click", () => {
      const key = btn.dataset.sort;
      const th = btn.closest("th");
      const text = key === "table" || key === "record" || key === "title" || key === "position";
      const desc = th.getAttribute("aria-sort") ? th.getAttribute("aria-sort") === "ascending" : !text;
      for (const other of $$("th[aria-sort]", table)) other.removeAttribute("aria-sort");
      th.setAttribute("aria-sort", desc ? "descending" : "ascending");
      const rows = $$("tr", tbody);
      rows.sort((a, b) => {
        const x = sortValue(a, key), y = sortValue(b, key);
        if (x === null && y === null) return 0;
        if (x === null) return 1;
        if (y === null) return -1;
        const c = typeof x === "string" ? x.localeCompare(y) : x - y;
        return desc ? -c : c;
      });
      for (const r of rows) tbody.appendChild(r);
    });
  }
  const tools = table.previousElementSibling;
  const min = tools && $(".cand-min", tools);
  const shown = tools && $(".cand-shown", tools);
  if (!min) return;
  const apply = () => {
    const m = Number(min.value || 0);
    let n = 0;
    const rows = $$("tr", tbody);
    for (const r of rows) { r.hidden = Number(r.dataset.fused) < m; if (!r.hidden) n++; }
    shown.textContent = `${n} of ${rows.length} shown`;
  };
  min.addEventListener("input", apply);
  apply();
}

// ------------------------------------------------------------------ replay (file page)

function replayForm(form) {
  const status = $(".replay-status", form);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    const body = {stage: f.get("stage"), judge: f.get("judge"), prompt_version: f.get("prompt_version"),
                  limit_per_table: Number(f.get("limit_per_table") || 0), chunk_ids: [form.dataset.chunk]};
    status.textContent = "replaying...";
    form.dataset.state = "running";
    const resp = await fetch(`/api/analyses/${encodeURIComponent(form.dataset.analysis)}/replay`,
      {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
    const data = await resp.json();
    if (!resp.ok) { status.textContent = data.error || `failed (${resp.status})`; form.dataset.state = "refused"; return; }
    const chunk = data.chunks[0] || {};
    status.textContent = chunk.published
      ? `replay ${data.replay_id} started; message taken from the ${chunk.source}`
      : `already done by replay ${data.replay_id} (version ${data.judgment_version})`;
    let state = data;
    while (state.status === "running") {
      await new Promise((r) => setTimeout(r, 500));
      state = await (await fetch(`/api/replays/${encodeURIComponent(data.replay_id)}`)).json();
    }
    status.textContent = `replay ${state.status}: version ${state.judgment_version}; reload to see it`;
    form.dataset.state = state.status;
    form.dataset.version = state.judgment_version;
  });
}

document.addEventListener("DOMContentLoaded", () => {
  for (const f of $$("form.replay")) replayForm(f);
  const analysis = $("#analysis");
  if (analysis) liveList(analysis);
  if ($("#file")) filePage();
  for (const t of $$("table.candidates")) candidateTable(t);
});
