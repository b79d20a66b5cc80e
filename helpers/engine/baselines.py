"""The baselines a team compares learned rules against: the agent's own /init file and the team's file.

    arms = run_baselines("quickstart", agent)          # after the loops: init and team arms on the test tasks
    print(baselines_summary("quickstart"))             # helpers.analysis.evidence: the secondary comparisons

Each arm is a ruleset version of its own (in the "<experiment>-baselines" ruleset store) and runs on the same
test tasks as the primary test (where the one test ran alone and stopped early, the tasks it ran: no arm pays
for a task the primary never ran), recorded like any other test run (run_tasks, one run id per arm and
repository, so a rerun resumes):
- `team`: the rules file the repository holds (any format of helpers.rules.file_formats, the agent's own
  first) at the newest training task's base commit, or the file the user names (`team_file`); none: the arm is
  skipped, and the summary says so. A team file that is the agent's own rules file is already in every
  workspace, so every arm reads it (the record says so);
- `init`: the agent's own init (its package's `init_route`, helpers.agents.init_route), run headless by the
  engine in the sandbox through the gateway, once per (agent, repository, base commit, agent version): the
  run id names the version and the prompt's hash, so run_tasks' records are the cache. It sees the repository
  at the newest training task's base commit, never a test task's. An init run that fails or writes nothing
  is an errored arm, named with why: never an empty ruleset that reads as "no rules".
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from helpers.agents.init_route import init_task, written_file
from helpers.core import config
from helpers.core.protocols import WorkspaceFamily
from helpers.families.registry import default_family
from helpers.rules.file_formats import FORMATS
from helpers.store.arms import baselines_store_name, save_arm

if TYPE_CHECKING:  # the functions below import it where they use it
    from helpers.store.rulesets import RulesetStore

TEAM_FILE_MAX_BYTES = (
    1_000_000  # a rules file is read whole by the agent on every call; anything larger is no rules file
)
HOUSE_TEAM_FILE = Path(__file__).resolve().parents[1] / "families" / "coding" / "house_suite" / "team_rules.md"


def newest_training_tasks(train: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """{repository: its newest training task (latest `created_at`, then last in order)}: where init and the
    team's file are read, so that no arm sees a test task's future."""
    newest: dict[str, dict[str, Any]] = {}
    for row in train.to_dict("records"):
        repo = str(row.get("repo") or "")
        if repo not in newest or str(row.get("created_at") or "") >= str(newest[repo].get("created_at") or ""):
            newest[repo] = row
    return newest


def agent_version(agent: Any) -> str:
    """The installed CLI's version ("0.169.0"), from its class's installed(); "unknown" without one."""
    installed = getattr(type(agent), "installed", None)
    try:
        text = installed() if installed else ""
    except (OSError, FileNotFoundError, ValueError):
        text = ""
    found = re.search(r"\d+(?:\.\d+)+", text or "")
    return found.group(0) if found else "unknown"


def team_rules(task: dict[str, Any], rules_file: str, family: WorkspaceFamily | None = None) -> tuple[str, str] | None:
    """(text, path) of the rules file the task's repository holds at its base commit (the agent's own
    `rules_file` first, then every other plain format), None when it holds none. Read from a workspace
    `family` prepares (None: the default; base commit and ancestors only), through the bounded no-follow reader."""
    from helpers.isolation.processes import remove_scratch, scratch_dir
    from helpers.isolation.untrusted import RefusedOutput, read_untrusted, untrusted_kind

    family = family or default_family()

    candidates = [rules_file] + [f.pattern for f in FORMATS if "<name>" not in f.pattern and f.pattern != rules_file]
    scratch = scratch_dir("team-rules")
    try:
        workspace = family.prepare_workspace({**task, "instance_id": "team-rules"}, scratch)
        try:
            for path in candidates:
                try:  # a link or special file where a rules file would be is no team file: never followed
                    if untrusted_kind(workspace / path, workspace) != "file":
                        continue
                    data = read_untrusted(workspace / path, workspace, TEAM_FILE_MAX_BYTES)
                except RefusedOutput:
                    continue
                if data.strip():
                    return data.decode("utf-8", errors="replace"), path
            return None
        finally:
            family.remove_workspace(workspace)
    finally:
        remove_scratch(scratch)


def named_team_file(path: Path | str) -> tuple[str, str]:
    """(text, path) of a team file the user names; one clear error when it is missing, empty or too large."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"The team's rules file {path} does not exist (TEAM_FILE).")
    if path.stat().st_size > TEAM_FILE_MAX_BYTES:
        raise ValueError(
            f"The team's rules file {path} is over {TEAM_FILE_MAX_BYTES:,} bytes: no agent reads that much."
        )
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        raise ValueError(f"The team's rules file {path} is empty: nothing to compare.")
    return text, str(path)


