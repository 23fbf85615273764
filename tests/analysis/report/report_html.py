"""Reading a rendered report back for the report tests: tables, images, attributes."""

from __future__ import annotations

import base64
import io
import struct
from html.parser import HTMLParser

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class ReportDoc(HTMLParser):
    """Every tag, attribute, image and table of an HTML document."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str]] = []
        self.images: list[dict[str, str]] = []
        self.tables: list[list[list[str]]] = []
        self.styles: list[str] = []
        self._cell: list[str] | None = None
        self._in_style = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [(tag, k, v or "") for k, v in attrs]
        if tag == "img":
            self.images.append({k: v or "" for k, v in attrs})
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "style":
            self._in_style = True

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._in_style:
            self.styles.append(data)

    def table_with(self, first_headers: list[str]) -> list[list[str]]:
        """The first table whose header row starts with ``first_headers``."""
        for t in self.tables:
            if t and t[0][:len(first_headers)] == first_headers:
                return t
        raise AssertionError(f"no table with headers {first_headers}")


def png_of(img: dict[str, str]) -> bytes:
    """The PNG bytes of an ``<img>`` with a base64 data URI (asserts it is one)."""
    src = img["src"]
    prefix = "data:image/png;base64,"
    assert src.startswith(prefix), src[:60]
    data = base64.b64decode(src[len(prefix):], validate=True)
    assert data.startswith(PNG_SIGNATURE)
    return data


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    assert data[12:16] == b"IHDR"
    w, h = struct.unpack(">II", data[16:24])
    return int(w), int(h)


def decodes(data: bytes) -> tuple[int, int]:
    """Decode the whole PNG with Pillow (raises on a corrupt file); its size."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        im.load()
        return im.size
