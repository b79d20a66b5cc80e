"""The latent-rules task family: the rule catalogue, the requests, the scripted generator, scoring, feedback."""

import json
import random
import re

import pandas as pd
import pytest

from helpers.families.latent_rules import (BASE_PROMPT, FEEDBACK_COLUMNS, RULES, LatentRulesFamily,
                                  active_rules, check_page, generate_requests, llm_generator, parse_page,
                                  prompt_with, scripted_generator, stated_rules)
from helpers.families.latent_rules.catalog import CATEGORIES, DIFFICULTIES
from helpers.families.latent_rules.ideal import ideal_page, read_request
from helpers.families.latent_rules.scripted import BREAKS, scripted_optimizer_edits, scripted_page
from helpers.llm.client import BudgetExceeded, LLMClient
from helpers.learn.optimizer import PromptLearningOptimizer
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, message_text

ALL_IDS = frozenset(rule.id for rule in RULES)
REQUEST = "A landing page for Golden Door Bakery, a bakery in Leeds, with a team section and a contact form."


def broken(page, rules=RULES):
    return {rule_id for rule_id, message in check_page(page, rules).items() if message}


def instructions(rules):
    return prompt_with("\n".join(f"- {rule.statement}" for rule in rules))


# --- the catalogue ---------------------------------------------------------------------------------
def test_the_catalogue_has_100_well_formed_rules_in_order():
    assert len(RULES) >= 100
    assert [r.id for r in RULES] == [f"L{n:03d}" for n in range(1, len(RULES) + 1)]
    for rule in RULES:
        assert rule.statement.strip() and "\n" not in rule.statement and rule.statement.endswith(".")
        assert rule.category in CATEGORIES and rule.difficulty in DIFFICULTIES and rule.keys
    assert set(BREAKS) == ALL_IDS  # the scripted generator knows how to break every rule
    assert {r.category for r in RULES} == set(CATEGORIES)


@pytest.mark.parametrize("request_text", list(generate_requests(40, seed=3)["request"]) + [REQUEST, "", "a page"])
def test_one_page_follows_all_100_rules_at_once(request_text):
    page = ideal_page(request_text)
    assert broken(page) == set()
    assert broken(json.loads(scripted_generator(instructions(RULES), request_text))) == set()


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_each_checker_passes_the_good_page_and_fails_its_own_minimal_failing_page(rule):
    assert rule.check(scripted_page(REQUEST, ALL_IDS)) is None
    failing = scripted_page(REQUEST, ALL_IDS - {rule.id})  # the good page with this one rule broken
    message = rule.check(failing)
    assert broken(failing) == {rule.id}
    assert message.endswith(rule.hint) and len(message) > len(rule.hint) + 10  # where and what, then the rule


def test_failure_messages_name_where_and_what():
    page = scripted_page(REQUEST, ALL_IDS - {"L002", "L001", "L003", "L010"})
    messages = check_page(page, RULES)
    assert messages["L002"] == ("section 4 (type 'gallery'): image 2 has no alt text; "
                                "every image needs a non-empty alt text")
    assert messages["L001"].startswith("section 2 (type 'intro') has the type 'intro', which is not in the list")
    assert messages["L003"].startswith("section 2 (type 'intro'): link 1 uses plain http (http://blog.")
    assert messages["L010"].startswith("the page has lang 'English', not a two-letter code")


def test_hand_written_pages_for_the_issues_examples():
    good = {"title": "Home | Shop", "sections": [
        {"id": "home", "type": "hero", "heading": "Hello", "level": 1, "text": "Hi.",
         "images": [{"src": "https://cdn.shop.com/a.jpg", "alt": "A shop"}],
         "links": [{"href": "https://shop.com/x", "text": "Our Shop"}]}]}
    bad = {"title": "Home | Shop", "sections": [
        {"id": "home", "type": "banner", "heading": "Hello", "level": 1, "text": "Hi.",
         "images": [{"src": "https://cdn.shop.com/a.jpg"}, {"src": "https://cdn.shop.com/b.jpg", "alt": " "}],
         "links": [{"href": "http://shop.com/x", "text": "Our Shop"}]}]}
    rules = active_rules(["L001", "L002", "L003"])
    assert broken(good, rules) == set()
    messages = check_page(bad, rules)
    assert messages["L001"].startswith("section 1 (type 'banner') has the type 'banner'")
    assert messages["L002"].startswith("section 1 (type 'banner'): image 1 has no alt text (and 1 more);")
    assert "uses plain http (http://shop.com/x)" in messages["L003"]