def init_rules(
    agent: Any, task: dict[str, Any], *, experiment: str, gateway: Any = None, results_root: Path | str | None = None
) -> dict[str, Any]:
    """One init run of `agent` on `task`'s repository at its base commit (the engine's run: sandbox, gateway,
    records), cached by its run id (agent, version, prompt hash) and task id (repository, base commit). Returns
    {"status": "ran" or "errored", "why", "text", "agent_version", "prompt_sha", "label", "route", "run_id",
    "base_commit", "repo"}: "errored" when the run failed or did not write the route's file."""
    return init_files(agent, [task], experiment=experiment, gateway=gateway, results_root=results_root)[0]


def init_files(
    agent: Any,
    tasks: list[dict[str, Any]],
    *,
    experiment: str,
    gateway: Any = None,
    results_root: Path | str | None = None,
    workers: int = config.WORKERS,
) -> list[dict[str, Any]]:
    """init_rules for several repositories at once: one engine call, `workers` init runs at a time; one record
    per task, in order."""
    from helpers.engine.runs import run_tasks

    route = type(agent).init_route
    version, name = agent_version(agent), str(agent.name)
    run_id = f"init_{name}_{version}_{route.prompt_sha}"
    asked = [init_task(task, route, name) for task in tasks]
    rows = run_tasks(
        pd.DataFrame(asked),
        agent,
        run_id=run_id,
        experiment=experiment,
        evaluate=False,
        gateway=gateway,
        progress=False,
        results_root=results_root,
        workers=workers,
    )
    by_id = {str(r["instance_id"]): r for r in rows.to_dict("records")}
    found = []
    for task, init in zip(tasks, asked):
        record = {
            "agent_version": version,
            "prompt_sha": route.prompt_sha,
            "label": route.label(name),
            "route": route.command,
            "init_kind": route.kind,
            "run_id": run_id,
            "base_commit": str(task["base_commit"]),
            "repo": task.get("repo"),
            "source": route.source,
        }
        row = by_id.get(init["instance_id"], {})
        text = written_file(str(row.get("output") or ""), route.writes) if row.get("status") == "completed" else None
        if row.get("status") != "completed":
            why = f"{name}'s init run ended {row.get('status') or 'without a record'}: {row.get('error') or 'no error given'}"
            found.append({**record, "status": "errored", "why": why[:500], "text": ""})
        elif not text or not text.strip():
            found.append(
                {**record, "status": "errored", "why": f"{name}'s init run wrote no {route.writes}", "text": ""}
            )
        else:
            found.append({**record, "status": "ran", "why": "", "text": text})
    return found


