"""PDF pictures: embedded images saved once (content-addressed), huge ones downscaled, with where they are drawn."""

from __future__ import annotations

from dataclasses import dataclass

import pymupdf

from tasks.ingest.extract.base import ExtractContext
from tasks.ingest.extract.pdf_text import BBox

MIN_IMAGE_SIDE_PT = 24.0


@dataclass(frozen=True)
class PageImage:
    """An embedded image saved to the layout, where it is drawn on the page."""

    bbox: BBox
    rel_path: str
    """Where the picture is stored, relative to the root (content-addressed)."""
    width: int
    height: int
    sha256: str
    note: str | None
    """Why the stored picture differs from the embedded one (downscaled), if it does."""


@dataclass(frozen=True)
class ImageData:
    """Encoded image bytes with their format and pixel size, as they will be saved."""

    data: bytes | None
    """The encoded image, None when it cannot be read."""
    ext: str
    width: int
    height: int
    note: str | None = None


def _downscaled(doc: pymupdf.Document, xref: int, max_pixels: int) -> ImageData:
    """A huge image halved (in MuPDF) until it fits ``max_pixels``, as PNG."""
    pix = pymupdf.Pixmap(doc, xref)
    original = f"{pix.width}x{pix.height}"
    if pix.alpha or pix.n not in (1, 3):
        pix = pymupdf.Pixmap(pymupdf.csRGB, pix)
    factor = 0
    while (pix.width >> factor) * (pix.height >> factor) > max_pixels:
        factor += 1
    if factor:
        pix.shrink(factor)
    return ImageData(pix.tobytes("png"), "png", pix.width, pix.height, f"downscaled from {original} px")


def _image_bbox(page: pymupdf.Page, item: tuple) -> BBox | None:
    """Where an image is placed on the page, or None when unknown, invalid or too small to keep."""
    try:
        # get_image_bbox reads the placement from the page; get_image_rects would
        # decode and hash the whole image to find it.
        rect = page.get_image_bbox(item, transform=False)
    except Exception:
        return None
    if not rect.is_valid or rect.is_infinite or min(rect.width, rect.height) < MIN_IMAGE_SIDE_PT:
        return None
    x0, y0, x1, y1 = rect
    return (round(x0, 2), round(y0, 2), round(x1, 2), round(y1, 2))


def _image_data(doc: pymupdf.Document, item: tuple, max_pixels: int) -> ImageData:
    """The image's bytes as stored in the PDF, or downscaled to PNG when over ``max_pixels``."""
    xref, width, height = item[0], item[2], item[3]
    if width * height > max_pixels:
        return _downscaled(doc, xref, max_pixels)
    extracted = doc.extract_image(xref)
    return ImageData(
        data=extracted.get("image"),
        ext=extracted.get("ext", "png"),
        width=extracted.get("width", width),
        height=extracted.get("height", height),
    )


def save_images(
    doc: pymupdf.Document, page: pymupdf.Page, ctx: ExtractContext, seen_xrefs: set[int], number: int, warnings: list[str]
) -> list[PageImage]:
    """Save the images of page ``number`` not seen on earlier pages; unreadable ones become ``warnings``."""
    images: list[PageImage] = []
    for item in page.get_images(full=True):
        xref = item[0]
        if xref <= 0 or xref in seen_xrefs:
            continue
        bbox = _image_bbox(page, item)
        if bbox is None:
            continue
        seen_xrefs.add(xref)
        try:
            image = _image_data(doc, item, ctx.settings.pdf.max_image_pixels)
        except Exception as exc:
            warnings.append(f"page {number}: image xref {xref} unreadable: {exc}")
            continue
        if not image.data:
            continue
        stored = ctx.layout.save_image(image.data, image.ext)
        images.append(PageImage(bbox, stored.rel_path, image.width, image.height, stored.sha256, image.note))
    return images
