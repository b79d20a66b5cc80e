"""The README, the code appendix and docs/ link only to what exists."""

import re
from pathlib import Path

from helpers.core.config import REPO_ROOT

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
MAX_README_WORDS = 2_500  # one screen before the commands, the rest in docs/


def documents() -> list[Path]:
    return [REPO_ROOT / "README.md", REPO_ROOT / "CODE_APPENDIX.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


def test_every_relative_link_resolves_to_a_file_in_the_checkout():
    broken = []
    for document in documents():
        for target in LINK.findall(document.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue  # a web address or an anchor in the same page
            path = (document.parent / target.split("#", 1)[0]).resolve()
            if not path.exists() or REPO_ROOT.resolve() not in path.parents:
                broken.append(f"{document.relative_to(REPO_ROOT)}: {target}")
    assert not broken, f"Broken relative links: {broken}"


def test_every_docs_page_is_linked_from_the_readme_and_the_readme_fits_its_budget():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    linked = {Path(target).name for target in LINK.findall(readme) if target.startswith("docs/")}
    assert {page.name for page in (REPO_ROOT / "docs").glob("*.md")} <= linked
    assert len(readme.split()) <= MAX_README_WORDS
