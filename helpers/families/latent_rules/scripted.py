"""The scripted page generator of the dry run: a stand-in for the model, no LLM involved.

    scripted_generator(prompt, request) -> the answer text (page JSON)

It reads which latent rules the prompt states (`stated_rules`: a rule's statement, or all its
paraphrase keys on one line of the prompt, matched without case) and returns the page for the
request that follows exactly those rules and breaks every other rule of the catalogue, each in the
plausible way a model that was never told would (an image without alt text, an http link, a title
too long...). The page starts from `ideal_page(request)` (ideal.py), which follows every rule, and each unstated
rule's entry in BREAKS edits it; every break touches its own element, so breaks never undo each other.

What it cannot prove: that a real model follows a learned instruction, or follows it on pages unlike
this fixed skeleton (every page carries hero, about, features, gallery, testimonials, pricing, FAQ and
contact sections, whatever the request asks, so that every rule has something to break); that a real
optimizer's paraphrase is recognised (only the exact statement or the paraphrase keys are); or that a
rule stated in a merged line is not over-credited (any line holding all of a rule's keys states it).
A loop over it shows the machinery works, not that Prompt Learning does.
"""

from __future__ import annotations

import copy
import functools
import re
from typing import Any, Callable, Sequence

from helpers.families.latent_rules.catalog import RULES, LatentRule
from helpers.families.latent_rules.ideal import PART_KEY, ideal_page
from helpers.families.latent_rules.schema import page_json


# --- which rules a prompt states -----------------------------------------------------------------
def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower()).strip().rstrip(".")


def _keys_on_line(keys: Sequence[str], line: str) -> bool:
    return all(key.lower() in line and re.search(r"(?<!\w)" + re.escape(key.lower()), line) for key in keys)


def stated_rules(prompt: str, rules: Sequence[LatentRule] = RULES) -> set[str]:
    """Ids of the rules whose statement, or all of whose paraphrase keys on one line, the prompt holds."""
    return set(_stated(prompt or "", tuple(rules)))


@functools.lru_cache(maxsize=32)  # a batch asks about one prompt once per request
def _stated(prompt: str, rules: tuple[LatentRule, ...]) -> frozenset[str]:
    whole = _normal(prompt)
    lines = [line.lower() for line in prompt.splitlines()]
    return frozenset(
        rule.id
        for rule in rules
        if _normal(rule.statement) in whole
        or _normal(rule.hint) in whole
        or any(_keys_on_line(rule.keys, line) for line in lines)
    )


# --- how a model that was never told breaks each rule ---------------------------------------------
def _sec(page: dict, kind: str) -> dict:
    return next(s for s in page["sections"] if s.get(PART_KEY) == kind)


def _field(page: dict, n: int) -> dict:
    return _sec(page, "contact")["forms"][0]["fields"][n - 1]


def _image_of(page: dict, kind: str, n: int) -> dict:
    return _sec(page, kind)["images"][n - 1]


def _set(get: Callable[[dict], dict], key: str, value: Any) -> Callable[[dict], None]:
    def apply(page: dict) -> None:
        get(page)[key] = value

    return apply


def _drop(get: Callable[[dict], dict], key: str) -> Callable[[dict], None]:
    def apply(page: dict) -> None:
        get(page).pop(key, None)

    return apply


def _edit(get: Callable[[dict], dict], key: str, change: Callable[[Any], Any]) -> Callable[[dict], None]:
    def apply(page: dict) -> None:
        thing = get(page)
        thing[key] = change(thing.get(key))

    return apply


def _move(kind: str, index: int) -> Callable[[dict], None]:
    def apply(page: dict) -> None:
        section = _sec(page, kind)
        page["sections"].remove(section)
        page["sections"].insert(index, section)

    return apply


def _swap_first_two(page: dict) -> None:
    page["sections"][0], page["sections"][1] = page["sections"][1], page["sections"][0]


def _append(kind: str, extra: str) -> Callable[[dict], None]:
    return _edit(lambda p: _sec(p, kind), "text", lambda text: text + extra)


def _second_hero_image(page: dict) -> None:
    hero = _sec(page, "hero")
    hero["images"].append(
        {
            **hero["images"][0],
            "src": hero["images"][0]["src"].replace("hero-1", "hero-2"),
            "alt": "A second view of the shop front",
            "width": 1600,
            "loading": "eager",
        }
    )


