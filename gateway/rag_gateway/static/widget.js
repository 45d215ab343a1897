// <rag-chat collection="NAME"> — a floating chat for any site, talking to the gateway this script came from.
//
//   <script src="https://GATEWAY/widget.js"></script>
//   <rag-chat collection="default"></rag-chat>
//
// Attributes: collection (default "default"), gateway (default: this script's origin), api-key (a
// key with read rights, sent as a bearer token), title (default: the collection's assistant name,
// from its profile). The gateway must list the site's origin
// in RAG_GATEWAY_CORS_ORIGINS. Select text on the page, then "Ask about the selection".
"use strict";

(() => {
  if (window.customElements.get("rag-chat")) return;
  const SCRIPT_ORIGIN = document.currentScript ? new URL(document.currentScript.src, location.href).origin : location.origin;

  const CSS = `
    :host { all: initial; font: 15px/1.45 system-ui, sans-serif; color: #1b1f24; }
    * { box-sizing: border-box; }
    .dock { position: fixed; right: 20px; bottom: 20px; z-index: 2147483000; display: flex; flex-direction: column; align-items: flex-end; gap: 8px; }
    button { font: inherit; cursor: pointer; border-radius: 6px; border: 1px solid #0a58ca; padding: 6px 12px; background: #0a58ca; color: #fff; }
    button.plain { background: #fff; color: #0a58ca; }
    button[disabled] { opacity: .5; cursor: default; }
    button:focus-visible, textarea:focus-visible, summary:focus-visible { outline: 3px solid #ffbf47; outline-offset: 2px; }
    .launcher { border-radius: 999px; padding: 10px 18px; box-shadow: 0 2px 8px rgba(0,0,0,.25); }
    .panel { width: min(380px, calc(100vw - 40px)); max-height: min(560px, calc(100vh - 100px)); display: flex; flex-direction: column;
      background: #fff; border: 1px solid #d0d7de; border-radius: 10px; box-shadow: 0 6px 24px rgba(0,0,0,.2); overflow: hidden; }
    .panel[hidden], [hidden] { display: none !important; }
    header { display: flex; justify-content: space-between; align-items: center; padding: 8px 12px; border-bottom: 1px solid #d0d7de; }
    h2 { font-size: 15px; margin: 0; }
    .log { flex: 1; overflow-y: auto; padding: 8px 12px; margin: 0; list-style: none; }
    .log li { margin-bottom: 10px; }
    .q { font-weight: 600; }
    .a { white-space: pre-wrap; }
    .meta { font-size: 12px; color: #57606a; }
    details { font-size: 13px; margin: 2px 0; }
    details p { white-space: pre-wrap; margin: 4px 0 4px 12px; color: #333; }
    .flag { color: #9a3412; font-weight: 600; font-size: 12px; }
    form { border-top: 1px solid #d0d7de; padding: 8px 12px; display: flex; flex-direction: column; gap: 6px; }
    label { font-weight: 600; font-size: 13px; }
    textarea { font: inherit; width: 100%; resize: vertical; padding: 6px; border: 1px solid #d0d7de; border-radius: 6px; }
    .row { display: flex; gap: 6px; justify-content: flex-end; }
    .about { font-size: 13px; background: #f6f8fa; border-left: 3px solid #0a58ca; padding: 4px 8px; display: flex; gap: 6px; align-items: flex-start; }
    .about span { flex: 1; max-height: 4.5em; overflow: hidden; }
    .about button { padding: 0 6px; }
    .error { color: #b91c1c; font-size: 13px; min-height: 1em; margin: 0; }
  `;

  function el(tag, props = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props)) {
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("aria-") || key.startsWith("data-") || key === "for" || key === "role") node.setAttribute(key, value);
      else node[key] = value;
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }

  function randomId() {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

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

  let counter = 0;

  class RagChat extends HTMLElement {
    connectedCallback() {
      if (this.shadowRoot) return;
      const id = `rag-chat-${++counter}`;
      const root = this.attachShadow({ mode: "open" });
      if ("adoptedStyleSheets" in root && window.CSSStyleSheet && CSSStyleSheet.prototype.replaceSync) {
        const sheet = new CSSStyleSheet(); // constructed sheets are not blocked by a site's style-src CSP
        sheet.replaceSync(CSS);
        root.adoptedStyleSheets = [sheet];
      } else {
        root.append(el("style", { text: CSS }));
      }
      this.sessionId = "widget-" + randomId();
      this.selection = "";
      this.controller = null;

      this.log = el("ol", { class: "log", "aria-live": "polite", "aria-label": "Conversation" });
      this.question = el("textarea", { id: `${id}-q`, rows: 2, maxLength: 4000 });
      this.aboutText = el("span");
      this.about = el(
        "div",
        { class: "about", hidden: true },
        this.aboutText,
        el("button", { type: "button", class: "plain", "aria-label": "Do not ask about the selection", text: "×", onclick: () => this.setAbout("") }),
      );
      this.error = el("p", { class: "error", role: "alert" });
      this.send = el("button", { type: "submit", text: "Ask" });
      this.stop = el("button", { type: "button", class: "plain", text: "Stop", disabled: true, onclick: () => this.controller && this.controller.abort() });
      const form = el(
        "form",
        {},
        this.about,
        el("label", { for: `${id}-q`, text: "Your question" }),
        this.question,
        el("div", { class: "row" }, this.stop, this.send),
        this.error,
      );
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        this.submit();
      });
      this.question.addEventListener("keydown", (event) => {
        if (event.key === "Enter" && !event.shiftKey) {
          event.preventDefault();
          form.requestSubmit();
        }
      });
      const title = this.getAttribute("title") || "Ask the documents";
      const heading = el("h2", { text: title });
      this.panel = el(
        "section",
        { class: "panel", id: `${id}-panel`, hidden: true, role: "dialog", "aria-label": title },
        el("header", {}, heading, el("button", { type: "button", class: "plain", text: "Close", "aria-label": "Close chat", onclick: () => this.toggle(false) })),
        this.log,
        form,
      );
      this.panel.addEventListener("keydown", (event) => event.key === "Escape" && this.toggle(false));
      this.launcher = el("button", {
        type: "button",
        class: "launcher",
        text: "Open chat",
        "aria-expanded": "false",
        "aria-controls": `${id}-panel`,
        onclick: () => this.toggle(this.panel.hidden),
      });
      this.askSelected = el("button", { type: "button", class: "launcher plain", hidden: true, text: "Ask about the selection" });
      // Keep the page's selection: the button must not take it away on mousedown.
      this.askSelected.addEventListener("mousedown", (event) => event.preventDefault());
      this.askSelected.addEventListener("click", () => {
        this.setAbout(this.selection);
        this.toggle(true);
      });
      root.append(el("div", { class: "dock" }, this.panel, this.askSelected, this.launcher));

      this.onSelection = () => {
        const selection = window.getSelection();
        const text = selection ? selection.toString().trim() : "";
        if (text && !this.contains(selection.anchorNode)) this.selection = text.slice(0, 8000);
        else if (!text) this.selection = "";
        this.askSelected.hidden = !this.selection;
      };
      document.addEventListener("selectionchange", this.onSelection);
      if (!this.getAttribute("title")) this.showAssistantName(heading);
    }

    // The collection's assistant name (its profile) as the panel's title.
    async showAssistantName(heading) {
      const collection = encodeURIComponent(this.getAttribute("collection") || "default");
      const key = this.getAttribute("api-key");
      const headers = key ? { authorization: `Bearer ${key}` } : {};
      const response = await fetch(`${this.gateway}/v1/collections/${collection}/profile`, { headers }).catch(() => null);
      if (!response || !response.ok) return;
      heading.textContent = (await response.json()).assistant_name;
      this.panel.setAttribute("aria-label", heading.textContent);
    }

    disconnectedCallback() {
      if (this.onSelection) document.removeEventListener("selectionchange", this.onSelection);
      if (this.controller) this.controller.abort();
    }

    get gateway() {
      return (this.getAttribute("gateway") || SCRIPT_ORIGIN).replace(/\/$/, "");
    }

    setAbout(text) {
      this.aboutSelection = text;
      this.aboutText.textContent = text ? `About: “${text}”` : "";
      this.about.hidden = !text;
    }

    toggle(open) {
      this.panel.hidden = !open;
      this.launcher.setAttribute("aria-expanded", String(open));
      this.launcher.textContent = open ? "Hide chat" : "Open chat";
      if (open) this.question.focus();
      else this.launcher.focus();
    }

    headers() {
      const headers = { "content-type": "application/json", accept: "text/event-stream" };
      const key = this.getAttribute("api-key");
      if (key) headers.authorization = `Bearer ${key}`;
      return headers;
    }

    // fetch() failed before any response: either the browser refused the gateway's answer (this
    // site's origin is not allowed by CORS) or the gateway is down. A no-cors request tells them apart:
    // it needs no permission, so it succeeds whenever the gateway answers at all.
    async unreachable() {
      try {
        await fetch(`${this.gateway}/healthz`, { mode: "no-cors", cache: "no-store" });
      } catch {
        return `The gateway at ${this.gateway} cannot be reached: check that it is running and that this address is right.`;
      }
      return `This site (${location.origin}) is not allowed by the gateway: set RAG_GATEWAY_CORS_ORIGINS to include ${location.origin} on the gateway.`;
    }

    async submit() {
      if (this.controller) return;
      const selected = this.aboutSelection || "";
      const question = this.question.value.trim() || (selected ? "What does this mean?" : "");
      if (!question) return;
      this.question.value = "";
      this.error.textContent = "";
      const answer = el("div", { class: "a", "aria-busy": "true" });
      const details = el("div");
      const item = el("li", {}, el("div", { class: "q", text: question }), answer, details);
      if (selected) item.insertBefore(el("div", { class: "meta", text: `About: “${selected.slice(0, 120)}”` }), answer);
      this.log.append(item);
      const mine = new AbortController();
      this.controller = mine;
      this.send.disabled = true;
      this.stop.disabled = false;
      const body = { question, collection: this.getAttribute("collection") || "default", session_id: this.sessionId };
      if (selected) body.selected_text = selected;
      try {
        let response;
        try {
          response = await fetch(`${this.gateway}/v1/query/stream`, {
            method: "POST",
            headers: this.headers(),
            body: JSON.stringify(body),
            signal: mine.signal,
          });
        } catch (error) {
          if (error.name === "AbortError") throw error;
          throw new Error(await this.unreachable());
        }
        if (!response.ok) {
          let message = `${response.status} ${response.statusText}`;
          try {
            message = (await response.json()).error.message;
          } catch {}
          throw new Error(message);
        }
        for await (const { event, data } of sseEvents(response)) {
          if (event === "token") answer.textContent += data.text;
          else if (event === "error") throw new Error(data.message);
          else if (event === "done") {
            this.finish(mine);
            this.render(answer, details, data);
            this.log.scrollTop = this.log.scrollHeight;
            break;
          }
          this.log.scrollTop = this.log.scrollHeight;
        }
        this.setAbout("");
      } catch (error) {
        details.append(el("p", { class: "meta", text: error.name === "AbortError" ? "Stopped." : `Error: ${error.message}` }));
        if (error.name !== "AbortError") this.error.textContent = error.message;
      } finally {
        answer.setAttribute("aria-busy", "false");
        this.finish(mine);
      }
    }

    finish(mine) {
      if (this.controller !== mine) return;
      this.controller = null;
      this.send.disabled = false;
      this.stop.disabled = true;
    }

    render(answer, details, data) {
      answer.textContent = data.answer;
      for (const c of data.citations || []) {
        const where = [c.source, c.section, c.page ? `p. ${c.page}` : ""].filter(Boolean).join(" · ");
        details.append(el("details", { class: "citation" }, el("summary", { text: `[${c.n}] ${where}${c.withheld ? " (planted instructions withheld)" : ""}` }), el("p", { text: c.text })));
      }
      const raised = Object.entries(data.flags || {}).filter(([, up]) => up).map(([name]) => name);
      if (raised.length) details.append(el("div", { class: "flag", text: `Flags: ${raised.join(", ")}` }));
    }
  }

  window.customElements.define("rag-chat", RagChat);
})();
