"""The catalogue of latent rules: what a good page follows, though no prompt says so at first.

Each LatentRule has an id (L001...), a one-line English statement (what a learned instruction should
say), paraphrase keys (words that, all on one line of a prompt, name the rule: the scripted generator's
test for "this rule is stated"), a category, a difficulty and a checker. `rule.check(page)` is pure:
None when the page follows the rule, else one English failure message naming where and what, e.g.

    section 4 (type 'gallery'): image 2 has no alt text; every image needs a non-empty alt text

The catalogue is ordered: the first N rules are the active set of the N-rule benchmark (10, 50, 100).
All rules hold at once on one page (tests build such a page). A rule that does not apply to a page
(no form, no gallery) is followed by it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

from helpers.families.latent_rules.schema import BUTTON_STYLES, FIELD_TYPES, SECTION_TYPES

CATEGORIES = ("structure", "content", "images", "links", "buttons", "forms", "items", "metadata", "footer")
DIFFICULTIES = ("easy", "medium", "hard")


@dataclass(frozen=True)
class LatentRule:
    """One latent rule. `find(page)` lists its violations ("<where> <what>"); `check` phrases the first."""

    id: str
    statement: str
    keys: tuple[str, ...]
    category: str
    difficulty: str
    find: Callable[[dict], list[str]]

    @property
    def hint(self) -> str:
        """The statement as the tail of a failure message ("every image needs ...")."""
        text = self.statement.rstrip(".")
        return text[:1].lower() + text[1:] if text[1:2].islower() else text  # "FAQ ..." stays "FAQ ..."

    def check(self, page: dict) -> str | None:
        """None when `page` follows the rule, else the failure message. Never raises."""
        try:
            found = self.find(page if isinstance(page, dict) else {})
        except Exception as error:  # a page shaped too oddly to read counts as breaking the rule
            found = [f"the page could not be read for this rule ({type(error).__name__}: {error})"]
        if not found:
            return None
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        return f"{found[0]}{more}; {self.hint}"


# --- reading a page defensively: a wrong type reads as missing ------------------------------------
def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _meta(page: dict) -> dict:
    return _dict(page.get("metadata"))


def sections(page: dict) -> list[tuple[str, dict]]:
    """(where, section) in page order; where reads "section 3 (type 'gallery')"."""
    return [(f"section {i} (type {_dict(s).get('type')!r})", _dict(s))
            for i, s in enumerate(_list(page.get("sections")), 1)]


def _of_type(page: dict, kind: str) -> list[tuple[str, dict]]:
    return [(where, s) for where, s in sections(page) if s.get("type") == kind]


def _in_sections(page: dict, key: str, noun: str, kind: str | None = None) -> Iterator[tuple[str, dict]]:
    for where, section in (_of_type(page, kind) if kind else sections(page)):
        for j, thing in enumerate(_list(section.get(key)), 1):
            yield f"{where}: {noun} {j}", _dict(thing)


def images(page: dict) -> Iterator[tuple[str, dict]]:
    return _in_sections(page, "images", "image")


def links(page: dict) -> Iterator[tuple[str, dict]]:
    """Every link: the navigation's, each section's, the footer's."""
    for j, link in enumerate(_list(_dict(page.get("navigation")).get("links")), 1):
        yield f"navigation: link {j}", _dict(link)
    yield from _in_sections(page, "links", "link")
    for j, link in enumerate(_list(_dict(page.get("footer")).get("links")), 1):
        yield f"footer: link {j}", _dict(link)


def buttons(page: dict) -> Iterator[tuple[str, dict]]:
    return _in_sections(page, "buttons", "button")


def forms(page: dict) -> Iterator[tuple[str, dict]]:
    return _in_sections(page, "forms", "form")


def fields(page: dict) -> Iterator[tuple[str, dict]]:
    for where, form in forms(page):
        for j, field in enumerate(_list(form.get("fields")), 1):
            yield f"{where}: field {j} ({_str(_dict(field).get('name')) or 'unnamed'})", _dict(field)


def _each(things: Callable[[dict], Iterable[tuple[str, dict]]],
          problem: Callable[[dict], str | None]) -> Callable[[dict], list[str]]:
    """A finder: "<where> <problem>" for every thing whose problem() is not None."""
    def find(page: dict) -> list[str]:
        return [f"{where} {p}" for where, thing in things(page) if (p := problem(thing)) is not None]
    return find


def _page_value(problem: Callable[[dict], str | None]) -> Callable[[dict], list[str]]:
    def find(page: dict) -> list[str]:
        p = problem(page)
        return [p] if p is not None else []
    return find