def _swap_prices(page: dict) -> None:
    items = _sec(page, "pricing")["items"]
    items[0], items[2] = items[2], items[0]


def _copy_about_alt(page: dict) -> None:
    _image_of(page, "gallery", 6)["alt"] = _image_of(page, "about", 1)["alt"]


def _nothing_required(page: dict) -> None:
    for field in _sec(page, "contact")["forms"][0]["fields"]:
        field["required"] = False


def _rename_file(src: str) -> str:
    head, _, name = src.rpartition("/")
    return f"{head}/About_Us Photo.{name.rsplit('.', 1)[-1]}"


def _short_description(text: str) -> str:
    return text.split(" is a ")[0] + ("." if text.endswith(".") else "")


_contact_form = lambda p: _sec(p, "contact")["forms"][0]  # noqa: E731 - a short accessor, like the others
_meta = lambda p: p["metadata"]  # noqa: E731
_LONG = (
    " We bake, brew, mend and make things by hand in the same small room we opened in, and we still use the "
    "same recipes, the same tools and the same care that our first customers remember. Every season we add a "
    "few new things and retire a few old ones, and we always ask our regulars what they think before we "
    "decide. If you have an idea for us, tell us when you visit, and we will do our best to make it happen. "
    "Our doors are open to everyone, from the neighbours who drop in every morning to visitors who found us "
    "by chance, and we hope you will feel at home from the moment you arrive."
)

