"""What the pages and the HTML report look like beyond Streamlit's theme, all of it shipped in the
package so that nothing is fetched from another host: the CJK glyphs of the section headings (a
6-glyph subset font, embedded as a data URL: where no CJK font is installed they rendered as empty
boxes), the level colours, and the page icon (drawn here: Streamlit fetches a `:material/…:` or
emoji favicon from a CDN).

Knows nothing of Streamlit or the store: it returns CSS, HTML snippets of constant text, an image.
"""

from __future__ import annotations

import base64
from functools import cache
from importlib.resources import files

LEVEL_COLORS = {"info": "#9aa5b1", "low": "#4c9be8", "medium": "#f2b134", "high": "#e8743b", "critical": "#c0392b"}
LEVEL_TINTS = {"info": "#f4f5f7", "low": "#e8f1fc", "medium": "#fdf3dd", "high": "#fbe3d6", "critical": "#f6d5d1"}
SECTIONS = (("Anomaly", "异常", "anomaly"), ("Trace", "溯源", "trace"), ("Recommendation", "建议", "recommendation"))
CJK_FAMILY = "logwarden-cjk"


@cache
def font_face_css() -> str:
    """@font-face for the headings' CJK glyphs, and the class that uses it after the usual fonts."""
    font = files("logwarden.ui").joinpath("assets/cjk-headings.ttf").read_bytes()
    data = base64.b64encode(font).decode("ascii")
    return (f'@font-face{{font-family:"{CJK_FAMILY}";src:url(data:font/ttf;base64,{data}) format("truetype");}}'
            f'.lw-cjk{{font-family:"{CJK_FAMILY}",sans-serif;color:#6b7280;font-weight:400;margin-left:.4em}}')


def section_heading(english: str, chinese: str) -> str:
    """A section heading in English with its Chinese term as a subtitle (constant text: safe HTML)."""
    return f'<strong>{english}</strong><span class="lw-cjk">{chinese}</span>'


@cache
def page_icon():
    """A small shield, drawn once (a PIL image: Streamlit serves it from the app's own host)."""
    from PIL import Image, ImageDraw

    size = 64
    image = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    shield = [(32, 4), (58, 14), (56, 36), (32, 60), (8, 36), (6, 14)]
    draw.polygon(shield, fill=(44, 82, 130, 255))
    draw.polygon([(32, 12), (50, 19), (48, 35), (32, 52)], fill=(232, 116, 59, 255))
    return image
