"""Files attached to a user's message: images and text, as OpenAI content parts.

``oracle ask -a photo.png "what is this?"`` and ``Oracle.run(..., attachments=[...])`` send
the message as a list of parts: the message's text first, then one part a file. An image
(PNG, JPEG, GIF, WebP) becomes an ``image_url`` part holding a ``data:`` URL, which every
OpenAI-compatible server with vision reads; a UTF-8 text file becomes a ``text`` part
that names the file. Anything else is refused with an :class:`~oracle_core.errors.AttachmentError`
naming the file and what is accepted, before any model is called.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracle_core.errors import AttachmentError

MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024
"""The largest file that may be attached (20 MiB, OpenAI's limit for one image)."""

IMAGE_TOKENS = 765
"""Tokens an image part is counted as (OpenAI's cost of a 1024x1024 image at high detail):
its ``data:`` URL is never counted as text."""

IMAGE_TYPES: dict[bytes, str] = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}
"""Image formats known by their first bytes (WebP is checked apart: ``RIFF....WEBP``)."""

ACCEPTED = "images (PNG, JPEG, GIF, WebP) and UTF-8 text files"


def _image_type(data: bytes) -> str | None:
    for magic, media_type in IMAGE_TYPES.items():
        if data.startswith(magic):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


@dataclass(frozen=True)
class Attachment:
    """One attached file.

    Attributes:
        name: the file's name as the model is told it (no folders).
        media_type: ``image/png``, ``image/jpeg``, ``image/gif``, ``image/webp`` or
            ``text/plain``.
        data: the file's bytes.
    """

    name: str
    media_type: str
    data: bytes

    @classmethod
    def from_bytes(cls, name: str, data: bytes) -> Attachment:
        """An attachment of ``data``, its kind read from the bytes themselves (never from the
        name's extension, which may lie).

        Raises:
            AttachmentError: too large, or neither an image of a known kind nor UTF-8 text.
        """
        if len(data) > MAX_ATTACHMENT_BYTES:
            raise AttachmentError(
                f"{name} is {len(data):,} bytes, more than the {MAX_ATTACHMENT_BYTES:,} an "
                "attachment may be"
            )
        media_type = _image_type(data)
        if media_type is None:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            if text is None or "\x00" in text:
                raise AttachmentError(
                    f"{name} is neither an image nor UTF-8 text: attachments are {ACCEPTED}"
                )
            media_type = "text/plain"
        return cls(name, media_type, data)

    @classmethod
    def from_path(cls, path: str | Path) -> Attachment:
        """The file at ``path`` as an attachment.

        Raises:
            AttachmentError: the file cannot be read, is too large or of another kind.
        """
        file = Path(path)
        try:
            size = file.stat().st_size
            if size > MAX_ATTACHMENT_BYTES:
                return cls.from_bytes(file.name, b"\0" * (MAX_ATTACHMENT_BYTES + 1))
            data = file.read_bytes()
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise AttachmentError(f"cannot attach {path}: {reason}") from None
        return cls.from_bytes(file.name, data)

    @property
    def is_image(self) -> bool:
        """Whether this is an image (else UTF-8 text)."""
        return self.media_type.startswith("image/")

    def content_part(self) -> dict[str, Any]:
        """The OpenAI content part that carries this file."""
        if self.is_image:
            encoded = base64.b64encode(self.data).decode("ascii")
            return {
                "type": "image_url",
                "image_url": {"url": f"data:{self.media_type};base64,{encoded}"},
            }
        text = self.data.decode("utf-8")
        return {"type": "text", "text": f"Attached file {self.name}:\n\n{text}"}


def user_content(message: str, attachments: Sequence[Attachment]) -> str | list[dict[str, Any]]:
    """A user message's ``content``: ``message`` alone, or its text then one part a file."""
    if not attachments:
        return message
    return [{"type": "text", "text": message}, *(a.content_part() for a in attachments)]


def content_text(content: Any) -> str:
    """A message's ``content`` as one text for people: a string as is; of a list of parts,
    the text parts, each image shown as ``[image]``."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        return str(content)
    pieces = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            pieces.append(str(part.get("text") or ""))
        elif isinstance(part, dict) and part.get("type") == "image_url":
            pieces.append("[image]")
    return "\n\n".join(pieces)


def without_images(content: Any) -> tuple[Any, int]:
    """``content`` with each image part's data left out, and how many images it had (so a
    count of tokens counts an image as :data:`IMAGE_TOKENS`, not its ``data:`` URL)."""
    if not isinstance(content, list):
        return content, 0
    kept = [p for p in content if not (isinstance(p, dict) and p.get("type") == "image_url")]
    return kept, len(content) - len(kept)
