"""The page that follows every latent rule: the skeleton the dry run's scripted generator starts from.

    ideal_page(request) -> the page (a dict) for the request that breaks no rule of the catalogue

read_request reads the business, kind, city and extra sections back out of a generated request, and
ideal_page builds the fixed skeleton (hero, about, features, gallery, testimonials, pricing, FAQ, the
extras asked for, contact) with every element a rule looks at. It is separate from scripted.py, which
holds how a model that was never told breaks each rule: what a correct page is, and how a page goes
wrong, are two facts that change for different reasons.
"""

from __future__ import annotations

import re
from typing import Any

from helpers.families.latent_rules.requests import CITIES, EXTRAS, KINDS

PART_KEY = "_kind"  # which skeleton part a section is, while breaks look sections up (scripted_page removes it)
_NAME = re.compile(r"\b((?:[A-Z][a-z]+ ){2}[A-Z][a-z]+)\b")
_EXTRA_WORDS = {phrase: kind for kind, phrase in EXTRAS.items()}


# --- the request, read back ----------------------------------------------------------------------
def read_request(request: str) -> dict[str, Any]:
    """The business name, kind, city and extra sections a request names (defaults where it names none)."""
    text = str(request or "")
    kind = next((k for k in sorted(KINDS, key=len, reverse=True) if k in text.lower()), "small business")
    city = next((c for c in CITIES if c in text), "town")
    name = _NAME.search(text)
    extras = [kind_ for phrase, kind_ in _EXTRA_WORDS.items() if phrase in text.lower()]
    return {"business": name.group(1) if name else "Our Place", "kind": kind, "city": city, "extras": sorted(extras)}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "site"


# --- the page that follows every rule -----------------------------------------------------------
def _image(slug: str, part: str, n: int, alt: str, *, hero: bool = False) -> dict:
    return {
        "src": f"https://cdn.{slug}.com/images/{part}-{n}.jpg",
        "alt": alt,
        "width": 1600 if hero else 800,
        "height": 900 if hero else 600,
        "loading": "eager" if hero else "lazy",
    }


def _link(href: str, text: str) -> dict:
    if href.startswith("https://"):
        return {"href": href, "text": text, "target": "_blank", "rel": "noopener noreferrer"}
    return {"href": href, "text": text}


def _section(kind: str, id_: str, heading: str, text: str, **parts: Any) -> dict:
    return {
        PART_KEY: kind,
        "id": id_,
        "type": kind,
        "heading": heading,
        "level": 1 if kind == "hero" else 2,
        "text": text,
        **parts,
    }


_EXTRA_SECTIONS = {
    "team": ("Meet the Team", "The people who look after you.", ["Sam Lee", "Ana Cruz", "Tom Hart"]),
    "menu": ("Our Menu", "What we make, every day.", ["Breakfast", "Lunch", "Afternoon Treats"]),
    "services": ("Our Services", "What we can do for you.", ["Consultations", "Regular Visits", "Home Calls"]),
    "events": ("Upcoming Events", "Come along and meet us.", ["Open Evening", "Summer Fair", "Workshop Day"]),
    "blog": ("From the Blog", "News and notes from our week.", ["A New Season", "Behind the Scenes", "Our Suppliers"]),
    "stats": ("In Numbers", "A few facts about us.", ["Years Open", "Happy Customers", "Local Partners"]),
    "cta": ("Join Our Newsletter", "One short email a month with our news.", []),
}