# --- small predicates ------------------------------------------------------------------------------
_KEBAB = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_SNAKE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
_HEX_COLOR = re.compile(r"^#[0-9a-fA-F]{6}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_PRICE = re.compile(r"^[£$€¥]\d+(?:\.\d{2})?$")
_IMAGE_EXT = (".jpg", ".jpeg", ".png", ".webp", ".avif", ".svg")
_EMOJI = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF]")
_GENERIC_LINK_TEXT = {"click here", "here", "read more", "more", "link", "this link"}
_RAW_URL = re.compile(r"(?:https?://|www\.)\S+")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_https_url(value: Any) -> bool:
    return bool(re.match(r"^https://[^\s/]+\.[^\s/]+", _str(value)))


def _title_case_problem(text: str) -> str | None:
    lower = [w for w in re.findall(r"[A-Za-z][A-Za-z'’-]*", text) if len(w) >= 4 and w[0].islower()]
    return f"has the word {lower[0]!r} in lower case" if lower else None


def _texts(page: dict) -> Iterator[tuple[str, str]]:
    for where, section in sections(page):
        yield where, _str(section.get("text"))


def _text_rule(problem: Callable[[str], str | None]) -> Callable[[dict], list[str]]:
    return lambda page: [f"{where}: its text {p}" for where, text in _texts(page) if (p := problem(text))]


def _heading_rule(problem: Callable[[str], str | None]) -> Callable[[dict], list[str]]:
    return lambda page: [f"{where}: its heading {_str(s.get('heading'))!r} {p}" for where, s in sections(page)
                         if _str(s.get("heading")) and (p := problem(_str(s.get("heading"))))]


def _field_is(field: dict, word: str) -> bool:
    return word in (_str(field.get("name")) + " " + _str(field.get("label"))).lower()


def _price_value(item: dict) -> float | None:
    digits = re.sub(r"[^\d.]", "", _str(item.get("price")))
    try:
        return float(digits)
    except ValueError:
        return None


# --- finders that look at more than one thing at a time ------------------------------------------
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


def _unique(values: Sequence[tuple[str, str]], noun: str) -> list[str]:
    seen: dict[str, str] = {}
    problems = []
    for where, value in values:
        if value and value in seen:
            problems.append(f"{where} repeats the {noun} {value!r} of {seen[value]}")
        seen.setdefault(value, where)
    return problems


def _one_h1_in_hero(page: dict) -> list[str]:
    level_one = [where for where, s in sections(page) if s.get("level") == 1 and _is_int(s.get("level"))]
    heroes = _of_type(page, "hero")
    problems = [f"{where}: the hero's heading is level {s.get('level')!r}, not 1" for where, s in heroes
                if not (_is_int(s.get("level")) and s.get("level") == 1)]
    problems += [f"{where} also has a level-1 heading" for where in level_one
                 if where not in [w for w, _ in heroes]]
    return problems


def _anchors_exist(page: dict) -> list[str]:
    ids = {_str(s.get("id")) for _, s in sections(page)}
    return [f"{where} points to {_str(link.get('href'))!r}, which is no section's id" for where, link in links(page)
            if _str(link.get("href")).startswith("#") and len(_str(link.get("href"))) > 1
            and _str(link.get("href"))[1:] not in ids]


def _button_anchors_exist(page: dict) -> list[str]:
    ids = {_str(s.get("id")) for _, s in sections(page)}
    return [f"{where} points to {_str(b.get('action'))!r}, which is no section's id" for where, b in buttons(page)
            if _str(b.get("action")).startswith("#") and _str(b.get("action"))[1:] not in ids]


def _one_primary_per_section(page: dict) -> list[str]:
    return [f"{where} has {n} primary buttons" for where, s in sections(page)
            if (n := sum(_dict(b).get("style") == "primary" for b in _list(s.get("buttons")))) > 1]


def _privacy_link_in_footer(page: dict) -> list[str]:
    texts = [_str(_dict(link).get("text")).lower() for link in _list(_dict(page.get("footer")).get("links"))]
    return [] if any("privacy" in t for t in texts) else ["the footer has no link to a privacy policy"]


def _hero_has_button(page: dict) -> list[str]:
    return [f"{where} has no button" for where, s in _of_type(page, "hero") if not _list(s.get("buttons"))]


def _hero_has_one_image(page: dict) -> list[str]:
    return [f"{where} has {n} images" for where, s in _of_type(page, "hero") if (n := len(_list(s.get("images")))) != 1]


def _form_has_required(page: dict) -> list[str]:
    return [f"{where} marks no field as required" for where, form in forms(page)
            if not any(_dict(f).get("required") is True for f in _list(form.get("fields")))]


def _form_ends_with_consent(page: dict) -> list[str]:
    problems = []
    for where, form in forms(page):
        last = _dict((_list(form.get("fields")) or [None])[-1])
        if not (last.get("type") == "checkbox" and "privacy" in _str(last.get("label")).lower()):
            problems.append(f"{where} does not end with a privacy consent checkbox")
    return problems


def _field_names_unique(page: dict) -> list[str]:
    problems = []
    for where, form in forms(page):
        names = [(f"{where}: field {j}", _str(_dict(f).get("name"))) for j, f in enumerate(_list(form.get("fields")), 1)]
        problems += _unique(names, "name")
    return problems


