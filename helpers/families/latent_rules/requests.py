"""A seeded generator of page requests: what a user would type to ask for a web page.

    generate_requests(300, seed=0)   # DataFrame: instance_id, request, business, kind, city, extras

The same (n, seed) gives the same rows; a request text never repeats within one call.
"""

from __future__ import annotations

import random
from typing import Any

import pandas as pd

KINDS = (
    "bakery",
    "dental clinic",
    "yoga studio",
    "law firm",
    "bike shop",
    "coffee roaster",
    "florist",
    "wedding photographer",
    "architecture studio",
    "language school",
    "bookshop",
    "plumbing company",
    "veterinary clinic",
    "climbing gym",
    "pottery studio",
    "accounting firm",
    "barber shop",
    "tea room",
    "music school",
    "landscape gardener",
    "physiotherapy practice",
    "craft brewery",
    "tailor",
    "dog groomer",
)
ADJECTIVES = (
    "Golden",
    "Blue",
    "Little",
    "Northern",
    "Old",
    "Green",
    "Silver",
    "Bright",
    "Quiet",
    "Red",
    "Wild",
    "Harbour",
    "Maple",
    "Stone",
    "Copper",
    "Juniper",
    "Willow",
    "Sunny",
    "Hidden",
    "Corner",
)
NOUNS = (
    "Door",
    "Oak",
    "Lantern",
    "Fern",
    "Bridge",
    "Anchor",
    "Meadow",
    "Fox",
    "Orchard",
    "River",
    "Hill",
    "Sparrow",
    "Garden",
    "Compass",
    "Harvest",
    "Mill",
    "Beacon",
    "Thistle",
)
CITIES = (
    "Leeds",
    "Bristol",
    "Glasgow",
    "Cardiff",
    "Austin",
    "Portland",
    "Denver",
    "Dublin",
    "Toronto",
    "Melbourne",
    "Auckland",
    "Edinburgh",
    "Seattle",
    "Boston",
    "Manchester",
    "York",
    "Brighton",
    "Vancouver",
    "Cork",
    "Perth",
)
# Extra sections a request may ask for, with how a user names them.
EXTRAS = {
    "team": "a team section",
    "menu": "a menu",
    "services": "a list of services",
    "events": "upcoming events",
    "blog": "the latest blog posts",
    "stats": "a few numbers about us",
    "cta": "a newsletter sign-up banner",
}
PAGE_WORDS = ("a landing page", "a home page", "a one-page website", "a simple site", "a web page")
TEMPLATES = (
    "{Page} for {name}, a {kind} in {city}, with {extras} and a contact form.",
    "I run a {kind} called {name} in {city}. Build me {page} with {extras}, a gallery and a contact form.",
    "Please make {page} for {name} ({kind}, {city}) that shows our prices, {extras} and how to reach us.",
    "We need {page} for our {kind} in {city}, called {name}. Include {extras}, customer reviews and an FAQ.",
    "Create {page} for {name}, a small {kind} based in {city}. It should have {extras} and a photo gallery.",
    "{Page} for {name} in {city}: we are a {kind}. Add {extras} and a way to book or ask a question.",
)


def generate_requests(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """`n` distinct requests, deterministic for `seed`; columns instance_id, request (also as
    problem_statement, the column the optimizer shows as the task), business, kind, city, extras.

    Raises ValueError when n < 1 or n exceeds what the vocabulary can make distinct.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, not {n}.")
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    names: set[str] = set()
    for _ in range(n * 50):
        if len(rows) == n:
            break
        row = _one_request(rng)
        if row["business"] in names:  # one request per business keeps request texts distinct too
            continue
        names.add(row["business"])
        rows.append({"instance_id": f"page-{seed}-{len(rows):04d}", **row})
    if len(rows) < n:
        raise ValueError(f"Only {len(rows)} distinct requests could be made for n={n}.")
    frame = pd.DataFrame(rows)
    frame["problem_statement"] = frame["request"]
    return frame


def _one_request(rng: random.Random) -> dict:
    kind, city = rng.choice(KINDS), rng.choice(CITIES)
    name = f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} {kind.split()[-1].title()}"
    extras = sorted(rng.sample(sorted(EXTRAS), rng.randint(1, 2)))
    page = rng.choice(PAGE_WORDS)
    text = rng.choice(TEMPLATES).format(
        name=name,
        kind=kind,
        city=city,
        page=page,
        Page=page[0].upper() + page[1:],
        extras=" and ".join(EXTRAS[e] for e in extras),
    )
    return {"request": text, "business": name, "kind": kind, "city": city, "extras": extras}


__all__ = ["generate_requests", "KINDS", "CITIES", "EXTRAS"]