def ideal_page(request: str) -> dict[str, Any]:
    """The page for `request` that follows every rule of the catalogue (sections carry a private
    "_kind" marker that scripted_page removes)."""
    spec = read_request(request)
    name, kind, city = spec["business"], spec["kind"], spec["city"]
    slug = _slug(name)
    gallery_subjects = [
        "The front window",
        "Our counter",
        "A busy morning",
        "The team at work",
        "A quiet corner",
        "The street outside",
    ]
    sections = [
        _section(
            "hero",
            "home",
            f"Welcome to {name}",
            f"A friendly {kind} in {city}, open six days a week.",
            images=[_image(slug, "hero", 1, f"The front of {name} in {city}", hero=True)],
            buttons=[
                {"label": "Get in Touch", "action": "#contact", "style": "primary"},
                {"label": "See Our Prices", "action": "#pricing", "style": "secondary"},
            ],
        ),
        _section(
            "about",
            "about",
            f"About {name}",
            f"{name} is a {kind} in {city}. We have served our neighbours for over ten years and know "
            "most of them by name.",
            images=[_image(slug, "about", 1, f"The owners of {name} standing at the door")],
            links=[
                _link(f"https://blog.{slug}.com/our-story", "Read Our Story"),
                _link(f"https://www.facebook.com/{slug}", "Our Facebook Page"),
            ],
        ),
        _section(
            "features",
            "features",
            "What We Offer",
            f"Everything you would want from a {kind}, done with care.",
            items=[
                {"title": t, "text": x}
                for t, x in [
                    ("Friendly Service", "We take the time to listen."),
                    ("Fair Prices", "No hidden extras."),
                    ("Local Knowledge", f"We know {city} inside out."),
                    ("Open Late", "Until eight on weekdays."),
                ]
            ],
        ),
        _section(
            "gallery",
            "gallery",
            "Our Gallery",
            f"A look inside {name}.",
            images=[
                {**_image(slug, "gallery", n, f"{subject} at {name}"), "caption": subject}
                for n, subject in enumerate(gallery_subjects, 1)
            ],
        ),
        _section(
            "testimonials",
            "testimonials",
            "What People Say",
            "Kind words from our customers.",
            items=[
                {"title": t, "text": f"\u201c{x}\u201d", "author": a}
                for t, x, a in [
                    ("A Real Find", "The best in town, and so friendly.", "Maria P."),
                    ("Always Reliable", "They never let me down.", "James K."),
                    ("Highly Recommended", "I tell all my friends about them.", "Priya S."),
                ]
            ],
        ),
        _section(
            "pricing",
            "pricing",
            "Prices",
            "Simple prices with no surprises.",
            items=[
                {"title": t, "text": x, "price": p}
                for t, x, p in [
                    ("Basic", "The essentials.", "£10"),
                    ("Standard", "Our most popular choice.", "£25"),
                    ("Premium", "Everything we offer.", "£40"),
                ]
            ],
            buttons=[
                {"label": f"Choose {plan}", "action": "#contact", "style": style}
                for plan, style in [("Basic", "primary"), ("Standard", "secondary"), ("Premium", "secondary")]
            ],
        ),
        _section(
            "faq",
            "faq",
            "Questions and Answers",
            "Answers to the questions we hear most.",
            items=[
                {"title": t, "text": x}
                for t, x in [
                    ("When are you open?", "Monday to Saturday, eight until six."),
                    ("Do I need to book?", "Booking helps, but walk-ins are welcome."),
                    ("Where can I park?", "There is free parking behind the building."),
                ]
            ],
        ),
    ]
    for extra in spec["extras"]:
        heading, text, titles = _EXTRA_SECTIONS[extra]
        sections.append(
            _section(
                extra, extra, heading, text, items=[{"title": t, "text": f"More about {t.lower()}."} for t in titles]
            )
        )
    sections.append(
        _section(
            "contact",
            "contact",
            "Contact Us",
            f"Visit us in {city} or send us a message.",
            links=[
                _link("tel:+441132345678", "Call Us"),
                _link(f"https://maps.example.com/?q={slug}", "Find Us on the Map"),
            ],
            forms=[
                {
                    "id": "contact-form",
                    "action": f"https://www.{slug}.com/contact",
                    "method": "post",
                    "submit_label": "Send Your Message",
                    "fields": [
                        {
                            "name": "name",
                            "label": "Your Name",
                            "type": "text",
                            "required": True,
                            "placeholder": "Jane Smith",
                        },
                        {
                            "name": "email",
                            "label": "Email Address",
                            "type": "email",
                            "required": True,
                            "placeholder": "jane@example.com",
                            "autocomplete": "email",
                        },
                        {
                            "name": "message",
                            "label": "Message",
                            "type": "textarea",
                            "required": True,
                            "rows": 5,
                            "placeholder": "How can we help?",
                        },
                        {
                            "name": "phone",
                            "label": "Phone Number",
                            "type": "tel",
                            "required": False,
                            "placeholder": "+44 113 234 5678",
                        },
                        {
                            "name": "topic",
                            "label": "Topic",
                            "type": "select",
                            "required": False,
                            "options": ["General", "Booking"],
                        },
                        {
                            "name": "consent",
                            "label": "I agree to the privacy policy",
                            "type": "checkbox",
                            "required": True,
                        },
                    ],
                }
            ],
        )
    )
    return {
        "title": f"Home | {name}",
        "lang": "en",
        "metadata": {
            "description": f"{name} is a {kind} in {city}. Visit us, see our prices and get in touch today.",
            "keywords": [kind, city.lower(), f"{kind} {city.lower()}", "local", "family run"],
            "author": name,
            "canonical_url": f"https://www.{slug}.com/",
            "og_image": f"https://cdn.{slug}.com/og/home.jpg",
            "og_type": "website",
            "robots": "index, follow",
            "charset": "utf-8",
            "viewport": "width=device-width, initial-scale=1",
            "theme_color": "#1a73e8",
            "favicon": "/favicon.ico",
            "updated": "2025-01-15",
        },
        "navigation": {
            "links": [
                _link("#about", "About"),
                _link("#features", "What We Offer"),
                _link("#gallery", "Gallery"),
                _link("#pricing", "Prices"),
                _link("#contact", "Contact"),
            ]
        },
        "sections": sections,
        "footer": {
            "text": f"{name}, {city}.",
            "copyright": f"© 2025 {name}",
            "links": [
                _link("/privacy", "Privacy Policy"),
                _link("/terms", "Terms of Service"),
                _link(f"https://www.instagram.com/{slug}", "Instagram"),
            ],
        },
    }


__all__ = ["ideal_page", "read_request", "PART_KEY"]