def run_baselines(
    experiment: str,
    agent: Any,
    *,
    arms: tuple[str, ...] = ("init", "team"),
    team_file: Path | str | None = None,
    workers: int = config.WORKERS,
    gateway: Any = None,
    progress: bool = False,
    dry_run: bool = False,
) -> dict[str, dict[str, Any]]:
    """Run each baseline arm (`arms`: "init", "team") on the experiment's test tasks, saving each arm's ruleset
    as a version of the "<experiment>-baselines" store and its record and rows (helpers.store.arms); returns
    {arm: record}. `team_file`: the team's file to use instead of the repository's (the house suite's bundled
    one by default for house tasks). A bad arm or a missing team file is one error before anything runs."""
    from helpers.engine.ablation import split_tasks

    unknown = sorted(set(arms) - {"init", "team"})
    if unknown:
        raise ValueError(f"Unknown baseline arm {unknown}: the arms are 'init' and 'team'.")
    test = tasks_the_one_test_ran(experiment, split_tasks(experiment, "test"))
    if team_file is None and "team" in arms and set(test.get("suite", pd.Series(dtype=str))) == {"house"}:
        team_file = HOUSE_TEAM_FILE
    named = named_team_file(team_file) if team_file is not None and "team" in arms else None
    train = pd.concat([split_tasks(experiment, side) for side in _pre_test_sides(experiment)], ignore_index=True)
    newest = newest_training_tasks(train)
    done = {}
    if _starts_with_rules(experiment):  # the loop started from a file (START_RULES): "none" is an arm of its own
        none = {
            repo: {"status": "ran", "text": "", "label": "no rules"} for repo in dict.fromkeys(test["repo"].astype(str))
        }
        done["none"] = _run_arm(experiment, "none", none, test, agent, workers, gateway, progress, dry_run)
    repos = list(dict.fromkeys(test["repo"].astype(str)))
    for arm in arms:
        per_repo = {}
        if arm == "init":  # every repository's init at once
            readable = [repo for repo in repos if repo in newest]
            per_repo = dict(
                zip(
                    readable,
                    init_files(
                        agent, [newest[r] for r in readable], experiment=experiment, gateway=gateway, workers=workers
                    ),
                )
            )
        for repo in repos:
            if repo not in newest:
                per_repo[repo] = {"status": "errored", "why": f"no training task of {repo} to read it at"}
            elif arm == "init":
                continue
            else:
                found = named or team_rules(newest[repo], agent.rules_file)
                per_repo[repo] = (
                    {
                        "status": "ran",
                        "text": found[0],
                        "path": found[1],
                        "label": f"the team's {Path(found[1]).name}",
                        "in_every_workspace": named is None and found[1] == agent.rules_file,
                    }
                    if found
                    else {
                        "status": "skipped",
                        "why": f"{repo} holds no rules file at its newest training task's base commit",
                    }
                )
        done[arm] = _run_arm(experiment, arm, per_repo, test, agent, workers, gateway, progress, dry_run)
    return done


def tasks_the_one_test_ran(experiment: str, test: pd.DataFrame) -> pd.DataFrame:
    """`test`, or, where the experiment's one test ran alone and stopped early (helpers.engine.one_test), only the
    tasks it ran, in its recorded order: the secondaries reuse the primary's stopping point, so no arm pays for a
    task the primary never ran and every comparison pairs the same tasks. A one test declared but unfinished
    (no `tasks_run` yet) stops nothing."""
    from helpers.store.loops import load_one_test

    record = load_one_test(experiment) or {}
    if "tasks_run" not in record:
        return test
    by_id = test.set_index(test["instance_id"].astype(str), drop=False)
    ran = [str(i) for i in record["order"][: int(record["tasks_run"])] if str(i) in by_id.index]
    return by_id.loc[ran].reset_index(drop=True)


def _starts_with_rules(experiment: str) -> bool:
    from helpers.store.loops import loop_records
    from helpers.store.rulesets import RulesetStore

    done = loop_records(experiment)
    return bool(done) and bool(RulesetStore(experiment).load(done[0]["ruleset_version"]).strip())


def _saved_version(store: RulesetStore, text: str, arm: str, repo: str) -> int | None:
    """The version already saved for this arm, repository and text (a rerun resumes its runs), else None."""
    from helpers.store.records import ruleset_sha

    sha = ruleset_sha(text)
    return next(
        (
            v
            for v in store.versions()
            if (m := store.metadata(v)).get("arm") == arm and m.get("repo") == repo and m.get("ruleset_sha") == sha
        ),
        None,
    )


