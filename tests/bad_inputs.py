"""Builders of broken input files, each paired with the reason ragprep must give."""

from __future__ import annotations

import io
from pathlib import Path

import pymupdf

from tests.conftest import SAMPLE_DOCS


def make_bad_inputs(folder: Path) -> dict[str, str]:
    """Write one file per failure mode into ``folder``; return {file name: expected reason fragment}."""
    folder.mkdir(parents=True, exist_ok=True)
    deck = (SAMPLE_DOCS / "meeting_notes_weekly_safety.pptx").read_bytes()
    expected: dict[str, str] = {}

    (folder / "empty.pptx").write_bytes(b"")
    expected["empty.pptx"] = "empty file (0 bytes)"
    (folder / "empty.pdf").write_bytes(b"")
    expected["empty.pdf"] = "empty file (0 bytes)"

    (folder / "truncated.pptx").write_bytes(deck[: len(deck) // 3])
    expected["truncated.pptx"] = "not a readable PPTX (corrupt or truncated zip archive)"

    (folder / "not_really.pdf").write_bytes(b"<html><body>this is a web page saved as .pdf</body></html>\n" * 20)
    expected["not_really.pdf"] = "not a PDF (no %PDF- header"

    pdf = pymupdf.open()
    page = pdf.new_page()
    page.insert_text((72, 72), "Confidential crash data")
    pdf.save(folder / "locked.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner", user_pw="secret")
    pdf.close()
    expected["locked.pdf"] = "password-protected PDF"

    from msoffcrypto.format.ooxml import OOXMLFile

    encrypted = io.BytesIO()
    OOXMLFile(io.BytesIO(deck)).encrypt("secret", encrypted)
    (folder / "locked.pptx").write_bytes(encrypted.getvalue())
    expected["locked.pptx"] = "password-protected (encrypted)"

    (folder / "really_a_pdf.pptx").write_bytes((SAMPLE_DOCS / "textbook_vehicle_safety.pdf").read_bytes())
    expected["really_a_pdf.pptx"] = "not a PowerPoint deck but a PDF; rename it to .pdf"
    (folder / "really_a_deck.pdf").write_bytes(deck)
    expected["really_a_deck.pdf"] = "not a PDF but a zip archive (a .pptx or other Office file?)"

    (folder / "minutes.docx").write_bytes(b"PK\x03\x04 not handled")
    expected["minutes.docx"] = "unsupported file type '.docx'"
    return expected
