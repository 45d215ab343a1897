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

  // --- the conversation, kept in localStorage per collection so a reload keeps it -------------------

  const HISTORY_PREFIX = "rag-conversation:";
  const HISTORY_TURNS = 50;
  let turns = []; // what is stored: {question, result} | {question, text, status}

  function saveConversation() {
    try {
      const kept = turns.slice(-HISTORY_TURNS);
      localStorage.setItem(HISTORY_PREFIX + collection(), JSON.stringify({ session: sessionId, turns: kept }));
    } catch {
      // storage full or disabled: the conversation still works, it is only not kept
    }
  }

  function startConversation() {
    sessionId = "web-" + randomId();
    turns = [];
    try {
      localStorage.removeItem(HISTORY_PREFIX + collection());
    } catch {
      // nothing stored to forget
    }
    $("turns").replaceChildren();
    $("turns").dataset.session = sessionId;
    $("session-info").textContent = `New conversation in “${collection()}”. Follow-up questions keep its context.`;
    $("question").focus();
  }

  function restoreConversation() {
    let saved = null;
    try {
      saved = JSON.parse(localStorage.getItem(HISTORY_PREFIX + collection()) || "null");
    } catch {
      saved = null;
    }
    if (!saved || typeof saved.session !== "string" || !Array.isArray(saved.turns) || !saved.turns.length) {
      startConversation();
      return;
    }
    sessionId = saved.session;
    turns = saved.turns;
    $("turns").replaceChildren();
    $("turns").dataset.session = sessionId;
    for (const stored of turns) {
      const turn = addTurn(stored.question);
      if (stored.result) renderDone(turn, stored.result);
      else {
        renderText(turn, stored.text || "");
        turn.status.textContent = stored.status || "";
      }
      settle(turn);
    }
    $("session-info").textContent = `Conversation in “${collection()}”, kept from your last visit. Follow-up questions keep its context.`;
  }

  // --- the assistant's name, from the collection's profile ----------------------------------------

  const DEFAULT_TITLE = "Document assistant";
  let profileLoad = 0;

  async function loadProfile() {
    const mine = ++profileLoad;
    let name = DEFAULT_TITLE;
    try {
      const response = await api(`/v1/collections/${encodeURIComponent(collection())}/profile`);
      if (response.ok) {
        const profile = await response.json();
        if (profile && typeof profile.assistant_name === "string" && profile.assistant_name.trim()) name = profile.assistant_name.trim();
      }
    } catch {
      // no profile: the default title
    }
    if (mine !== profileLoad) return;
    $("assistant-name").textContent = name;
    document.title = name;
  }

  let collectionsLoad = 0;

  async function loadCollections() {
    const mine = ++collectionsLoad; // only the latest load fills the picker
    const select = $("collection");
    // The picked collection stays picked: the address's ?collection= only chooses the first one (init).
    const wanted = select.value || new URLSearchParams(location.search).get("collection") || "default";
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

  // --- sources: numbered 1, 2, 3 in the order the answer first cites them -------------------------

  const MARKERS = /\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]/g;

  function citedNumbers(text) {
    const found = [];
    for (const m of text.matchAll(MARKERS)) for (const n of m[1].split(",")) found.push(Number(n.trim()));
    return found;
  }

  function numberSources(answer, citations) {
    const byN = new Map(citations.map((c) => [c.n, c]));
    const order = [];
    for (const n of citedNumbers(answer)) if (byN.has(n) && !order.includes(byN.get(n))) order.push(byN.get(n));
    for (const c of citations) if (!order.includes(c)) order.push(c);
    return { order, shown: new Map(order.map((c, i) => [c.n, i + 1])) };
  }

  function where(passage) {
    const parts = [passage.source];
    if (passage.section) parts.push(passage.section);
    if (passage.page) parts.push(`p. ${passage.page}`);
    return parts.join(" · ");
  }

  // --- the passage behind a citation, with the part the answer drew on highlighted ---------------

  function words(text) {
    return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) || [];
  }

  // The answer's sentences that cite passage n, without their markers: what was quoted from it.
  function quotesOf(answer, n) {
    return answer
      .split(/\n+|(?<=[.!?])\s+/)
      .filter((sentence) => citedNumbers(sentence).includes(n))
      .map((sentence) => sentence.replace(MARKERS, " ").replace(/[*_`]+/g, ""));
  }

  // A passage sentence is highlighted when it holds most of a quote's words and its numbers.
  function overlap(quote, segment) {
    const have = new Set(words(segment));
    const wanted = [...new Set(words(quote))];
    if (!wanted.length) return 0;
    const numbers = wanted.filter((w) => /^\d/.test(w));
    if (numbers.length && !numbers.some((w) => have.has(w))) return 0;
    return wanted.filter((w) => have.has(w)).length / wanted.length;
  }

  function highlighted(text, quotes) {
    const parts = text.replace(/\*\*|__|`/g, "").split(/(\n+|(?<=[.!?])\s+)/);
    const scores = parts.map((part, i) => (i % 2 ? 0 : Math.max(0, ...quotes.map((q) => overlap(q, part)))));
    const best = Math.max(0, ...scores);
    const fragment = document.createDocumentFragment();
    parts.forEach((part, i) => {
      const marked = i % 2 === 0 && part.trim() && (scores[i] >= 0.6 || (scores[i] === best && best >= 0.3));
      fragment.append(marked ? el("mark", { text: part }) : part);
    });
    return fragment;
  }

  function showPassage(passage, shownN, answer) {
    $("passage-title").textContent = `[${shownN}] ${passage.source}`;
    $("passage-where").textContent = where(passage);
    $("passage-text").replaceChildren(highlighted(passage.text || "", quotesOf(answer, passage.n)));
    $("passage-dialog").showModal();
    const first = $("passage-text").querySelector("mark");
    if (first) first.scrollIntoView({ block: "nearest" });
  }

  // --- raised flags, in words ---------------------------------------------------------------------

  function disagreement(conflict) {
    const said = Object.entries(conflict.values || {}).map(([source, values]) => `${values.join(" or ")} (${source})`);
    return `Sources disagree on “${conflict.subject}”: ${said.join(" vs ")}`;
  }

  // A raised flag's words come from the gateway (filled into the page from the one list of flags).
  const FLAG_NOTICES = JSON.parse(($("flag-notices") || {}).textContent || "{}");

  function flagNotices(flags, details) {
    const notices = [];
    for (const [name, raised] of Object.entries(flags || {})) {
      if (!raised) continue;
      const detail = (details || {})[name];
      const notice = FLAG_NOTICES[name] || `Check raised: ${name.replace(/[_-]+/g, " ").trim()}.`;
      if (name === "conflicting_sources" && Array.isArray(detail) && detail.length) {
        for (const c of detail) notices.push([name, disagreement(c)]);
      } else if (name === "ungrounded" && detail && typeof detail.sentence === "string" && detail.sentence.trim()) {
        const sentence = detail.sentence.replace(/\s*\[\d{1,3}(?:\s*,\s*\d{1,3})*\]/g, "").trim();
        notices.push([name, sentence ? `${notice.replace(/\.$/, "")}: “${sentence}”` : notice]);
      } else {
        notices.push([name, notice]);
      }
    }
    return notices;
  }

  // --- one turn ---------------------------------------------------------------------------------

  function renderText(turn, text, cite) {
    turn.answer.replaceChildren(window.RagMarkdown.render(text, { cite }));
  }

  function settle(turn) {
    turn.answer.classList.remove("streaming");
    turn.answer.setAttribute("aria-busy", "false");
  }

  function detailRow(list, term, value, className) {
    if (value === undefined || value === null || value === "") return;
    list.append(el("dt", { text: term }), el("dd", { text: String(value), class: className || "" }));
  }

  function renderDetails(turn, body, shown) {
    const list = el("dl");
    const route = body.route || {};
    const routeText = `Route: ${route.tier} (score ${route.score})${route.reason ? ` — ${route.reason}` : ""}`;
    turn.details.append(el("p", { class: "route", text: routeText }), list);
    detailRow(list, "Model", body.model);
    detailRow(list, "Cached", body.cached ? "yes: an earlier answer to the same question, the documents unchanged since" : "", "cached");
    detailRow(list, "Searched as", body.rewritten_question ? `Searched as: ${body.rewritten_question}` : "");
    const signals = Object.entries(route.signals || {}).map(([name, weight]) => `${name} +${weight}`);
    detailRow(list, "Signals", signals.join(", "));
    const scores = (body.citations || [])
      .map((c) => {
        const parts = [`score ${Number(c.score).toFixed(2)}`];
        if (typeof c.similarity === "number") parts.push(`similarity ${c.similarity.toFixed(2)}`);
        return `[${shown.get(c.n)}] ${c.source}: ${parts.join(", ")}`;
      })
      .sort();
    detailRow(list, "Source scores", scores.join("; "));
    const timings = Object.entries(body.timings_ms || {}).map(([stage, ms]) => `${stage} ${Math.round(ms)} ms`);
    detailRow(list, "Timings", timings.join(", "), "timings");
    const usage = body.usage || {};
    if (usage.input_tokens || usage.output_tokens) {
      detailRow(list, "Tokens", `${usage.input_tokens} in, ${usage.output_tokens} out, $${Number(usage.cost_usd || 0).toFixed(4)}`);
    }
    for (const [name, detail] of Object.entries(body.flag_details || {})) {
      if (typeof detail === "string") detailRow(list, name.replace(/_/g, " "), detail);
    }
    detailRow(list, "Trace id", body.trace_id, "trace-id");
    detailRow(list, "Request id", body.request_id);
  }

  function renderDone(turn, body) {
    const citations = body.citations || [];
    const { order, shown } = numberSources(body.answer || "", citations);
    const byN = new Map(citations.map((c) => [c.n, c]));
    const open = (c) => showPassage(c, shown.get(c.n), body.answer || "");
    const cite = (n) => {
      const c = byN.get(n);
      if (!c) return null;
      const button = el("button", { type: "button", class: "cite", text: String(shown.get(n)), "aria-label": `Source ${shown.get(n)}: ${where(c)}` });
      button.addEventListener("click", () => open(c));
      return button;
    };
    renderText(turn, body.answer || "", cite);
    settle(turn);
    $("answer-live").textContent = turn.answer.textContent;

    const notices = flagNotices(body.flags, body.flag_details);
    if (notices.length) {
      const list = el("ul", { class: "notices", "aria-label": "Warnings" });
      for (const [name, text] of notices) list.append(el("li", { class: "notice", "data-flag": name, text }));
      turn.notices.append(list);
    }

    if (order.length) {
      const list = el("ol", { class: "citations" });
      for (const c of order) {
        const n = shown.get(c.n);
        // A passage with planted instructions: listed so the injection notice points at it, its planted text withheld.
        const label = c.withheld ? ` (planted instructions withheld)` : "";
        const attrs = { type: "button", class: c.withheld ? "citation withheld" : "citation", "data-n": String(n), text: `[${n}] ${where(c)}${label}` };
        const button = el("button", attrs);
        button.addEventListener("click", () => open(c));
        list.append(el("li", {}, button));
      }
      turn.sources.append(el("h3", { text: "Sources" }), list);
      turn.sources.hidden = false;
    }

    renderDetails(turn, body, shown);
    turn.more.hidden = false;
  }

  function addTurn(question) {
    const answer = el("div", { class: "answer streaming", "aria-busy": "true" });
    const notices = el("div", { class: "flags" });
    const sources = el("section", { class: "sources", hidden: true, "aria-label": "Sources" });
    const details = el("div", { class: "details-body" });
    const more = el("details", { class: "details", hidden: true }, el("summary", { text: "Details" }), details);
    const status = el("p", { class: "meta status" });
    const item = el("li", { class: "turn" }, el("p", { class: "question", text: question }), answer, notices, sources, more, status);
    $("turns").append(item);
    return { item, answer, notices, sources, details, more, status };
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

  function storable(body) {
    const { passages, ...kept } = body; // every passage given to the generator: too big to keep, not shown
    return kept;
  }

  async function ask(question) {
    $("ask-error").textContent = "";
    const turn = addTurn(question);
    const stored = { question, text: "" };
    turns.push(stored);
    const mine = new AbortController();
    controller = mine;
    setBusy(true);
    let text = "";
    try {
      const response = await api("/v1/query/stream", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify({ question, collection: collection(), session_id: sessionId }),
        signal: mine.signal,
      });
      if (!response.ok) throw new Error(await errorMessage(response));
      for await (const { event, data } of sseEvents(response)) {
        if (event === "token") {
          text += data.text;
          renderText(turn, text);
        } else if (event === "error") throw new Error(`${data.message} (${data.code})`);
        else if (event === "done") {
          finish(mine); // ready for the next question as soon as the answer is complete
          renderDone(turn, data);
          stored.result = storable(data);
          break;
        }
      }
    } catch (error) {
      settle(turn);
      stored.text = text;
      if (error.name === "AbortError") {
        turn.status.textContent = stored.status = "Stopped.";
        $("answer-live").textContent = "Answer stopped.";
      } else {
        turn.status.textContent = stored.status = `Error: ${error.message}`;
        $("ask-error").textContent = error.message;
      }
    } finally {
      finish(mine);
      saveConversation();
    }
  }

  function documentRow(record) {
    const chunks = record.chunks ? `, ${record.chunks} chunks` : "";
    const error = record.error ? ` — ${record.error}` : "";
    // Text the file hides from its reader (white, tiny, off-slide...) was left out: say so, with why.
    const hiddenParts = Object.entries(record.hidden_text || {}).map(([why, n]) => `${why}: ${n}`);
    const hidden = hiddenParts.length ? ` — hidden text left out (${hiddenParts.join(", ")})` : "";
    return el(
      "li",
      { "data-document": record.document_id, "data-status": record.status },
      el("span", { text: record.source }),
      el("span", { class: `status-${record.status}`, text: `${record.status}${chunks}${error}${hidden}` }),
    );
  }

  // A document is shown only in its own collection's list: an upload into another collection, or a
  // status polled after the picker moved on, never lands in the list on screen.
  function showDocument(record, into) {
    if (into !== collection()) return;
    const list = $("documents");
    const row = documentRow(record);
    const old = list.querySelector(`[data-document="${record.document_id}"]`);
    if (old) old.replaceWith(row);
    else list.prepend(row);
  }

  let documentsLoad = 0;

  async function loadDocuments() {
    const mine = ++documentsLoad; // a slower answer for a collection picked before must not win
    const shown = collection();
    // Every page, 1000 documents at a time: `next` is the cursor of the following page.
    const documents = [];
    let after = null;
    do {
      const cursor = after ? `&after=${encodeURIComponent(after)}` : "";
      const response = await api(`/v1/documents?collection=${encodeURIComponent(shown)}&limit=1000${cursor}`);
      if (!response.ok || mine !== documentsLoad || shown !== collection()) return;
      const page = await response.json();
      documents.push(...page.documents);
      after = page.next;
    } while (after);
    if (mine !== documentsLoad || shown !== collection()) return;
    documents.sort((a, b) => a.source.localeCompare(b.source));
    $("documents").replaceChildren(...documents.map(documentRow));
  }

  // The page shows one collection: its conversation, assistant name and documents.
  function showCollection(name) {
    const select = $("collection");
    if (![...select.options].some((option) => option.value === name)) {
      select.append(el("option", { value: name, text: name }));
    }
    select.value = name;
    $("upload-collection").value = name;
    restoreConversation();
    loadProfile();
    return loadDocuments();
  }

  async function waitForDocument(documentId, into) {
    const deadline = Date.now() + POLL_LIMIT_MS;
    while (Date.now() < deadline) {
      try {
        const response = await api(`/v1/documents/${documentId}`);
        if (response.ok) {
          const record = await response.json();
          showDocument(record, into);
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
    // Every file the gateway refused or never got is listed, one line each, not only the last.
    const skipped = [];
    const report = (line) => {
      skipped.push(line);
      $("upload-error").textContent = skipped.join("\n");
    };
    $("upload-error").textContent = "";
    // Uploading into another collection, a new one too, moves the page there to show the files arrive.
    if (into !== collection()) await showCollection(into);
    const waits = [];
    for (const file of files) {
      const form = new FormData();
      form.append("file", file, file.name);
      form.append("collection", into);
      let response;
      try {
        response = await api("/v1/documents", { method: "POST", body: form });
      } catch (error) {
        report(`${file.name}: the gateway could not be reached (${error.message})`);
        continue;
      }
      if (!response.ok) {
        report(`${file.name}: ${await errorMessage(response)}`);
        continue;
      }
      const accepted = await response.json();
      showDocument({ ...accepted, chunks: 0 }, into);
      waits.push(waitForDocument(accepted.document_id, into));
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
      loadCollections().then(loadDocuments);
    });
    $("stop").addEventListener("click", () => controller && controller.abort());
    $("new-conversation").addEventListener("click", startConversation);
    $("collection").addEventListener("change", () => showCollection(collection()));
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
    restoreConversation();
    loadProfile();
    loadCollections().then(loadDocuments);
  }

  init();
})();