@pytest.mark.parametrize("page", [{}, {"sections": "x"}, {"sections": [None, 3, {"images": "y", "forms": [7]}]},
                                  {"metadata": [], "footer": "f", "navigation": {"links": {"a": 1}}},
                                  {"sections": [{"type": ["hero"], "level": True, "items": [None],
                                                 "forms": [{"fields": [None, {"type": {}}]}]}]}, None, []])
def test_checkers_never_raise_on_odd_pages(page):
    for rule in RULES:
        assert rule.check(page) is None or isinstance(rule.check(page), str)


def test_the_active_rule_set_is_the_first_n_or_a_chosen_subset():
    assert [r.id for r in active_rules(10)] == [f"L{n:03d}" for n in range(1, 11)]
    assert len(active_rules(50)) == 50 and len(active_rules(100)) == 100
    assert [r.id for r in active_rules(["L050", "L002"])] == ["L050", "L002"]
    for bad in (0, 101):
        with pytest.raises(ValueError, match="between 1 and 100"):
            active_rules(bad)
    with pytest.raises(ValueError, match="L999"):
        LatentRulesFamily(rules=["L001", "L999"])


# --- the requests ----------------------------------------------------------------------------------
def test_requests_are_deterministic_for_a_seed_distinct_and_readable():
    first, again, other = generate_requests(300, seed=0), generate_requests(300, seed=0), generate_requests(300, seed=1)
    assert first.equals(again)
    assert list(first["request"]) != list(other["request"])
    assert first["request"].is_unique and first["instance_id"].is_unique and len(first) == 300
    assert (first["problem_statement"] == first["request"]).all()
    for row in first.to_dict("records"):  # the scripted generator reads back what the request says
        assert read_request(row["request"]) == {k: row[k] for k in ("business", "kind", "city", "extras")}
    with pytest.raises(ValueError):
        generate_requests(0)


# --- the scripted generator --------------------------------------------------------------------------
def test_each_statement_and_its_hint_state_exactly_their_own_rule_and_the_base_prompt_none():
    assert stated_rules(BASE_PROMPT) == set()
    for rule in RULES:
        assert stated_rules(f"- {rule.statement}") == {rule.id}, rule.id  # the base prompt's lines state none
        assert stated_rules(rule.hint) == {rule.id}, rule.id
    assert stated_rules(instructions(RULES)) == ALL_IDS


def test_a_paraphrase_holding_a_rules_keys_on_one_line_states_it():
    prompt = prompt_with("- Make sure every image carries alt text.\n- External links: always https.\n"
                         "- Put the hero first.")
    assert stated_rules(prompt) == {"L002", "L003"}  # "first section" is a key of L005: not said here


def test_the_scripted_generator_follows_exactly_the_rules_its_prompt_states():
    rng = random.Random(11)
    requests = list(generate_requests(40, seed=5)["request"])
    for request in requests:
        chosen = rng.sample(RULES, rng.randint(0, len(RULES)))
        page, error = parse_page(scripted_generator(instructions(chosen), request))
        assert error == ""
        assert broken(page) == ALL_IDS - {r.id for r in chosen}


# --- scoring and feedback ----------------------------------------------------------------------------
def scored_rows(family, prompts):
    rows = family.tasks(len(prompts))
    frames = [family.run(prompt, rows.iloc[[i]]) for i, prompt in enumerate(prompts)]
    return family.score(pd.concat(frames, ignore_index=True))


