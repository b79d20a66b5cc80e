"""Where agent runs execute: threads on this machine, or tasks on a Ray cluster. One parameter moves a run
from a laptop to a cluster: run_tasks(..., executor="local" | "ray" | "ray://host:10001" | "ray:auto").

    executor = make_executor("ray", workers=8)
    future = executor.submit(run_attempt, family, runner, task, ruleset, rules_file, mode, evaluator)
    ...; executor.shutdown(cancel=False)

The seam is concurrent.futures' own: `submit(fn, *args) -> Future` and `shutdown(cancel)`. What runs remotely is
one attempt of one task (run_attempt: a workspace, the sandboxed agent, its patch, the evaluation when it
is not batched) with plain data in and out; the task family (helpers.core.protocols.WorkspaceFamily) makes the
workspace and takes the patch, and travels with the attempt. The driver keeps everything else: it issues each
attempt's gateway token, meters it, writes every record (the one writer of the store, so resume works as on one
machine), and decides whether a transient failure is tried again.

On Ray, each attempt is a task declaring `cpus_per_run` CPUs and `memory_per_run` bytes, retried by Ray
itself (`max_retries`) when its worker process or node dies; a task whose code raises is not retried by
Ray (run_attempt turns an agent's failure into an error result, so an exception means a bug). Models are
reached only through the driver's gateway, whose URL and a per-attempt token travel with the task: no
provider key leaves the driver (docs/cluster.md).
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Protocol

from helpers.core import config
from helpers.isolation.processes import kill_processes_in, remove_scratch, scratch_dir
from helpers.core.protocols import AgentResult, EvalResult, Limit, Patch, RulesText, Task, WorkspaceFamily
from helpers.isolation.untrusted import RefusedOutput, refused

RAY_CPUS_PER_RUN = 1.0  # an agent CLI and its commands keep about one core busy
RAY_MEMORY_PER_RUN = 1 * 2**30  # a Cline run uses ~400 MB; room for the code under test
RAY_MAX_RETRIES = 2  # attempts Ray runs again when their worker process or node died


class Executor(Protocol):
    """Runs submitted attempts somewhere and hands back futures (concurrent.futures.Future).

    submit(fn, *args): run fn(*args) (module-level fn, picklable args) and return its Future, whose result
    is fn's return value or whose exception is what stopped it (a worker lost for good included).
    shutdown(cancel): stop taking work; cancel=True also drops what has not started.
    """

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]: ...

    def shutdown(self, cancel: bool = False) -> None: ...


class LocalExecutor:
    """`workers` threads in this process (each attempt's agent CLI is its own process anyway)."""

    def __init__(self, workers: int):
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="run-tasks")

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        return self._pool.submit(fn, *args)

    def shutdown(self, cancel: bool = False) -> None:
        self._pool.shutdown(wait=not cancel, cancel_futures=cancel)


class RayExecutor:
    """Attempts as Ray tasks: on a local Ray (address None), or on the cluster at `address`."""

    def __init__(
        self,
        address: str | None = None,
        cpus_per_run: float = RAY_CPUS_PER_RUN,
        memory_per_run: int = RAY_MEMORY_PER_RUN,
        max_retries: int = RAY_MAX_RETRIES,
    ):
        import ray

        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no calls home from the driver
        if not ray.is_initialized():
            ray.init(
                address=address,
                include_dashboard=False,
                log_to_driver=False,
                runtime_env={"env_vars": {"RAY_USAGE_STATS_ENABLED": "0"}},
            )
        self._ray = ray
        self._options: dict[str, Any] = {
            "num_cpus": cpus_per_run,
            "memory": memory_per_run,
            "max_retries": max_retries,
            "retry_exceptions": False,
        }
        self._refs: list[Any] = []

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        ref = self._ray.remote(**self._options)(fn).remote(*args)
        self._refs.append(ref)
        future: Future[Any] = ref.future()
        return future

    def shutdown(self, cancel: bool = False) -> None:
        if cancel:
            for ref in self._refs:
                self._ray.cancel(ref, force=True)  # its worker dies, and with it the sandboxed agent
        self._refs = []