def _item_count(kind: str, low: int, high: int) -> Callable[[dict], list[str]]:
    return lambda page: [f"{where} has {n} items" for where, s in _of_type(page, kind)
                         if not low <= (n := len(_list(s.get("items")))) <= high]


def _prices_ascending(page: dict) -> list[str]:
    problems = []
    for where, s in _of_type(page, "pricing"):
        values = [_price_value(_dict(item)) for item in _list(s.get("items"))]
        known = [v for v in values if v is not None]
        if known != sorted(known):
            problems.append(f"{where} lists its prices as {known}, not from cheapest to dearest")
    return problems


def _distinct_alts(page: dict) -> list[str]:
    return _unique([(where, _str(img.get("alt")).strip()) for where, img in images(page)], "alt text")


def _distinct_headings(page: dict) -> list[str]:
    return _unique([(where, _str(s.get("heading")).strip()) for where, s in sections(page)], "heading")


def _distinct_ids(page: dict) -> list[str]:
    return _unique([(where, _str(s.get("id"))) for where, s in sections(page)], "id")


def _footer(problem: Callable[[dict], str | None]) -> Callable[[dict], list[str]]:
    return _page_value(lambda page: (f"the footer {p}" if (p := problem(_dict(page.get("footer")))) else None))


def _metadata(problem: Callable[[dict], str | None]) -> Callable[[dict], list[str]]:
    return _page_value(lambda page: (f"the metadata {p}" if (p := problem(_meta(page))) else None))


def _meta_is(key: str, ok: Callable[[Any], bool], want: str) -> Callable[[dict], list[str]]:
    """A finder for one metadata value: "the metadata has <key> <value>, not <want>"."""
    return _metadata(lambda meta: _has(meta.get(key), ok, key, want))


def _has(value: Any, ok: Callable[[Any], bool], field: str, want: str) -> str | None:
    """None when ok(value), else "has <field> <value>, not <want>" (or "has no <field>")."""
    if ok(value):
        return None
    return f"has no {field}" if value in (None, "") else f"has {field} {value!r}, not {want}"


def _keywords_problem(meta: dict) -> str | None:
    words = meta.get("keywords")
    if not isinstance(words, list) or not 3 <= len(words) <= 10:
        return f"has keywords {words!r}, not a list of 3 to 10"
    upper = [w for w in words if not isinstance(w, str) or w != w.lower() or not w]
    return f"has the keyword {upper[0]!r}, which is not lower case" if upper else None


def _keywords_repeat(meta: dict) -> str | None:
    words = [w.lower() for w in _list(meta.get("keywords")) if isinstance(w, str)]
    repeated = sorted({w for w in words if words.count(w) > 1})
    return f"repeats the keyword {repeated[0]!r}" if repeated else None


def _description_length(meta: dict) -> str | None:
    n = len(_str(meta.get("description")).strip())
    return None if 50 <= n <= 160 else f"description is {n} characters long"


def _title_form(page: dict) -> str | None:
    parts = _str(page.get("title")).split(" | ")
    if len(parts) == 2 and all(p.strip() for p in parts):
        return None
    return f"the page title {_str(page.get('title'))!r} is not of the form '<page name> | <business name>'"


def _title_length(page: dict) -> str | None:
    title = _str(page.get("title")).strip()
    if not title:
        return "the page has no title"
    return f"the page title is {len(title)} characters long" if len(title) > 60 else None


def _lang(page: dict) -> str | None:
    problem = _has(page.get("lang"), lambda v: bool(re.match(r"^[a-z]{2}$", _str(v))), "lang", "a two-letter code")
    return f"the page {problem}" if problem else None


def _filename_problem(img: dict) -> str | None:
    name = _str(img.get("src")).rsplit("/", 1)[-1].split("?")[0]
    if not name or re.match(r"^[a-z0-9]+(?:-[a-z0-9]+)*\.[a-z0-9]+$", name):
        return None
    return f"has the file name {name!r}"


def _alt_problem(img: dict) -> str | None:
    return None if _str(img.get("alt")).strip() else "has no alt text"


def _external(link: dict) -> bool:
    return _str(link.get("href")).startswith(("http://", "https://", "//"))


def _rule(id_: str, category: str, difficulty: str, statement: str, keys: tuple[str, ...],
          find: Callable[[dict], list[str]]) -> LatentRule:
    return LatentRule(id_, statement, keys, category, difficulty, find)


_TYPES = ", ".join(SECTION_TYPES)
_FIELD_TYPES = ", ".join(FIELD_TYPES)

