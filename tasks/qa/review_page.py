"""The review report's page: ``build_report_data``'s data rendered into one self-contained HTML file.

The static parts (counts, filter choices, one card per pair with its flags, reasons, critic scores, source
chunk and thumbnail, the flag groups and the flags' help) are rendered here by Jinja2 with autoescaping on;
the source chunk's Markdown by markdown-it-py (CommonMark plus tables, ``html=False``: raw HTML in a chunk
stays text, links and images are shown as text, so nothing in a chunk can make the page load or open
anything). The help text of a flag comes from the flag registry (``tasks.qa.registry``).

The report headers' cards (each field's value, source, confidence and input) are rendered here too. The page
script (``templates/review_report.js``) only keeps state: the decisions (approve / reject / edit, bulk, import,
export), the report-header values and the filters. It reads a small JSON block (``page_state``) that
holds what it needs of each pair; that block is written with ``json_for_script`` so no text can close it.
The Content-Security-Policy allows no network at all and only the page script to run: ``script-src`` lists
the SHA-256 of the one inline script (``'unsafe-inline'`` stays for browsers older than CSP 2, which ignore
hashes; newer ones ignore ``'unsafe-inline'`` when a hash is given).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markdown_it import MarkdownIt
from markupsafe import Markup, escape

from tasks.qa.registry import describe

TEMPLATES = Path(__file__).resolve().parent / "templates"
CSP_BASE = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
SPOT_CHECK_GROUP = "spot_check"
SPOT_CHECK_HELP = "approved without flags, drawn at random: check what the rules may have missed"
CRITIC_LABELS = (("grounded", "grounded"), ("standalone", "standalone"), ("well_formed", "well-formed"), ("useful", "useful"))
SAFE_IMAGE = re.compile(r"data:image/(png|jpeg|svg\+xml);base64,[A-Za-z0-9+/=]+")
CONFIDENCE_HELP = ("how sure the reading is: 1.0 expert, 0.95 table, 0.9 key-value line, 0.85 label/value boxes, "
                   "0.7 a model's value, 0.6 title line, 0.5 file name")
STATE_PAIR_FIELDS = ("qa_id", "doc_id", "question", "answer", "flags", "status", "spot_check", "group")
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_ESCAPED_BR = re.compile(r"&lt;br\s*/?&gt;", re.I)


def json_for_script(payload: object) -> str:
    """JSON safe to place inside ``<script type="application/json">``: no ``<``, ``>``, ``&``,
    U+2028 or U+2029 appear literally (they are ``\\uXXXX`` escapes inside JSON strings)."""
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return "".join(_JSON_ESCAPES.get(ch, ch) for ch in text)


def flag_help(code: str) -> str:
    """The help line of a flag code (or of the spot-check group): from the flag registry, '' when unknown."""
    return SPOT_CHECK_HELP if code == SPOT_CHECK_GROUP else describe(code)


def _heading_open(self, tokens, idx, options, env) -> str:
    """Headings two levels down (a chunk's ``#`` is an ``h3`` inside a card)."""
    level = min(6, int(tokens[idx].tag[1]) + 2)
    return f"<h{level}>"


def _heading_close(self, tokens, idx, options, env) -> str:
    return f"</h{min(6, int(tokens[idx].tag[1]) + 2)}>"


def _link_open(self, tokens, idx, options, env) -> str:
    """A link is its text followed by its target in grey (``_link_close``), never an ``<a>``."""
    return ""


def _link_close(self, tokens, idx, options, env) -> str:
    opening = next(t for t in reversed(tokens[:idx]) if t.type == "link_open")
    return f'<span class="link-target"> ({escape(opening.attrGet("href") or "")})</span>'


def _image(self, tokens, idx, options, env) -> str:
    """A picture reference as text: ``[picture: alt]``, its target in the tooltip; nothing is loaded."""
    token = tokens[idx]
    src = token.attrGet("src") or ""
    alt = self.renderInlineAsText(token.children or [], options, env) or src
    return f'<span class="img-ref" title="{escape(src)}">[picture: {escape(alt)}]</span>'


def _text(self, tokens, idx, options, env) -> str:
    """Escaped text; a literal ``<br>`` (common in extracted table cells) becomes a line break."""
    return _ESCAPED_BR.sub("<br>", str(escape(tokens[idx].content)))


@cache
def markdown_renderer() -> MarkdownIt:
    """CommonMark with tables, raw HTML off; headings shifted, links and images rendered as text."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    for name, rule in (("heading_open", _heading_open), ("heading_close", _heading_close), ("link_open", _link_open),
                       ("link_close", _link_close), ("image", _image), ("text", _text)):
        md.add_render_rule(name, rule)
    return md


def render_markdown(text: str | None) -> Markup:
    """A chunk's Markdown as safe HTML (see ``markdown_renderer``)."""
    return Markup(markdown_renderer().render(text or ""))


def safe_image(src: object) -> str | None:
    """``src`` if it is an inline PNG/JPEG/SVG data URL, else None (nothing else may become an image)."""
    return src if isinstance(src, str) and SAFE_IMAGE.fullmatch(src) else None


def unit_text(pair: dict, chunk: dict | None) -> str:
    """Where a pair points: "slide 3", "page 7", "pages 7–9" or "unit unknown"; pages its answer was not located on
    (``page_source`` chunk: its chunk's pages) say so."""
    if pair.get("slide") is not None:
        return f"slide {pair['slide']}"
    start, end = pair.get("page_start"), pair.get("page_end")
    if start is None and chunk:
        start, end = chunk.get("page_start"), chunk.get("page_end")
    if start is None:
        return "unit unknown"
    where = f"pages {start}\u2013{end}" if end and end != start else f"page {start}"
    return f"{where} (the chunk's; answer not located)" if pair.get("page_source") == "chunk" else where


def page_state(data: dict) -> dict:
    """What the page script needs, nothing more: the pairs' ids, texts, flags and filter keys; each report
    header's fields as read (name, value, why to review), to tell a confirmed value from a changed one."""
    return {
        "format": data["format"],
        "build": data["build"],
        "pairs": [{k: p[k] for k in STATE_PAIR_FIELDS} for p in data["pairs"]],
        "headers": [
            {"doc_id": h["doc_id"], "needs_review": h["needs_review"], "review": h["review"],
             "fields": [{k: f[k] for k in ("name", "value", "review")} for f in h["fields"]]}
            for h in data["headers"]
        ],
    }


def _groups(data: dict) -> list[dict]:
    """The page's sections in order: one per flag (the pairs whose first flag it is), then the spot checks.
    Every flag of ``flag_order`` gets a section, empty ones hidden: the flag filter fills one section."""
    order = [*data["flag_order"], SPOT_CHECK_GROUP]
    order += sorted({p["group"] for p in data["pairs"]} - set(order))
    groups = {g: {"flag": g, "help": flag_help(g), "pairs": []} for g in order}
    for pair in data["pairs"]:
        groups[pair["group"]]["pairs"].append(pair)
    return list(groups.values())


class _FirstUse:
    """True the first time a thumbnail key is asked for (in page order), False after: each image is written
    once, its repeats copy it (a slide's thumbnail is shared by every pair from that slide)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, key: str) -> bool:
        first = key not in self.seen
        self.seen.add(key)
        return first


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(markdown=render_markdown, safe_image=safe_image)
    env.globals.update(flag_help=flag_help, unit_text=unit_text, critic_labels=CRITIC_LABELS, confidence_help=CONFIDENCE_HELP)
    return env


def _inline_asset(name: str) -> str:
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    if "</" in text or "<!--" in text or "<script" in text.lower():  # would end or confuse the inline block
        raise ValueError(f"{name} must not contain '</', '<!--' or '<script'")
    return text


def script_hash(js: str) -> str:
    """The CSP source expression that allows exactly the inline script ``js``."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode("ascii") + "'"


def render_report_html(data: dict) -> str:
    """The page: the Jinja2 template with the data, inline CSS and the page script, its state as escaped JSON."""
    build = data["build"]
    if not re.fullmatch(r"[0-9a-f]+", build):
        raise ValueError(f"build id must be hex: {build!r}")
    css, js = _inline_asset("review_report.css"), _inline_asset("review_report.js")
    csp = f"{CSP_BASE}; script-src 'unsafe-inline' {script_hash(js)}"  # constants and base64 only: written as is
    statuses = sorted({p["status"] for p in data["pairs"]})
    n_spot = sum(1 for p in data["pairs"] if p["spot_check"])
    flag_counts = {f: sum(1 for p in data["pairs"] if f in p["flags"]) for f in data["flag_order"]}
    return _environment().get_template("review_report.html").render(
        data=data, csp=Markup(csp), css=Markup(css), js=Markup(js), state=Markup(json_for_script(page_state(data))),
        groups=_groups(data), first_use=_FirstUse(), statuses=statuses, n_spot=n_spot, flag_counts=flag_counts,
        spot_group=SPOT_CHECK_GROUP, share_pct=f'{round(data["spot_check"]["share"] * 1000) / 10:g}',
    )
