"""CODE_APPENDIX.md stays true to the code: every public helper is there, with its real parameters."""

import importlib
import inspect
import re

from helpers.core.config import REPO_ROOT

APPENDIX = REPO_ROOT / "CODE_APPENDIX.md"
# `### \`module.name(param, param, *, keyword)\`` — one heading per public function or class.
HEADING = re.compile(r"^### `([\w.]+)\.(\w+)\((.*)\)`", re.M)


def documented() -> dict[tuple[str, str], list[str]]:
    return {(module, name): [p.strip() for p in params.split(",") if p.strip()]
            for module, name, params in HEADING.findall(APPENDIX.read_text())}


def documented_modules() -> list[str]:
    return re.findall(r"^## `([\w.]+)`", APPENDIX.read_text(), re.M)


def public_names(module_name: str) -> list[str]:
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    return [n for n in names
            if (inspect.isfunction(getattr(module, n, None)) or inspect.isclass(getattr(module, n, None)))
            and getattr(getattr(module, n), "__module__", "") == module_name]


def parameters(obj) -> list[str]:
    target = obj.__init__ if inspect.isclass(obj) else obj
    shown, star = [], False
    for p in inspect.signature(target).parameters.values():
        if p.name == "self":
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            shown.append("*")
            star = True
        shown.append({p.VAR_POSITIONAL: f"*{p.name}", p.VAR_KEYWORD: f"**{p.name}"}.get(p.kind, p.name))
        star = star or p.kind is p.VAR_POSITIONAL
    return shown


def test_every_public_function_and_class_of_a_documented_module_is_in_the_appendix():
    have = documented()
    missing = [f"{m}.{n}" for m in documented_modules() for n in public_names(m) if (m, n) not in have]
    assert not missing, f"Add these to CODE_APPENDIX.md: {missing}"


def test_the_appendix_shows_each_helpers_real_parameters():
    wrong = []
    for (module, name), params in documented().items():
        obj = getattr(importlib.import_module(module), name, None)
        assert obj is not None, f"CODE_APPENDIX.md documents {module}.{name}, which does not exist"
        if params != parameters(obj):
            wrong.append(f"{module}.{name}({', '.join(parameters(obj))})")
    assert not wrong, "Update these headings in CODE_APPENDIX.md:\n" + "\n".join(wrong)


def test_the_public_names_the_cookbook_imports_are_documented():
    names = {name for _, name in documented()}
    for name in ("run_act", "evaluate_results", "PromptLearningOptimizer", "log_experiment_to_phoenix",
                 "load_swebench", "load_house_suite", "split_dataset", "evaluate_patch"):
        assert name in names, f"{name} is missing from CODE_APPENDIX.md"