def baseline_start_rules(
    which: str,
    train: pd.DataFrame,
    agent: Any,
    *,
    experiment: str,
    team_file: Path | str | None = None,
    gateway: Any = None,
    results_root: Path | str | None = None,
) -> str:
    """The rules text START_RULES="init" or "team" starts the loop from: the agent's own init file, or the team's,
    read at the newest training task's base commit of each repository (one section per repository when the
    training tasks span several). An init that fails or writes nothing, or no team file, is one ValueError
    naming why, before the loop starts: never an empty start that reads as "no rules"."""
    if which not in ("init", "team"):
        raise ValueError(f"START_RULES as a baseline is 'init' or 'team', not {which!r}.")
    if which == "team" and team_file is None and set(train.get("suite", pd.Series(dtype=str))) == {"house"}:
        team_file = HOUSE_TEAM_FILE
    if which == "team" and team_file is not None:
        return named_team_file(team_file)[0]
    texts: dict[str, str] = {}
    for repo, task in newest_training_tasks(train).items():
        if which == "init":
            found = init_rules(agent, task, experiment=experiment, gateway=gateway, results_root=results_root)
            if found["status"] != "ran":
                raise ValueError(f"START_RULES='init': {found['why']}; start from a path or a text instead.")
            texts[repo] = found["text"]
        else:
            team = team_rules(task, agent.rules_file)
            if team is None:
                raise ValueError(
                    f"START_RULES='team': {repo} holds no rules file at its newest training task's base "
                    "commit; name one (TEAM_FILE) or start from a path or a text."
                )
            texts[repo] = team[0]
    if len(texts) == 1:
        return next(iter(texts.values()))
    return "\n".join(f"## {repo}\n\n{text.strip()}\n" for repo, text in texts.items())


def _pre_test_sides(experiment: str) -> list[str]:
    from helpers.store.loops import load_split

    split = load_split(experiment) or {}
    return ["train"] + (["val"] if split.get("validation") else [])


def _run_arm(
    experiment: str,
    arm: str,
    per_repo: dict[str, dict[str, Any]],
    test: pd.DataFrame,
    agent: Any,
    workers: int,
    gateway: Any,
    progress: bool,
    dry_run: bool,
) -> dict[str, Any]:
    """Save the arm's ruleset (a version per repository) and run it on that repository's test tasks; the arm's
    record: errored (any repository's init failed, named), skipped (nothing to run) or ran."""
    from helpers.engine.runs import run_tasks
    from helpers.store.rulesets import RulesetStore

    bad = {repo: r for repo, r in per_repo.items() if r["status"] != "ran"}
    if bad:
        status = "errored" if any(r["status"] == "errored" for r in bad.values()) else "skipped"
        record = {
            "status": status,
            "why": "; ".join(r["why"] for r in bad.values()),
            "dry_run": dry_run,
            **{k: v for k, v in next(iter(bad.values())).items() if k not in ("status", "why", "text")},
        }
        save_arm(experiment, arm, record)
        return record
    store, frames, versions = RulesetStore(baselines_store_name(experiment)), [], {}
    for repo, found in per_repo.items():
        meta = {k: v for k, v in found.items() if k not in ("status", "why", "text", "repo")}
        version = _saved_version(store, found["text"], arm, repo)  # version 0 is a version: no `or`
        versions[repo] = (
            version
            if version is not None
            else store.save(
                found["text"],
                kind=arm,
                model=str(getattr(agent, "model", "") or ""),
                dry_run=dry_run,
                arm=arm,
                agent=str(agent.name),
                repo=repo,
                **meta,
            )
        )
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", repo).strip("-.") or "repo"
        frames.append(
            run_tasks(
                test[test["repo"].astype(str) == repo],
                agent,
                run_id=f"baseline_{arm}_{slug}_v{versions[repo]}",
                experiment=experiment,
                ruleset=found["text"],
                workers=workers,
                gateway=gateway,
                progress=progress,
            )
        )
    first = next(iter(per_repo.values()))
    largest = max(per_repo.values(), key=lambda r: len(r["text"].encode("utf-8")))  # the size check's binding file
    record = {
        "status": "ran",
        "label": first.get("label", arm),
        "versions": versions,
        "text": largest["text"],
        "dry_run": dry_run,
        **{k: v for k, v in first.items() if k not in ("status", "why", "text", "label")},
    }
    save_arm(experiment, arm, record, pd.concat(frames, ignore_index=True))
    return record


__all__ = [
    "run_baselines",
    "baseline_start_rules",
    "init_rules",
    "init_files",
    "team_rules",
    "named_team_file",
    "newest_training_tasks",
    "tasks_the_one_test_ran",
    "agent_version",
    "HOUSE_TEAM_FILE",
]
