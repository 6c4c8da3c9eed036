"""The fault corpus, made at test time (no committed blobs): hostile archives, pictures, names and folders.

Each builder writes one file (or folder entry) and is fast: a zip bomb's member is zeros, deflated
by zlib in about a second per GiB, so a 3 MB deck that inflates to 1 GiB costs little to make.
"""

from __future__ import annotations

import io
import os
import random
import signal
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path

import pymupdf

from tests.conftest import REPO, SAMPLE_DOCS

BASE_DECK = SAMPLE_DOCS / "meeting_notes_weekly_safety.pptx"
BOMB_MEMBER = "ppt/slides/slide1.xml"


def _rewrite_deck(target: Path, member: str, inflated: int, level: int) -> None:
    """Copy ``BASE_DECK`` to ``target`` with ``member`` replaced by ``inflated`` zero bytes deflated at ``level``."""
    block = bytes(1 << 20)
    with zipfile.ZipFile(BASE_DECK) as source, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as out:
        for info in source.infolist():
            if info.filename != member:
                out.writestr(info, source.read(info), compress_type=zipfile.ZIP_DEFLATED)
                continue
            with out.open(member, "w", force_zip64=inflated >= zipfile.ZIP64_LIMIT) as handle:
                for start in range(0, inflated, len(block)):
                    handle.write(block[: min(len(block), inflated - start)])


def zip_bomb(target: Path, inflated: int = 1 << 30, member: str = BOMB_MEMBER) -> Path:
    """A real deck whose ``member`` is ``inflated`` bytes of zeros (1 GiB: a ~4.6 MB file, about a second to make)."""
    _rewrite_deck(target, member, inflated, level=1)
    return target


def ratio_bomb(target: Path, inflated: int = 64 << 20, member: str = BOMB_MEMBER) -> Path:
    """A deck whose ``member`` inflates about 1,000 times (``inflated`` bytes of zeros at zlib level 9)."""
    _rewrite_deck(target, member, inflated, level=9)
    return target


def lying_bomb(target: Path, inflated: int = 64 << 20, declared: int = 4096, member: str = BOMB_MEMBER,
               level: int = 9) -> Path:
    """A deck whose ``member`` holds ``inflated`` bytes of zeros but whose headers (local and central) declare
    ``declared``: passes any check of declared sizes and ratios; only the reader can notice."""
    _rewrite_deck(target, member, inflated, level=level)
    data = bytearray(target.read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = archive.getinfo(member)
        start_dir = archive.start_dir
    local = info.header_offset
    assert data[local:local + 4] == b"PK\x03\x04"
    struct.pack_into("<I", data, local + 22, declared)  # local header: uncompressed size
    offset = start_dir
    while data[offset:offset + 4] == b"PK\x01\x02":  # central directory entries
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, offset + 28)
        if data[offset + 46:offset + 46 + name_len].decode() == member:
            struct.pack_into("<I", data, offset + 24, declared)
        offset += 46 + name_len + extra_len + comment_len
    target.write_bytes(bytes(data))
    return target