# The catalogue, in benchmark order: the 10-rule set is the first ten, the 50-rule set the first fifty.
RULES: tuple[LatentRule, ...] = (
    _rule("L001", "structure", "easy", f"Every section needs a type from this list: {_TYPES}.",
          ("section", "type", "hero", "gallery", "contact"),
          _each(sections, lambda s: None if s.get("type") in SECTION_TYPES
                else f"has the type {s.get('type')!r}, which is not in the list")),
    _rule("L002", "images", "easy", "Every image needs a non-empty alt text.",
          ("every image", "alt"), _each(images, _alt_problem)),
    _rule("L003", "links", "easy", "Every external link uses https, never plain http.",
          ("external link", "https"),
          _each(links, lambda a: f"uses plain http ({_str(a.get('href'))})"
                if _str(a.get("href")).startswith("http://") else None)),
    _rule("L004", "metadata", "easy", "The page title is present and at most 60 characters long.",
          ("title", "60 characters"), _page_value(_title_length)),
    _rule("L005", "structure", "easy", "The first section is the hero section.",
          ("first section", "hero"), _first_is_hero),
    _rule("L006", "forms", "easy", "Every form field has a visible label.",
          ("field", "label", "visible"),
          _each(fields, lambda f: None if _str(f.get("label")).strip() else "has no label")),
    _rule("L007", "structure", "easy", "Every section has a non-empty heading.",
          ("section", "non-empty heading"),
          _each(sections, lambda s: None if _str(s.get("heading")).strip() else "has no heading")),
    _rule("L008", "buttons", "easy", "Every button has a non-empty label.",
          ("button", "non-empty label"),
          _each(buttons, lambda b: None if _str(b.get("label")).strip() else "has no label")),
    _rule("L009", "metadata", "medium", "The metadata description is between 50 and 160 characters long.",
          ("description", "50", "160"), _metadata(_description_length)),
    _rule("L010", "metadata", "easy", "The page's lang is a two-letter lower-case language code such as \"en\".",
          ("lang", "two-letter"), _page_value(_lang)),
    _rule("L011", "structure", "easy", "The last section is the contact section.",
          ("last section", "contact"), _last_is_contact),
    _rule("L012", "structure", "medium", "No two sections share an id.",
          ("two sections", "id"), _distinct_ids),
    _rule("L013", "structure", "medium", "Section ids are kebab-case: lower-case letters, digits and hyphens.",
          ("section ids", "kebab"),
          _each(sections, lambda s: None if _KEBAB.match(_str(s.get("id"))) else f"has the id {s.get('id')!r}")),
    _rule("L014", "content", "easy", "Section headings are at most 60 characters long.",
          ("headings", "60 characters"),
          _heading_rule(lambda h: f"is {len(h)} characters long" if len(h) > 60 else None)),
    _rule("L015", "content", "medium",
          "Section headings are in Title Case: every word of four or more letters starts with a capital.",
          ("headings", "title case"), _heading_rule(_title_case_problem)),
    _rule("L016", "content", "easy", "Section headings do not end with punctuation.",
          ("headings", "punctuation"),
          _heading_rule(lambda h: "ends with punctuation" if h.rstrip()[-1:] in ".,;:!?" else None)),
    _rule("L017", "structure", "medium", "The hero's heading is level 1 and is the only level-1 heading on the page.",
          ("level-1 heading", "hero"), _one_h1_in_hero),
    _rule("L018", "structure", "easy", "Every section's level is an integer from 1 to 6.",
          ("level", "integer", "1 to 6"),
          _each(sections, lambda s: None if _is_int(s.get("level")) and 1 <= s["level"] <= 6
                else f"has the level {s.get('level')!r}")),
    _rule("L019", "content", "easy", "Every section has some body text.",
          ("section", "body text"),
          _each(sections, lambda s: None if _str(s.get("text")).strip() else "has no text")),
    _rule("L020", "content", "medium", "Section text is at most 600 characters long.",
          ("section text", "600 characters"),
          _text_rule(lambda t: f"is {len(t)} characters long" if len(t) > 600 else None)),
    _rule("L021", "content", "easy", "No text contains lorem ipsum filler.",
          ("lorem ipsum",), _text_rule(lambda t: "contains lorem ipsum" if "lorem ipsum" in t.lower() else None)),
    _rule("L022", "content", "medium", "Section text has no placeholder markers: no TODO, no TBD, no square brackets.",
          ("placeholder", "todo"),
          _text_rule(lambda t: "contains a placeholder marker" if re.search(r"\bTODO\b|\bTBD\b|[\[\]]", t) else None)),
    _rule("L023", "content", "medium", "Section text never uses exclamation marks.",
          ("exclamation", "section text"), _text_rule(lambda t: "uses an exclamation mark" if "!" in t else None)),
    _rule("L024", "content", "medium", "The hero's text is a short subtitle of at most 160 characters.",
          ("hero", "subtitle", "160"),
          _each(lambda page: _of_type(page, "hero"),
                lambda s: f"has a text of {n} characters" if (n := len(_str(s.get("text")))) > 160 else None)),
    _rule("L025", "content", "medium", "Section text has no words of four or more letters in ALL CAPS.",
          ("all caps",),
          _text_rule(lambda t: f"shouts {w.group(0)!r}" if (w := re.search(r"\b[A-Z]{4,}\b", t)) else None)),
    _rule("L026", "content", "easy", "Section text has no double spaces.",
          ("double spaces",), _text_rule(lambda t: "has a double space" if "  " in t else None)),
    _rule("L027", "content", "medium", "No two sections share the same heading.",
          ("same heading",), _distinct_headings),
    _rule("L028", "links", "medium", "External links open in a new tab with target \"_blank\".",
          ("new tab", "_blank"),
          _each(links, lambda a: "opens in the same tab" if _external(a) and a.get("target") != "_blank" else None)),
    _rule("L029", "links", "hard", "Links with target \"_blank\" carry rel \"noopener noreferrer\".",
          ("noopener",),
          _each(links, lambda a: f"has rel {a.get('rel')!r}" if a.get("target") == "_blank"
                and not {"noopener", "noreferrer"} <= set(_str(a.get("rel")).split()) else None)),
    _rule("L030", "links", "medium",
          "Link text describes its target; never \"click here\", \"here\", \"read more\" or \"more\".",
          ("link text", "click here"),
          _each(links, lambda a: f"says {_str(a.get('text'))!r}"
                if _str(a.get("text")).strip().lower() in _GENERIC_LINK_TEXT else None)),
    _rule("L031", "links", "easy", "Every link has non-empty text.",
          ("every link", "non-empty text"),
          _each(links, lambda a: None if _str(a.get("text")).strip() else "has no text")),
    _rule("L032", "links", "medium", "Anchor links (#id) point to the id of a section on the page.",
          ("anchor links", "id"), _anchors_exist),
    _rule("L033", "links", "easy", "No link has an empty href or a bare \"#\".",
          ("href", "bare"),
          _each(links, lambda a: f"has the href {a.get('href')!r}" if _str(a.get("href")).strip() in ("", "#") else None)),
    _rule("L034", "links", "hard", "Phone links are written tel:+ followed by digits only, in international form.",
          ("phone links", "tel:"),
          _each(links, lambda a: f"has the phone href {_str(a.get('href'))!r}" if _str(a.get("href")).startswith("tel:")
                and not re.match(r"^tel:\+\d{6,15}$", _str(a.get("href"))) else None)),
    _rule("L035", "links", "medium", "Link hrefs contain no spaces; encode them.",
          ("hrefs", "spaces"),
          _each(links, lambda a: f"has a space in its href {_str(a.get('href'))!r}" if " " in _str(a.get("href")) else None)),
    _rule("L036", "links", "medium", "Navigation link texts are one to three words long.",
          ("navigation link", "three words"),
          lambda page: [f"{where} says {_str(a.get('text'))!r}" for where, a in links(page)
                        if where.startswith("navigation") and not 1 <= len(_str(a.get("text")).split()) <= 3]),
    _rule("L037", "footer", "medium", "The footer links to the privacy policy.",
          ("footer", "privacy policy"), _privacy_link_in_footer),
    _rule("L038", "images", "medium", "Alt texts are at most 125 characters long.",
          ("alt texts", "125"),
          _each(images, lambda i: f"has an alt text of {n} characters" if (n := len(_str(i.get("alt")))) > 125 else None)),
    _rule("L039", "images", "medium", "Alt texts never start with \"image of\", \"picture of\" or \"photo of\".",
          ("alt texts", "image of"),
          _each(images, lambda i: f"has the alt text {_str(i.get('alt'))[:40]!r}..."
                if re.match(r"^\s*(image|picture|photo) of\b", _str(i.get("alt")), re.I) else None)),
    _rule("L040", "images", "easy", "Image sources are absolute https URLs.",
          ("image sources", "https"),
          _each(images, lambda i: None if _is_https_url(i.get("src")) else f"has the src {i.get('src')!r}")),
    _rule("L041", "images", "medium", "Image files are .jpg, .jpeg, .png, .webp, .avif or .svg.",
          ("image files", ".webp"),
          _each(images, lambda i: None if _str(i.get("src")).lower().split("?")[0].endswith(_IMAGE_EXT)
                else f"has the src {i.get('src')!r}")),
    _rule("L042", "images", "medium", "Every image gives its width and height as positive integers.",
          ("width and height", "positive integers"),
          _each(images, lambda i: None if all(_is_int(i.get(k)) and i[k] > 0 for k in ("width", "height"))
                else f"has width {i.get('width')!r} and height {i.get('height')!r}")),
    _rule("L043", "images", "medium", "Images outside the hero load lazily (loading \"lazy\").",
          ("outside the hero", "lazy"),
          lambda page: [f"{where} has loading {img.get('loading')!r}" for where, img in images(page)
                        if "'hero'" not in where and img.get("loading") != "lazy"]),
    _rule("L044", "images", "hard", "Hero images load eagerly (loading \"eager\").",
          ("hero images", "eager"),
          lambda page: [f"{where} has loading {img.get('loading')!r}" for where, img in images(page)
                        if "'hero'" in where and img.get("loading") != "eager"]),
    _rule("L045", "images", "medium", "Every gallery image has a caption.",
          ("gallery image", "caption"),
          _each(lambda page: _in_sections(page, "images", "image", "gallery"),
                lambda i: None if _str(i.get("caption")).strip() else "has no caption")),
    _rule("L046", "images", "medium", "The hero has exactly one image.",
          ("hero", "exactly one image"), _hero_has_one_image),
    _rule("L047", "images", "hard", "No two images share the same alt text.",
          ("two images", "same alt"), _distinct_alts),
    _rule("L048", "images", "medium", "No image is wider than 2000 pixels.",
          ("wider", "2000 pixels"),
          _each(images, lambda i: f"is {i.get('width')} pixels wide"
                if _is_int(i.get("width")) and i["width"] > 2000 else None)),
    _rule("L049", "images", "hard", "The hero image is at least 1200 pixels wide.",
          ("hero image", "1200"),
          lambda page: [f"{where} is {img.get('width')!r} pixels wide" for where, img in images(page)
                        if "'hero'" in where and not (_is_int(img.get("width")) and img["width"] >= 1200)]),
    _rule("L050", "images", "hard", "Image file names are lower case with hyphens: no spaces, underscores or capitals.",
          ("file names", "underscores"), _each(images, _filename_problem)),
    _rule("L051", "buttons", "medium", "Every button's action is a #section-id or an https URL.",
          ("button's action", "https"),
          _each(buttons, lambda b: None if re.match(r"^#\S+$", _str(b.get("action"))) or _is_https_url(b.get("action"))
                else f"has the action {b.get('action')!r}")),
    _rule("L052", "buttons", "easy", "Button labels are at most 25 characters long.",
          ("button labels", "25 characters"),
          _each(buttons, lambda b: f"has a label of {n} characters" if (n := len(_str(b.get("label")))) > 25 else None)),
    _rule("L053", "buttons", "medium", "Button labels have no exclamation mark and no final period.",
          ("button labels", "exclamation mark", "period"),
          _each(buttons, lambda b: f"has the label {_str(b.get('label'))!r}" if "!" in _str(b.get("label"))
                or _str(b.get("label")).rstrip().endswith(".") else None)),
    _rule("L054", "buttons", "medium", "A section has at most one primary button.",
          ("at most one primary",), _one_primary_per_section),
    _rule("L055", "buttons", "easy", "Every button's style is primary, secondary or link.",
          ("button's style", "secondary"),
          _each(buttons, lambda b: None if b.get("style") in BUTTON_STYLES else f"has the style {b.get('style')!r}")),
    _rule("L056", "buttons", "medium", "The hero has at least one button.",
          ("hero", "at least one button"), _hero_has_button),
    _rule("L057", "buttons", "hard", "A button whose action starts with # points to the id of a section on the page.",
          ("button whose action", "id"), _button_anchors_exist),
    _rule("L058", "forms", "easy", "Forms use the method post.",
          ("forms", "method", "post"),
          _each(forms, lambda f: None if f.get("method") == "post" else f"has the method {f.get('method')!r}")),
    _rule("L059", "forms", "medium", "A form's action is an absolute https URL.",
          ("form's action", "https"),
          _each(forms, lambda f: None if _is_https_url(f.get("action")) else f"has the action {f.get('action')!r}")),
    _rule("L060", "forms", "medium", "A form's submit label says what happens, never just \"Submit\" or \"Send\".",
          ("submit label",),
          _each(forms, lambda f: None if _str(f.get("submit_label")).strip().lower() not in ("", "submit", "send")
                else f"has the submit label {f.get('submit_label')!r}")),
    _rule("L061", "forms", "medium", f"Every form field's type is one of: {_FIELD_TYPES}.",
          ("field's type", "textarea", "checkbox"),
          _each(fields, lambda f: None if f.get("type") in FIELD_TYPES else f"has the type {f.get('type')!r}")),
    _rule("L062", "forms", "medium", "Form field names are snake_case.",
          ("field names", "snake_case"),
          _each(fields, lambda f: None if _SNAKE.match(_str(f.get("name"))) else f"has the name {f.get('name')!r}")),
    _rule("L063", "forms", "medium", "Email fields have the type email.",
          ("email fields", "type email"),
          _each(fields, lambda f: f"has the type {f.get('type')!r}"
                if _field_is(f, "email") and f.get("type") != "email" else None)),
    _rule("L064", "forms", "medium", "Phone fields have the type tel.",
          ("phone fields", "type tel"),
          _each(fields, lambda f: f"has the type {f.get('type')!r}"
                if _field_is(f, "phone") and f.get("type") != "tel" else None)),
    _rule("L065", "forms", "easy", "Every form marks at least one field as required.",
          ("at least one field", "required"), _form_has_required),
    _rule("L066", "forms", "hard", "Every form ends with a checkbox field whose label asks consent to the privacy policy.",
          ("checkbox", "consent"), _form_ends_with_consent),
    _rule("L067", "forms", "medium", "A field's placeholder never repeats its label.",
          ("placeholder", "repeats its label"),
          _each(fields, lambda f: "has a placeholder equal to its label" if _str(f.get("placeholder")).strip()
                and _str(f.get("placeholder")).strip().lower() == _str(f.get("label")).strip().lower() else None)),
    _rule("L068", "forms", "medium", "Form ids are kebab-case and end in \"-form\".",
          ("form ids", "-form"),
          _each(forms, lambda f: None if _KEBAB.match(_str(f.get("id"))) and _str(f.get("id")).endswith("-form")
                else f"has the id {f.get('id')!r}")),
    _rule("L069", "forms", "hard", "Textarea fields have rows between 3 and 10.",
          ("textarea fields", "rows"),
          _each(fields, lambda f: f"has rows {f.get('rows')!r}" if f.get("type") == "textarea"
                and not (_is_int(f.get("rows")) and 3 <= f["rows"] <= 10) else None)),
    _rule("L070", "forms", "hard", "Email fields carry autocomplete \"email\".",
          ("email fields", "autocomplete"),
          _each(fields, lambda f: f"has autocomplete {f.get('autocomplete')!r}" if _field_is(f, "email")
                and f.get("autocomplete") != "email" else None)),
    _rule("L071", "forms", "medium", "Field names are unique within a form.",
          ("field names", "unique"), _field_names_unique),
    _rule("L072", "forms", "medium", "Select fields offer at least two options.",
          ("select fields", "options"),
          _each(fields, lambda f: f"has {len(_list(f.get('options')))} options" if f.get("type") == "select"
                and len(_list(f.get("options"))) < 2 else None)),
    _rule("L073", "items", "medium", "A features section lists three to six items.",
          ("features section", "six items"), _item_count("features", 3, 6)),
    _rule("L074", "items", "easy", "Every item has a non-empty title and text.",
          ("every item", "title and text"),
          _each(lambda page: _in_sections(page, "items", "item"),
                lambda i: None if _str(i.get("title")).strip() and _str(i.get("text")).strip() else "lacks a title or text")),
    _rule("L075", "items", "medium", "Item titles are at most 40 characters long.",
          ("item titles", "40 characters"),
          _each(lambda page: _in_sections(page, "items", "item"),
                lambda i: f"has a title of {n} characters" if (n := len(_str(i.get("title")))) > 40 else None)),
    _rule("L076", "items", "medium", "Every testimonial names its author.",
          ("testimonial", "author"),
          _each(lambda page: _in_sections(page, "items", "item", "testimonials"),
                lambda i: None if _str(i.get("author")).strip() else "names no author")),
    _rule("L077", "items", "hard", "Testimonial texts are quotations: they start and end with a double quotation mark.",
          ("testimonial texts", "quotation"),
          _each(lambda page: _in_sections(page, "items", "item", "testimonials"),
                lambda i: None if re.match(r'^["“].*["”]$', _str(i.get("text")).strip(), re.S)
                else "is not in quotation marks")),
    _rule("L078", "items", "medium", "Prices are written with a currency symbol then the amount, like £12 or $12.50.",
          ("prices", "currency symbol"),
          _each(lambda page: _in_sections(page, "items", "item", "pricing"),
                lambda i: None if _PRICE.match(_str(i.get("price"))) else f"has the price {i.get('price')!r}")),
    _rule("L079", "items", "hard", "Pricing items go from the cheapest to the most expensive.",
          ("pricing items", "cheapest"), _prices_ascending),
    _rule("L080", "items", "easy", "FAQ item titles are questions ending with a question mark.",
          ("faq", "question mark"),
          _each(lambda page: _in_sections(page, "items", "item", "faq"),
                lambda i: None if _str(i.get("title")).rstrip().endswith("?") else f"has the title {_str(i.get('title'))!r}")),
    _rule("L081", "items", "medium", "An FAQ section has at least three items.",
          ("faq section", "three items"), _item_count("faq", 3, 10 ** 6)),
    _rule("L082", "footer", "medium", "The footer's copyright reads \"© <year> <business name>\".",
          ("copyright", "©"),
          _footer(lambda f: None if re.match(r"^© \d{4} \S", _str(f.get("copyright")))
                  else f"has the copyright {f.get('copyright')!r}")),
    _rule("L083", "footer", "easy", "The footer has some text.",
          ("footer", "some text"), _footer(lambda f: None if _str(f.get("text")).strip() else "has no text")),
    _rule("L084", "metadata", "medium", "The metadata keywords are a list of 3 to 10 lower-case strings.",
          ("keywords", "lower-case"), _metadata(_keywords_problem)),
    _rule("L085", "metadata", "medium", "No keyword appears twice.",
          ("keyword", "twice"), _metadata(_keywords_repeat)),
    _rule("L086", "metadata", "medium", "The canonical URL is an absolute https URL.",
          ("canonical", "https"), _meta_is("canonical_url", _is_https_url, "an https URL")),
    _rule("L087", "metadata", "hard", "The og_image is an https URL of a .jpg, .png or .webp file.",
          ("og_image", ".jpg"),
          _meta_is("og_image", lambda v: _is_https_url(v) and _str(v).lower().endswith((".jpg", ".png", ".webp")),
                   "an https image URL")),
    _rule("L088", "metadata", "medium", "The robots metadata is \"index, follow\".",
          ("robots", "index, follow"), _meta_is("robots", lambda v: v == "index, follow", "'index, follow'")),
    _rule("L089", "metadata", "medium", "The charset is \"utf-8\", in lower case.",
          ("charset", "utf-8"), _meta_is("charset", lambda v: v == "utf-8", "'utf-8'")),
    _rule("L090", "metadata", "hard", "The viewport is \"width=device-width, initial-scale=1\".",
          ("viewport", "device-width"),
          _metadata(lambda m: _has(m.get("viewport"), lambda v: v == "width=device-width, initial-scale=1", "viewport",
                                   "'width=device-width, initial-scale=1'"))),
    _rule("L091", "metadata", "medium", "The theme_color is a hex colour like #1a73e8.",
          ("theme_color", "hex"), _metadata(lambda m: _has(m.get("theme_color"), lambda v: bool(_HEX_COLOR.match(_str(v))),
                                                     "theme_color", "a #rrggbb colour"))),
    _rule("L092", "metadata", "easy", "The metadata names the page's author.",
          ("names the page's author",), _meta_is("author", lambda v: bool(_str(v).strip()), "a name")),
    _rule("L093", "metadata", "medium", "The og_type is \"website\".",
          ("og_type", "website"), _meta_is("og_type", lambda v: v == "website", "'website'")),
    _rule("L094", "metadata", "medium", "The updated date is written YYYY-MM-DD.",
          ("updated", "yyyy-mm-dd"),
          _metadata(lambda m: _has(m.get("updated"), lambda v: bool(_DATE.match(_str(v))), "updated date", "YYYY-MM-DD"))),
    _rule("L095", "metadata", "medium", "The favicon is an .ico or .png file.",
          ("favicon", ".ico"), _metadata(lambda m: _has(m.get("favicon"), lambda v: _str(v).lower().endswith((".ico", ".png")),
                                                 "favicon", "an .ico or .png file"))),
    _rule("L096", "metadata", "easy", "The metadata description ends with a period.",
          ("description", "ends with a period"),
          _metadata(lambda m: None if _str(m.get("description")).rstrip().endswith(".")
                    else "description does not end with a period")),
    _rule("L097", "metadata", "hard", "The page title has the form \"<page name> | <business name>\".",
          ("title", "| <business name>"), _page_value(_title_form)),
    _rule("L098", "content", "medium", "Section text contains no raw URLs; put addresses in links.",
          ("raw urls",), _text_rule(lambda t: f"contains the raw URL {m.group(0)!r}" if (m := _RAW_URL.search(t)) else None)),
    _rule("L099", "content", "medium", "No heading or section text contains emoji.",
          ("emoji",),
          lambda page: [f"{where} contains an emoji" for where, s in sections(page)
                        if _EMOJI.search(_str(s.get("heading")) + _str(s.get("text")))]),
    _rule("L100", "content", "hard", "Section text never says \"click\"; say \"select\" or \"choose\" instead.",
          ("click", "select"),
          _text_rule(lambda t: "says 'click'" if re.search(r"\bclick", t, re.I) else None)),
)