def test_scoring_counts_the_active_rules_per_row():
    family = LatentRulesFamily(n_rules=10)
    scored = scored_rows(family, [instructions(RULES[:7]), instructions(RULES[:10]), BASE_PROMPT])
    assert list(scored["rules_followed"]) == [7, 10, 0]
    assert list(scored["share_followed"]) == [0.7, 1.0, 0.0]
    assert list(scored["all_rules_followed"]) == [False, True, False]
    assert list(scored["broken_rules"][0]) == ["L008", "L009", "L010"] and set(scored["rules_total"]) == {10}
    rates = family.rule_pass_rates(scored).set_index("rule_id")["pass_rate"]
    assert rates["L001"] == pytest.approx(2 / 3) and rates["L010"] == pytest.approx(1 / 3) and len(rates) == 10
    assert family.summary(scored)["accuracy"] == pytest.approx(1 / 3)


@pytest.mark.parametrize("answer", ["", "Sure! Here is your page.", "[1, 2]", '{"title": "no sections"}',
                                    '{"sections": [', "```json\n{\"sections\": 5}\n```"])
def test_an_answer_that_is_not_a_page_breaks_every_rule(answer):
    family = LatentRulesFamily(n_rules=50)
    rows = family.tasks(1).assign(output=answer)
    scored = family.score(rows)
    assert scored["rules_followed"][0] == 0 and len(scored["broken_rules"][0]) == 50
    assert scored["parse_error"][0].startswith("the answer is not a page")
    assert family.feedback(rows)["explanation"][0].startswith("The answer breaks all 50 rules: the answer is not a page")


def test_a_fenced_or_wrapped_page_answer_is_read():
    text = scripted_generator(instructions(RULES[:10]), REQUEST)
    for answer in (f"```json\n{text}\n```", f"Here it is:\n{text}\nEnjoy."):
        page, error = parse_page(answer)
        assert error == "" and broken(page, RULES[:10]) == set()


def test_feedback_gives_the_broken_rules_messages_or_only_the_score():
    family = LatentRulesFamily(n_rules=10)
    rows = family.run(instructions(RULES[:7]), family.tasks(2))
    judged = family.feedback(rows)
    assert set(FEEDBACK_COLUMNS) <= set(judged.columns) and family.feedback_columns == FEEDBACK_COLUMNS
    assert list(judged["correctness"]) == ["incorrect", "incorrect"]
    explanation = judged["explanation"][0]
    assert explanation.startswith("The page breaks 3 of 10 rules:\n- ")
    assert all(rule.hint in explanation for rule in RULES[7:10])
    assert not any(rule.hint in explanation for rule in RULES[:7])
    scores = family.feedback(rows, kind="scores")
    assert list(scores["explanation"]) == ["followed 7 of 10 rules"] * 2
    good = family.feedback(family.run(instructions(RULES[:10]), family.tasks(1)))
    assert good["correctness"][0] == "correct" and good["explanation"][0] == "The page follows all 10 rules."
    with pytest.raises(ValueError, match="kind"):
        family.feedback(rows, kind="vibes")


def test_the_explanations_carry_the_rules_and_the_scores_do_not():
    """What the ablation rests on: a prompt made of the explanations states every broken rule; of scores, none."""
    family = LatentRulesFamily(n_rules=100)
    rows = family.run(BASE_PROMPT, family.tasks(1))
    assert stated_rules(prompt_with(family.feedback(rows)["explanation"][0])) == ALL_IDS
    assert stated_rules(prompt_with(family.feedback(rows, kind="scores")["explanation"][0])) == set()


# --- the family's seam -------------------------------------------------------------------------------
def test_split_gives_disjoint_deterministic_frames_and_the_base_prompt_has_an_empty_region():
    family = LatentRulesFamily(n_rules=10, seed=4)
    train, test = family.split(30, 20)
    assert len(train) == 30 and len(test) == 20
    assert not set(train["instance_id"]) & set(test["instance_id"])
    assert train.equals(LatentRulesFamily(seed=4).split(30, 20)[0])
    assert family.base_prompt == BASE_PROMPT == prompt_with("")
    assert prompt_with("- Rule one.").count("- Rule one.") == 1
    assert prompt_with("- B.", prompt_with("- A.")) == prompt_with("- B.")


