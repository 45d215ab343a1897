// A small Markdown renderer for answers: builds DOM nodes with textContent only, so no HTML in an
// answer (a model's or a document's) is ever parsed. Supports what answers use: paragraphs, headings,
// lists (nested by indentation), fenced and inline code, tables, block quotes, emphasis, links
// (http, https and mailto only) and citation markers such as [1] or [1, 3].
//
//   RagMarkdown.render(text, { cite: (n) => Node }) -> DocumentFragment
"use strict";

window.RagMarkdown = (() => {
  const FENCE = /^\s{0,3}(`{3,}|~{3,})\s*([\w+-]*)\s*$/;
  const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
  const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
  const QUOTE = /^\s{0,3}>\s?/;
  const ITEM = /^(\s*)([-*+]|(\d{1,9})[.)])\s+(.*)$/;
  const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
  const INLINE =
    /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|\*\*(?=\S)([\s\S]*?\S)\*\*|(?<![\p{L}\p{N}_])__(?=\S)([\s\S]*?\S)__(?![\p{L}\p{N}_])|\*(?=[^\s*])([^*]*?[^\s*]|[^\s*])\*|(?<![\p{L}\p{N}_])_(?=[^\s_])([^_]*?[^\s_]|[^\s_])_(?![\p{L}\p{N}_])|\[([^\]\n]+)\]\(([^()\s]+)\)|\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]/gu;
  const SAFE_LINK = /^(https?:|mailto:)/i;

  function node(tag, className, ...children) {
    const el = document.createElement(tag);
    if (className) el.className = className;
    for (const child of children) el.append(child);
    return el;
  }

  // Inline text: emphasis, code, links and citations; everything else stays text.
  function inline(text, options, into) {
    const pattern = new RegExp(INLINE); // its own lastIndex: the calls nest
    let last = 0;
    for (let m = pattern.exec(text); m; m = pattern.exec(text)) {
      if (m.index > last) into.append(text.slice(last, m.index));
      last = pattern.lastIndex;
      if (m[1]) into.append(node("code", "", m[2].replace(/^ (.*) $/s, "$1")));
      else if (m[3] !== undefined || m[4] !== undefined) inline(m[3] ?? m[4], options, into.appendChild(node("strong")));
      else if (m[5] !== undefined || m[6] !== undefined) inline(m[5] ?? m[6], options, into.appendChild(node("em")));
      else if (m[7] !== undefined) {
        if (SAFE_LINK.test(m[8])) {
          const a = node("a");
          a.href = m[8];
          a.rel = "noopener noreferrer";
          a.target = "_blank";
          inline(m[7], options, a);
          into.append(a);
        } else inline(m[7], options, into);
      } else {
        const numbers = m[9].split(",").map((n) => Number(n.trim()));
        const made = options.cite ? numbers.map((n) => options.cite(n)) : [];
        if (made.every(Boolean) && made.length) into.append(...made);
        else into.append(m[0]);
      }
    }
    if (last < text.length) into.append(text.slice(last));
    return into;
  }

  function cells(line) {
    let row = line.trim();
    if (row.startsWith("|")) row = row.slice(1);
    if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
    return row.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
  }

  function isTableStart(lines, i) {
    return lines[i].includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]) && lines[i + 1].includes("-");
  }

  function startsBlock(lines, i) {
    const line = lines[i];
    return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line) || isTableStart(lines, i);
  }

  function indentOf(line) {
    return line.match(/^\s*/)[0].replace(/\t/g, "    ").length;
  }

  function blocks(lines, options, into) {
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      if (!line.trim()) {
        i += 1;
        continue;
      }
      let m;
      if ((m = line.match(FENCE))) {
        const body = [];
        for (i += 1; i < lines.length && !lines[i].trim().startsWith(m[1]); i += 1) body.push(lines[i]);
        i += 1;
        const code = node("code", "", body.join("\n"));
        if (m[2]) code.dataset.language = m[2];
        into.append(node("pre", "", code));
      } else if ((m = line.match(HEADING))) {
        into.append(inline(m[2], options, node(`h${Math.min(6, m[1].length + 2)}`)));
        i += 1;
      } else if (RULE.test(line)) {
        into.append(node("hr"));
        i += 1;
      } else if (QUOTE.test(line)) {
        const body = [];
        for (; i < lines.length && QUOTE.test(lines[i]); i += 1) body.push(lines[i].replace(QUOTE, ""));
        into.append(blocks(body, options, node("blockquote")));
      } else if (ITEM.test(line)) {
        i = list(lines, i, options, into);
      } else if (isTableStart(lines, i)) {
        i = table(lines, i, options, into);
      } else {
        const p = node("p");
        for (let first = true; i < lines.length && lines[i].trim() && (first || !startsBlock(lines, i)); first = false, i += 1) {
          if (!first) p.append(node("br"));
          inline(lines[i].trim(), options, p);
        }
        into.append(p);
      }
    }
    return into;
  }

  function list(lines, start, options, into) {
    const first = lines[start].match(ITEM);
    const base = first[1].length;
    const ordered = first[3] !== undefined;
    const listEl = node(ordered ? "ol" : "ul");
    if (ordered && Number(first[3]) !== 1) listEl.start = Number(first[3]);
    let i = start;
    while (i < lines.length) {
      const m = lines[i].match(ITEM);
      if (!m || m[1].length !== base || (m[3] !== undefined) !== ordered) break;
      const body = [m[4]];
      let blank = false;
      for (i += 1; i < lines.length; i += 1) {
        const line = lines[i];
        if (!line.trim()) {
          blank = true;
          body.push("");
          continue;
        }
        const sub = line.match(ITEM);
        if (indentOf(line) <= base && (sub || blank || startsBlock(lines, i))) break;
        body.push(indentOf(line) > base ? line.slice(Math.min(indentOf(line), base + 2)) : line);
        blank = false;
      }
      while (body.length && !body[body.length - 1].trim()) body.pop();
      const li = node("li");
      // A one-paragraph item stays inline (no <p>), like Markdown's tight lists.
      const rendered = blocks(body, options, document.createDocumentFragment());
      if (rendered.childNodes.length && rendered.firstChild.nodeName === "P") {
        li.append(...rendered.firstChild.childNodes);
        rendered.firstChild.remove();
      }
      li.append(rendered);
      listEl.append(li);
      if (i < lines.length && !lines[i].trim()) i += 1;
    }
    into.append(listEl);
    return i;
  }

  function table(lines, start, options, into) {
    const head = cells(lines[start]);
    const align = cells(lines[start + 1]).map((c) => (c.endsWith(":") ? (c.startsWith(":") ? "center" : "right") : c.startsWith(":") ? "left" : ""));
    const tableEl = node("table");
    const row = (values, tag) => {
      const tr = node("tr");
      head.forEach((_, k) => {
        const cell = inline(values[k] ?? "", options, node(tag));
        if (tag === "th") cell.scope = "col";
        if (align[k]) cell.style.textAlign = align[k];
        tr.append(cell);
      });
      return tr;
    };
    tableEl.append(node("thead", "", row(head, "th")));
    const body = node("tbody");
    let i = start + 2;
    for (; i < lines.length && lines[i].trim() && lines[i].includes("|"); i += 1) body.append(row(cells(lines[i]), "td"));
    tableEl.append(body);
    into.append(node("div", "table-wrap", tableEl));
    return i;
  }

  function render(text, options = {}) {
    return blocks(String(text).replace(/\r\n?/g, "\n").split("\n"), options, document.createDocumentFragment());
  }

  return { render };
})();
