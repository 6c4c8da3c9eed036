// ragprep review report: the state of the page. Everything shown is rendered on the server
// (tasks/qa/review_page.py); this script keeps the decisions (approve / reject / edit, bulk, import, export,
// the report-header values) and applies the filters. It creates no elements from data: text goes in with
// textContent / value only; no innerHTML, no eval, nothing loaded.
(function () {
  "use strict";

  var DATA = JSON.parse(document.getElementById("data").textContent);
  var BUILD = DATA.build;
  var STORE_KEY = "ragprep-review-decisions:" + BUILD;
  var REVIEWER_KEY = "ragprep-review-reviewer";
  var SPOT = "spot_check";
  var FILTER_IDS = ["kind-filter", "flag-filter", "doc-filter", "status-filter", "decision-filter"];
  var DECISION_TEXT = { approve: "Approved", reject: "Rejected", edit: "Edited" };

  var decisions = new Map(); // qa_id -> {decision, question, answer, reviewer, decided_at}
  var cards = new Map(); // qa_id -> {pair, node, refs}
  var sections = new Map(); // flag (or spot_check) -> its section, rendered on the server
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

  // ---------- cards (rendered on the server; wired here) ----------
  function wireCard(node) {
    var pair = pairsById.get(node.getAttribute("data-qa-id"));
    if (!pair) { return; }
    var q = function (selector) { return node.querySelector(selector); };
    var refs = {
      question: q("p.question"), answer: q("p.answer"), original: q("p.before-edit"), label: q(".decision-label"),
      editor: q(".editor"), editQuestion: q("textarea.edit-question"), editAnswer: q("textarea.edit-answer"), note: q(".editor .note")
    };
    q("button.approve").addEventListener("click", function () { closeEditor(refs); setDecision(pair.qa_id, "approve"); });
    q("button.reject").addEventListener("click", function () { closeEditor(refs); setDecision(pair.qa_id, "reject"); });
    q("button.undo").addEventListener("click", function () { closeEditor(refs); clearDecision(pair.qa_id); });
    q("button.edit").addEventListener("click", function () {
      var d = decisions.get(pair.qa_id);
      refs.editQuestion.value = d && d.decision === "edit" ? d.question : pair.question;
      refs.editAnswer.value = d && d.decision === "edit" ? d.answer : pair.answer;
      refs.note.textContent = "";
      refs.editor.hidden = false;
      refs.editQuestion.focus();
    });
    q("button.cancel-edit").addEventListener("click", function () { closeEditor(refs); });
    q("button.save-edit").addEventListener("click", function () {
      var question = refs.editQuestion.value.trim();
      var answer = refs.editAnswer.value.trim();
      if (!question || !answer) { refs.note.textContent = "Question and answer must not be empty."; return; }
      if (question === pair.question && answer === pair.answer) {
        refs.note.textContent = "Nothing changed: use Approve to keep the pair as it is.";
        return;
      }
      closeEditor(refs);
      setDecision(pair.qa_id, "edit", question, answer);
    });
    cards.set(pair.qa_id, { pair: pair, node: node, refs: refs });
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

  function wireHeaderField(report, field, row) {
    var key = headerKey(report.doc_id, field.name);
    var q = function (selector) { return row.querySelector(selector); };
    var refs = {
      input: q("input.header-input"), save: q("button.header-save"), none: q("button.header-null"), clear: q("button.header-clear"),
      label: q(".header-label"), note: q(".note")
    };
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

  function wireHeaders() { // the cards are rendered on the server; a card's fields match the report's, by name
    var byDoc = new Map();
    HEADERS.forEach(function (h) { byDoc.set(h.doc_id, h); });
    document.querySelectorAll("#headers article.hdr[data-doc-id]").forEach(function (card) {
      var report = byDoc.get(card.getAttribute("data-doc-id"));
      if (!report) { return; }
      headerCards.set(report.doc_id, card);
      report.fields.forEach(function (field) {
        card.querySelectorAll(".hfield[data-field]").forEach(function (row) {
          if (row.getAttribute("data-field") === field.name) { wireHeaderField(report, field, row); }
        });
      });
    });
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
    var flag = document.getElementById("flag-filter").value;
    var counts = new Map();
    var visible = 0;
    var nSpot = 0;
    visibleIds = [];
    cards.forEach(function (card) { card.node.remove(); });
    DATA.pairs.forEach(function (pair) { // page order; with a flag filter, one section holds every pair with the flag
      if (!matches(pair)) { return; }
      var section = sections.get(flag || pair.group);
      section.appendChild(cards.get(pair.qa_id).node);
      counts.set(section, (counts.get(section) || 0) + 1);
      visibleIds.push(pair.qa_id);
      visible++;
      if (pair.spot_check) { nSpot++; }
    });
    sections.forEach(function (section) {
      var n = counts.get(section) || 0;
      section.hidden = n === 0;
      section.querySelector(".group-count").textContent = String(n);
    });
    var count = document.getElementById("visible-count");
    count.textContent = visible + " of " + DATA.pairs.length + " pairs shown (" + (visible - nSpot) + " flagged, " +
      nSpot + (nSpot === 1 ? " spot check)" : " spot checks)");
    count.setAttribute("data-visible", String(visible));
    document.getElementById("empty").hidden = visible > 0 || !DATA.pairs.length;
    updateBulkButtons();
  }

  function copyThumbnails() { // a thumbnail is written once in the page; its repeats copy the first one's image
    var first = new Map();
    document.querySelectorAll("img[data-thumb]").forEach(function (img) { first.set(img.getAttribute("data-thumb"), img); });
    document.querySelectorAll("img[data-thumb-copy]").forEach(function (img) {
      var from = first.get(img.getAttribute("data-thumb-copy"));
      if (from) { img.setAttribute("src", from.getAttribute("src")); }
    });
  }

  function init() {
    copyThumbnails();
    document.querySelectorAll("#groups > section.flag-group").forEach(function (s) { sections.set(s.getAttribute("data-flag"), s); });
    document.querySelectorAll("#groups article.qa[data-qa-id]").forEach(wireCard);
    restore();
    decisions.forEach(function (d, id) { updateCard(id); });
    restoreHeaders();
    wireHeaders();
    updateDecisionCount();
    render();
    FILTER_IDS.forEach(function (id) { document.getElementById(id).addEventListener("change", render); });
    document.getElementById("search").addEventListener("input", render);
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
    document.addEventListener("click", function (ev) {
      var fig = ev.target instanceof Element ? ev.target.closest("figure.thumb") : null;
      if (fig) { fig.classList.toggle("zoomed"); }
    });
    document.addEventListener("keydown", function (ev) {
      if (ev.key === "Escape") {
        document.querySelectorAll("figure.thumb.zoomed").forEach(function (f) { f.classList.remove("zoomed"); });
      }
    });
    document.body.setAttribute("data-ready", "1");
  }

  init();
})();