def parse_executor(executor: str) -> tuple[str, str | None]:
    """("local", None) or ("ray", address or None) from run_tasks' `executor`; one ValueError naming the forms."""
    if executor == "local":
        return "local", None
    if executor == "ray":
        return "ray", None
    if isinstance(executor, str) and executor.startswith("ray://") and len(executor) > len("ray://"):
        return "ray", executor
    if executor == "ray:auto":
        return "ray", "auto"
    raise ValueError(
        f"executor must be 'local' (threads here), 'ray' (a Ray on this machine), 'ray:auto' (the Ray "
        f"cluster this machine is part of) or 'ray://<head>:10001' (a cluster's client address), "
        f"not {executor!r}."
    )


def make_executor(executor: str, workers: int) -> Executor:
    """The executor `executor` names (parse_executor); Ray is imported only when asked for."""
    kind, address = parse_executor(executor)
    if kind == "local":
        return LocalExecutor(workers)
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ValueError(
            "executor='ray' needs Ray: pip install 'prompt-learning-coding-agents[cluster]' (or pip install ray)."
        ) from None
    return RayExecutor(address)


def run_attempt(
    family: WorkspaceFamily,
    runner: Any,
    task: Task,
    ruleset: RulesText,
    rules_file: str,
    mode: str,
    evaluator: Any,
    scratch: Path | None = None,
) -> tuple[AgentResult, Patch | str, EvalResult | None]:
    """One attempt at one task, wherever it runs: (the agent's result, its Patch (act mode) or plan, the verdict
    when `evaluator` grades one task at a time, else None). `family` makes the workspace and takes the patch.
    Never raises for a task's failure: a broken workspace or agent is an error result, output the host refuses
    one whose `limit` says so (Limit.REFUSED_OUTPUT). Its workspace lives in `scratch` (a new scratch folder of
    this process when None, removed after), and nothing the agent started outlives it."""
    own = scratch is None
    scratch = scratch or scratch_dir("run")
    output: Patch | str  # the Patch in act mode, else the plan
    workspace, output, ready = None, "", False
    try:
        workspace = family.prepare_workspace(task, scratch)
        take_rules_out = family.write_rules(workspace, rules_file, ruleset)
        ready = True  # from here on, a failure is the agent's run's (counted), not the host's preparing
        result = runner.run(task, workspace, ruleset.text)
        kill_processes_in(workspace)  # whatever its commands left running, in any process group
        take_rules_out()
        output = family.take_patch(workspace, task) if mode == "act" else _capped_plan(result.plan)
    except Exception as error:  # a broken workspace or agent fails this task only
        said = f"{type(error).__name__}: {error}"[:4000]
        host = "" if ready else f"the host could not prepare the workspace: {said}"[:4000]  # run again (capped)
        result = AgentResult(
            str(task["instance_id"]),
            "error",
            error=said,
            model=getattr(runner, "model", ""),
            transient=bool(host),
            host_error=host,
            limit=Limit.REFUSED_OUTPUT if ready and isinstance(error, RefusedOutput) else None,
        )
    finally:
        if workspace is not None:
            kill_processes_in(workspace)
            family.remove_workspace(workspace)
        if own:
            remove_scratch(scratch)
    verdict = None
    if evaluator is not None and not evaluator.batched and result.status == "completed" and mode == "act":
        try:
            verdict = evaluator.evaluate(task, output.text if isinstance(output, Patch) else output)
        except Exception as error:  # the contract says it never raises for a bad patch: the evaluator broke
            verdict = EvalResult(
                str(task["instance_id"]), False, log=str(error), error=f"{type(error).__name__}: {error}", infra=True
            )
    return result, output, verdict


def _capped_plan(plan: str) -> str:
    """A plan, unless it is over config.MAX_PATCH_BYTES (like a patch: refused naming its size, never recorded)."""
    size = len((plan or "").encode("utf-8", errors="surrogatepass"))
    if size > config.MAX_PATCH_BYTES:
        raise refused(
            "the plan",
            f"is {size} bytes, over the {config.MAX_PATCH_BYTES} bytes a plan may hold "
            "(MAX_PATCH_BYTES); it is not recorded",
        )
    return plan


__all__ = [
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "make_executor",
    "parse_executor",
    "run_attempt",
]  # CODE_APPENDIX.md