def huge_png_header(width: int = 20_000, height: int = 20_000) -> bytes:
    """A PNG whose header declares ``width`` x ``height`` pixels (400 megapixels by default) and whose image data is
    a few bytes: opening it is enough for a decoder to refuse it, and the file stays tiny."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(width + 1))) + chunk(b"IEND", b"")


def deck_with_picture(target: Path, picture: bytes, title: str = "Pictures") -> Path:
    """A one-slide deck holding one picture whose stored bytes are ``picture`` (a small PNG is placed with
    python-pptx, then its media member replaced, so python-pptx never decodes ``picture`` while building)."""
    from PIL import Image
    from pptx import Presentation
    from pptx.util import Inches

    small = io.BytesIO()
    Image.new("L", (200, 200), 255).save(small, format="PNG")
    small.seek(0)
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = title
    slide.shapes.add_picture(small, Inches(1), Inches(1.5), Inches(4), Inches(4))
    built = io.BytesIO()
    deck.save(built)
    with zipfile.ZipFile(io.BytesIO(built.getvalue())) as source, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            data = picture if info.filename.startswith("ppt/media/") else source.read(info)
            out.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
    return target


def titled_deck(target: Path, title: str) -> Path:
    """A one-slide deck with ``title`` (distinct content per file, so no two are duplicates)."""
    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = title
    slide.placeholders[1].text = f"Body of {title}"
    deck.save(str(target))
    return target


HOSTILE_NAMES = [
    "$(touch pwned).pptx",
    "a; rm -rf ~ #.pptx",
    "back`id`tick.pptx",
    "-rf.pptx",
    "--help.pptx",
    "new\nline.pptx",
    "한글 보고서 ünïcödé.pptx",
    "\u202eexe.pptx",  # right-to-left override
]
"""File names that would break a shell or a naive log line; ragprep runs no shell, so each is an ordinary deck."""

NON_UTF8_NAME = b"report-\xff\xfe-cp949.pptx"
"""A name that is not valid UTF-8 (bytes a file system happily stores)."""


def hostile_folder(folder: Path) -> dict[str, str]:
    """Decks under hostile names, one under a non-UTF-8 name, and symbolic-link loops; returns {name: title}."""
    folder.mkdir(parents=True, exist_ok=True)
    titles = {}
    for number, name in enumerate(HOSTILE_NAMES):
        titles[name] = f"Hostile name deck {number}"
        titled_deck(folder / name, titles[name])
    titled_deck(Path(os.fsdecode(os.fsencode(folder) + b"/" + NON_UTF8_NAME)), "Non UTF-8 name deck")
    os.symlink(".", folder / "loop")  # a folder that contains itself
    (folder / "sub").mkdir()
    os.symlink("..", folder / "sub" / "up")  # and one through a child
    os.symlink("self.pptx", folder / "self.pptx")  # a link to itself
    os.symlink("missing.pdf", folder / "dangling.pdf")
    return titles


def text_pdf(target: Path, pages: int) -> Path:
    """A PDF of ``pages`` simple text pages (a heading and a few lines each), quick to make with PyMuPDF.

    Each page's body lines are its own words (seeded by the page number): lines repeated at one place on many pages
    are running heads, which ingest strips."""
    words = ("crash", "pulse", "restraint", "load", "intrusion", "sled", "dummy", "airbag", "belt", "pretensioner",
             "barrier", "offset", "pole", "side", "frontal", "rear", "whiplash", "seat", "head", "chest", "pelvis",
             "femur", "tibia", "neck", "deflection", "acceleration", "velocity", "energy", "stiffness", "crumple")
    pdf = pymupdf.open()
    for number in range(1, pages + 1):
        rng = random.Random(number)
        page = pdf.new_page()
        page.insert_text((72, 72), f"Chapter {number}", fontsize=18)
        for y in (110, 130):
            page.insert_text((72, y), " ".join(rng.choice(words) for _ in range(12)).capitalize() + ".")
    pdf.save(target, garbage=0, deflate=True)
    pdf.close()
    return target


def picture_deck(target: Path, pictures: int, title: str = "Picture deck") -> Path:
    """A deck of ``pictures`` slides, each holding one distinct 400 x 300 picture with a line of text (so OCR runs)."""
    from PIL import Image, ImageDraw
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    for number in range(pictures):
        image = Image.new("L", (400, 300), 255)
        ImageDraw.Draw(image).text((20, 140), f"Sled test {number} peak 42 g", fill=0)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        buffer.seek(0)
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = f"{title} {number}"
        slide.shapes.add_picture(buffer, Inches(1), Inches(1.5), Inches(4), Inches(3))
    deck.save(str(target))
    return target


def sleeping_tesseract(folder: Path, seconds: int = 600) -> Path:
    """A ``tesseract`` in ``folder`` that answers ``--version``/``--list-langs`` at once and sleeps ``seconds`` on any
    real OCR call (a hung engine); put ``folder`` first on PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "tesseract"
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        '  --version) echo "tesseract 5.3.0 (sleeping fake)"; exit 0;;\n'
        '  --list-langs) printf "List of available languages (2):\\neng\\nkor\\n"; exit 0;;\n'
        "esac\n"
        f"exec sleep {seconds}\n"
    )
    script.chmod(0o755)
    return script


