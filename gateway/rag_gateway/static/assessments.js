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

  // Where a question comes from, shown beside it: its own source field when it carries one, else
  // its citations (file, section, page).
  function sourceOf(q) {
    const own = q.source;
    if (own && typeof own === "object") return where(own);
    if (typeof own === "string" && own) return own;
    return [...new Set(q.citations.map(where))].join("; ");
  }

  let current = null; // the paper shown, for its edit buttons

  // "Remove" and "Rewrite", named "Remove question 2" and "Rewrite question 2" for a screen reader.
  function editButton(verb, number, action) {
    const button = el("button", { type: "button", className: "secondary edit" }, verb,
      el("span", { className: "visually-hidden", textContent: ` question ${number}` }));
    button.addEventListener("click", () => action(number));
    return button;
  }

  function editButtons(number) {
    return el("div", { className: "edits" },
      editButton("Remove", number, removeQuestion), editButton("Rewrite", number, rewriteQuestion));
  }

  function question(q, number) {
    const li = el("li", { className: `question ${q.kind}` });
    const head = el("div", { className: "head" }, el("p", { className: "stem", textContent: q.stem }));
    const source = sourceOf(q);
    if (source) head.append(el("p", { className: "where", textContent: `Source: ${source}` }));
    li.append(head);
    li.append(el("p", { className: "meta", textContent: `${q.kind} · ${q.bloom} · ${q.difficulty} · ${q.marks} mark${q.marks === 1 ? "" : "s"}` }));
    if (q.options.length) {
      // The key says so in words (read out too), not by its weight or colour alone.
      li.append(el("ol", { className: "options" }, ...q.options.map((o, i) => i === q.answer_index
        ? el("li", { className: "key" }, el("span", { textContent: o }), " ",
          el("strong", { className: "key-mark", textContent: "(correct answer)" }))
        : el("li", { textContent: o }))));
    }
    li.append(el("details", {}, el("summary", { textContent: "Answer and source" }),
      el("p", { className: "answer", textContent: q.answer }),
      ...q.citations.map((c) => el("p", { className: "source", textContent: `Source: ${where(c)}` }))));
    li.append(editButtons(number));
    return li;
  }

  function showPaper(state) {
    current = state;
    const n = state.questions.length;
    const edits = state.edits || [];
    // The summary is the paper as it was made; the teacher's changes since are listed below it.
    const since = edits.length ? ` Since then: ${edits.length} change${edits.length === 1 ? "" : "s"} (below).` : "";
    $("a-status").textContent = `Done: ${n} question${n === 1 ? "" : "s"}. ${state.summary || ""}${since}`.trim();
    $("a-progress").hidden = true;
    const marks = state.questions.reduce((sum, q) => sum + q.marks, 0);
    $("a-total").textContent = `Total: ${marks} mark${marks === 1 ? "" : "s"}`;
    $("a-total").hidden = false;
    // What the paper lacks, per question type, in marks, and why each question is missing.
    const KINDS = { mcq: "multiple-choice", short: "short-answer", long: "long-answer" };
    $("a-shortfall").replaceChildren(...(state.shortfall || []).map((g) => el("li", {},
      el("p", { textContent: `${g.missing} of ${g.requested} ${KINDS[g.kind] || g.kind} missing ` +
        `(${g.marks_missing} mark${g.marks_missing === 1 ? "" : "s"})` }),
      el("ul", {}, ...g.reasons.map((r) => el("li", { className: "why", textContent: r }))))));
    $("a-shortfall").hidden = !(state.shortfall || []).length;
    $("a-edits").replaceChildren(...edits.map((e) => el("li", { textContent: e })));
    $("a-edits").hidden = !edits.length;
    $("a-questions").replaceChildren(...state.questions.map((q, i) => question(q, i + 1)));
    for (const [id, format] of [["a-json", "json"], ["a-markdown", "markdown"], ["a-gift", "gift"], ["a-moodle", "moodle"]]) {
      $(id).href = `/v1/assessments/${state.id}/export?format=${format}`;
    }
    $("a-downloads").hidden = false;
  }

  function editing(on) {
    for (const b of document.querySelectorAll("#a-questions button.edit")) b.disabled = on;
    $("a-make").disabled = on;
  }

  function editFailed(body, response) {
    const error = (body && body.error) || {};
    $("a-error").textContent = `${error.message || `HTTP ${response.status}`} (request ${error.request_id || "?"})`;
  }

  async function removeQuestion(number) {
    $("a-error").textContent = "";
    editing(true);
    try {
      const response = await api(`/v1/assessments/${current.id}/questions/${number}`, { method: "DELETE" });
      const body = await response.json();
      if (!response.ok) { editFailed(body, response); return; }
      showPaper(body);
    } catch (exc) {
      $("a-error").textContent = String(exc);
    } finally {
      editing(false);
    }
  }

  async function rewriteQuestion(number) {
    $("a-error").textContent = "";
    editing(true);
    try {
      const response = await api(`/v1/assessments/${current.id}/questions/${number}/rewrite`, { method: "POST" });
      const body = await response.json();
      if (response.status !== 202) { editFailed(body, response); return; }
      $("a-status").textContent = `Writing question ${number} again…`;
      $("a-downloads").hidden = true; // the exports wait for the new question
      await follow(body.id);
    } catch (exc) {
      $("a-error").textContent = String(exc);
    } finally {
      editing(false);
    }
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
    $("a-edits").replaceChildren();
    $("a-edits").hidden = true;
    $("a-total").hidden = true;
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