BREAKS: dict[str, Callable[[dict], None]] = {
    "L001": _set(lambda p: _sec(p, "about"), "type", "intro"),
    "L002": _set(lambda p: _image_of(p, "gallery", 2), "alt", ""),
    "L003": _edit(lambda p: _sec(p, "about")["links"][0], "href", lambda h: h.replace("https://", "http://")),
    "L004": _edit(lambda p: p, "title", lambda t: t + " \u2014 Welcome to the Friendliest Place in Town for Everyone"),
    "L005": _swap_first_two,
    "L006": _set(lambda p: _field(p, 3), "label", ""),
    "L007": _set(lambda p: _sec(p, "features"), "heading", ""),
    "L008": _set(lambda p: _sec(p, "pricing")["buttons"][2], "label", ""),
    "L009": _edit(_meta, "description", _short_description),
    "L010": _set(lambda p: p, "lang", "English"),
    "L011": _move("contact", 1),
    "L012": _edit(lambda p: _sec(p, "faq"), "id", lambda _: "pricing"),
    "L013": _set(lambda p: _sec(p, "testimonials"), "id", "Testimonials_Section"),
    "L014": _edit(lambda p: _sec(p, "about"), "heading", lambda h: h + " And Everything That Makes Our Corner Special"),
    "L015": _edit(lambda p: _sec(p, "gallery"), "heading", str.lower),
    "L016": _edit(lambda p: _sec(p, "testimonials"), "heading", lambda h: h + "!"),
    "L017": _set(lambda p: _sec(p, "about"), "level", 1),
    "L018": _set(lambda p: _sec(p, "pricing"), "level", "h2"),
    "L019": _set(lambda p: _sec(p, "faq"), "text", ""),
    "L020": _append("about", _LONG),
    "L021": _append("features", " Lorem ipsum dolor sit amet."),
    "L022": _append("gallery", " More photos soon [insert captions here]."),
    "L023": _append("hero", " Come and see us!"),
    "L024": _append(
        "hero",
        " We are the place people in this part of town come back to, week after week, for good "
        "things made well and a warm welcome whenever they walk in.",
    ),
    "L025": _append("pricing", " BEST value in town."),
    "L026": _append("testimonials", "  Thank you to everyone who wrote to us."),
    "L027": _edit(lambda p: _sec(p, "faq"), "heading", lambda _: "Prices"),
    "L028": _drop(lambda p: p["footer"]["links"][2], "target"),
    "L029": _drop(lambda p: _sec(p, "about")["links"][1], "rel"),
    "L030": _set(lambda p: _sec(p, "about")["links"][0], "text", "click here"),
    "L031": _set(lambda p: p["footer"]["links"][1], "text", ""),
    "L032": _set(lambda p: p["navigation"]["links"][0], "href", "#about-us"),
    "L033": _set(lambda p: p["footer"]["links"][1], "href", "#"),
    "L034": _set(lambda p: _sec(p, "contact")["links"][0], "href", "tel:01132345678"),
    "L035": _edit(lambda p: _sec(p, "contact")["links"][1], "href", lambda h: h.replace("-", " ")),
    "L036": _set(lambda p: p["navigation"]["links"][1], "text", "Everything We Offer Here"),
    "L037": _set(lambda p: p["footer"]["links"][0], "text", "Legal"),
    "L038": _edit(
        lambda p: _image_of(p, "gallery", 3),
        "alt",
        lambda a: a + ", photographed on a bright spring morning with the lights on, the doors open and "
        "a few of our regular customers chatting by the window",
    ),
    "L039": _edit(lambda p: _image_of(p, "gallery", 1), "alt", lambda a: "Image of " + a[0].lower() + a[1:]),
    "L040": _edit(lambda p: _image_of(p, "about", 1), "src", lambda s: s.replace("https://", "http://")),
    "L041": _edit(lambda p: _image_of(p, "gallery", 4), "src", lambda s: s.rsplit(".", 1)[0] + ".tiff"),
    "L042": _drop(lambda p: _image_of(p, "gallery", 5), "height"),
    "L043": _set(lambda p: _image_of(p, "gallery", 6), "loading", "eager"),
    "L044": _set(lambda p: _image_of(p, "hero", 1), "loading", "lazy"),
    "L045": _drop(lambda p: _image_of(p, "gallery", 2), "caption"),
    "L046": _second_hero_image,
    "L047": _copy_about_alt,
    "L048": _set(lambda p: _image_of(p, "gallery", 1), "width", 4000),
    "L049": _set(lambda p: _image_of(p, "hero", 1), "width", 800),
    "L050": _edit(lambda p: _image_of(p, "about", 1), "src", _rename_file),
    "L051": _set(lambda p: _sec(p, "pricing")["buttons"][1], "action", "javascript:void(0)"),
    "L052": _set(lambda p: _sec(p, "pricing")["buttons"][1], "label", "Find Out More About This Plan"),
    "L053": _edit(lambda p: _sec(p, "pricing")["buttons"][0], "label", lambda label: label + "!"),
    "L054": _set(lambda p: _sec(p, "pricing")["buttons"][2], "style", "primary"),
    "L055": _set(lambda p: _sec(p, "pricing")["buttons"][1], "style", "fancy"),
    "L056": _set(lambda p: _sec(p, "hero"), "buttons", []),
    "L057": _set(lambda p: _sec(p, "pricing")["buttons"][0], "action", "#signup"),
    "L058": _set(_contact_form, "method", "get"),
    "L059": _set(_contact_form, "action", "/submit"),
    "L060": _set(_contact_form, "submit_label", "Submit"),
    "L061": _set(lambda p: _field(p, 1), "type", "string"),
    "L062": _set(lambda p: _field(p, 2), "name", "Email Address"),
    "L063": _set(lambda p: _field(p, 2), "type", "text"),
    "L064": _set(lambda p: _field(p, 4), "type", "number"),
    "L065": _nothing_required,
    "L066": lambda p: _contact_form(p)["fields"].pop(),
    "L067": _edit(lambda p: _field(p, 1), "placeholder", lambda _: "Your Name"),
    "L068": _set(_contact_form, "id", "contactForm"),
    "L069": _set(lambda p: _field(p, 3), "rows", 20),
    "L070": _drop(lambda p: _field(p, 2), "autocomplete"),
    "L071": _set(lambda p: _field(p, 4), "name", "name"),
    "L072": _set(lambda p: _field(p, 5), "options", ["General"]),
    "L073": _edit(lambda p: _sec(p, "features"), "items", lambda items: items[:2]),
    "L074": _set(lambda p: _sec(p, "features")["items"][1], "text", ""),
    "L075": _edit(
        lambda p: _sec(p, "features")["items"][0], "title", lambda t: t + " for Every Single Customer Who Walks In"
    ),
    "L076": _set(lambda p: _sec(p, "testimonials")["items"][1], "author", ""),
    "L077": _edit(lambda p: _sec(p, "testimonials")["items"][0], "text", lambda t: t.strip('\u201c\u201d"')),
    "L078": _edit(lambda p: _sec(p, "pricing")["items"][1], "price", lambda price: price.lstrip("£$€¥")),
    "L079": _swap_prices,
    "L080": _edit(lambda p: _sec(p, "faq")["items"][1], "title", lambda t: t.rstrip("?")),
    "L081": _edit(lambda p: _sec(p, "faq"), "items", lambda items: items[:2]),
    "L082": _edit(lambda p: p["footer"], "copyright", lambda c: c.replace("©", "Copyright")),
    "L083": _set(lambda p: p["footer"], "text", ""),
    "L084": _edit(_meta, "keywords", lambda words: [words[0], words[1].title(), *words[2:]]),
    "L085": _edit(_meta, "keywords", lambda words: [*words, words[0]]),
    "L086": _edit(_meta, "canonical_url", lambda u: u.replace("https://", "http://")),
    "L087": _set(_meta, "og_image", "/og.png"),
    "L088": _set(_meta, "robots", "all"),
    "L089": _set(_meta, "charset", "UTF8"),
    "L090": _drop(_meta, "viewport"),
    "L091": _set(_meta, "theme_color", "blue"),
    "L092": _drop(_meta, "author"),
    "L093": _set(_meta, "og_type", "page"),
    "L094": _set(_meta, "updated", "15/01/2025"),
    "L095": _set(_meta, "favicon", "/favicon.gif"),
    "L096": _edit(_meta, "description", lambda d: d.rstrip(".")),
    "L097": _edit(lambda p: p, "title", lambda t: t.replace(" | ", " - ")),
    "L098": _append("contact", " Find us at https://maps.example.com today."),
    "L099": _append("about", " \U0001f370"),
    "L100": _append("gallery", " Click any photo to see it larger."),
}


