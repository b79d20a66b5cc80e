"""The latent rules' checks on the things inside sections (images, links, buttons, forms and their fields, items):
FINDERS, check name -> finder.

The catalogue (catalog.toml) names each rule's check; catalog.py reads it. A finder lists a page's failures of its
rule ("<where> <what>"), empty when the page follows it (images, links, buttons, forms and items rules).
"""

from __future__ import annotations

import re
from typing import Callable

from helpers.families.latent_rules.page import (
    KEBAB,
    Finder,
    as_dict,
    as_list,
    as_str,
    buttons,
    each,
    fields,
    forms,
    images,
    in_sections,
    is_https_url,
    is_int,
    links,
    of_type,
    sections,
    unique,
)
from helpers.families.latent_rules.schema import BUTTON_STYLES, FIELD_TYPES

_SNAKE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")

_PRICE = re.compile(r"^[£$€¥]\d+(?:\.\d{2})?$")

_IMAGE_EXT = (".jpg", ".jpeg", ".png", ".webp", ".avif", ".svg")

_GENERIC_LINK_TEXT = {"click here", "here", "read more", "more", "link", "this link"}


def _field_is(field: dict, word: str) -> bool:
    return word in (as_str(field.get("name")) + " " + as_str(field.get("label"))).lower()


def _price_value(item: dict) -> float | None:
    digits = re.sub(r"[^\d.]", "", as_str(item.get("price")))
    try:
        return float(digits)
    except ValueError:
        return None


def _anchors_exist(page: dict) -> list[str]:
    ids = {as_str(s.get("id")) for _, s in sections(page)}
    return [
        f"{where} points to {as_str(link.get('href'))!r}, which is no section's id"
        for where, link in links(page)
        if as_str(link.get("href")).startswith("#")
        and len(as_str(link.get("href"))) > 1
        and as_str(link.get("href"))[1:] not in ids
    ]


def _button_anchors_exist(page: dict) -> list[str]:
    ids = {as_str(s.get("id")) for _, s in sections(page)}
    return [
        f"{where} points to {as_str(b.get('action'))!r}, which is no section's id"
        for where, b in buttons(page)
        if as_str(b.get("action")).startswith("#") and as_str(b.get("action"))[1:] not in ids
    ]


def _one_primary_per_section(page: dict) -> list[str]:
    return [
        f"{where} has {n} primary buttons"
        for where, s in sections(page)
        if (n := sum(as_dict(b).get("style") == "primary" for b in as_list(s.get("buttons")))) > 1
    ]


def _hero_has_button(page: dict) -> list[str]:
    return [f"{where} has no button" for where, s in of_type(page, "hero") if not as_list(s.get("buttons"))]


def _hero_has_one_image(page: dict) -> list[str]:
    return [
        f"{where} has {n} images" for where, s in of_type(page, "hero") if (n := len(as_list(s.get("images")))) != 1
    ]


def _form_has_required(page: dict) -> list[str]:
    return [
        f"{where} marks no field as required"
        for where, form in forms(page)
        if not any(as_dict(f).get("required") is True for f in as_list(form.get("fields")))
    ]


def _form_ends_with_consent(page: dict) -> list[str]:
    problems = []
    for where, form in forms(page):
        last = as_dict((as_list(form.get("fields")) or [None])[-1])
        if not (last.get("type") == "checkbox" and "privacy" in as_str(last.get("label")).lower()):
            problems.append(f"{where} does not end with a privacy consent checkbox")
    return problems


def _field_names_unique(page: dict) -> list[str]:
    problems = []
    for where, form in forms(page):
        names = [
            (f"{where}: field {j}", as_str(as_dict(f).get("name")))
            for j, f in enumerate(as_list(form.get("fields")), 1)
        ]
        problems += unique(names, "name")
    return problems


def _item_count(kind: str, low: int, high: int) -> Callable[[dict], list[str]]:
    return lambda page: [
        f"{where} has {n} items"
        for where, s in of_type(page, kind)
        if not low <= (n := len(as_list(s.get("items")))) <= high
    ]


def _prices_ascending(page: dict) -> list[str]:
    problems = []
    for where, s in of_type(page, "pricing"):
        values = [_price_value(as_dict(item)) for item in as_list(s.get("items"))]
        known = [v for v in values if v is not None]
        if known != sorted(known):
            problems.append(f"{where} lists its prices as {known}, not from cheapest to dearest")
    return problems


def _distinct_alts(page: dict) -> list[str]:
    return unique([(where, as_str(img.get("alt")).strip()) for where, img in images(page)], "alt text")


def _filename_problem(img: dict) -> str | None:
    name = as_str(img.get("src")).rsplit("/", 1)[-1].split("?")[0]
    if not name or re.match(r"^[a-z0-9]+(?:-[a-z0-9]+)*\.[a-z0-9]+$", name):
        return None
    return f"has the file name {name!r}"