def huge_text_deck(target: Path, base: Path, megabytes: int = 10, runs: int = 5) -> Path:
    """``base`` with one more slide whose text box holds about ``megabytes`` MB of words in ``runs`` runs (varied words
    and numbers, like a pasted log), the way one bad slide in a real deck does."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation(str(base))
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Pasted measurement log"
    frame = slide.shapes.add_textbox(Inches(1), Inches(1.5), Inches(8), Inches(5)).text_frame
    words = ("sled", "pulse", "load", "intrusion", "belt", "pretensioner", "airbag", "deceleration")
    per_run = megabytes * 1_000_000 // runs
    for number in range(runs):
        line = " ".join(f"{words[(i + number) % len(words)]} {i % 997}" for i in range(per_run // 9))
        paragraph = frame.paragraphs[0] if number == 0 else frame.add_paragraph()
        paragraph.add_run().text = line[:per_run]
    deck.save(str(target))
    return target


def _deflated(size: int, byte: bytes = b" ") -> bytes:
    """``size`` copies of ``byte`` deflated (zlib level 1: ~200 times, a second per GiB), 1 MiB at a time."""
    compressor = zlib.compressobj(1)
    block = byte * (1 << 20)
    parts = [compressor.compress(block[: min(len(block), size - start)]) for start in range(0, size, len(block))]
    return b"".join(parts) + compressor.flush()


def pdf_stream_bomb(target: Path, inflated: int = 1 << 30, pages: int = 3, bomb_page: int = 2) -> Path:
    """A ``pages``-page text PDF whose page ``bomb_page`` (1-based) has a content stream of ``inflated`` bytes of
    spaces (valid content-stream white space), deflated: about 5 MB on disk for 1 GiB."""
    text_pdf(target, pages)
    pdf = pymupdf.open(target)
    page = pdf[bomb_page - 1]
    [xref] = page.get_contents()[:1]
    pdf.update_stream(xref, _deflated(inflated), compress=False)
    pdf.xref_set_key(xref, "Filter", "/FlateDecode")
    pdf.saveIncr()
    pdf.close()
    return target


def pdf_huge_image(target: Path, width: int = 100_000, height: int = 100_000, pages: int = 3, image_page: int = 2) -> Path:
    """A text PDF whose page ``image_page`` shows an RGB image declaring ``width`` x ``height`` pixels (30 GB decoded
    by default) with a few bytes of data."""
    from PIL import Image

    text_pdf(target, pages)
    pdf = pymupdf.open(target)
    small = io.BytesIO()
    Image.new("RGB", (64, 64), (200, 30, 30)).save(small, format="PNG")
    page = pdf[image_page - 1]
    xref = page.insert_image(pymupdf.Rect(72, 200, 372, 500), stream=small.getvalue())
    pdf.update_stream(xref, zlib.compress(bytes(4096)), compress=False)
    for key, value in (("Width", str(width)), ("Height", str(height)), ("Filter", "/FlateDecode"),
                       ("ColorSpace", "/DeviceRGB"), ("BitsPerComponent", "8"), ("DecodeParms", "null"),
                       ("SMask", "null")):
        pdf.xref_set_key(xref, key, value)
    pdf.saveIncr()
    pdf.close()
    return target


def kill_at_marker(script: str, args: list[str], marker: Path, wait_s: float) -> bool:
    """Run ``python -c script *args`` (no RAGPREP_* variables, the checkout importable) and ``kill -9`` it as soon as
    it has written ``marker``; True when it got there within ``wait_s`` seconds (else it is killed all the same)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPREP_")} | {"PYTHONPATH": str(REPO)}
    child = subprocess.Popen([sys.executable, "-c", script, *args], cwd=REPO, env=env)
    try:
        deadline = time.monotonic() + wait_s
        while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        reached = marker.exists()
        if reached:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    return reached
