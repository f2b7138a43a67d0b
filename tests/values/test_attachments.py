"""Attachments (values/attachments.py, ``oracle ask -a``): images and text files reach the
model as content parts; anything else is refused, naming the file, before any model call."""

from __future__ import annotations

import base64
import random
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from oracle_core import Attachment, AttachmentError
from oracle_core.cli import main
from oracle_core.testing.openai_server import FakeOpenAI, Reply
from oracle_core.values.attachments import IMAGE_TOKENS, MAX_ATTACHMENT_BYTES, content_text
from oracle_core.values.tokens import count_message_tokens

CLIENTS = ["auto", "litellm"]  # the direct path and the litellm path


def ask(fake: FakeOpenAI, home: Path, *args: str, **env: str) -> Result:
    """``oracle ask ARGS`` in process against ``fake``."""
    environ: dict[str, str | None] = {
        "ORACLE_HOME": str(home), "ORACLE_LOAD_PLUGINS": "", "ORACLE_API_BASE": fake.url,
        "ORACLE_MODEL": "openai/fake-model", "OPENAI_API_KEY": "sk-fake",
        "ORACLE_API_KEY": None, "ORACLE_MODEL_CLIENT": None,
    }  # fmt: skip
    environ.update(env)
    return CliRunner().invoke(main, ["ask", *args], env=environ)


PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
IMAGES = {
    "image/png": PNG,
    "image/jpeg": b"\xff\xd8\xff\xe0" + b"\x00\x10JFIF" + b"\x01" * 300,
    "image/gif": b"GIF89a" + b"\x02" * 100,
    "image/webp": b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"\x03" * 100,
}


@pytest.mark.parametrize("media_type", sorted(IMAGES))
def test_an_image_is_known_by_its_bytes_and_sent_whole_as_a_data_url(media_type: str) -> None:
    data = IMAGES[media_type]
    attachment = Attachment.from_bytes("picture.txt", data)  # the name's extension lies

    part = attachment.content_part()

    assert attachment.media_type == media_type and attachment.is_image
    prefix = f"data:{media_type};base64,"
    assert part["type"] == "image_url" and part["image_url"]["url"].startswith(prefix)
    assert base64.b64decode(part["image_url"]["url"][len(prefix) :]) == data


def test_random_bytes_are_either_text_an_image_or_refused_naming_the_file() -> None:
    rng = random.Random(2026)
    kinds: set[str] = set()
    for index in range(400):
        size = rng.choice([0, 1, 7, 64, 1000])
        pool = rng.choice([range(256), range(32, 127), [0x89, 0x50, 0x4E, 0x47, 0xFF, 0xD8]])
        data = bytes(rng.choice(list(pool)) for _ in range(size))
        try:
            attachment = Attachment.from_bytes(f"file-{index}.bin", data)
        except AttachmentError as error:
            assert f"file-{index}.bin" in str(error) and "\n" not in str(error)
            kinds.add("refused")
            continue
        part = attachment.content_part()  # never raises for an accepted file
        if attachment.is_image:
            kinds.add("image")
        else:
            assert part["text"].endswith(data.decode("utf-8"))
            kinds.add("text")
    assert {"refused", "text"} <= kinds


def test_a_file_over_the_limit_is_refused_without_being_read(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with big.open("wb") as file:
        file.truncate(MAX_ATTACHMENT_BYTES + 1)  # sparse: nothing is written

    with pytest.raises(AttachmentError, match=r"big.txt is 20,971,521 bytes"):
        Attachment.from_path(big)


def test_an_image_counts_as_a_fixed_number_of_tokens_not_its_encoded_bytes() -> None:
    image = Attachment.from_bytes("p.png", PNG + b"\x00" * 200_000)
    message = {"role": "user", "content": [{"type": "text", "text": "hi"}, image.content_part()]}
    text_only = {"role": "user", "content": [{"type": "text", "text": "hi"}]}

    assert count_message_tokens(message) == count_message_tokens(text_only) + IMAGE_TOKENS
    assert content_text(message["content"]) == "hi\n\n[image]"


@pytest.mark.parametrize("client", CLIENTS)
def test_ask_sends_an_image_and_a_text_file_after_the_prompt(
    fake_openai: FakeOpenAI, tmp_path: Path, client: str
) -> None:
    (tmp_path / "photo.png").write_bytes(PNG)
    (tmp_path / "notes.txt").write_text("buy milk\n", encoding="utf-8")
    fake_openai.script(Reply.text("A photo and a list."), Reply.text("Again."))
    home = tmp_path / "home"

    result = ask(fake_openai, home, "-a", str(tmp_path / "photo.png"), "--attachment",
                 str(tmp_path / "notes.txt"), "what are these?",
                 ORACLE_MODEL_CLIENT=client)  # fmt: skip

    assert result.exit_code == 0, result.output
    assert result.stdout == "A photo and a list.\n"
    user = [m for m in fake_openai.requests[0].messages if m["role"] == "user"][-1]
    text, image, notes = user["content"]
    assert text == {"type": "text", "text": "what are these?"}
    url = image["image_url"]["url"]
    assert base64.b64decode(url.split(",", 1)[1]) == PNG
    assert notes["text"] == "Attached file notes.txt:\n\nbuy milk\n"
    again = ask(fake_openai, home, "-c", "and again?", ORACLE_MODEL_CLIENT=client)
    assert again.exit_code == 0, again.output  # the thread keeps the parts: sent again
    first = next(m for m in fake_openai.requests[1].messages if m["role"] == "user")
    assert first["content"] == user["content"]


@pytest.mark.parametrize(
    ("content", "model", "expected"),
    [
        (b"\x00\x01\x02\xff", "openai/fake-model", "neither an image nor UTF-8 text"),
        (None, "openai/fake-model", "cannot attach"),
        (PNG, "openai/gpt-3.5-turbo", "does not read images"),
    ],
    ids=["binary", "missing", "no-vision-model"],
)
def test_ask_refuses_a_file_no_model_can_read_before_calling_any(
    fake_openai: FakeOpenAI, tmp_path: Path, content: bytes | None, model: str, expected: str
) -> None:
    path = tmp_path / "thing.bin"
    if content is not None:
        path.write_bytes(content)

    result = ask(fake_openai, tmp_path / "home", "-a", str(path), "look", ORACLE_MODEL=model)

    assert result.exit_code == 2
    assert expected in result.stderr and "Traceback" not in result.output
    assert fake_openai.requests == []