RULES_BY_ID = {rule.id: rule for rule in RULES}


def active_rules(rules: int | Sequence[str] | Sequence[LatentRule] = 10) -> list[LatentRule]:
    """The active rule set: the first N of the catalogue, or the rules with the given ids (or rules).

    Raises ValueError for N outside 1..len(RULES) or an unknown id.
    """
    if isinstance(rules, int):
        if not 1 <= rules <= len(RULES):
            raise ValueError(f"n_rules must be between 1 and {len(RULES)}, not {rules}.")
        return list(RULES[:rules])
    chosen = []
    for rule in rules:
        if isinstance(rule, LatentRule):
            chosen.append(rule)
        elif rule in RULES_BY_ID:
            chosen.append(RULES_BY_ID[rule])
        else:
            raise ValueError(f"Unknown latent rule {rule!r}: ids run from L001 to L{len(RULES):03d}.")
    return chosen


def check_page(page: dict | None, rules: Sequence[LatentRule]) -> dict[str, str | None]:
    """rule id -> None (followed) or its failure message, for each rule in order. Never raises."""
    return {rule.id: rule.check(page or {}) for rule in rules}


__all__ = ["LatentRule", "RULES", "RULES_BY_ID", "CATEGORIES", "DIFFICULTIES", "active_rules", "check_page"]