def scripted_page(request: str, follow: set[str] | frozenset[str], rules: Sequence[LatentRule] = RULES) -> dict:
    """The page for `request` that follows the rules with ids in `follow` and breaks the other `rules`."""
    page = copy.deepcopy(ideal_page(request))
    for rule in rules:
        if rule.id not in follow:
            BREAKS[rule.id](page)
    for section in page["sections"]:
        section.pop(PART_KEY, None)
    return page


def scripted_generator(prompt: str, request: str) -> str:
    """The scripted model: the page JSON following exactly the catalogue rules `prompt` states."""
    return page_json(scripted_page(request, stated_rules(prompt)))


def scripted_optimizer_edits(request_text: str, max_new: int = 3) -> list[dict[str, Any]]:
    """The dry run's optimizer for this family: "add" edits stating the rules the feedback quotes most.

    Reads the optimizer's user message: a rule is quoted when its hint (the tail of its failure
    message) appears after "## Examples", and already known when its statement appears before it
    (the current rules). At most `max_new` new rules per call, most quoted first, so learning takes
    several loops. With scores-only feedback nothing is quoted and nothing is added.
    """
    current, _, examples = request_text.rpartition("## Examples")
    counts = {rule.id: examples.count(rule.hint) for rule in RULES if rule.statement not in current}
    quoted = sorted((rule for rule in RULES if counts.get(rule.id)), key=lambda r: -counts[r.id])
    return [
        {
            "op": "add",
            "text": rule.statement,
            "reason": f"{counts[rule.id]} examples broke it (scripted dry run)",
            "sources": [],
        }
        for rule in quoted[:max_new]
    ]


def dry_run_rules() -> list[Any]:
    """Rules for the scripted model server that play this family's generator and optimizer in the dry run
    (put them before the server's other rules: helpers.families.latent_rules.enable_dry_run)."""
    import json

    from helpers.families.latent_rules.prompts import BASE_PROMPT, OPTIMIZER_PROMPT
    from helpers.llm.scripted_server import Reply, Rule, message_text

    return [
        Rule(
            system_contains=BASE_PROMPT.splitlines()[0],
            reply=lambda request: Reply(
                scripted_generator(message_text(request, "system"), message_text(request, "user"))
            ),
        ),
        Rule(
            system_contains=OPTIMIZER_PROMPT.splitlines()[0],
            reply=lambda request: Reply(json.dumps({"edits": scripted_optimizer_edits(message_text(request, "user"))})),
        ),
    ]


def enable_dry_run(session: Any) -> None:
    """Let a dry-run session's scripted model server play this family too (no effect on a real session)."""
    server = getattr(session, "scripted_server", None)
    if server is not None and not any(getattr(r, "family", None) == "latent-rules" for r in server.script.rules):
        rules = dry_run_rules()
        for rule in rules:
            rule.family = "latent-rules"
        server.script.rules[:0] = rules


__all__ = [
    "scripted_generator",
    "scripted_page",
    "stated_rules",
    "scripted_optimizer_edits",
    "BREAKS",
    "dry_run_rules",
    "enable_dry_run",
]
