"""The latent-rules catalogue as a data file: read and checked on import, and the same rules, statements, keys and
failure messages the Python module held before it became data (a snapshot made from that module, at commit 068048f,
in tests/fixtures)."""

import json
import shutil
from pathlib import Path

import pytest

from helpers.families.latent_rules.catalog import CATALOG, RULES, CatalogError, check_page, load_catalog
from helpers.families.latent_rules.scripted import scripted_page

SNAPSHOT = Path(__file__).resolve().parents[2] / "fixtures" / "latent_rules" / "catalog_before_data_file.json"
ODD_PAGES = [
    {},
    {"sections": "x"},
    {"sections": [None, 3, {"images": "y", "forms": [7]}]},
    {"metadata": [], "footer": "f", "navigation": {"links": {"a": 1}}},
    {"sections": [{"type": ["hero"], "level": True, "items": [None], "forms": [{"fields": [None, {"type": {}}]}]}]},
    None,
    [],
]


@pytest.fixture(scope="module")
def before():
    return json.loads(SNAPSHOT.read_text())


def test_the_rules_are_the_ones_the_python_module_held(before):
    now = [
        {
            "id": r.id,
            "statement": r.statement,
            "keys": list(r.keys),
            "category": r.category,
            "difficulty": r.difficulty,
            "hint": r.hint,
        }
        for r in RULES
    ]
    assert now == before["rules"]


def test_every_check_fails_the_same_pages_with_the_same_messages_as_before(before):
    every = frozenset(rule.id for rule in RULES)
    pages = [scripted_page(request, every - {rule_id}) for request in before["requests"] for rule_id in sorted(every)]
    pages += [scripted_page(request, frozenset()) for request in before["requests"]] + ODD_PAGES
    now = [{k: v for k, v in check_page(page, RULES).items() if v is not None} for page in pages]
    assert len(now) == len(before["failures"])
    for n, (got, want) in enumerate(zip(now, before["failures"])):
        assert got == want, f"page {n}"


def copy_with(tmp_path, old, new):
    path = tmp_path / "catalog.toml"
    text = CATALOG.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


# what is broken -> (the text it replaces, its replacement, what the error names: the file, then the rule)
BROKEN = {
    "not toml": ('id = "L001"', 'id = "L001', ""),
    "a rule out of order": ('id = "L002"', 'id = "L003"', "rule 2: "),
    "an unknown category": ('category = "images"', 'category = "pictures"', "rule L002: "),
    "an unknown difficulty": ('difficulty = "easy"', 'difficulty = "trivial"', "rule L001: "),
    "a statement of two lines": ('statement = "Every image needs', 'statement = "Every\\nimage needs', "rule L002: "),
    "a statement with no period": ('non-empty alt text."', 'non-empty alt text"', "rule L002: "),
    "no keys": ('keys = ["every image", "alt"]', "keys = []", "rule L002: "),
    "an unknown check": ('check = "image_alt_present"', 'check = "alt_present"', "rule L002: "),
    "a check named twice": ('check = "image_alt_present"', 'check = "section_type_known"', "a check is named by"),
    "a key missing": ('check = "image_alt_present"\n', "", "rule 2: "),
    "an unknown key": ('check = "image_alt_present"', 'check = "image_alt_present"\nweight = 2', "rule 2: "),
    "no categories": ("categories = ", "kinds = ", "categories and difficulties"),
    "no difficulties": ('difficulties = ["easy", "medium", "hard"]', "difficulties = 3", "categories and difficulties"),
}


@pytest.mark.parametrize("name", BROKEN)
def test_a_malformed_catalogue_is_one_error_naming_the_file_and_the_rule(tmp_path, name):
    old, new, names = BROKEN[name]
    path = copy_with(tmp_path, old, new)
    with pytest.raises(CatalogError) as error:
        load_catalog(path)
    assert str(error.value).startswith(f"latent-rules catalogue {path}: {names}"), str(error.value)


def test_a_catalogue_with_no_rules_is_one_error_naming_the_file(tmp_path):
    path = tmp_path / "catalog.toml"
    path.write_text('categories = ["images"]\ndifficulties = ["easy"]\n')
    with pytest.raises(CatalogError) as error:
        load_catalog(path)
    assert str(error.value) == f"latent-rules catalogue {path}: holds no [[rule]]"


def test_the_shipped_catalogue_reads_back_as_the_loaded_rules(tmp_path):
    shutil.copy(CATALOG, tmp_path / "catalog.toml")
    categories, difficulties, rules = load_catalog(tmp_path / "catalog.toml")
    assert [r.id for r in rules] == [r.id for r in RULES] and [r.find for r in rules] == [r.find for r in RULES]
    assert {r.category for r in rules} == set(categories) and {r.difficulty for r in rules} <= set(difficulties)
