// The chat page: plain JavaScript, no build step, talks only to the gateway that served it.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const FINAL = new Set(["indexed", "unchanged", "failed"]);
  const POLL_MS = 400;
  const POLL_LIMIT_MS = 10 * 60 * 1000;
  let sessionId = null;
  let controller = null;

  const KEY_STORE = "rag-api-key";

  // fetch() with the API key (if one was entered) as a bearer token: needed when the gateway has auth on.
  function api(path, options = {}) {
    const key = sessionStorage.getItem(KEY_STORE);
    const headers = { ...(options.headers || {}) };
    if (key) headers.authorization = `Bearer ${key}`;
    return fetch(path, { ...options, headers });
  }

  function randomId() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function el(tag, props = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props)) {
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("data-") || key.startsWith("aria-")) node.setAttribute(key, value);
      else node[key] = value;
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }

  async function errorMessage(response) {
    try {
      const body = await response.json();
      return body.error ? `${body.error.message} (${body.error.code})` : response.statusText;
    } catch {
      return `${response.status} ${response.statusText}`;
    }
  }

  // Server-sent events from a fetch() body: yields {event, data} with data parsed as JSON.
  async function* sseEvents(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (data.length) yield { event, data: JSON.parse(data.join("\n")) };
      }
    }
  }

  function collection() {
    return $("collection").value || "default";
  }

  // The collection's assistant name, from its profile (set by file or by the admin API).
  async function showAssistantName() {
    const name = collection();
    const response = await api(`/v1/collections/${encodeURIComponent(name)}/profile`).catch(() => null);
    const node = $("assistant-name");
    if (node && response && response.ok && name === collection()) node.textContent = (await response.json()).assistant_name;
  }

  function startConversation() {
    showAssistantName();
    sessionId = "web-" + randomId();
    $("turns").replaceChildren();
    $("turns").dataset.session = sessionId;
    $("session-info").textContent = `New conversation in “${collection()}”. Follow-up questions keep its context.`;
    $("question").focus();
  }

  let collectionsLoad = 0;

  async function loadCollections() {
    const mine = ++collectionsLoad; // only the latest load fills the picker
    const select = $("collection");
    const wanted = new URLSearchParams(location.search).get("collection") || select.value || "default";
    let names = [];
    try {
      const response = await api("/v1/collections");
      if (response.ok) names = (await response.json()).collections.map((c) => c.name);
    } catch {
      names = [];
    }
    if (mine !== collectionsLoad) return;
    if (!names.includes(wanted)) names.push(wanted);
    select.replaceChildren(...names.sort().map((n) => el("option", { value: n, text: n })));
    select.value = wanted;
    $("upload-collection").value ||= wanted;
  }

  function where(passage) {
    const parts = [passage.source];
    if (passage.section) parts.push(passage.section);
    if (passage.page) parts.push(`p. ${passage.page}`);
    return parts.join(" · ");
  }

  function showPassage(passage) {
    $("passage-title").textContent = `[${passage.n}] ${passage.source}`;
    $("passage-where").textContent = where(passage);
    $("passage-text").textContent = passage.text;
    $("passage-dialog").showModal();
  }

  function renderDone(turn, body) {
    turn.answer.textContent = body.answer;
    turn.answer.classList.remove("streaming");
    turn.answer.setAttribute("aria-busy", "false");
    $("answer-live").textContent = body.answer;

    const citations = el("ol", { class: "citations", "aria-label": "Citations" });
    for (const c of body.citations || []) {
      const button = el("button", {
        type: "button",
        class: "citation",
        "data-n": String(c.n),
        text: `[${c.n}] ${where(c)}`,
      });
      button.addEventListener("click", () => showPassage(c));
      citations.append(el("li", {}, button));
    }
    if (body.citations && body.citations.length) turn.details.append(el("h3", { class: "meta", text: "Sources" }), citations);

    const flags = el("ul", { class: "flags", "aria-label": "Flags" });
    for (const [name, raised] of Object.entries(body.flags || {})) {
      flags.append(el("li", { class: raised ? "flag raised" : "flag", "data-flag": name, text: `${name}: ${raised ? "yes" : "no"}` }));
    }
    turn.details.append(flags);
    for (const [name, detail] of Object.entries(body.flag_details || {})) {
      turn.details.append(el("p", { class: "meta", text: `${name}: ${JSON.stringify(detail)}` }));
    }

    const route = body.route || {};
    const timings = Object.entries(body.timings_ms || {})
      .map(([stage, ms]) => `${stage} ${Math.round(ms)} ms`)
      .join(", ");
    const meta = el("p", { class: "meta route" });
    meta.textContent =
      `Route: ${route.tier} (score ${route.score}) — ${route.reason || ""}. Model: ${body.model}. ` + `Timings: ${timings}.`;
    turn.details.append(meta);
    if (body.rewritten_question) {
      turn.details.append(el("p", { class: "meta", text: `Searched as: ${body.rewritten_question}` }));
    }
  }

  function addTurn(question) {
    const answer = el("div", { class: "answer streaming", "aria-busy": "true" });
    const details = el("div", { class: "details" });
    const status = el("p", { class: "meta status" });
    const item = el("li", { class: "turn" }, el("p", { class: "question", text: question }), answer, details, status);
    $("turns").append(item);
    return { item, answer, details, status };
  }

  function setBusy(busy) {
    $("ask").disabled = busy;
    $("stop").disabled = !busy;
  }

  function finish(mine) {
    if (controller !== mine) return; // a newer question owns the buttons now
    controller = null;
    setBusy(false);
  }

  async function ask(question) {
    $("ask-error").textContent = "";
    const turn = addTurn(question);
    const mine = new AbortController();
    controller = mine;
    setBusy(true);
    try {
      const response = await api("/v1/query/stream", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify({ question, collection: collection(), session_id: sessionId }),
        signal: mine.signal,
      });
      if (!response.ok) throw new Error(await errorMessage(response));
      for await (const { event, data } of sseEvents(response)) {
        if (event === "token") turn.answer.textContent += data.text;
        else if (event === "error") throw new Error(`${data.message} (${data.code})`);
        else if (event === "done") {
          finish(mine); // ready for the next question as soon as the answer is complete
          renderDone(turn, data);
          break;
        }
      }
    } catch (error) {
      turn.answer.classList.remove("streaming");
      turn.answer.setAttribute("aria-busy", "false");
      if (error.name === "AbortError") {
        turn.status.textContent = "Stopped.";
        $("answer-live").textContent = "Answer stopped.";
      } else {
        turn.status.textContent = `Error: ${error.message}`;
        $("ask-error").textContent = error.message;
      }
    } finally {
      finish(mine);
    }
  }

  function documentRow(record) {
    const chunks = record.chunks ? `, ${record.chunks} chunks` : "";
    const error = record.error ? ` — ${record.error}` : "";
    return el(
      "li",
      { "data-document": record.document_id, "data-status": record.status },
      el("span", { text: record.source }),
      el("span", { class: `status-${record.status}`, text: `${record.status}${chunks}${error}` }),
    );
  }

  function showDocument(record) {
    const list = $("documents");
    const row = documentRow(record);
    const old = list.querySelector(`[data-document="${record.document_id}"]`);
    if (old) old.replaceWith(row);
    else list.prepend(row);
  }

  async function loadDocuments() {
    const response = await api(`/v1/documents?collection=${encodeURIComponent(collection())}`);
    if (!response.ok) return;
    const { documents } = await response.json();
    $("documents").replaceChildren(...documents.map(documentRow));
  }

  async function waitForDocument(documentId) {
    const deadline = Date.now() + POLL_LIMIT_MS;
    while (Date.now() < deadline) {
      try {
        const response = await api(`/v1/documents/${documentId}`);
        if (response.ok) {
          const record = await response.json();
          showDocument(record);
          if (FINAL.has(record.status)) return record;
        }
      } catch {
        // a dropped poll is retried on the next round
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    return null;
  }

  async function upload(files, into) {
    $("upload-error").textContent = "";
    const waits = [];
    for (const file of files) {
      const form = new FormData();
      form.append("file", file, file.name);
      form.append("collection", into);
      let response;
      try {
        response = await api("/v1/documents", { method: "POST", body: form });
      } catch (error) {
        $("upload-error").textContent = `${file.name}: the gateway could not be reached (${error.message})`;
        continue;
      }
      if (!response.ok) {
        $("upload-error").textContent = `${file.name}: ${await errorMessage(response)}`;
        continue;
      }
      const accepted = await response.json();
      showDocument({ ...accepted, chunks: 0 });
      waits.push(waitForDocument(accepted.document_id));
    }
    try {
      await Promise.all(waits);
    } finally {
      await loadCollections();
    }
  }

  function init() {
    $("ask-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const question = $("question").value.trim();
      if (!question || controller) return;
      $("question").value = "";
      ask(question);
    });
    $("question").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        $("ask-form").requestSubmit();
      }
    });
    $("api-key").value = sessionStorage.getItem(KEY_STORE) || "";
    $("api-key").addEventListener("change", () => {
      const key = $("api-key").value.trim();
      if (key) sessionStorage.setItem(KEY_STORE, key);
      else sessionStorage.removeItem(KEY_STORE);
      showAssistantName();
      loadCollections().then(loadDocuments);
    });
    $("stop").addEventListener("click", () => controller && controller.abort());
    $("new-conversation").addEventListener("click", startConversation);
    $("collection").addEventListener("change", () => {
      $("upload-collection").value = collection();
      startConversation();
      loadDocuments();
    });
    $("upload-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const files = Array.from($("files").files);
      const into = $("upload-collection").value.trim() || collection();
      if (files.length) upload(files, into).then(() => ($("files").value = ""));
    });
    // Usable at once: the asked-for collection is picked before the list of collections arrives.
    const wanted = new URLSearchParams(location.search).get("collection") || "default";
    $("collection").replaceChildren(el("option", { value: wanted, text: wanted }));
    $("upload-collection").value = wanted;
    startConversation();
    loadCollections().then(loadDocuments);
  }

  init();
})();
