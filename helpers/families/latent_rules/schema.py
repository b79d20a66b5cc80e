"""The page-JSON schema of the latent-rules benchmark, and reading a model's answer into a page.

A page is one JSON object (every field optional to the parser; the latent rules say what a good page has):

    {"title": str, "lang": str,
     "metadata": {"description", "keywords": [str], "author", "canonical_url", "og_image", "og_type",
                  "robots", "charset", "viewport", "theme_color", "favicon", "updated"},
     "navigation": {"links": [link]},
     "sections": [{"id", "type", "heading", "level": int, "text",
                   "images": [{"src", "alt", "caption", "width": int, "height": int, "loading"}],
                   "links": [link], "buttons": [{"label", "action", "style"}],
                   "items": [{"title", "text", "author", "price"}],
                   "forms": [{"id", "action", "method", "submit_label",
                              "fields": [{"name", "label", "type", "required": bool, "placeholder",
                                          "autocomplete", "rows": int, "options": [str]}]}]}],
     "footer": {"text", "copyright", "links": [link]}}
    link = {"href", "text", "target", "rel"}

SECTION_TYPES is the fixed list of section types the first latent rule names; the base prompt does
not give it (the model must learn it from feedback).
"""

from __future__ import annotations

import json
from typing import Any

from helpers.llm.client import parse_json_object

SECTION_TYPES = (
    "hero",
    "about",
    "features",
    "services",
    "gallery",
    "testimonials",
    "pricing",
    "team",
    "faq",
    "menu",
    "events",
    "blog",
    "stats",
    "cta",
    "contact",
)
FIELD_TYPES = ("text", "email", "tel", "textarea", "select", "checkbox", "number", "date")
BUTTON_STYLES = ("primary", "secondary", "link")


def parse_page(answer: str) -> tuple[dict[str, Any] | None, str]:
    """(page, "") for an answer holding one JSON object with a "sections" list, else (None, why).

    Accepts the object bare, in a ```json fence, or as the outermost {...} of the answer. Never raises.
    A parse failure counts as failing every rule (see helpers.families.latent_rules.scoring).
    """
    try:
        page = parse_json_object(str(answer or ""))
    except ValueError as error:
        return None, f"the answer is not a page: {error}"
    if not isinstance(page.get("sections"), list):
        return None, 'the answer is not a page: it has no "sections" list'
    return page, ""


def page_json(page: dict[str, Any]) -> str:
    """The answer text of a page, as a model is asked to write it (indented JSON, non-ASCII kept)."""
    return json.dumps(page, indent=1, ensure_ascii=False)


__all__ = ["SECTION_TYPES", "FIELD_TYPES", "BUTTON_STYLES", "parse_page", "page_json"]
