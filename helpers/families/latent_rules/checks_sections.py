"""The latent rules' checks on the page as a whole, its sections and their texts, its metadata and its footer:
FINDERS, check name -> finder.

The catalogue (catalog.toml) names each rule's check; catalog.py reads it. A finder lists a page's failures of its
rule ("<where> <what>"), empty when the page follows it (structure, content, metadata and footer rules).
"""

from __future__ import annotations

import re

from helpers.families.latent_rules.page import (
    KEBAB,
    Finder,
    as_dict,
    as_list,
    as_str,
    each,
    footer,
    has,
    heading_rule,
    is_https_url,
    is_int,
    meta_is,
    metadata,
    of_type,
    page_value,
    sections,
    text_rule,
    unique,
)
from helpers.families.latent_rules.schema import SECTION_TYPES

_HEX_COLOR = re.compile(r"^#[0-9a-fA-F]{6}$")

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

_EMOJI = re.compile("[\U0001f300-\U0001faff\u2600-\u27bf]")

_RAW_URL = re.compile(r"(?:https?://|www\.)\S+")


def _title_case_problem(text: str) -> str | None:
    lower = [w for w in re.findall(r"[A-Za-z][A-Za-z'’-]*", text) if len(w) >= 4 and w[0].islower()]
    return f"has the word {lower[0]!r} in lower case" if lower else None


def _first_is_hero(page: dict) -> list[str]:
    found = sections(page)
    if found and found[0][1].get("type") != "hero":
        return [f"{found[0][0]} comes first"]
    return [] if found else ["the page has no sections"]


def _last_is_contact(page: dict) -> list[str]:
    found = sections(page)
    if found and found[-1][1].get("type") != "contact":
        return [f"{found[-1][0]} comes last"]
    return []


def _one_h1_in_hero(page: dict) -> list[str]:
    level_one = [where for where, s in sections(page) if s.get("level") == 1 and is_int(s.get("level"))]
    heroes = of_type(page, "hero")
    problems = [
        f"{where}: the hero's heading is level {s.get('level')!r}, not 1"
        for where, s in heroes
        if not (is_int(s.get("level")) and s.get("level") == 1)
    ]
    problems += [f"{where} also has a level-1 heading" for where in level_one if where not in [w for w, _ in heroes]]
    return problems


def _privacy_link_in_footer(page: dict) -> list[str]:
    texts = [as_str(as_dict(link).get("text")).lower() for link in as_list(as_dict(page.get("footer")).get("links"))]
    return [] if any("privacy" in t for t in texts) else ["the footer has no link to a privacy policy"]


def _distinct_headings(page: dict) -> list[str]:
    return unique([(where, as_str(s.get("heading")).strip()) for where, s in sections(page)], "heading")


def _distinct_ids(page: dict) -> list[str]:
    return unique([(where, as_str(s.get("id"))) for where, s in sections(page)], "id")


def _keywords_problem(meta: dict) -> str | None:
    words = meta.get("keywords")
    if not isinstance(words, list) or not 3 <= len(words) <= 10:
        return f"has keywords {words!r}, not a list of 3 to 10"
    upper = [w for w in words if not isinstance(w, str) or w != w.lower() or not w]
    return f"has the keyword {upper[0]!r}, which is not lower case" if upper else None


def _keywords_repeat(meta: dict) -> str | None:
    words = [w.lower() for w in as_list(meta.get("keywords")) if isinstance(w, str)]
    repeated = sorted({w for w in words if words.count(w) > 1})
    return f"repeats the keyword {repeated[0]!r}" if repeated else None


def _description_length(meta: dict) -> str | None:
    n = len(as_str(meta.get("description")).strip())
    return None if 50 <= n <= 160 else f"description is {n} characters long"


def _title_form(page: dict) -> str | None:
    parts = as_str(page.get("title")).split(" | ")
    if len(parts) == 2 and all(p.strip() for p in parts):
        return None
    return f"the page title {as_str(page.get('title'))!r} is not of the form '<page name> | <business name>'"


def _title_length(page: dict) -> str | None:
    title = as_str(page.get("title")).strip()
    if not title:
        return "the page has no title"
    return f"the page title is {len(title)} characters long" if len(title) > 60 else None


def _lang(page: dict) -> str | None:
    problem = has(page.get("lang"), lambda v: bool(re.match(r"^[a-z]{2}$", as_str(v))), "lang", "a two-letter code")
    return f"the page {problem}" if problem else None


