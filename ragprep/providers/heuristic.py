"""The ``heuristic`` provider: deterministic rules for each generative step.

No model is involved. Rows produced here record ``provider=heuristic`` and
``model=ragprep-rules-1``, and image descriptions begin with "Heuristic description".
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from ragprep.tokens import count_tokens

# --- correct: whitespace, bullet and table clean-up ----------------------------

_BULLET_RE = re.compile(r"^(\s*)(?:[•▪●◦‣➢➤►▸■□✓✔–—]\s*|[-*]\s+)(?=\S)")
"""A bullet glyph (spacing optional), or a Markdown '-'/'*' bullet (a space must follow:
'**bold**' and '-5 mm' are not bullets)."""
_SPACES_RE = re.compile(r"(?<=\S)[ \t]{2,}")
_HYPHEN_BREAK_RE = re.compile(r"([a-z])-\n([a-z])")


def _clean_table_block(lines: list[str]) -> list[str]:
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines]
    width = max(len(r) for r in rows)
    out = []
    for i, row in enumerate(rows):
        if i == 1 and all(set(c) <= set("-: ") for c in row):
            out.append("|" + "|".join(["---"] * width) + "|")
            continue
        row = row + [""] * (width - len(row))
        out.append("| " + " | ".join(" ".join(c.split()) for c in row) + " |")
    return out


def correct_markdown(markdown: str) -> str:
    """Normalise a slide's Markdown without changing its words or numbers.

    Unicode NFC and no-break spaces; bullet glyphs (•, ▪, ➢, ...) become Markdown
    bullets keeping their indentation; runs of spaces inside a line collapse; words
    hyphenated across a line break are joined; tables get one cell count per row;
    repeated identical lines next to each other (duplicated text boxes) are dropped;
    no more than one blank line in a row.
    """
    text = unicodedata.normalize("NFC", markdown).replace("\u00a0", " ").replace("\u200b", "")
    text = _HYPHEN_BREAK_RE.sub(r"\1\2", text)
    lines = text.split("\n")
    out: list[str] = []
    table: list[str] = []

    def flush_table() -> None:
        if table:
            out.extend(_clean_table_block(table))
            table.clear()

    for raw in lines:
        line = raw.rstrip()
        if line.lstrip().startswith("|") and line.rstrip().endswith("|"):
            table.append(line)
            continue
        flush_table()
        if not line.lstrip().startswith(">") and not line.lstrip().startswith("!["):
            match = _BULLET_RE.match(line)
            if match and not line.lstrip().startswith("---"):
                line = match.group(1) + "- " + line[match.end():]
            indent = len(line) - len(line.lstrip())
            line = line[:indent] + _SPACES_RE.sub(" ", line[indent:])
        if line and out and line == out[-1] and not line.startswith("#"):
            continue
        if not line and out and not out[-1]:
            continue
        out.append(line)
    flush_table()
    return "\n".join(out).strip() + "\n" if out else ""


# --- headers: key-value, table and title rules ----------------------------------

FIELD_SYNONYMS: dict[str, tuple[str, ...]] = {
    "test name": ("test name", "test", "test no", "test no.", "test id", "test number", "시험명", "시험 명", "시험 번호", "테스트명"),
    "region": ("region", "market", "지역", "시장"),
    "stage": ("stage", "state", "phase", "development stage", "단계", "개발 단계", "개발단계"),
    "purpose": ("purpose", "objective", "goal", "aim", "목적", "시험 목적", "시험목적"),
}
REGION_TOKENS = {
    "eu": "EU", "europe": "EU", "us": "US", "usa": "US", "na": "NA", "kr": "KR", "korea": "KR", "cn": "CN",
    "china": "CN", "jp": "JP", "japan": "JP", "in": "IN", "india": "IN", "global": "Global",
}
STAGE_TOKENS = {"p1": "P1", "p2": "P2", "proto": "Prototype", "dv": "DV", "pv": "PV", "sop": "SOP", "pilot": "Pilot"}
_KV_RE = re.compile(r"^\s*(?:[-*]\s*)?(?:\*\*)?(?P<key>[^:：|#>]{1,40}?)(?:\*\*)?\s*[:：]\s*(?P<value>\S.*?)\s*$")


def _synonyms(field: str) -> tuple[str, ...]:
    return FIELD_SYNONYMS.get(field.lower(), (field.lower(),))


def _normalise_key(key: str) -> str:
    return " ".join(key.replace("*", "").strip().lower().split())


def extract_header(fields: Sequence[str], slides: Sequence[tuple[int, str]], file_name: str) -> dict[str, dict]:
    """Header field values with their source; a field not found has value None.

    Rules, in order: ``Key: value`` lines and two-column table rows on the first slides
    (field names and their synonyms, English and Korean); then, for Region and Stage
    only, a token in the file name (``..._EU_...``, ``..._P2_...``). Nothing else: a
    field the document does not state stays empty.
    """
    found: dict[str, dict] = {f: {"value": None, "source": None} for f in fields}
    lookup = {syn: f for f in fields for syn in _synonyms(f)}
    for number, markdown in slides:
        for line in markdown.splitlines():
            pairs: list[tuple[str, str, str]] = []
            if line.strip().startswith("|"):
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cells) == 2 and cells[0] and cells[1] and set(cells[1]) - set("-: "):
                    pairs.append((cells[0], cells[1], "table"))
            else:
                match = _KV_RE.match(line)
                if match:
                    pairs.append((match.group("key"), match.group("value"), "key-value"))
            for key, value, kind in pairs:
                field = lookup.get(_normalise_key(key))
                if field and found[field]["value"] is None:
                    found[field] = {"value": value.strip(), "source": f"slide {number} {kind}"}
    tokens = [t.lower() for t in re.split(r"[^0-9A-Za-z]+", Path(file_name).stem) if t]
    for field in fields:
        if found[field]["value"] is not None:
            continue
        table = REGION_TOKENS if field.lower() == "region" else STAGE_TOKENS if field.lower() in ("stage", "state") else None
        if table:
            hit = next((table[t] for t in tokens if t in table), None)
            if hit:
                found[field] = {"value": hit, "source": "file name"}
    return found


# --- describe: OCR text plus structural facts -----------------------------------


def _table_rows(markdown: str) -> list[list[str]]:
    rows = []
    for line in markdown.splitlines():
        if line.strip().startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= set("-: ") for c in cells):
                rows.append(cells)
    return rows


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def describe(kind: str, unit: str, number: int, text: str, ocr_text: str | None, width: int | None, height: int | None, facts: dict) -> str:
    """A factual description of a picture, chart or table, from what extraction knows."""
    where = f"{unit} {number}"
    rows = _table_rows(text)
    if kind == "picture" or kind == "figure" or (kind == "table" and not rows and ocr_text and ocr_text.strip()):
        shape = ""
        if width and height:
            orientation = "landscape" if width > height * 1.1 else "portrait" if height > width * 1.1 else "square"
            shape = f" of {width}x{height} px ({orientation})"
        noun = "picture" if kind == "picture" else f"{kind} image"
        if ocr_text and ocr_text.strip():
            lines = [ln.strip() for ln in ocr_text.splitlines() if ln.strip()]
            return (
                f"Heuristic description: {noun}{shape} on {where}. It carries text; OCR reads: "
                + " / ".join(f'"{ln}"' for ln in lines[:12])
                + "."
            )
        return f"Heuristic description: {noun}{shape} on {where}. OCR found no legible text; its visual content is not described by rules."
    if kind == "chart":
        header, body = (rows[0], rows[1:]) if rows else ([], [])
        series = header[1:]
        categories = [r[0] for r in body if r]
        title = facts.get("title")
        parts = [f"Heuristic description: {facts.get('chart_type', 'chart')} chart" + (f' "{title}"' if title else "") + f" on {where}"]
        if series:
            parts.append(f"with {len(series)} series ({', '.join(series)})")
        if categories:
            parts.append(f"over {len(categories)} categories ({categories[0]} to {categories[-1]})")
        sentence = " ".join(parts) + "."
        peaks = []
        for col, name in enumerate(series, start=1):
            values = [(_number(r[col]), r[0]) for r in body if col < len(r) and _number(r[col]) is not None]
            if values:
                value, category = max(values, key=lambda v: v[0])
                peaks.append(f"{name} peaks at {r_fmt(value)} ({category})")
        return sentence + (" " + "; ".join(peaks) + "." if peaks else "")
    if kind == "table":
        if not rows:
            return f"Heuristic description: empty table on {where}."
        n_rows, n_cols = len(rows), max(len(r) for r in rows)
        header = ", ".join(c for c in rows[0] if c)
        first_col = [r[0] for r in rows[1:] if r and r[0]]
        text_out = f"Heuristic description: table of {n_rows} rows x {n_cols} columns on {where}; header: {header}."
        if first_col:
            text_out += f" Rows: {', '.join(first_col[:12])}" + ("..." if len(first_col) > 12 else "") + "."
        return text_out
    return f"Heuristic description: {kind} on {where} ({count_tokens(text)} tokens of text)."


def r_fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
