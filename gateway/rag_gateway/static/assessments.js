// The assessments page: make a paper from a collection, watch its progress, read it, download it.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const KEY_STORE = "rag-api-key"; // the chat page's key, if one was entered

  function api(path, options = {}) {
    const key = sessionStorage.getItem(KEY_STORE);
    const headers = { ...(options.headers || {}) };
    if (key) headers.authorization = `Bearer ${key}`;
    return fetch(path, { ...options, headers });
  }

  function el(tag, props = {}, ...children) {
    const node = document.createElement(tag);
    Object.assign(node, props);
    for (const child of children) node.append(child);
    return node;
  }

  async function loadCollections() {
    let names = ["default"];
    try {
      const response = await api("/v1/collections");
      if (response.ok) names = (await response.json()).collections.map((c) => c.name);
    } catch (_) { /* keep the default */ }
    $("a-collection").replaceChildren(...names.map((n) => el("option", { value: n, textContent: n })));
  }

  function number(id) {
    const value = $(id).value.trim();
    return value === "" ? null : Number(value);
  }

  function blueprint() {
    const body = {
      collection: $("a-collection").value || "default",
      units: $("a-units").value.split("\n").map((u) => u.trim()).filter(Boolean),
      counts: { mcq: number("a-mcq") || 0, short: number("a-short") || 0, long: number("a-long") || 0 },
      difficulty: $("a-difficulty").value,
      bloom_levels: [...document.querySelectorAll("input[name=bloom]:checked")].map((b) => b.value),
      seed: number("a-seed") || 0,
    };
    const marks = number("a-marks");
    if (marks !== null) body.total_marks = marks;
    return body;
  }

  function showProgress(state) {
    const p = state.progress || {};
    $("a-status").textContent = `Status: ${state.status}` + (p.total ? ` (${p.stage}, ${p.done}/${p.total})` : "");
    $("a-progress").hidden = false;
    $("a-progress").max = p.total || 1;
    $("a-progress").value = p.done || 0;
  }

  function where(c) {
    return [c.source, c.section, c.page != null ? `p. ${c.page}` : ""].filter(Boolean).join(", ");
  }

  function showPaper(state) {
    const n = state.questions.length;
    $("a-status").textContent = `Done: ${n} question${n === 1 ? "" : "s"}. ${state.summary || ""}`.trim();
    $("a-progress").hidden = true;
    // What the paper lacks, per question type, in marks, and why each question is missing.
    const KINDS = { mcq: "multiple-choice", short: "short-answer", long: "long-answer" };
    $("a-shortfall").replaceChildren(...(state.shortfall || []).map((g) => el("li", {},
      el("p", { textContent: `${g.missing} of ${g.requested} ${KINDS[g.kind] || g.kind} missing ` +
        `(${g.marks_missing} mark${g.marks_missing === 1 ? "" : "s"})` }),
      el("ul", {}, ...g.reasons.map((r) => el("li", { className: "why", textContent: r }))))));
    $("a-shortfall").hidden = !(state.shortfall || []).length;
    const items = state.questions.map((q) => {
      const li = el("li", { className: `question ${q.kind}` });
      li.append(el("p", { className: "stem", textContent: q.stem }));
      li.append(el("p", { className: "meta", textContent: `${q.kind} · ${q.bloom} · ${q.difficulty} · ${q.marks} marks` }));
      if (q.options.length) {
        li.append(el("ol", { className: "options" }, ...q.options.map((o, i) =>
          el("li", { textContent: o, className: i === q.answer_index ? "key" : "" }))));
      }
      const details = el("details", {}, el("summary", { textContent: "Answer and source" }),
        el("p", { className: "answer", textContent: q.answer }),
        ...q.citations.map((c) => el("p", { className: "source", textContent: `Source: ${where(c)}` })));
      li.append(details);
      return li;
    });
    $("a-questions").replaceChildren(...items);
    for (const [id, format] of [["a-json", "json"], ["a-markdown", "markdown"], ["a-gift", "gift"], ["a-moodle", "moodle"]]) {
      $(id).href = `/v1/assessments/${state.id}/export?format=${format}`;
    }
    $("a-downloads").hidden = false;
  }

  // Reads the assessment's event stream (fetch, so the API key can go in a header).
  async function follow(id) {
    const response = await api(`/v1/assessments/${id}/events`);
    if (!response.ok || !response.body) throw new Error(`events: HTTP ${response.status}`);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const event = (block.match(/^event: ?(.*)$/m) || [])[1] || "message";
        const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.replace(/^data: ?/, "")).join("\n");
        if (!data) continue;
        const payload = JSON.parse(data);
        if (event === "progress") showProgress(payload);
        else if (event === "done") { showPaper(payload); return; }
        else if (event === "error") {
          $("a-status").textContent = `Failed: ${payload.message}` + (payload.request_id ? ` (request ${payload.request_id})` : "");
          return;
        }
      }
    }
  }

  async function submit(event) {
    event.preventDefault();
    $("a-error").textContent = "";
    $("a-downloads").hidden = true;
    $("a-questions").replaceChildren();
    $("a-shortfall").replaceChildren();
    $("a-shortfall").hidden = true;
    $("a-make").disabled = true;
    try {
      const response = await api("/v1/assessments", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(blueprint()),
      });
      const body = await response.json();
      if (response.status !== 202) {
        const error = body.error || {};
        $("a-error").textContent = `${error.message || "failed"} (request ${error.request_id || "?"})`;
        return;
      }
      $("a-status").textContent = "Status: queued";
      await follow(body.id);
    } catch (exc) {
      $("a-error").textContent = String(exc);
    } finally {
      $("a-make").disabled = false;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("assess-form").addEventListener("submit", submit);
    loadCollections();
  });
})();