def _alt_problem(img: dict) -> str | None:
    return None if as_str(img.get("alt")).strip() else "has no alt text"


def _external(link: dict) -> bool:
    return as_str(link.get("href")).startswith(("http://", "https://", "//"))


FINDERS: dict[str, Finder] = {
    "image_alt_present": each(images, _alt_problem),
    "link_not_plain_http": each(
        links,
        lambda link: f"uses plain http ({as_str(link.get('href'))})"
        if as_str(link.get("href")).startswith("http://")
        else None,
    ),
    "field_label_present": each(fields, lambda f: None if as_str(f.get("label")).strip() else "has no label"),
    "button_label_present": each(buttons, lambda b: None if as_str(b.get("label")).strip() else "has no label"),
    "external_link_new_tab": each(
        links, lambda link: "opens in the same tab" if _external(link) and link.get("target") != "_blank" else None
    ),
    "blank_target_noopener": each(
        links,
        lambda link: f"has rel {link.get('rel')!r}"
        if link.get("target") == "_blank" and not {"noopener", "noreferrer"} <= set(as_str(link.get("rel")).split())
        else None,
    ),
    "link_text_descriptive": each(
        links,
        lambda link: f"says {as_str(link.get('text'))!r}"
        if as_str(link.get("text")).strip().lower() in _GENERIC_LINK_TEXT
        else None,
    ),
    "link_text_present": each(links, lambda link: None if as_str(link.get("text")).strip() else "has no text"),
    "anchors_exist": _anchors_exist,
    "href_not_empty": each(
        links,
        lambda link: f"has the href {link.get('href')!r}" if as_str(link.get("href")).strip() in ("", "#") else None,
    ),
    "phone_href_international": each(
        links,
        lambda link: f"has the phone href {as_str(link.get('href'))!r}"
        if as_str(link.get("href")).startswith("tel:") and not re.match(r"^tel:\+\d{6,15}$", as_str(link.get("href")))
        else None,
    ),
    "href_no_spaces": each(
        links,
        lambda link: f"has a space in its href {as_str(link.get('href'))!r}"
        if " " in as_str(link.get("href"))
        else None,
    ),
    "navigation_text_short": lambda page: [
        f"{where} says {as_str(link.get('text'))!r}"
        for where, link in links(page)
        if where.startswith("navigation") and not 1 <= len(as_str(link.get("text")).split()) <= 3
    ],
    "alt_text_short": each(
        images, lambda i: f"has an alt text of {n} characters" if (n := len(as_str(i.get("alt")))) > 125 else None
    ),
    "alt_text_no_image_of": each(
        images,
        lambda i: f"has the alt text {as_str(i.get('alt'))[:40]!r}..."
        if re.match(r"^\s*(image|picture|photo) of\b", as_str(i.get("alt")), re.I)
        else None,
    ),
    "image_src_https": each(images, lambda i: None if is_https_url(i.get("src")) else f"has the src {i.get('src')!r}"),
    "image_extension_known": each(
        images,
        lambda i: None
        if as_str(i.get("src")).lower().split("?")[0].endswith(_IMAGE_EXT)
        else f"has the src {i.get('src')!r}",
    ),
    "image_size_given": each(
        images,
        lambda i: None
        if all(is_int(i.get(k)) and i[k] > 0 for k in ("width", "height"))
        else f"has width {i.get('width')!r} and height {i.get('height')!r}",
    ),
    "images_lazy_outside_hero": lambda page: [
        f"{where} has loading {img.get('loading')!r}"
        for where, img in images(page)
        if "'hero'" not in where and img.get("loading") != "lazy"
    ],
    "hero_images_eager": lambda page: [
        f"{where} has loading {img.get('loading')!r}"
        for where, img in images(page)
        if "'hero'" in where and img.get("loading") != "eager"
    ],
    "gallery_caption_present": each(
        lambda page: in_sections(page, "images", "image", "gallery"),
        lambda i: None if as_str(i.get("caption")).strip() else "has no caption",
    ),
    "hero_one_image": _hero_has_one_image,
    "alts_distinct": _distinct_alts,
    "image_at_most_2000_wide": each(
        images, lambda i: f"is {i.get('width')} pixels wide" if is_int(i.get("width")) and i["width"] > 2000 else None
    ),
    "hero_image_wide": lambda page: [
        f"{where} is {img.get('width')!r} pixels wide"
        for where, img in images(page)
        if "'hero'" in where and not (is_int(img.get("width")) and img["width"] >= 1200)
    ],
    "image_filename_kebab": each(images, _filename_problem),
    "button_action_anchor_or_https": each(
        buttons,
        lambda b: None
        if re.match(r"^#\S+$", as_str(b.get("action"))) or is_https_url(b.get("action"))
        else f"has the action {b.get('action')!r}",
    ),
    "button_label_short": each(
        buttons, lambda b: f"has a label of {n} characters" if (n := len(as_str(b.get("label")))) > 25 else None
    ),
    "button_label_punctuation": each(
        buttons,
        lambda b: f"has the label {as_str(b.get('label'))!r}"
        if "!" in as_str(b.get("label")) or as_str(b.get("label")).rstrip().endswith(".")
        else None,
    ),
    "one_primary_button_per_section": _one_primary_per_section,
    "button_style_known": each(
        buttons, lambda b: None if b.get("style") in BUTTON_STYLES else f"has the style {b.get('style')!r}"
    ),
    "hero_has_button": _hero_has_button,
    "button_anchors_exist": _button_anchors_exist,
    "form_method_post": each(
        forms, lambda f: None if f.get("method") == "post" else f"has the method {f.get('method')!r}"
    ),
    "form_action_https": each(
        forms, lambda f: None if is_https_url(f.get("action")) else f"has the action {f.get('action')!r}"
    ),
    "submit_label_specific": each(
        forms,
        lambda f: None
        if as_str(f.get("submit_label")).strip().lower() not in ("", "submit", "send")
        else f"has the submit label {f.get('submit_label')!r}",
    ),
    "field_type_known": each(
        fields, lambda f: None if f.get("type") in FIELD_TYPES else f"has the type {f.get('type')!r}"
    ),
    "field_name_snake_case": each(
        fields, lambda f: None if _SNAKE.match(as_str(f.get("name"))) else f"has the name {f.get('name')!r}"
    ),
    "email_field_type": each(
        fields,
        lambda f: f"has the type {f.get('type')!r}" if _field_is(f, "email") and f.get("type") != "email" else None,
    ),
    "phone_field_type": each(
        fields,
        lambda f: f"has the type {f.get('type')!r}" if _field_is(f, "phone") and f.get("type") != "tel" else None,
    ),
    "form_has_required_field": _form_has_required,
    "form_ends_with_consent": _form_ends_with_consent,
    "placeholder_not_label": each(
        fields,
        lambda f: "has a placeholder equal to its label"
        if as_str(f.get("placeholder")).strip()
        and as_str(f.get("placeholder")).strip().lower() == as_str(f.get("label")).strip().lower()
        else None,
    ),
    "form_id_kebab_form": each(
        forms,
        lambda f: None
        if KEBAB.match(as_str(f.get("id"))) and as_str(f.get("id")).endswith("-form")
        else f"has the id {f.get('id')!r}",
    ),
    "textarea_rows": each(
        fields,
        lambda f: f"has rows {f.get('rows')!r}"
        if f.get("type") == "textarea" and not (is_int(f.get("rows")) and 3 <= f["rows"] <= 10)
        else None,
    ),
    "email_autocomplete": each(
        fields,
        lambda f: f"has autocomplete {f.get('autocomplete')!r}"
        if _field_is(f, "email") and f.get("autocomplete") != "email"
        else None,
    ),
    "field_names_distinct": _field_names_unique,
    "select_options": each(
        fields,
        lambda f: f"has {len(as_list(f.get('options')))} options"
        if f.get("type") == "select" and len(as_list(f.get("options"))) < 2
        else None,
    ),
    "features_item_count": _item_count("features", 3, 6),
    "item_title_and_text": each(
        lambda page: in_sections(page, "items", "item"),
        lambda i: None if as_str(i.get("title")).strip() and as_str(i.get("text")).strip() else "lacks a title or text",
    ),
    "item_title_short": each(
        lambda page: in_sections(page, "items", "item"),
        lambda i: f"has a title of {n} characters" if (n := len(as_str(i.get("title")))) > 40 else None,
    ),
    "testimonial_author": each(
        lambda page: in_sections(page, "items", "item", "testimonials"),
        lambda i: None if as_str(i.get("author")).strip() else "names no author",
    ),
    "testimonial_quoted": each(
        lambda page: in_sections(page, "items", "item", "testimonials"),
        lambda i: None
        if re.match(r'^["“].*["”]$', as_str(i.get("text")).strip(), re.S)
        else "is not in quotation marks",
    ),
    "price_format": each(
        lambda page: in_sections(page, "items", "item", "pricing"),
        lambda i: None if _PRICE.match(as_str(i.get("price"))) else f"has the price {i.get('price')!r}",
    ),
    "prices_ascending": _prices_ascending,
    "faq_title_question": each(
        lambda page: in_sections(page, "items", "item", "faq"),
        lambda i: None
        if as_str(i.get("title")).rstrip().endswith("?")
        else f"has the title {as_str(i.get('title'))!r}",
    ),
    "faq_item_count": _item_count("faq", 3, 10**6),
}
