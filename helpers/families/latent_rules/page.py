"""Reading a latent-rules page defensively (a wrong type reads as missing), and the shapes of its checks.

A page is the JSON the generator answers (helpers.families.latent_rules.schema). `sections(page)` and the like list
(where, thing), where reads "section 3 (type 'gallery')" or "navigation: link 2"; a finder (page -> its failures,
each "<where> <what>") is made with `each`, `page_value`, `text_rule`, `heading_rule`, `footer`, `metadata` or
`meta_is` from a small function of one thing. The checks themselves are in checks_sections and checks_elements.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Iterator, Sequence

Finder = Callable[[dict], list[str]]  # a page -> its failures, "<where> <what>" each


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def meta_of(page: dict) -> dict:
    return as_dict(page.get("metadata"))


def sections(page: dict) -> list[tuple[str, dict]]:
    """(where, section) in page order; where reads "section 3 (type 'gallery')"."""
    return [
        (f"section {i} (type {as_dict(s).get('type')!r})", as_dict(s))
        for i, s in enumerate(as_list(page.get("sections")), 1)
    ]


def of_type(page: dict, kind: str) -> list[tuple[str, dict]]:
    return [(where, s) for where, s in sections(page) if s.get("type") == kind]


def in_sections(page: dict, key: str, noun: str, kind: str | None = None) -> Iterator[tuple[str, dict]]:
    for where, section in of_type(page, kind) if kind else sections(page):
        for j, thing in enumerate(as_list(section.get(key)), 1):
            yield f"{where}: {noun} {j}", as_dict(thing)


def images(page: dict) -> Iterator[tuple[str, dict]]:
    return in_sections(page, "images", "image")


def links(page: dict) -> Iterator[tuple[str, dict]]:
    """Every link: the navigation's, each section's, the footer's."""
    for j, link in enumerate(as_list(as_dict(page.get("navigation")).get("links")), 1):
        yield f"navigation: link {j}", as_dict(link)
    yield from in_sections(page, "links", "link")
    for j, link in enumerate(as_list(as_dict(page.get("footer")).get("links")), 1):
        yield f"footer: link {j}", as_dict(link)


def buttons(page: dict) -> Iterator[tuple[str, dict]]:
    return in_sections(page, "buttons", "button")


def forms(page: dict) -> Iterator[tuple[str, dict]]:
    return in_sections(page, "forms", "form")


def fields(page: dict) -> Iterator[tuple[str, dict]]:
    for where, form in forms(page):
        for j, field in enumerate(as_list(form.get("fields")), 1):
            yield f"{where}: field {j} ({as_str(as_dict(field).get('name')) or 'unnamed'})", as_dict(field)


def each(
    things: Callable[[dict], Iterable[tuple[str, dict]]], problem: Callable[[dict], str | None]
) -> Callable[[dict], list[str]]:
    """A finder: "<where> <problem>" for every thing whose problem() is not None."""

    def find(page: dict) -> list[str]:
        return [f"{where} {p}" for where, thing in things(page) if (p := problem(thing)) is not None]

    return find


def page_value(problem: Callable[[dict], str | None]) -> Callable[[dict], list[str]]:
    def find(page: dict) -> list[str]:
        p = problem(page)
        return [p] if p is not None else []

    return find


KEBAB = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_https_url(value: Any) -> bool:
    return bool(re.match(r"^https://[^\s/]+\.[^\s/]+", as_str(value)))


def section_texts(page: dict) -> Iterator[tuple[str, str]]:
    for where, section in sections(page):
        yield where, as_str(section.get("text"))


def text_rule(problem: Callable[[str], str | None]) -> Callable[[dict], list[str]]:
    return lambda page: [f"{where}: its text {p}" for where, text in section_texts(page) if (p := problem(text))]


def heading_rule(problem: Callable[[str], str | None]) -> Callable[[dict], list[str]]:
    return lambda page: [
        f"{where}: its heading {as_str(s.get('heading'))!r} {p}"
        for where, s in sections(page)
        if as_str(s.get("heading")) and (p := problem(as_str(s.get("heading"))))
    ]


def unique(values: Sequence[tuple[str, str]], noun: str) -> list[str]:
    seen: dict[str, str] = {}
    problems = []
    for where, value in values:
        if value and value in seen:
            problems.append(f"{where} repeats the {noun} {value!r} of {seen[value]}")
        seen.setdefault(value, where)
    return problems


def footer(problem: Callable[[dict], str | None]) -> Callable[[dict], list[str]]:
    return page_value(lambda page: (f"the footer {p}" if (p := problem(as_dict(page.get("footer")))) else None))


def metadata(problem: Callable[[dict], str | None]) -> Callable[[dict], list[str]]:
    return page_value(lambda page: (f"the metadata {p}" if (p := problem(meta_of(page))) else None))


def meta_is(key: str, ok: Callable[[Any], bool], want: str) -> Callable[[dict], list[str]]:
    """A finder for one metadata value: "the metadata has <key> <value>, not <want>"."""
    return metadata(lambda meta: has(meta.get(key), ok, key, want))


def has(value: Any, ok: Callable[[Any], bool], field: str, want: str) -> str | None:
    """None when ok(value), else "has <field> <value>, not <want>" (or "has no <field>")."""
    if ok(value):
        return None
    return f"has no {field}" if value in (None, "") else f"has {field} {value!r}, not {want}"
