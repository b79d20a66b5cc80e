"""The seams of the cookbook: plain data and the protocols the loop is written against.

A task is one row of a DataFrame with SWE-bench's fields (see TASK_FIELDS); every step passes plain
data on, so a notebook cell can call one step, look at its output, and call the next.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:
    import pandas as pd

# The fields every task row carries (SWE-bench's own names). FAIL_TO_PASS / PASS_TO_PASS are lists
# of test ids once loaded (the data set stores them as JSON strings).
TASK_FIELDS = (
    "instance_id",
    "repo",
    "base_commit",
    "problem_statement",
    "patch",  # the gold patch
    "test_patch",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "created_at",
)
# A house-suite task also carries "suite": "house"; SWE-bench tasks carry "suite": "swebench".

Task = Mapping[str, Any]


# Whether a run must be sandboxed: "required" (fail when bubblewrap cannot run), "if-available", or None (never).
# Defined here, on the ground floor, so that the seams can name it; helpers.isolation.sandbox checks a value.
SandboxPolicy = Literal["required", "if-available"] | None


class Limit(str, Enum):
    """What ended a failed run that the rules can cause (helpers.stats.outcomes: "errored: rules"), named where it
    happened: the sandbox's cap (helpers.agents.base.capped), the host refusing what the agent left
    (helpers.isolation.untrusted.RefusedOutput, caught by the engine), the agent's time limit, or a limit its own
    CLI reports (turns, mistakes, a context window the rules filled: read once, where the CLI's output is read).
    The engine decides from it, never from an error's words, whether a failure can be the provider's."""

    TIME = "time limit"
    TURNS = "turn limit"
    CONTEXT = "context window"
    SANDBOX_CAP = "sandbox cap"
    REFUSED_OUTPUT = "refused output"


@dataclass
class AgentResult:
    """What one agent run on one task produced.

    status: "completed" (the agent finished its turn), "error" (provider or CLI failure, see `error`)
    or "timeout" (stopped by the runner); for a CLI, as the host saw its process end (helpers.agents.base). `patch` is a unified diff against the task's base commit,
    possibly empty (the engine fills it from the workspace); for plan mode it is empty and `plan`
    holds the plan text. `trajectory`: the agent's turns as plain dicts in order ({"type": "message" |
    "tool_call" | "tool_result", "name", "text", ...}), cut to a budget by the agent; may be empty (the
    engine then keeps the gateway's view of the conversation; helpers.agents.trajectories reads both shapes).
    """

    instance_id: str
    status: str
    patch: str = ""
    plan: str = ""
    error: str = ""
    iterations: int = 0
    duration_s: float = 0.0
    usage: dict[str, int] = field(default_factory=dict)  # input_tokens, cached_tokens (of the input), output_tokens
    cost_usd: float | None = None  # None: nothing priced the run (an unpriced model, or no account of it)
    final_text: str = ""
    model: str = ""
    trajectory: list[dict[str, Any]] = field(default_factory=list)
    transient: bool = False  # a failed run whose provider failed transiently (the gateway's record says)
    trajectory_summary: str = ""  # helpers.agents.trajectories.summarize(trajectory), for the judge
    # A failure the host saw outside the sandbox (the gateway's upstream, the gateway, the machine), in words; set
    # by the engine only. "" for every other failure: a run the agent ended, or whose own calls failed, is counted.
    host_error: str = ""
    limit: Limit | None = None  # the limit the rules can cause that ended a failed run, set where it ended (Limit)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Patch:
    """An agent's patch as the host took it from its workspace, read once there by its task family
    (WorkspaceFamily.take_patch), and passed on as this value: `text`, a unified diff against the task's base
    commit ("" for no change), and `suspect`, the lines of it the family flags as reaching into what grades it
    (for code: the test machinery, helpers.families.coding.patches.suspect_lines); a pass of a patch with suspect
    lines is never counted as resolved (helpers.stats.outcomes)."""

    text: str = ""
    suspect: tuple[str, ...] = ()


@dataclass(frozen=True)
class GradedLines:
    """A long patch as a reviewer needs it (WorkspaceFamily.graded_lines): `lines`, every line it adds to graded
    code with its file's and hunks' headers; `set_aside`, the files grading does not use (one entry per file,
    its paths joined by ", "); `added`, how many added lines; `dropped`, the removed and context lines left out."""

    lines: tuple[str, ...]
    set_aside: tuple[str, ...]
    added: int
    dropped: int


@dataclass
class EvalResult:
    """The tests' verdict on one patch, graded like SWE-bench.

    resolved is True only when every FAIL_TO_PASS and PASS_TO_PASS test passed. `error` is set when
    the patch could not be evaluated at all (did not apply, timed out, harness unavailable) or its test
    run contradicted itself (an exit status that disagrees with its report); then resolved is False. `infra` is True when that was not the patch's doing (the harness crashed, Docker
    or Modal failed, no report was written): the engine records it as an error, never as a fail, and
    evaluates it again on the next call. `log` is the test output (or the reason), `tests` maps test
    id -> "PASSED" | "FAILED" | "ERROR" | "SKIPPED" | "MISSING". `set_aside` lists the paths whose changes
    the patch made but grading did not apply (tests and test configuration: the task's own decide it; see
    helpers.families.coding.patches, whose set_aside_note says it in a sentence). `forged` is True when the
    grading's tripwires show the outcomes were forged from inside the test run (a test made to fail passed, the
    run exited 0 beside one, or the task's tests passed while one came out wrong:
    helpers.families.coding.tripwires); then resolved is False, `error` says why in one line ("forged: ..."),
    and the engine records the run as "forged" (helpers.stats.outcomes: a failure of its ruleset, counted apart).
    """

    instance_id: str
    resolved: bool
    log: str = ""
    error: str = ""
    tests: dict[str, str] = field(default_factory=dict)
    duration_s: float = 0.0
    log_path: str = ""
    infra: bool = False
    set_aside: list[str] = field(default_factory=list)
    forged: bool = False

    @property
    def failed_tests(self) -> list[str]:
        return [t for t, outcome in self.tests.items() if outcome != "PASSED"]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class RulesText(Protocol):
    """The rules a run uses, parsed once where their text entered (helpers.rules.rules_file.RulesFile): the whole
    text (a team's rules file around a fenced learned section, or the rules alone) and the learned section's."""

    @property
    def text(self) -> str: ...

    @property
    def learned(self) -> str: ...


@runtime_checkable
class Agent(Protocol):
    """A coding agent. Each is one package of its own; the loop does not change.

    name: a short id; it names the harness's model folder and the agent's records.
    rules_file: where the agent reads its rules, relative to the workspace (".clinerules", "AGENTS.md",
        "CLAUDE.md"). The engine writes the ruleset there before run() and removes it from the patch.
    mode: "act" (the output is the patch the engine takes from the workspace) or "plan" (the output is
        AgentResult.plan; nothing is tested).
    model: the model id the agent runs on (recorded with each result; resume matches on it).
    base_prompt: a description of the agent's own fixed instructions, shown read-only to the optimizer.

    check() raises, before any task starts, for setup problems that would fail every task the same way
    (no binary, no key), with a message saying how to fix them.
    through_gateway(base_url, api_key, kind) -> a copy of the agent that sends its model calls to the model
    gateway at `base_url` with the token `api_key` instead of the provider and its key; `kind` is the
    upstream's API ("openai", "anthropic", "openai-compatible"); None when the agent makes no model calls.
    upstream() -> (base_url, api_key, kind): where its model calls go without a gateway (base_url None:
    the kind's public API) and with which key, so that run_tasks can put a gateway of its own in front
    and keep the key out of the agent's reach; None when the agent makes no model calls.
    stop_all() stops every run of this agent still going (an interrupted run_tasks calls it).
    dry_run_tools: how the scripted dry run edits with this agent's own tools (helpers.stand_ins.file_edit_tools).
    helpers.agents.base.AgentBase gives the defaults; CLIAgent the shared parts of an agent that is a CLI.
    run() never raises for a task-level failure (bad provider answer, crash, timeout): it returns an
    AgentResult with status "error" or "timeout" and the reason in `error` (and in `limit`, when a limit the rules
    can cause ended it: its turns, a context window; CLIAgent reads it from its CLI's end). It leaves `workspace`
    edited by the agent and leaves no process running. The engine, not the agent, takes the patch.
    """

    # Read-only: an agent class may set them as class attributes (name, rules_file) or per instance (model).
    @property
    def name(self) -> str: ...

    @property
    def rules_file(self) -> str: ...

    @property
    def mode(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def base_prompt(self) -> str: ...

    @property
    def dry_run_tools(self) -> Sequence[Any]: ...

    def check(self) -> None: ...

    def run(self, task: Task, workspace: Path, ruleset: str) -> AgentResult: ...

    def through_gateway(self, base_url: str, api_key: str, kind: str) -> "Agent | None": ...

    def upstream(self) -> tuple[str | None, str | None, str] | None: ...

    def stop_all(self) -> None: ...


@runtime_checkable
class Evaluator(Protocol):
    """Runs a task's tests against a patch.

    check(tasks) raises, before any agent starts, when the tests of `tasks` cannot run here (no Docker
    engine, no Modal credentials, no local repository), with a message saying how to fix it.
    evaluate() never raises for a bad patch (does not apply, breaks the build, hangs): it returns an
    EvalResult with resolved=False and the reason in `error` and `log`.
    batched: False for an evaluator that grades one patch at a time; one with `batched = True` also has evaluate_batch(tasks, patches, *, run_key) -> list of
    EvalResult: the engine then grades a run's patches in one call once its agents finish; `run_key` is
    unique per experiment, run and attempt, so no two calls share a verdict.
    """

    batched: bool

    def check(self, tasks: Sequence[Task]) -> None: ...

    def evaluate(self, task: Task, patch: str) -> EvalResult: ...


class BatchedEvaluator(Evaluator, Protocol):
    """An Evaluator with `batched = True`: it also grades a run's patches in one call (see Evaluator)."""

    def evaluate_batch(self, tasks: Sequence[Task], patches: Sequence[str], *, run_key: str) -> list[EvalResult]: ...


@runtime_checkable
class PromptFamily(Protocol):
    """A task family whose "agent" is a prompt: rows of requests in, one answer per row, a grader that
    explains. The coding family (run_tasks with an Agent) is the other; helpers.families.latent_rules is one.

    base_prompt: the whole prompt, with the instructions the optimizer may edit between the rulesets'
        fence lines (helpers.store.rulesets.FENCE_START / FENCE_END).
    optimizer_prompt: the optimizer's instructions for this family (the same JSON edits as for rules).
    feedback_columns: the columns feedback() adds and the optimizer reads.
    split(train, test) -> (train rows, test rows), deterministic.
    run(prompt, rows, generate, workers=...) -> rows with `output`, `status` ("completed" | "error") and
        `error`; one row's failure never raises (a spent budget does).
    feedback(frame, kind) -> the frame scored, with the feedback columns; kind "explanations" or "scores".
    leaks(frame) -> {name: the one row it belongs to}: names an instruction must not mention.
    """

    base_prompt: str
    optimizer_prompt: str
    feedback_columns: Sequence[str]

    def split(self, train: int, test: int) -> tuple[Any, Any]: ...

    def run(self, prompt: str, rows: Any, generate: Any, *, workers: int = 1) -> Any: ...

    def feedback(self, frame: Any, kind: str = "explanations") -> Any: ...

    def leaks(self, frame: Any) -> dict[str, set[str]]: ...


@runtime_checkable
class WorkspaceFamily(Protocol):
    """A task family whose tasks an Agent does in a workspace: what the engine, the loop and the judge need of it,
    so that they never import the family itself (the coding family, helpers.families.coding.family.CODING, is
    one; helpers.families.registry.default_family() names the default). PromptFamily is the other kind.

    Tasks: load_tasks(source, **options) -> task rows (TASK_FIELDS); select_tasks(tasks, ids) -> the rows of
      `ids` in that order (KeyError naming unknown ones); split_tasks(tasks, train_size, test_size, strategy,
      seed) -> (train, test), disjoint and seeded (ValueError for sizes or a strategy it cannot do).
    Grading: evaluator_for(tasks, model_name=, sandbox=) -> the Evaluator the rows need (ValueError when one
      cannot grade them all).
    The run of an attempt: prepare_workspace(task, root) -> a workspace folder under `root` (raises when the
      host cannot make it: the engine counts that as the host's failure); write_rules(workspace, rules_file,
      ruleset) -> the function that takes the rules out again (`ruleset` parsed once: RulesText); take_patch(workspace, task) -> the Patch, read
      once here (raises helpers.isolation.untrusted.RefusedOutput for output the host refuses: the agent's
      doing); remove_workspace(workspace).
    The judge's evidence, for rows read back as text: suspect_lines(patch, test_patch) (rows recorded before
      Patch carried them), graded_lines(patch, test_patch) -> GradedLines (a patch too long to show whole),
      set_aside_note(paths) -> one sentence saying what grading set aside ("" for nothing).
    """

    name: str

    def load_tasks(self, source: str, **options: Any) -> "pd.DataFrame": ...

    def select_tasks(self, tasks: "pd.DataFrame", ids: Sequence[str]) -> "pd.DataFrame": ...

    def split_tasks(
        self, tasks: "pd.DataFrame", train_size: int, test_size: int, strategy: str, seed: int
    ) -> "tuple[pd.DataFrame, pd.DataFrame]": ...

    def evaluator_for(self, tasks: "pd.DataFrame", *, model_name: str, sandbox: SandboxPolicy) -> Evaluator: ...

    def prepare_workspace(self, task: Task, root: Path) -> Path: ...

    def write_rules(self, workspace: Path, rules_file: str, ruleset: RulesText) -> Callable[[], None]: ...

    def take_patch(self, workspace: Path, task: Task) -> Patch: ...

    def remove_workspace(self, workspace: Path) -> None: ...

    def suspect_lines(self, patch: str, test_patch: str) -> list[str]: ...

    def graded_lines(self, patch: str, test_patch: str) -> GradedLines: ...

    def set_aside_note(self, paths: Sequence[str]) -> str: ...


@dataclass
class Completion:
    """One LLM answer. `cached` is True when it came from the on-disk cache (no request was made); `cost_usd` is
    None when the model that served it has no known price."""

    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    cached: bool = False
    raw: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class LLM(Protocol):
    """The judge's and the optimizer's model.

    complete() retries rate limits and server errors (honouring Retry-After) a bounded number of
    times, then raises; it raises at once on other client errors (bad key, bad request) and when the
    budget is spent (helpers.llm.client.BudgetExceeded). It never logs the key.
    """

    model: str

    def complete(self, messages: Sequence[Mapping[str, Any]], **params: Any) -> Completion: ...


@runtime_checkable
class RunContext(Protocol):
    """What one notebook run talks to, as the engine reads it: the three roles' models and where they are, the
    model gateway, Phoenix, and whether it is the scripted dry run. helpers.app.session.Session implements it
    (open_session() makes one); the engine, two floors below, is written against this and never imports it.

    agent_kwargs() -> the settings an agent is made with (model, base_url, api_key, sandbox);
    judge_kwargs() -> the judge's (model, base_url, api_key); optimizer_kwargs() -> the optimizer's.
    `label` is "" for real runs, else the dry run's label, shown in every title and summary.
    `gateway`: the model gateway every role goes through (helpers.llm.gateway), handed on to run_tasks as it is;
    None without one.
    """

    @property
    def dry_run(self) -> bool: ...

    @property
    def label(self) -> str: ...

    @property
    def agent_model(self) -> str: ...

    @property
    def judge_model(self) -> str: ...

    @property
    def optimizer_model(self) -> str: ...

    @property
    def base_url(self) -> str | None: ...

    @property
    def api_key(self) -> str | None: ...

    @property
    def phoenix_url(self) -> str | None: ...

    @property
    def phoenix_api_key(self) -> str | None: ...

    @property
    def gateway(self) -> object: ...

    def agent_kwargs(self) -> dict[str, Any]: ...

    def judge_kwargs(self) -> dict[str, Any]: ...

    def optimizer_kwargs(self) -> dict[str, Any]: ...


__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "Agent",
    "Evaluator",
    "LLM",
    "PromptFamily",
    "WorkspaceFamily",
    "RunContext",
    "SandboxPolicy",
    "AgentResult",
    "EvalResult",
    "BatchedEvaluator",
    "Completion",
    "Patch",
    "GradedLines",
    "Limit",
    "RulesText",
]
