"""The run engine: any agent on many tasks, each patch tested, each result recorded the moment it is final.

    df = run_tasks(tasks, agent, run_id="train_0", experiment="house-demo", ruleset=rules, workers=4)

For each task: a workspace at the base commit, the ruleset written to `agent.rules_file` in it,
`agent.run(task, workspace, ruleset)`, the patch taken by the host from the workspace (the learned
rules, checkpoint refs and build debris left out), the evaluator's verdict, and one record appended to
act_results/<experiment>/runs/<run_id>.jsonl. The workspace, the patch and the default evaluator are the task
family's (helpers.core.protocols.WorkspaceFamily): the engine imports none. Calling again with the same run id,
ruleset, agent and model runs only what is missing: a killed run resumes, and runs stopped by the budget or by
a failure the host saw outside the sandbox (the provider's outage or rate limit, a lost worker) are run again,
a task at most 1 + config.AGENT_TRANSIENT_RETRIES times in all, across calls and resumes (records count `tries`).
Whatever the agent did inside its run (ended its own CLI, had its own calls refused, printed a provider's
error) is a failed attempt, counted. Agents are any object with the Agent protocol (helpers.core.protocols).

With a model gateway (helpers.llm.gateway, the session's), each task's agent gets the gateway's URL and a
token of its own (agent.through_gateway(url, token, kind)): the provider key never reaches the agent or
the commands it runs, the row's cost and tokens come from the gateway's meter, and the gateway's own
record of the last call's status (not the wording of an error, nor the CLI's own stream) decides whether a
failed run is transient. Without one (run_tasks or run_act called outside a session), run_tasks starts a gateway
of its own for the call in front of the agent's provider (agent.upstream()): the key stays in this process.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, cast

import pandas as pd

from helpers.core import config
from helpers.core.progress import progress_bar
from helpers.isolation.processes import (
    kill_processes_in,
    terminate_as_interrupt,
    remove_scratch,
    scratch_dir,
    sweep_stale,
)
from helpers.core.protocols import Agent, AgentResult, BatchedEvaluator, EvalResult, Evaluator, Patch, WorkspaceFamily
from helpers.engine.resume import is_done, latest_records, max_runs
from helpers.families.registry import default_family
from helpers.rules.rules_file import RulesFile
from helpers.store.records import (
    append_jsonl,
    check_name,
    read_jsonl,
    ruleset_sha,
    run_records_path,
    without_lone_surrogates,
)
from helpers.engine.run_records import COLUMNS, HARNESS_ERROR, PENDING, record, verdict_fields

MODES = ("act", "plan")


class RunInProgress(RuntimeError):
    """Another process is running the same experiment and run id right now."""


def run_tasks(
    tasks: pd.DataFrame,
    agent: Agent,
    *,
    run_id: str,
    experiment: str | None = None,
    ruleset: str | RulesFile = "",
    workers: int = config.WORKERS,
    evaluator: Evaluator | None = None,
    evaluate: bool = True,
    attempt: int = 0,
    results_root: Path | str | None = None,
    progress: bool = True,
    gateway: Any = None,
    executor: str = "local",
    family: WorkspaceFamily | None = None,
) -> pd.DataFrame:
    """Run `agent` on every task (`workers` at a time), test each patch, return one row per task (COLUMNS).

    `family` makes each workspace, takes each patch and names the grader (helpers.core.protocols.WorkspaceFamily;
    None: helpers.families.registry.default_family(), the coding family).
    `evaluator` defaults to the one the tasks need (the family's evaluator_for); evaluate=False
    skips testing, and plan mode never tests. `executor` says where the runs execute (helpers.engine.executors):
    "local" (`workers` threads here) or a Ray cluster ("ray", "ray:auto", "ray://<head>:10001"). Setup problems (no binary, no key, no Docker for
    SWE-bench tasks, bad arguments) raise before any task starts; a task that fails (its workspace,
    its agent run, its tests) is one row with the reason, never an exception. `ruleset`: the rules parsed once
    (helpers.rules.rules_file.RulesFile), or their text, parsed here (rules that cannot be read: one ValueError).
    """
    frame = _check_tasks(tasks)
    rules = RulesFile.parse(ruleset)
    workers = _positive_int(workers, "workers")
    from helpers.engine.executors import parse_executor

    parse_executor(executor)  # a bad executor is one error before anything runs
    experiment = experiment or config.DEFAULT_EXPERIMENT
    mode = agent.mode
    if mode not in MODES:
        raise ValueError(f"The agent's mode must be 'act' or 'plan', not {mode!r}.")
    agent.check()
    family = family or default_family()
    if mode == "act" and evaluate:
        if evaluator is None:
            # grading follows the agent's sandbox policy: a real run's refuses to grade unsandboxed
            evaluator = family.evaluator_for(
                frame, model_name=agent.name, sandbox=getattr(agent, "sandbox", "required")
            )
        evaluator.check(frame.to_dict("records"))
    else:
        evaluator = None
    sha = ruleset_sha(rules.text)
    path = run_records_path(experiment, run_id, results_root)
    sweep_stale()
    with _run_lock(path, experiment, run_id), _gateway_for(agent, gateway) as gateway:
        latest, tries = latest_records(read_jsonl(path), agent, sha, attempt)
        done = {iid: r for iid, r in latest.items() if is_done(r)}
        todo = [row for row in frame.to_dict("records") if row["instance_id"] not in done]
        run = _Run(agent, evaluator, rules, dict(run_id=run_id, ruleset_sha=sha, attempt=attempt), path, done)
        run.tries, run.family = tries, family
        run.gateway, run.experiment = gateway, experiment
        if todo:
            run.all(todo, workers, progress, executor)
        if evaluator is not None:
            run.evaluate_pending(frame, f"{experiment}.{run_id}.a{attempt}.{sha[:8]}")
    rows = [done[i] for i in frame["instance_id"] if i in done]
    return pd.DataFrame(rows, columns=list(COLUMNS))


@contextmanager
def _gateway_for(agent: Agent, gateway: Any) -> Iterator[Any]:
    """The session's gateway, or one of this call's own in front of the agent's provider (stopped after it),
    or None for an agent that makes no model calls."""
    upstream = agent.upstream() if gateway is None else None
    if upstream is None:
        yield gateway
        return
    from helpers.llm.gateway import Gateway, Upstream

    with Gateway({"agent": Upstream(*upstream)}, models={"agent": [agent.model]}) as own:  # its model only
        yield own


class _Run:
    """One run_tasks call's state: what it runs with, where it writes, what is done."""

    def __init__(
        self,
        agent: Agent,
        evaluator: Evaluator | None,
        ruleset: RulesFile,
        ids: dict[str, Any],
        path: Path,
        done: dict[str, dict[str, Any]],
    ):
        self.agent, self.evaluator, self.ruleset, self.ids, self.path, self.done = (
            agent,
            evaluator,
            ruleset,
            ids,
            path,
            done,
        )
        self.scratch: Path | None = None
        self.family: WorkspaceFamily = default_family()
        self.gateway: Any = None
        self.experiment = ""
        self.local = True
        self.tokens: dict[Future[Any], str | None] = {}  # each attempt in flight: its gateway token
        self.tries: dict[str, int] = {}  # each task's runs in this run id so far, across calls (the records')
        self._lock = threading.Lock()

    def all(self, todo: list[dict[str, Any]], workers: int, progress: bool, executor: str = "local") -> None:
        """Every task of `todo` on `executor` (helpers.engine.executors), each record kept as it comes back."""
        from helpers.engine.executors import make_executor

        self.scratch = scratch_dir("run")
        bar = progress_bar(len(todo), self.ids["run_id"], "task", disable=not progress)
        pool = make_executor(executor, workers)
        self.local = executor == "local"
        try:
            with terminate_as_interrupt():
                waiting = {self.submit(pool, task): task for task in todo}
                while waiting:
                    finished, _ = wait(waiting, return_when=FIRST_COMPLETED)
                    for future in finished:
                        task = waiting.pop(future)
                        result, output, verdict = self.finished(task, future)
                        again = self.counted(task, result)
                        self.keep(self.graded(task, result, output, verdict))  # every run kept, its try counted
                        if again:
                            waiting[self.submit(pool, task)] = task  # the host saw it fail: once more
                            continue
                        bar.update(1)
        except BaseException:  # an interrupt or a kill: stop every agent now, keep what is finished
            pool.shutdown(cancel=True)
            _stop_agent(self.agent)
            kill_processes_in(self.scratch)
            raise
        finally:
            pool.shutdown(cancel=True)
            bar.close()
            remove_scratch(self.scratch)

    def submit(self, pool: Any, task: dict[str, Any]) -> Future[Any]:
        """One attempt at `task` on `pool`, with an agent of its own (its gateway token; the driver keeps the
        token, to meter the attempt when it comes back)."""
        from helpers.engine.executors import run_attempt

        runner, token = self.through_gateway(task)
        scratch = self.scratch if self.local else None  # a remote worker makes its own
        future: Future[Any] = pool.submit(
            run_attempt,
            self.family,
            runner,
            task,
            self.ruleset,
            self.agent.rules_file,
            self.agent.mode,
            self.evaluator,
            scratch,
        )
        self.tokens[future] = token
        return future

    def finished(self, task: dict[str, Any], future: Future[Any]) -> tuple[AgentResult, Patch | str, EvalResult | None]:
        """An attempt's (result, output, verdict), metered by the gateway, its trajectory saved by the driver;
        an attempt whose worker was lost for good (after the executor's own retries) is an error result."""
        token = self.tokens.pop(future)
        try:
            result, output, verdict = future.result()
        except Exception as error:  # the host saw its worker go: run again (within the cap)
            lost = f"the run was lost: {type(error).__name__}: {error}"[:4000]
            result, output, verdict = (
                AgentResult(
                    str(task["instance_id"]),
                    "error",
                    model=self.agent.model,
                    error=lost,
                    transient=True,
                    host_error=lost,
                ),
                "",
                None,
            )
        if token is not None:
            result = self.metered(result, token)
        if result.trajectory:
            from helpers.agents.trajectories import save_trajectory, summarize

            save_trajectory(
                self.experiment,
                self.ids["run_id"],
                str(task["instance_id"]),
                result.trajectory,
                self.path.parent.parent.parent,
            )  # runs/<id>.jsonl under <root>/<experiment>
            result.trajectory_summary = summarize(result.trajectory)
        return result, output, verdict

    def counted(self, task: dict[str, Any], result: AgentResult) -> bool:
        """Count this run of `task` (its record's `tries`); True when the host saw it fail transiently and the task
        has runs left (1 + config.AGENT_TRANSIENT_RETRIES in all, across calls and resumes); a transient failure
        with none left says so in its error."""
        iid = str(task["instance_id"])
        with self._lock:
            self.tries[iid] = self.tries.get(iid, 0) + 1
            tries = self.tries[iid]
        if not (result.status == "error" and result.transient):
            return False
        if tries < max_runs():
            return True
        result.error = (
            f"{result.error} (run {tries} of at most {max_runs()}: not run again; config.AGENT_TRANSIENT_RETRIES)"
        )[:4000]
        return False

    def keep(self, record: dict[str, Any]) -> None:
        record = without_lone_surrogates(record)  # the row as it reads back (a data frame cannot hold one)
        append_jsonl(self.path, record)  # written the moment it is known: a kill loses nothing finished
        with self._lock:
            self.done[record["instance_id"]] = record

    def graded(
        self, task: dict[str, Any], result: AgentResult, output: Patch | str, verdict: EvalResult | None
    ) -> dict[str, Any]:
        """The task's record, with the evaluator's verdict on a completed run (pending for a batched one)."""
        tries = {"tries": self.tries.get(str(task["instance_id"]), 1)}
        if self.evaluator is not None and result.status == "completed" and self.evaluator.batched:
            return {**record(task, result, output, None, self.agent, self.ids, pending=True), **tries}
        return {**record(task, result, output, verdict, self.agent, self.ids), **tries}

    def through_gateway(self, task: dict[str, Any]) -> tuple[Any, str | None]:
        """(the agent for this task, its gateway token): a copy pointed at the gateway with a token of its own,
        when there is a gateway and the agent can use one; else the agent as it is."""
        if self.gateway is None:
            return self.agent, None
        token = self.gateway.issue_token(
            "agent",
            experiment=self.experiment,
            run_id=self.ids["run_id"],
            attempt=self.ids["attempt"],
            task=str(task["instance_id"]),
            role="agent",
        )
        routed = self.agent.through_gateway(self.gateway.url_for("agent"), token, self.gateway.upstreams["agent"].kind)
        if routed is None:  # an agent that makes no model calls the gateway could carry
            self.gateway.revoke_token(token)
            return self.agent, None
        return routed, token

    def metered(self, result: AgentResult, token: str) -> AgentResult:
        """The gateway's account of a run, the one source of its tokens (input, the cached part of them,
        output) and cost (None when a call's model has no price, the scripted model's included), and for a
        failed run whether the provider failed transiently or the budget was spent: the host's own observations,
        never the agent's stream. Any other failed run is the agent's own (a failed attempt, counted)."""
        from helpers.llm.gateway import is_transient

        usage, status = self.gateway.usage(token), self.gateway.last_status(token)
        self.gateway.revoke_token(token)
        result.usage = {k: usage[k] for k in ("input_tokens", "cached_tokens", "output_tokens")}
        result.cost_usd = usage["cost_usd"]
        result.trajectory = result.trajectory or self.gateway.conversation(token)
        self.gateway.forget(token)
        if result.status != "completed" and status == "budget":
            result.status, result.error = "budget", f"the experiment's budget is spent ({result.error})"
            result.host_error = "the experiment's budget is spent (the gateway's record)"
        elif result.status == "error" and is_transient(status) and result.limit is None:
            # the provider failed on the run's last call (a run a limit the rules can cause ended, a refusal of
            # what the agent left included, is its own, whatever the provider did: AgentResult.limit, named where
            # it ended); the error's words are the agent's, the status the gateway's
            result.transient = True
            result.host_error = (
                f"the model provider failed: status {status} on the run's last call (the gateway's record)"
            )
            result.error = f"{result.host_error}; the agent said: {result.error}"[:4000]
        elif result.status == "error" and status == 401:  # the gateway took the run's token: the provider refused
            # the host's own key (never the agent's doing; not transient: the key must change)
            result.host_error = "the model provider refused the host's key: status 401 (the gateway's record)"
            result.error = f"{result.host_error}; the agent said: {result.error}"[:4000]
        return result

    def evaluate_pending(self, frame: pd.DataFrame, run_key: str) -> None:
        """Grade every record still waiting for its verdict: patches a batched evaluator has not seen yet, and
        patches whose evaluation failed for infrastructure reasons before (retried on every call)."""
        waiting = [r for r in self.done.values() if r["pass_or_fail"] in (PENDING, HARNESS_ERROR)]
        evaluator = self.evaluator
        if not waiting or evaluator is None:
            return
        by_id = frame.set_index("instance_id", drop=False)
        tasks = [dict(by_id.loc[r["instance_id"]]) for r in waiting]
        try:
            if evaluator.batched:  # the Evaluator contract: a batched one has evaluate_batch
                verdicts = cast(BatchedEvaluator, evaluator).evaluate_batch(
                    tasks, [r["output"] for r in waiting], run_key=run_key
                )
            else:
                verdicts = [_evaluate(evaluator, task, r["output"]) for task, r in zip(tasks, waiting)]
        except Exception as error:  # the harness itself broke: the records stay pending for a rerun
            raise RuntimeError(
                f"Evaluating {len(waiting)} patches failed ({type(error).__name__}: {error}); "
                "the agents' results are kept, and calling again evaluates them."
            ) from error
        for previous, verdict in zip(waiting, verdicts):
            self.keep({**previous, **verdict_fields(verdict, previous.get("suspect") or [])})


def _evaluate(evaluator: Evaluator, task: dict[str, Any], patch: str) -> EvalResult:
    try:
        return evaluator.evaluate(task, patch)
    except Exception as error:  # the contract says it never raises for a bad patch: the evaluator broke
        return EvalResult(
            str(task["instance_id"]), False, log=str(error), error=f"{type(error).__name__}: {error}", infra=True
        )


def _check_tasks(tasks: Any) -> pd.DataFrame:
    if not isinstance(tasks, pd.DataFrame):
        raise TypeError(f"tasks must be a DataFrame of task rows (helpers.load_tasks), not {type(tasks).__name__}.")
    missing = [c for c in ("instance_id", "base_commit", "problem_statement") if c not in tasks.columns]
    if missing:
        raise ValueError(f"The tasks lack the column(s) {missing}; load them with helpers.load_tasks().")
    duplicated = sorted(set(tasks.loc[tasks["instance_id"].duplicated(), "instance_id"]))
    if duplicated:
        raise ValueError(f"Duplicate instance ids in the tasks: {duplicated[:5]}.")
    unsafe = [value for value in tasks["instance_id"] if not _is_safe_name(value)]
    if unsafe:  # each becomes a workspace folder and a file name: refused before any exists
        check_name(unsafe[0], f"instance_id (1 of {len(unsafe)} unsafe: {', '.join(map(repr, unsafe[:3]))})")
    return tasks.reset_index(drop=True)


def _is_safe_name(value: Any) -> bool:
    try:
        check_name(value)
    except ValueError:
        return False
    return True


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}.")
    return value


def _stop_agent(agent: Agent) -> None:
    agent.stop_all()


@contextmanager
def _run_lock(path: Path, experiment: str, run_id: str) -> Iterator[None]:
    """One process at a time per experiment and run id (two would pay twice and write duplicates)."""
    lock_path = path.with_suffix(".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            raise RunInProgress(
                f"Run {run_id!r} of experiment {experiment!r} is already running ({holder}). "
                "Wait for it to finish, or stop it; its finished tasks are kept."
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, since {time.strftime('%Y-%m-%d %H:%M:%S')}".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


__all__ = ["run_tasks", "RunInProgress"]  # the public API, documented in CODE_APPENDIX.md