def test_a_failing_generator_marks_its_row_and_is_left_out_of_accuracy():
    family = LatentRulesFamily(n_rules=10)
    rows = family.tasks(3)

    def flaky(prompt, request):
        if request == rows["request"][1]:
            raise TimeoutError("no answer in 30 s")
        return scripted_generator(prompt, request)

    ran = family.run(instructions(RULES[:10]), rows, generate=flaky, workers=2)
    assert list(ran["status"]) == ["completed", "error", "completed"]
    assert ran["error"][1] == "TimeoutError: no answer in 30 s"
    summary = family.summary(ran)
    assert summary == {"n_rules": 10, "rows": 3, "errored": 1, "scored": 2, "accuracy": 1.0,
                       "mean_share_followed": 1.0, "parse_failures": 0}

    def spent(prompt, request):
        raise BudgetExceeded("the budget is spent")

    with pytest.raises(BudgetExceeded):
        family.run(BASE_PROMPT, rows, generate=spent)


def page_model(request):
    """The scripted model server's answer: the scripted generator on the request's system and user text."""
    return Reply(scripted_generator(message_text(request, "system"), message_text(request, "user")))


def test_llm_generator_sends_the_prompt_as_system_and_the_request_as_user(tmp_path):
    family = LatentRulesFamily(n_rules=10)
    rows = family.tasks(3)
    with ScriptedModelServer(Script([Rule(system_contains="You write web pages as JSON", reply=page_model)])) as server:
        client = LLMClient("scripted-dry-run", base_url=server.base_url, api_key="test-key", cache_dir=tmp_path)
        ran = family.run(instructions(RULES[:10]), rows, generate=llm_generator(client, temperature=0))
        sent = server.chat_requests()
    assert family.summary(ran)["accuracy"] == 1.0 and len(sent) == 3
    body = sent[0]
    assert body["messages"][0]["role"] == "system" and RULES[0].statement in body["messages"][0]["content"]
    assert body["messages"][1] == {"role": "user", "content": rows["request"][0]}


def optimizer_reply(request):
    """The scripted optimizer of this family's dry run, as the scripted model server's answer."""
    return Reply(json.dumps({"edits": scripted_optimizer_edits(message_text(request, "user"))}))


@pytest.mark.parametrize("kind, expected", [("explanations", [0.0, 0.0, 0.0, 0.0, 1.0]), ("scores", [0.0] * 5)])
def test_the_real_optimizer_learns_the_10_rules_from_explanations_but_not_from_scores(tmp_path, kind, expected):
    family = LatentRulesFamily(n_rules=10)
    train, test = family.split(4, 4)
    script = Script([Rule(system_contains="You maintain the rules file", reply=optimizer_reply)])
    prompt, accuracy = family.base_prompt, []
    with ScriptedModelServer(script) as server:
        client = LLMClient("scripted-dry-run", base_url=server.base_url, api_key="test-key", cache_dir=tmp_path)
        optimizer = PromptLearningOptimizer(prompt=BASE_PROMPT, client=client)
        for _ in range(5):
            accuracy.append(family.summary(family.run(prompt, test))["accuracy"])
            judged = family.feedback(family.run(prompt, train), kind)
            prompt = optimizer.optimize(judged, family.output_column, family.feedback_columns, ruleset=prompt)
    assert accuracy == expected
    assert re.sub(r"(?s)<!-- prompt-learning:rules:start -->.*<!-- prompt-learning:rules:end -->", "", prompt) == \
        re.sub(r"(?s)<!-- prompt-learning:rules:start -->.*<!-- prompt-learning:rules:end -->", "", BASE_PROMPT)
