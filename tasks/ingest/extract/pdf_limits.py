"""Memory limits for PDF pages: content streams and images are sized before anything decodes them.

MuPDF inflates a page's content streams whole when the page is read, and decodes an image to a pixmap
of its declared ``Width x Height x components x BitsPerComponent`` when it is saved or the page is
rendered: a 1 MB PDF can hold a stream that inflates to gigabytes (zeros deflate about 1,000 times)
or an image that declares 100,000 x 100,000 pixels. Before a page is scanned, :func:`page_refusal`
checks, without decoding:

- every content stream of the page and of the form XObjects it uses: a ``FlateDecode`` stream is
  inflated as a bounded stream (1 MiB at a time, nothing kept) and stopped as soon as it passes the
  limit; streams whose raw size times zlib's largest ratio stays under the limit are not inflated at all;
- every image of the page: its declared decoded size (width x height x components x bits / 8).

A page over ``limits.max_decoded_bytes`` is skipped whole (it is never read, rendered or OCR'd) and the
reason names the page, the object and the limit; the document is ``partial``. Streams with other
filters (LZW, RunLength, ...) are not sized: their expansion is bounded by the filter itself.
"""

from __future__ import annotations

import zlib

import pymupdf

from ragprep.settings import LimitsSettings
from tasks.ingest.extract.archive import human_bytes

ZLIB_MAX_RATIO = 1032
"""Deflate cannot expand more than about 1,032 times: a raw stream this many times under the limit is safe."""

_CHUNK = 1 << 20
_COMPONENTS = {"DeviceGray": 1, "CalGray": 1, "DeviceRGB": 3, "CalRGB": 3, "Lab": 3, "DeviceCMYK": 4,
               "Indexed": 1, "Separation": 1, "ICCBased": 4, "DeviceN": 4}
"""Components per pixel by colour space (unknown or ICC-based ones counted as 4: the larger estimate)."""


def inflated_size_over(raw: bytes, limit: int) -> int | None:
    """Inflate ``raw`` (zlib) as a bounded stream: the size reached when it passes ``limit`` bytes, else None
    (also None for data that is not zlib: MuPDF reports it)."""
    decompressor = zlib.decompressobj()
    total = 0
    data = raw
    try:
        while data and not decompressor.eof:
            total += len(decompressor.decompress(data, _CHUNK))
            if total > limit:
                return total
            data = decompressor.unconsumed_tail
    except zlib.error:
        return None
    return None


def _filters(doc: pymupdf.Document, xref: int) -> list[str]:
    kind, value = doc.xref_get_key(xref, "Filter")
    if kind in ("null", "none"):
        return []
    return [part for part in value.replace("[", " ").replace("]", " ").split() if part]


def stream_refusal(doc: pymupdf.Document, xref: int, limit: int) -> str | None:
    """Why the stream ``xref`` is not decoded (it inflates past ``limit``), or None."""
    filters = _filters(doc, xref)
    if filters not in (["/FlateDecode"], ["/Fl"]):
        return None
    raw_length = doc.xref_get_key(xref, "Length")[1]
    if raw_length.isdigit() and int(raw_length) * ZLIB_MAX_RATIO <= limit:
        return None
    over = inflated_size_over(doc.xref_stream_raw(xref), limit)
    if over is None:
        return None
    return f"stream xref {xref} inflates to more than {human_bytes(limit)}"


def image_decoded_bytes(item: tuple) -> int:
    """Declared decoded size of a ``page.get_images(full=True)`` entry: width x height x components x bpc / 8."""
    width, height, bpc, colorspace = item[2], item[3], item[4] or 8, item[5] or ""
    components = _COMPONENTS.get(colorspace, 4)
    return max(width, 0) * max(height, 0) * components * max(bpc, 1) // 8


def _content_xrefs(page: pymupdf.Page) -> list[int]:
    xrefs = list(page.get_contents())
    xrefs.extend(item[0] for item in page.get_xobjects() if item[0] > 0)
    return xrefs


def page_refusal(doc: pymupdf.Document, index: int, limits: LimitsSettings) -> str | None:
    """Why page ``index`` (0-based) must not be read: a content stream or an image over
    ``limits.max_decoded_bytes``; None when it is within the limits. Decodes nothing beyond the bounded check."""
    limit = limits.max_decoded_bytes
    page = doc[index]
    fix = "(limits.max_decoded_bytes); page skipped; raise the limit if the file is trusted"
    for xref in _content_xrefs(page):
        reason = stream_refusal(doc, xref, limit)
        if reason:
            return f"page {index + 1}: content {reason} {fix}"
    for item in page.get_images(full=True):
        size = image_decoded_bytes(item)
        if size > limit:
            return (f"page {index + 1}: image xref {item[0]} declares {item[2]:,} x {item[3]:,} px, "
                    f"{human_bytes(size)} decoded, over {human_bytes(limit)} {fix}")
        reason = stream_refusal(doc, item[0], limit) if item[0] > 0 else None
        if reason:
            return f"page {index + 1}: image {reason} {fix}"
    return None
