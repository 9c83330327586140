"""A static HTML file read back as a tree with the standard library's HTML parser, for the report
tests: elements with their attributes, text as a browser shows it (entities decoded), and the
unclosed elements a parser closes at its parent's end. Not a browser: no script runs, no CSS."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str | None]
    parent: Element | None = None
    children: list[Element | str] = field(default_factory=list)

    def iter(self) -> Iterator[Element]:
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.iter()

    def find_all(self, tag: str | None = None, **attrs: str) -> list[Element]:
        return [e for e in self.iter() if (tag is None or e.tag == tag)
                and all(e.attrs.get(k.rstrip("_")) == v for k, v in attrs.items())]

    def by_id(self, element_id: str) -> Element | None:
        return next((e for e in self.iter() if e.attrs.get("id") == element_id), None)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def hrefs(self) -> list[str]:
        return [e.attrs["href"] or "" for e in self.iter() if "href" in e.attrs]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, dict(attrs), self.current)
        self.current.children.append(element)
        if tag not in VOID:
            self.current = element

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Element(tag, dict(attrs), self.current))

    def handle_endtag(self, tag: str) -> None:
        open_element: Element | None = self.current
        while open_element is not None and open_element.tag != tag:
            open_element = open_element.parent
        if open_element is not None and open_element.parent is not None:  # a stray end tag is ignored
            self.current = open_element.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def parse_html(text: str) -> Element:
    builder = _Builder()
    builder.feed(text)
    builder.close()
    return builder.root