FINDERS: dict[str, Finder] = {
    "section_type_known": each(
        sections,
        lambda s: None
        if s.get("type") in SECTION_TYPES
        else f"has the type {s.get('type')!r}, which is not in the list",
    ),
    "title_present_and_short": page_value(_title_length),
    "first_section_hero": _first_is_hero,
    "section_heading_present": each(sections, lambda s: None if as_str(s.get("heading")).strip() else "has no heading"),
    "description_length": metadata(_description_length),
    "lang_two_letters": page_value(_lang),
    "last_section_contact": _last_is_contact,
    "section_ids_distinct": _distinct_ids,
    "section_id_kebab": each(
        sections, lambda s: None if KEBAB.match(as_str(s.get("id"))) else f"has the id {s.get('id')!r}"
    ),
    "heading_short": heading_rule(lambda h: f"is {len(h)} characters long" if len(h) > 60 else None),
    "heading_title_case": heading_rule(_title_case_problem),
    "heading_no_final_punctuation": heading_rule(
        lambda h: "ends with punctuation" if h.rstrip()[-1:] in ".,;:!?" else None
    ),
    "one_h1_in_hero": _one_h1_in_hero,
    "section_level_1_to_6": each(
        sections,
        lambda s: None if is_int(s.get("level")) and 1 <= s["level"] <= 6 else f"has the level {s.get('level')!r}",
    ),
    "section_text_present": each(sections, lambda s: None if as_str(s.get("text")).strip() else "has no text"),
    "section_text_short": text_rule(lambda t: f"is {len(t)} characters long" if len(t) > 600 else None),
    "text_no_lorem_ipsum": text_rule(lambda t: "contains lorem ipsum" if "lorem ipsum" in t.lower() else None),
    "text_no_placeholders": text_rule(
        lambda t: "contains a placeholder marker" if re.search(r"\bTODO\b|\bTBD\b|[\[\]]", t) else None
    ),
    "text_no_exclamation": text_rule(lambda t: "uses an exclamation mark" if "!" in t else None),
    "hero_text_short": each(
        lambda page: of_type(page, "hero"),
        lambda s: f"has a text of {n} characters" if (n := len(as_str(s.get("text")))) > 160 else None,
    ),
    "text_no_all_caps": text_rule(
        lambda t: f"shouts {w.group(0)!r}" if (w := re.search(r"\b[A-Z]{4,}\b", t)) else None
    ),
    "text_no_double_spaces": text_rule(lambda t: "has a double space" if "  " in t else None),
    "headings_distinct": _distinct_headings,
    "footer_privacy_link": _privacy_link_in_footer,
    "footer_copyright": footer(
        lambda f: None
        if re.match(r"^© \d{4} \S", as_str(f.get("copyright")))
        else f"has the copyright {f.get('copyright')!r}"
    ),
    "footer_text_present": footer(lambda f: None if as_str(f.get("text")).strip() else "has no text"),
    "keywords_list": metadata(_keywords_problem),
    "keywords_distinct": metadata(_keywords_repeat),
    "canonical_https": meta_is("canonical_url", is_https_url, "an https URL"),
    "og_image_https_image": meta_is(
        "og_image",
        lambda v: is_https_url(v) and as_str(v).lower().endswith((".jpg", ".png", ".webp")),
        "an https image URL",
    ),
    "robots_index_follow": meta_is("robots", lambda v: v == "index, follow", "'index, follow'"),
    "charset_utf8": meta_is("charset", lambda v: v == "utf-8", "'utf-8'"),
    "viewport": metadata(
        lambda m: has(
            m.get("viewport"),
            lambda v: v == "width=device-width, initial-scale=1",
            "viewport",
            "'width=device-width, initial-scale=1'",
        )
    ),
    "theme_color_hex": metadata(
        lambda m: has(
            m.get("theme_color"), lambda v: bool(_HEX_COLOR.match(as_str(v))), "theme_color", "a #rrggbb colour"
        )
    ),
    "author_named": meta_is("author", lambda v: bool(as_str(v).strip()), "a name"),
    "og_type_website": meta_is("og_type", lambda v: v == "website", "'website'"),
    "updated_date_format": metadata(
        lambda m: has(m.get("updated"), lambda v: bool(_DATE.match(as_str(v))), "updated date", "YYYY-MM-DD")
    ),
    "favicon_format": metadata(
        lambda m: has(
            m.get("favicon"), lambda v: as_str(v).lower().endswith((".ico", ".png")), "favicon", "an .ico or .png file"
        )
    ),
    "description_period": metadata(
        lambda m: None
        if as_str(m.get("description")).rstrip().endswith(".")
        else "description does not end with a period"
    ),
    "title_form": page_value(_title_form),
    "text_no_raw_urls": text_rule(
        lambda t: f"contains the raw URL {m.group(0)!r}" if (m := _RAW_URL.search(t)) else None
    ),
    "no_emoji": lambda page: [
        f"{where} contains an emoji"
        for where, s in sections(page)
        if _EMOJI.search(as_str(s.get("heading")) + as_str(s.get("text")))
    ],
    "text_no_click": text_rule(lambda t: "says 'click'" if re.search(r"\bclick", t, re.I) else None),
}
