"""An agent whose CLI `make quickstart` left out installs it on first use, saying so in one line: npm for real,
on a package pinned like the agents' own (a local dependency, so no registry is asked)."""

import json
import os
import stat
from pathlib import Path

import pytest

from helpers.agents.base import CLIAgent


def toy_package(root: Path) -> Path:
    """An agent package like cline/: a package.json whose one dependency brings the `toy` executable, and an
    install script that records the environment npm gave it."""
    cli = root / "toy-cli"
    (cli / "bin").mkdir(parents=True)
    (cli / "bin" / "toy").write_text("#!/bin/sh\necho toy\n")
    (cli / "bin" / "toy").chmod(stat.S_IRWXU)
    (cli / "package.json").write_text(json.dumps({"name": "toy-cli", "version": "1.0.0", "bin": {"toy": "bin/toy"}}))
    package = root / "toy_agent"
    package.mkdir()
    (package / "package.json").write_text(json.dumps({
        "name": "toy-agent-cli", "private": True, "dependencies": {"toy-cli": f"file:{cli}"},
        "scripts": {"postinstall": "env > install-env.txt"}}))
    return package


def toy_agent(package: Path) -> type[CLIAgent]:
    class ToyAgent(CLIAgent):
        name, package_dir, binary_path = "toy-agent", package, "node_modules/.bin/toy"

    return ToyAgent


def test_a_missing_cli_is_installed_once_on_first_use_with_one_line_and_no_key(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-install-scripts")
    package = toy_package(tmp_path)
    agent = toy_agent(package)

    binary = agent.binary()
    assert binary == package / "node_modules/.bin/toy" and os.access(binary, os.X_OK)
    assert (package / "node_modules/.installed").exists()  # the Makefile's marker: make sees it installed too
    said = capsys.readouterr().out.splitlines()
    assert len(said) == 1 and "Installing the toy-agent CLI on first use" in said[0], said
    assert "sk-not-for-install-scripts" not in (package / "install-env.txt").read_text()

    assert agent.binary() == binary and capsys.readouterr().out == ""  # once


def test_without_npm_the_missing_cli_is_one_error_naming_the_fix(tmp_path, monkeypatch):
    package = toy_package(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    with pytest.raises(FileNotFoundError, match=r"npm is not found.*make agent AGENT=toy-agent"):
        toy_agent(package).binary()
    assert not (package / "node_modules/.installed").exists()
