// ragprep review report. All document text comes from the JSON data block and is put into
// the page with textContent / createTextNode only: no innerHTML, no eval, nothing loaded.
(function () {
  "use strict";

  var DATA = JSON.parse(document.getElementById("data").textContent);
  var BUILD = DATA.build;
  var STORE_KEY = "ragprep-review-decisions:" + BUILD;
  var REVIEWER_KEY = "ragprep-review-reviewer";
  var FLAG_HELP = {
    unsupported_answer: "the answer is not supported by the chunk",
    number_not_in_chunk: "the answer states a number the chunk does not contain",
    unsupported_segment: "a sentence of the answer is not supported by the chunk (quoted in the reason)",
    near_duplicate: "almost the same as another question",
    not_a_question: "the question is not phrased as a question",
    answer_leak: "the question gives the answer away",
    too_short: "question or answer too short",
    too_long: "question or answer too long",
    language_mismatch: "question and answer or chunk are in different languages",
    generic_question: "the question could be asked of any document",
    generation_failed: "the generator failed; the text is a placeholder",
    spot_check: "approved without flags, drawn at random: check what the rules may have missed"
  };
  var SPOT = "spot_check";
  var CRITIC_LABELS = [["grounded", "grounded"], ["standalone", "standalone"], ["well_formed", "well-formed"], ["useful", "useful"]];
  var FILTER_IDS = ["kind-filter", "flag-filter", "doc-filter", "status-filter", "decision-filter"];
  var DECISION_TEXT = { approve: "Approved", reject: "Rejected", edit: "Edited" };
  var SAFE_IMAGE = /^data:image\/(png|jpeg|svg\+xml);base64,[A-Za-z0-9+\/=]+$/;

  var decisions = new Map(); // qa_id -> {decision, question, answer, reviewer, decided_at}
  var cards = new Map(); // qa_id -> {pair, node, refs}
  var visibleIds = []; // the pairs the current filters show, in page order
  var lastBulk = null; // {decision, before: [{id, d}]} for "Undo bulk action"
  var pairsById = new Map();
  DATA.pairs.forEach(function (p) { pairsById.set(p.qa_id, p); });
  var HEADER_STORE_KEY = "ragprep-review-headers:" + BUILD;
  var HEADERS = Array.isArray(DATA.headers) ? DATA.headers : [];
  var headerDecisions = new Map(); // headerKey(doc_id, field) -> {doc_id, field, value (string or null), reviewer, decided_at}
  var headerRows = new Map(); // headerKey -> {report, field, node, refs}
  var headerCards = new Map(); // doc_id -> the report's card
  var headerFields = new Map(); // headerKey -> the field as read (only fields of reports in this page)
  HEADERS.forEach(function (h) { h.fields.forEach(function (f) { headerFields.set(headerKey(h.doc_id, f.name), f); }); });

  function headerKey(docId, field) { return String(docId) + "\n" + String(field); }

  function own(obj, key) { return Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined; }
  function flagHelp(f) {
    var known = own(FLAG_HELP, f);
    if (known) { return known; }
    var m = /^low_quality:(.+)$/.exec(String(f));
    if (!m) { return ""; }
    return m[1] === "judge_failed" ? "the critic gave no usable verdict" : "the critic scored " + m[1].replace(/_/g, "-") + " too low";
  }

  // ---------- DOM helpers (text only) ----------
  function text(s) { return document.createTextNode(s == null ? "" : String(s)); }

  function setAttr(node, name, value) {
    var lower = String(name).toLowerCase();
    if (lower.slice(0, 2) === "on" || lower === "href" || lower === "style" || lower === "srcdoc") {
      throw new Error("refusing attribute " + name);
    }
    if (lower === "src" && !SAFE_IMAGE.test(String(value))) { return; }
    node.setAttribute(name, String(value));
  }

  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (attrs[k] !== null && attrs[k] !== undefined && attrs[k] !== false) { setAttr(node, k, attrs[k]); }
      });
    }
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) { continue; }
      node.appendChild(typeof child === "object" ? child : text(child));
    }
    return node;
  }

  // ---------- minimal safe Markdown -> DOM ----------
  var LIST_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
  var TABLE_SEP = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
  var HR = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
  var HEADING = /^\s{0,3}(#{1,6})\s+(.*)$/;
  var QUOTE = /^\s{0,3}>/;
  var FENCE = /^\s{0,3}(```|~~~)/;
  var INLINE = /(\*\*[^*\n]+\*\*|`[^`\n]+`|<br\s*\/?>|!?\[[^\]\n]*\]\([^)\n]*\))/gi;
  var LINK = /^(!?)\[([^\]\n]*)\]\(([^)\n]*)\)$/;

  function appendInline(parent, s) {
    s = String(s);
    var last = 0;
    var m;
    INLINE.lastIndex = 0;
    while ((m = INLINE.exec(s)) !== null) {
      if (m.index > last) { parent.appendChild(text(s.slice(last, m.index))); }
      var tok = m[0];
      if (tok.charAt(0) === "*") { parent.appendChild(el("strong", null, tok.slice(2, -2))); }
      else if (tok.charAt(0) === "`") { parent.appendChild(el("code", null, tok.slice(1, -1))); }
      else if (tok.charAt(0) === "<") { parent.appendChild(document.createElement("br")); }
      else {
        // images and links stay text: nothing in a chunk may make the page load or open anything
        var lm = LINK.exec(tok);
        if (lm[1]) { parent.appendChild(el("span", { "class": "img-ref", title: lm[3] }, "[picture: " + (lm[2] || lm[3]) + "]")); }
        else { parent.appendChild(text(lm[2])); parent.appendChild(el("span", { "class": "link-target" }, " (" + lm[3] + ")")); }
      }
      last = INLINE.lastIndex;
    }
    if (last < s.length) { parent.appendChild(text(s.slice(last))); }
  }

  function splitRow(line) {
    var s = line.trim();
    if (s.charAt(0) === "|") { s = s.slice(1); }
    if (s.length && s.charAt(s.length - 1) === "|" && s.charAt(s.length - 2) !== "\\") { s = s.slice(0, -1); }
    var cells = [];
    var cur = "";
    for (var i = 0; i < s.length; i++) {
      var c = s.charAt(i);
      if (c === "\\" && s.charAt(i + 1) === "|") { cur += "|"; i++; }
      else if (c === "|") { cells.push(cur.trim()); cur = ""; }
      else { cur += c; }
    }
    cells.push(cur.trim());
    return cells;
  }

  function isTableAt(lines, i) {
    return lines[i].indexOf("|") >= 0 && i + 1 < lines.length &&
      lines[i + 1].indexOf("-") >= 0 && TABLE_SEP.test(lines[i + 1]);
  }

  function isBlockStart(lines, i) {
    var line = lines[i];
    return HEADING.test(line) || QUOTE.test(line) || FENCE.test(line) || HR.test(line) ||
      LIST_ITEM.test(line) || isTableAt(lines, i);
  }

  function renderList(lines, i, container) {
    var stack = [];
    var lastLi = null;
    while (i < lines.length) {
      var line = lines[i];
      if (!line.trim()) {
        var j = i + 1;
        while (j < lines.length && !lines[j].trim()) { j++; }
        if (j < lines.length && LIST_ITEM.test(lines[j]) && !HR.test(lines[j])) { i = j; continue; }
        break;
      }
      var m = HR.test(line) ? null : LIST_ITEM.exec(line);
      if (!m) {
        if (lastLi && !isBlockStart(lines, i)) { lastLi.appendChild(text(" ")); appendInline(lastLi, line.trim()); i++; continue; }
        break;
      }
      var indent = m[1].replace(/\t/g, "    ").length;
      var ordered = /\d/.test(m[2]);
      while (stack.length && indent < stack[stack.length - 1].indent) { stack.pop(); }
      var top = stack[stack.length - 1];
      if (!top || indent > top.indent) {
        var list = document.createElement(ordered ? "ol" : "ul");
        if (ordered) {
          var start = parseInt(m[2], 10);
          if (isFinite(start) && start !== 1) { list.setAttribute("start", String(start)); }
        }
        (top && lastLi ? lastLi : container).appendChild(list);
        top = { indent: indent, list: list };
        stack.push(top);
      }
      var li = document.createElement("li");
      appendInline(li, m[3]);
      top.list.appendChild(li);
      lastLi = li;
      i++;
    }
    return i;
  }

  function renderBlocks(lines, container, depth) {
    var i = 0;
    var n = lines.length;
    var m;
    while (i < n) {
      var line = lines[i];
      if (!line.trim()) { i++; continue; }
      if ((m = FENCE.exec(line)) !== null) {
        var fence = m[1];
        var buf = [];
        i++;
        while (i < n && lines[i].trim().slice(0, 3) !== fence) { buf.push(lines[i]); i++; }
        i++;
        container.appendChild(el("pre", null, el("code", null, buf.join("\n"))));
        continue;
      }
      if ((m = HEADING.exec(line)) !== null) {
        var h = document.createElement("h" + Math.min(6, m[1].length + 2));
        appendInline(h, m[2]);
        container.appendChild(h);
        i++;
        continue;
      }
      if (HR.test(line)) { container.appendChild(document.createElement("hr")); i++; continue; }
      if (QUOTE.test(line)) {
        var quoted = [];
        while (i < n && QUOTE.test(lines[i])) { quoted.push(lines[i].replace(/^\s{0,3}>\s?/, "")); i++; }
        var bq = document.createElement("blockquote");
        if (depth < 8) { renderBlocks(quoted, bq, depth + 1); } else { bq.appendChild(text(quoted.join("\n"))); }
        container.appendChild(bq);
        continue;
      }
      if (isTableAt(lines, i)) {
        var header = splitRow(lines[i]);
        i += 2;
        var headRow = el("tr");
        header.forEach(function (c) { var th = el("th"); appendInline(th, c); headRow.appendChild(th); });
        var tbody = el("tbody");
        while (i < n && lines[i].trim() && lines[i].indexOf("|") >= 0) {
          var cells = splitRow(lines[i]);
          var tr = el("tr");
          for (var k = 0; k < header.length; k++) { var td = el("td"); appendInline(td, cells[k] || ""); tr.appendChild(td); }
          tbody.appendChild(tr);
          i++;
        }
        container.appendChild(el("table", null, el("thead", null, headRow), tbody));
        continue;
      }
      if (LIST_ITEM.test(line)) { i = renderList(lines, i, container); continue; }
      var para = [line.trim()];
      i++;
      while (i < n && lines[i].trim() && !isBlockStart(lines, i)) { para.push(lines[i].trim()); i++; }
      var p = el("p");
      appendInline(p, para.join("\n"));
      container.appendChild(p);
    }
  }

  function renderMarkdown(md, container) {
    renderBlocks(String(md == null ? "" : md).replace(/\r\n?/g, "\n").split("\n"), container, 0);
  }

  // ---------- decisions ----------
  function nowIso() { return new Date().toISOString().replace(/\.\d{3}Z$/, "Z"); }

  function reviewerName() { return document.getElementById("reviewer").value.trim(); }

  function persist() {
    try {
      var out = {};
      decisions.forEach(function (d, id) { out[id] = d; });
      window.localStorage.setItem(STORE_KEY, JSON.stringify(out));
    } catch (e) { /* storage unavailable: decisions stay in memory */ }
  }

  function restore() {
    try {
      var raw = window.localStorage.getItem(STORE_KEY);
      var saved = raw ? JSON.parse(raw) : {};
      Object.keys(saved).forEach(function (id) {
        var d = saved[id];
        if (pairsById.has(id) && d && own(DECISION_TEXT, d.decision)) { decisions.set(id, d); }
      });
      var name = window.localStorage.getItem(REVIEWER_KEY);
      if (name) { document.getElementById("reviewer").value = name; }
    } catch (e) { /* ignore unreadable storage */ }
  }

  function setDecision(id, decision, question, answer) {
    decisions.set(id, {
      decision: decision,
      question: decision === "edit" ? question : null,
      answer: decision === "edit" ? answer : null,
      reviewer: reviewerName() || null,
      decided_at: nowIso()
    });
    afterDecision(id);
  }

  function clearDecision(id) {
    decisions.delete(id);
    afterDecision(id);
  }

  function afterDecision(id) {
    forgetBulk();
    updateCard(id);
    persist();
    updateDecisionCount();
    if (document.getElementById("decision-filter").value) { render(); }
  }

  function updateDecisionCount() {
    var counts = { approve: 0, reject: 0, edit: 0 };
    decisions.forEach(function (d) { counts[d.decision]++; });
    var node = document.getElementById("decision-count");
    node.textContent = decisions.size + (decisions.size === 1 ? " decision" : " decisions") +
      " (" + counts.approve + " approved, " + counts.reject + " rejected, " + counts.edit + " edited)" +
      (headerDecisions.size ? ", " + headerDecisions.size + (headerDecisions.size === 1 ? " header value" : " header values") : "");
    node.setAttribute("data-count", String(decisions.size));
    node.setAttribute("data-header-count", String(headerDecisions.size));
  }

  function showMessage(id, kind, message) {
    var node = document.getElementById(id);
    node.textContent = message;
    node.className = "message " + kind;
    node.setAttribute("data-kind", kind);
    node.hidden = !message;
  }

  function exportDecisions() {
    var name = reviewerName();
    var reviewerInput = document.getElementById("reviewer");
    reviewerInput.classList.toggle("missing", !name);
    if (!name) {
      showMessage("export-message", "error", "Enter your name as reviewer before exporting: it goes into every decision.");
      reviewerInput.focus();
      return;
    }
    if (!decisions.size && !headerDecisions.size) {
      showMessage("export-message", "error", "No decisions to export yet.");
      return;
    }
    var ids = Array.from(decisions.keys()).sort();
    var headerIds = Array.from(headerDecisions.keys()).sort();
    var payload = {
      format: DATA.format,
      build: BUILD,
      decisions: ids.map(function (id) {
        var d = decisions.get(id);
        return {
          qa_id: id,
          decision: d.decision,
          question: d.decision === "edit" ? d.question : null,
          answer: d.decision === "edit" ? d.answer : null,
          reviewer: d.reviewer || name,
          decided_at: d.decided_at
        };
      }),
      headers: headerIds.map(function (key) {
        var h = headerDecisions.get(key);
        return { doc_id: h.doc_id, field: h.field, value: h.value, reviewer: h.reviewer || name, decided_at: h.decided_at };
      })
    };
    var fileName = "decisions-" + BUILD + ".json";
    var blob = new Blob([JSON.stringify(payload, null, 2) + "\n"], { type: "application/json" });
    var url = URL.createObjectURL(blob);
    var a = document.createElement("a");
    a.href = url; // a blob: URL made here, never document data
    a.download = fileName;
    a.hidden = true;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 2000);
    showMessage("export-message", "ok", "Exported " + ids.length + (ids.length === 1 ? " decision" : " decisions") +
      (headerIds.length ? " and " + headerIds.length + (headerIds.length === 1 ? " header value" : " header values") : "") +
      " as " + fileName + " (reviewer " + name + "). Store them with: ragprep review apply " + fileName);
  }

  // ---------- import (merge by QA id; the later decided_at wins) ----------
  function isText(v) { return typeof v === "string" && v.trim() !== ""; }

  function validDecision(d) {
    if (!d || typeof d !== "object" || !isText(d.qa_id) || !own(DECISION_TEXT, d.decision)) { return false; }
    return d.decision !== "edit" || (isText(d.question) && isText(d.answer));
  }

  function isLater(a, b) {
    var ta = Date.parse(a);
    var tb = Date.parse(b);
    return isFinite(ta) && isFinite(tb) && ta > tb;
  }

  function importDecisions(payload, fileName) {
    var list = payload && typeof payload === "object" && payload.decisions === undefined ? [] : (payload || {}).decisions;
    var headerList = payload && typeof payload === "object" && payload.headers === undefined ? [] : (payload || {}).headers;
    if (!payload || typeof payload !== "object" || payload.format !== DATA.format || !Array.isArray(list) ||
        !Array.isArray(headerList)) {
      showMessage("import-message", "error", fileName + " is not a ragprep decisions file (format " + DATA.format + ").");
      return;
    }
    var n = { applied: 0, newer: 0, absent: 0, invalid: 0 };
    list.forEach(function (d) {
      if (!validDecision(d)) { n.invalid++; return; }
      if (!pairsById.has(d.qa_id)) { n.absent++; return; }
      var current = decisions.get(d.qa_id);
      if (current && isLater(current.decided_at, d.decided_at)) { n.newer++; return; }
      var edit = d.decision === "edit";
      decisions.set(d.qa_id, {
        decision: d.decision,
        question: edit ? d.question.trim() : null,
        answer: edit ? d.answer.trim() : null,
        reviewer: isText(d.reviewer) ? d.reviewer.trim() : null,
        decided_at: isText(d.decided_at) ? d.decided_at : nowIso()
      });
      updateCard(d.qa_id);
      n.applied++;
    });
    var hn = importHeaderDecisions(headerList);
    forgetBulk();
    persist();
    updateDecisionCount();
    render();
    var older = isText(payload.build) && payload.build !== BUILD ? " (exported from report build " + payload.build + ")" : "";
    showMessage("import-message", "ok", "Imported " + fileName + older + ": " + n.applied + " applied, " +
      n.newer + " kept (a later decision here), " + n.absent + " for pairs not in this report, " + n.invalid + " invalid." +
      (headerList.length ? " Header values: " + hn.applied + " applied, " + hn.newer + " kept (a later value here), " +
        hn.absent + " for reports or fields not in this report, " + hn.invalid + " invalid." : ""));
    var node = document.getElementById("import-message");
    Object.keys(hn).forEach(function (k) { node.setAttribute("data-header-" + k, String(hn[k])); });
    Object.keys(n).forEach(function (k) { node.setAttribute("data-" + k, String(n[k])); });
  }

  function importFile(ev) {
    var input = ev.target;
    var file = input.files && input.files[0];
    if (!file) { return; }
    var reader = new FileReader();
    reader.addEventListener("load", function () {
      var payload;
      try { payload = JSON.parse(String(reader.result)); } catch (e) {
        showMessage("import-message", "error", file.name + " is not JSON: export it again from a review report.");
        input.value = "";
        return;
      }
      importDecisions(payload, file.name);
      input.value = "";
    });
    reader.addEventListener("error", function () { showMessage("import-message", "error", file.name + " could not be read."); });
    reader.readAsText(file);
  }

  // ---------- bulk actions over the pairs the current filters show ----------
  function filtersActive() {
    return FILTER_IDS.some(function (id) { return document.getElementById(id).value !== ""; }) ||
      document.getElementById("search").value.trim() !== "";
  }

  function forgetBulk() {
    lastBulk = null;
    document.getElementById("bulk-undo").disabled = true;
  }

  function updateBulkButtons() {
    var ok = filtersActive() && visibleIds.length > 0;
    var why = filtersActive() ? "" : "choose a filter first: bulk actions apply to the pairs a filter shows";
    document.getElementById("bulk-hint").textContent = why ? "(" + why + ")" : "";
    [["bulk-approve", "Approve"], ["bulk-reject", "Reject"]].forEach(function (b) {
      var button = document.getElementById(b[0]);
      button.disabled = !ok;
      button.textContent = b[1] + " all shown (" + visibleIds.length + ")";
      button.title = why || b[1].toLowerCase() + " every pair the filters show (edited pairs keep their edit)";
    });
  }

  function bulkDecide(decision) {
    if (!filtersActive()) {
      document.getElementById("bulk-message").textContent = "Choose a filter first: bulk actions apply to the pairs a filter shows.";
      return;
    }
    var name = reviewerName() || null;
    var at = nowIso();
    var before = [];
    var kept = 0;
    visibleIds.slice().forEach(function (id) {
      var d = decisions.get(id);
      if (d && d.decision === "edit") { kept++; return; }
      before.push({ id: id, d: d || null });
      decisions.set(id, { decision: decision, question: null, answer: null, reviewer: name, decided_at: at });
      updateCard(id);
    });
    persist();
    updateDecisionCount();
    render();
    lastBulk = { decision: decision, before: before };
    document.getElementById("bulk-undo").disabled = before.length === 0;
    var node = document.getElementById("bulk-message");
    node.textContent = (decision === "approve" ? "Approved " : "Rejected ") + before.length +
      (before.length === 1 ? " pair" : " pairs") + (kept ? "; " + kept + " edited kept their edit" : "") + ".";
    node.setAttribute("data-changed", String(before.length));
  }

  function undoBulk() {
    if (!lastBulk) { return; }
    var before = lastBulk.before;
    before.forEach(function (b) {
      if (b.d) { decisions.set(b.id, b.d); } else { decisions.delete(b.id); }
      updateCard(b.id);
    });
    forgetBulk();
    persist();
    updateDecisionCount();
    render();
    var node = document.getElementById("bulk-message");
    node.textContent = "Undone: " + before.length + (before.length === 1 ? " decision" : " decisions") + " restored.";
    node.setAttribute("data-changed", "0");
  }

  // ---------- cards ----------
  function thumbFigure(key) {
    var thumb = key ? own(DATA.thumbs, key) || null : null;
    if (!thumb || !SAFE_IMAGE.test(thumb.src)) { return el("div", { "class": "no-thumb" }, "no thumbnail (unit unknown)"); }
    var fig = el("figure", { "class": "thumb", "data-kind": thumb.kind, title: "click to enlarge" },
      el("img", { src: thumb.src, alt: thumb.caption }), el("figcaption", null, thumb.caption));
    fig.addEventListener("click", function () { fig.classList.toggle("zoomed"); });
    return fig;
  }

  function unitText(pair, chunk) {
    if (pair.slide !== null && pair.slide !== undefined) { return "slide " + pair.slide; }
    var a = pair.page_start;
    var b = pair.page_end;
    if ((a === null || a === undefined) && chunk) { a = chunk.page_start; b = chunk.page_end; }
    if (a === null || a === undefined) { return "unit unknown"; }
    return b && b !== a ? "pages " + a + "\u2013" + b : "page " + a;
  }

  function buildCard(pair) {
    var chunk = own(DATA.chunks, pair.chunk_id) || null;
    var refs = {};
    var card = el("article", {
      "class": "qa",
      "data-qa-id": pair.qa_id,
      "data-doc-id": pair.doc_id,
      "data-flags": pair.flags.join(" "),
      "data-status": pair.status,
      "data-spot-check": pair.spot_check ? "1" : "0",
      "data-decision": "none"
    });

    var head = el("div", { "class": "qa-head" });
    if (pair.spot_check) {
      head.appendChild(el("span", { "class": "badge spot", title: flagHelp(SPOT) }, "spot check"));
    }
    pair.flags.forEach(function (f) { head.appendChild(el("span", { "class": "badge flag", "data-flag": f, title: flagHelp(f) || f }, f)); });
    head.appendChild(el("span", { "class": "badge status-" + pair.status, title: "status in the qa_pairs table" }, pair.status));
    head.appendChild(el("span", { "class": "badge", title: "question type \u00b7 target modality \u00b7 language" },
      pair.question_type + " \u00b7 " + pair.target_modality + " \u00b7 " + pair.language));
    if (pair.review_decision) {
      head.appendChild(el("span", { "class": "badge earlier" },
        "earlier review: " + pair.review_decision + (pair.reviewer ? " by " + pair.reviewer : "")));
    }
    head.appendChild(el("span", { "class": "qa-id mono", title: "qa_id" }, pair.qa_id));
    card.appendChild(head);

    var main = el("div", { "class": "qa-main" });
    main.appendChild(el("div", { "class": "field-label" }, "Question"));
    refs.question = el("p", { "class": "question" }, pair.question);
    main.appendChild(refs.question);
    main.appendChild(el("div", { "class": "field-label" }, "Answer"));
    refs.answer = el("p", { "class": "answer" }, pair.answer);
    main.appendChild(refs.answer);
    refs.original = el("p", { "class": "original", hidden: "hidden" });
    main.appendChild(refs.original);
    if (pair.generated_question !== pair.question || pair.generated_answer !== pair.answer) {
      main.appendChild(el("p", { "class": "original" },
        "As generated: Q: " + pair.generated_question + "\nA: " + pair.generated_answer));
    }

    if (pair.spot_check) {
      main.appendChild(el("div", { "class": "field-label" }, "Spot check"));
      main.appendChild(el("p", { "class": "spot-note" }, "Approved automatically (no rule or critic flagged it) and drawn at random " +
        "for a check. Approve it if it is a good pair; reject or edit it if the rules missed something."));
    } else {
      main.appendChild(el("div", { "class": "field-label" }, "Why flagged"));
      var reasons = el("ul", { "class": "reasons" });
      var n = Math.max(pair.flags.length, pair.flag_reasons.length);
      for (var i = 0; i < n; i++) {
        reasons.appendChild(el("li", { "class": "reason" },
          el("span", { "class": "code" }, pair.flags[i] || "(flag)"), pair.flag_reasons[i] || flagHelp(pair.flags[i]) || ""));
      }
      main.appendChild(reasons);
    }
    var critic = criticBox(pair.critic);
    if (critic) { main.appendChild(critic); }

    var controls = el("div", { "class": "controls" });
    refs.approve = el("button", { type: "button", "class": "approve", title: "keep the pair as it is" }, "Approve");
    refs.reject = el("button", { type: "button", "class": "reject", title: "drop the pair from the dataset" }, "Reject");
    refs.edit = el("button", { type: "button", "class": "edit", title: "fix the question or answer" }, "Edit");
    refs.undo = el("button", { type: "button", "class": "undo", title: "forget this decision" }, "Clear");
    refs.label = el("span", { "class": "decision-label none" }, "undecided");
    [refs.approve, refs.reject, refs.edit, refs.undo, refs.label].forEach(function (c) { controls.appendChild(c); });
    main.appendChild(controls);

    refs.editor = el("div", { "class": "editor", hidden: "hidden" });
    refs.editQuestion = el("textarea", { "class": "edit-question", rows: "2", "aria-label": "edited question" });
    refs.editAnswer = el("textarea", { "class": "edit-answer", rows: "3", "aria-label": "edited answer" });
    refs.save = el("button", { type: "button", "class": "save-edit" }, "Save edit");
    refs.cancel = el("button", { type: "button", "class": "cancel-edit" }, "Cancel");
    refs.note = el("span", { "class": "note" });
    refs.editor.appendChild(el("div", { "class": "field-label" }, "Edit question"));
    refs.editor.appendChild(refs.editQuestion);
    refs.editor.appendChild(el("div", { "class": "field-label" }, "Edit answer"));
    refs.editor.appendChild(refs.editAnswer);
    refs.editor.appendChild(el("div", { "class": "controls" }, refs.save, refs.cancel, refs.note));
    main.appendChild(refs.editor);

    var chunkBox = el("div", { "class": "chunk" });
    if (chunk) {
      chunkBox.appendChild(el("div", { "class": "chunk-head" }, "Source chunk: ", el("strong", null, chunk.title),
        " \u00b7 " + chunk.markdown_version + " \u00b7 ", el("span", { "class": "mono" }, chunk.chunk_id)));
      var md = el("div", { "class": "markdown" });
      renderMarkdown(chunk.markdown, md);
      chunkBox.appendChild(md);
      chunkBox.appendChild(el("details", { "class": "raw-toggle" }, el("summary", null, "Raw Markdown"),
        el("pre", { "class": "raw" }, chunk.markdown)));
    } else {
      chunkBox.appendChild(el("div", { "class": "chunk-head" }, "Source chunk ", el("span", { "class": "mono" }, pair.chunk_id),
        " is not in the chunks table (stale pair?)"));
    }
    main.appendChild(chunkBox);
    card.appendChild(main);

    var aside = el("aside", { "class": "source" });
    aside.appendChild(el("div", { "class": "source-file", title: pair.source_path }, pair.file_name));
    aside.appendChild(el("div", { "class": "source-where" }, unitText(pair, chunk)));
    aside.appendChild(thumbFigure(pair.thumb));
    card.appendChild(aside);

    refs.approve.addEventListener("click", function () { closeEditor(refs); setDecision(pair.qa_id, "approve"); });
    refs.reject.addEventListener("click", function () { closeEditor(refs); setDecision(pair.qa_id, "reject"); });
    refs.undo.addEventListener("click", function () { closeEditor(refs); clearDecision(pair.qa_id); });
    refs.edit.addEventListener("click", function () {
      var d = decisions.get(pair.qa_id);
      refs.editQuestion.value = d && d.decision === "edit" ? d.question : pair.question;
      refs.editAnswer.value = d && d.decision === "edit" ? d.answer : pair.answer;
      refs.note.textContent = "";
      refs.editor.hidden = false;
      refs.editQuestion.focus();
    });
    refs.cancel.addEventListener("click", function () { closeEditor(refs); });
    refs.save.addEventListener("click", function () {
      var q = refs.editQuestion.value.trim();
      var a = refs.editAnswer.value.trim();
      if (!q || !a) { refs.note.textContent = "Question and answer must not be empty."; return; }
      if (q === pair.question && a === pair.answer) {
        refs.note.textContent = "Nothing changed: use Approve to keep the pair as it is.";
        return;
      }
      closeEditor(refs);
      setDecision(pair.qa_id, "edit", q, a);
    });
    return { pair: pair, node: card, refs: refs };
  }

  function criticBox(critic) {
    if (!critic || typeof critic !== "object") { return null; }
    var usable = critic.usable === true ? "yes" : critic.usable === false ? "no" : "unknown";
    var box = el("div", { "class": "critic", "data-usable": usable });
    box.appendChild(el("span", { "class": "field-label" }, "Critic"));
    var scores = critic.scores || {};
    CRITIC_LABELS.forEach(function (c) {
      var v = own(scores, c[0]);
      if (typeof v === "number") {
        box.appendChild(el("span", { "class": "score" + (v < 3 ? " low" : ""), "data-score": c[0] }, c[1] + " " + v + "/5"));
      }
    });
    if (usable !== "unknown") {
      box.appendChild(el("span", { "class": "badge " + (usable === "yes" ? "usable" : "unusable") }, usable === "yes" ? "usable" : "not usable"));
    }
    var reasons = Array.isArray(critic.reasons) ? critic.reasons : [];
    if (reasons.length) {
      var list = el("ul", { "class": "critic-reasons" });
      reasons.forEach(function (r) { list.appendChild(el("li", null, r)); });
      box.appendChild(list);
    }
    return box;
  }

  function closeEditor(refs) { refs.editor.hidden = true; refs.note.textContent = ""; }

  function updateCard(id) {
    var card = cards.get(id);
    var d = decisions.get(id);
    var refs = card.refs;
    var pair = card.pair;
    card.node.setAttribute("data-decision", d ? d.decision : "none");
    if (d && d.decision === "edit") {
      refs.question.textContent = d.question;
      refs.answer.textContent = d.answer;
      refs.original.textContent = "Before your edit: Q: " + pair.question + "\nA: " + pair.answer;
      refs.original.hidden = false;
    } else {
      refs.question.textContent = pair.question;
      refs.answer.textContent = pair.answer;
      refs.original.hidden = true;
    }
    refs.label.textContent = d ? DECISION_TEXT[d.decision] + (d.reviewer ? " by " + d.reviewer : "") + " at " + d.decided_at : "undecided";
    refs.label.className = "decision-label " + (d ? d.decision : "none");
  }

  // ---------- report headers: one card per test report; expert values go into the decisions file ----------
  var CONFIDENCE_HELP = "how sure the reading is: 1.0 expert, 0.95 table, 0.9 key-value line, 0.85 label/value boxes, " +
    "0.7 a model's value, 0.6 title line, 0.5 file name";

  function validHeaderDecision(h) {
    return !!h && typeof h === "object" && isText(h.doc_id) && isText(h.field) &&
      (h.value === null || h.value === undefined || isText(h.value));
  }

  function headerEntry(h) {
    return {
      doc_id: h.doc_id,
      field: h.field,
      value: isText(h.value) ? h.value.trim() : null,
      reviewer: isText(h.reviewer) ? h.reviewer.trim() : null,
      decided_at: isText(h.decided_at) ? h.decided_at : nowIso()
    };
  }

  function persistHeaders() {
    try {
      window.localStorage.setItem(HEADER_STORE_KEY, JSON.stringify(Array.from(headerDecisions.values())));
    } catch (e) { /* storage unavailable: values stay in memory */ }
  }

  function restoreHeaders() {
    try {
      var saved = JSON.parse(window.localStorage.getItem(HEADER_STORE_KEY) || "[]");
      (Array.isArray(saved) ? saved : []).forEach(function (h) {
        if (validHeaderDecision(h) && headerFields.has(headerKey(h.doc_id, h.field))) {
          headerDecisions.set(headerKey(h.doc_id, h.field), headerEntry(h));
        }
      });
    } catch (e) { /* ignore unreadable storage */ }
  }

  function importHeaderDecisions(list) {
    var n = { applied: 0, newer: 0, absent: 0, invalid: 0 };
    list.forEach(function (h) {
      if (!validHeaderDecision(h)) { n.invalid++; return; }
      var key = headerKey(h.doc_id, h.field);
      if (!headerFields.has(key)) { n.absent++; return; }
      var current = headerDecisions.get(key);
      if (current && isLater(current.decided_at, h.decided_at)) { n.newer++; return; }
      headerDecisions.set(key, headerEntry(h));
      updateHeaderRow(key);
      n.applied++;
    });
    persistHeaders();
    return n;
  }

  function setHeaderValue(key, value) {
    var entry = headerRows.get(key);
    headerDecisions.set(key, {
      doc_id: entry.report.doc_id, field: entry.field.name, value: value, reviewer: reviewerName() || null, decided_at: nowIso()
    });
    afterHeaderDecision(key);
  }

  function afterHeaderDecision(key) {
    updateHeaderRow(key);
    persistHeaders();
    updateDecisionCount();
  }

  function confidenceText(c) { return typeof c === "number" && isFinite(c) ? c.toFixed(2) : "\u2013"; }

  function buildHeaderField(report, field) {
    var key = headerKey(report.doc_id, field.name);
    var refs = {};
    var row = el("div", { "class": "hfield", "data-field": field.name, "data-review": field.review || "", "data-decided": "none" });
    var name = el("div", { "class": "hfield-name" }, el("strong", null, field.name));
    if (field.review) {
      name.appendChild(el("span", { "class": "badge " + (field.value == null ? "hr-missing" : "hr-low"),
        title: field.value == null ? "not found in the first slides or the file name" : "read with low confidence: confirm or correct it" },
      field.review));
    }
    row.appendChild(name);
    var read = el("div", { "class": "hfield-read" });
    read.appendChild(field.value == null ? el("span", { "class": "hvalue none" }, "not found") : el("span", { "class": "hvalue" }, field.value));
    read.appendChild(el("div", { "class": "hmeta" },
      el("span", { "class": "hsource", title: "where the value was read" }, field.source ? field.source : "no source"), " \u00b7 ",
      el("span", { "class": "hconf" + (field.review === "low confidence" ? " low" : ""), title: CONFIDENCE_HELP },
        "confidence " + confidenceText(field.confidence))));
    row.appendChild(read);
    var edit = el("div", { "class": "hfield-edit" });
    refs.input = el("input", { type: "text", "class": "header-input", maxlength: "500", autocomplete: "off",
      "aria-label": field.name + " of " + report.file_name, placeholder: "type the value" });
    refs.save = el("button", { type: "button", "class": "header-save",
      title: "store the value in the box (unchanged: you confirm what was read)" }, "Save");
    refs.none = el("button", { type: "button", "class": "header-null",
      title: "the report does not state this field: store it as empty (null)" }, "Not stated");
    refs.clear = el("button", { type: "button", "class": "header-clear", title: "forget your value for this field" }, "Clear");
    refs.label = el("span", { "class": "header-label" });
    refs.note = el("span", { "class": "note", role: "alert" });
    [refs.input, refs.save, refs.none, refs.clear, refs.label, refs.note].forEach(function (c) { edit.appendChild(c); });
    row.appendChild(edit);
    function save() {
      var value = refs.input.value.trim();
      if (!value) {
        refs.note.textContent = "Empty: use \u201cNot stated\u201d when the report does not give this field.";
        return;
      }
      refs.note.textContent = "";
      setHeaderValue(key, value);
    }
    refs.save.addEventListener("click", save);
    refs.input.addEventListener("keydown", function (ev) { if (ev.key === "Enter") { ev.preventDefault(); save(); } });
    refs.none.addEventListener("click", function () { refs.note.textContent = ""; setHeaderValue(key, null); });
    refs.clear.addEventListener("click", function () {
      refs.note.textContent = "";
      headerDecisions.delete(key);
      afterHeaderDecision(key);
    });
    headerRows.set(key, { report: report, field: field, node: row, refs: refs });
    return row;
  }

  function updateHeaderRow(key) {
    var entry = headerRows.get(key);
    if (!entry) { return; }
    var d = headerDecisions.get(key);
    var refs = entry.refs;
    var field = entry.field;
    entry.node.setAttribute("data-decided", d ? (d.value === null ? "null" : "value") : "none");
    if (d) {
      refs.input.value = d.value === null ? "" : d.value;
      var what = d.value === null ? "Not stated" : d.value === field.value ? "Confirmed as read" : "Your value";
      refs.label.textContent = what + (d.reviewer ? " by " + d.reviewer : "") + " at " + d.decided_at;
    } else {
      refs.input.value = field.value == null ? "" : field.value;
      refs.label.textContent = field.review ? "to review" : "as read";
    }
    refs.label.className = "header-label " + (d ? "decided" : field.review ? "todo" : "none");
    refs.clear.disabled = !d;
    updateHeaderCard(entry.report);
  }

  function updateHeaderCard(report) {
    var card = headerCards.get(report.doc_id);
    if (!card) { return; }
    var decided = report.fields.filter(function (f) { return headerDecisions.has(headerKey(report.doc_id, f.name)); }).length;
    var open = report.review.filter(function (name) { return !headerDecisions.has(headerKey(report.doc_id, name)); }).length;
    card.setAttribute("data-decided", String(decided));
    card.setAttribute("data-open", String(open));
    card.querySelector(".hcard-status").textContent = decided ? decided + (decided === 1 ? " value entered" : " values entered") +
      (report.needs_review ? ", " + open + " still to review" : "") : "";
  }

  function buildHeaderCard(report) {
    var card = el("article", { "class": "hdr", "data-doc-id": report.doc_id, "data-needs-review": report.needs_review ? "1" : "0" });
    headerCards.set(report.doc_id, card);
    var head = el("div", { "class": "qa-head" }, el("span", { "class": "source-file", title: report.path }, report.file_name));
    head.appendChild(report.needs_review
      ? el("span", { "class": "badge flag" }, report.review.length + (report.review.length === 1 ? " field" : " fields") + " to review")
      : el("span", { "class": "badge usable" }, "every field read confidently"));
    if (report.flag) { head.appendChild(el("span", { "class": "badge", title: "flag of the headers stage" }, report.flag)); }
    head.appendChild(el("span", { "class": "hcard-status" }));
    head.appendChild(el("span", { "class": "qa-id mono", title: "doc_id" }, report.doc_id));
    card.appendChild(head);
    var main = el("div", { "class": "hdr-main" });
    report.fields.forEach(function (f) { main.appendChild(buildHeaderField(report, f)); });
    main.appendChild(el("p", { "class": "hdr-read-by" }, "Read by " + report.provider + " (" + report.model + "). " +
      "Your value wins on the next build (source \u201cexpert\u201d)."));
    card.appendChild(main);
    card.appendChild(el("aside", { "class": "source" }, el("div", { "class": "source-where" },
      "where the header is: " + (report.unit === "page" ? "page 1" : "slide 1")), thumbFigure(report.thumb)));
    return card;
  }

  function renderHeaders() {
    var section = document.getElementById("headers");
    if (!HEADERS.length) { section.hidden = true; return; }
    var todo = HEADERS.filter(function (h) { return h.needs_review; });
    var done = HEADERS.filter(function (h) { return !h.needs_review; });
    var nFields = todo.reduce(function (a, h) { return a + h.review.length; }, 0);
    var line = document.getElementById("headers-line");
    line.textContent = "(" + todo.length + " of " + HEADERS.length + " test reports, " + nFields +
      (nFields === 1 ? " field" : " fields") + " to fill in or confirm)";
    line.setAttribute("data-reports", String(todo.length));
    line.setAttribute("data-fields", String(nFields));
    var list = document.getElementById("headers-review");
    list.replaceChildren.apply(list, todo.map(buildHeaderCard));
    if (!todo.length) { list.appendChild(el("p", { "class": "empty" }, "Every header field was read confidently.")); }
    var others = document.getElementById("headers-others");
    others.hidden = !done.length;
    document.getElementById("headers-others-summary").textContent = done.length +
      (done.length === 1 ? " test report" : " test reports") + " with every field read confidently (open to correct one)";
    var rest = document.getElementById("headers-others-list");
    rest.replaceChildren.apply(rest, done.map(buildHeaderCard));
    section.hidden = false;
    headerRows.forEach(function (entry, key) { updateHeaderRow(key); });
  }

  // ---------- filters and groups ----------
  function matches(pair) {
    var kind = document.getElementById("kind-filter").value;
    var flag = document.getElementById("flag-filter").value;
    var doc = document.getElementById("doc-filter").value;
    var status = document.getElementById("status-filter").value;
    var decision = document.getElementById("decision-filter").value;
    var query = document.getElementById("search").value.trim().toLowerCase();
    if ((kind === SPOT && !pair.spot_check) || (kind === "flagged" && pair.spot_check)) { return false; }
    if (flag && pair.flags.indexOf(flag) < 0) { return false; }
    if (doc && pair.doc_id !== doc) { return false; }
    if (status && pair.status !== status) { return false; }
    if (decision) {
      var d = decisions.get(pair.qa_id);
      if ((d ? d.decision : "none") !== decision) { return false; }
    }
    if (query) {
      var d2 = decisions.get(pair.qa_id);
      var hay = [pair.question, pair.answer, d2 && d2.question, d2 && d2.answer].join("\n").toLowerCase();
      if (hay.indexOf(query) < 0) { return false; }
    }
    return true;
  }

  function render() {
    var groups = document.getElementById("groups");
    var flag = document.getElementById("flag-filter").value;
    var buckets = new Map();
    (flag ? [flag] : DATA.flag_order.concat([SPOT])).forEach(function (f) { buckets.set(f, []); });
    var visible = 0;
    var nSpot = 0;
    DATA.pairs.forEach(function (pair) {
      if (!matches(pair)) { return; }
      var g = flag || pair.group;
      if (!buckets.has(g)) { buckets.set(g, []); }
      buckets.get(g).push(pair);
      visible++;
      if (pair.spot_check) { nSpot++; }
    });
    visibleIds = [];
    buckets.forEach(function (list) { list.forEach(function (pair) { visibleIds.push(pair.qa_id); }); });
    var sections = [];
    buckets.forEach(function (list, f) {
      if (!list.length) { return; }
      var section = el("section", { "class": "flag-group" + (f === SPOT ? " spot-group" : ""), "data-flag": f },
        el("h2", null, (f === SPOT ? "spot check" : f) + " ", el("span", { "class": "muted" },
          "(" + list.length + ")" + (flagHelp(f) ? " \u2014 " + flagHelp(f) : ""))));
      list.forEach(function (pair) { section.appendChild(cards.get(pair.qa_id).node); });
      sections.push(section);
    });
    groups.replaceChildren.apply(groups, sections);
    var count = document.getElementById("visible-count");
    count.textContent = visible + " of " + DATA.pairs.length + " pairs shown (" + (visible - nSpot) + " flagged, " +
      nSpot + (nSpot === 1 ? " spot check)" : " spot checks)");
    count.setAttribute("data-visible", String(visible));
    var empty = document.getElementById("empty");
    empty.hidden = visible > 0;
    if (!DATA.pairs.length) {
      empty.textContent = "No flagged pairs and no auto-approved pairs in this build: " +
        (HEADERS.length ? "no QA pair to review." : "nothing to review.");
    }
    updateBulkButtons();
  }

  // ---------- header: summary, filters ----------
  function fillSummary() {
    var c = DATA.counts;
    var sc = DATA.spot_check;
    document.getElementById("summary-line").textContent =
      c.total + " QA pairs in total: " + c.flagged + " flagged (listed below, each once under its first flag), " +
      (c.total - c.flagged) + " without flags. Spot check: " + sc.sampled + " of the " + sc.auto_approved +
      " auto-approved pairs not yet reviewed, drawn at random (" + Math.round(sc.share * 1000) / 10 + " %, at least " +
      sc.min + "), listed last.";
    var table = document.getElementById("counts");
    var headRow = el("tr", null, el("th", null, "flag"));
    c.statuses.forEach(function (s) { headRow.appendChild(el("th", null, s)); });
    headRow.appendChild(el("th", null, "total"));
    var tbody = el("tbody");
    c.by_flag.forEach(function (row) {
      var tr = el("tr", { "data-flag": row.flag }, el("td", { title: flagHelp(row.flag) || "" }, row.flag));
      c.statuses.forEach(function (s) { tr.appendChild(el("td", null, String(row[s] || 0))); });
      tr.appendChild(el("td", null, String(row.total)));
      tbody.appendChild(tr);
    });
    var foot = el("tr", null, el("td", null, "all pairs"));
    c.statuses.forEach(function (s) { foot.appendChild(el("td", { "data-status": s }, String(c.by_status[s] || 0))); });
    foot.appendChild(el("td", { "data-status": "total" }, String(c.total)));
    table.replaceChildren(el("thead", null, headRow), tbody, el("tfoot", null, foot));
    document.getElementById("generated").textContent =
      "Generated " + DATA.generated_at + ". A pair with several flags counts once in each flag's row. " +
      "Decisions are kept in this browser (localStorage, build " + BUILD + ") until you export them.";
  }

  function fillFilters() {
    var flagSel = document.getElementById("flag-filter");
    var kindSel = document.getElementById("kind-filter");
    var nSpot = DATA.pairs.filter(function (p) { return p.spot_check; }).length;
    kindSel.options[1].textContent = "flagged only (" + (DATA.pairs.length - nSpot) + ")";
    kindSel.options[2].textContent = "spot checks only (" + nSpot + ")";
    DATA.flag_order.forEach(function (f) {
      var n = DATA.pairs.filter(function (p) { return p.flags.indexOf(f) >= 0; }).length;
      flagSel.appendChild(el("option", { value: f }, f + " (" + n + ")"));
    });
    var docSel = document.getElementById("doc-filter");
    DATA.documents.forEach(function (d) {
      docSel.appendChild(el("option", { value: d.doc_id, title: d.path }, d.file_name + " (" + d.n_flagged + " flagged" +
        (d.n_spot_check ? ", " + d.n_spot_check + " spot checks" : "") + ")"));
    });
    var statusSel = document.getElementById("status-filter");
    var seen = [];
    DATA.pairs.forEach(function (p) { if (seen.indexOf(p.status) < 0) { seen.push(p.status); } });
    seen.sort().forEach(function (s) { statusSel.appendChild(el("option", { value: s }, s)); });
    FILTER_IDS.forEach(function (id) {
      document.getElementById(id).addEventListener("change", render);
    });
    document.getElementById("search").addEventListener("input", render);
  }

  function init() {
    fillSummary();
    fillFilters();
    DATA.pairs.forEach(function (pair) { cards.set(pair.qa_id, buildCard(pair)); });
    restore();
    decisions.forEach(function (d, id) { updateCard(id); });
    restoreHeaders();
    renderHeaders();
    updateDecisionCount();
    render();
    var reviewer = document.getElementById("reviewer");
    reviewer.addEventListener("input", function () {
      if (reviewerName()) {
        reviewer.classList.remove("missing");
        showMessage("export-message", "ok", "");
      }
      try { window.localStorage.setItem(REVIEWER_KEY, reviewerName()); } catch (e) { /* ignore */ }
    });
    document.getElementById("export").addEventListener("click", exportDecisions);
    document.getElementById("import-file").addEventListener("change", importFile);
    document.getElementById("bulk-approve").addEventListener("click", function () { bulkDecide("approve"); });
    document.getElementById("bulk-reject").addEventListener("click", function () { bulkDecide("reject"); });
    document.getElementById("bulk-undo").addEventListener("click", undoBulk);
    document.addEventListener("keydown", function (ev) {
      if (ev.key === "Escape") {
        document.querySelectorAll("figure.thumb.zoomed").forEach(function (f) { f.classList.remove("zoomed"); });
      }
    });
    document.body.setAttribute("data-ready", "1");
  }

  init();
})();
