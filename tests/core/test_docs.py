"""The documentation is true and self-contained.

* Every ```python block of README.md and docs/*.md runs as written, in a fresh namespace, in an empty
  working folder (so files it writes land there). A block that loads ``runs/cartpole`` finds a tiny
  trained run there, as it would after the ``python train.py --run-name cartpole`` the README shows
  above it. No block is skipped.
* The README's SVGD example reaches its target.
* Every option in the documents' shell commands (``python train.py …``, ``python -m svpg.… …``,
  ``python bench/….py …``) exists in that command's ``--help``.
* The documents point nowhere outside the repository: relative links resolve to files (and headings)
  of the repository, and there are no working-log leftovers (session numbers, internal issue numbers,
  references to a design file that is not here).
"""
from __future__ import annotations

import contextlib
import io
import json
import re
import runpy
import shutil
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import CLASSIC

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ALL_DOCS = [*EXAMPLE_DOCS, ROOT / "CHANGELOG.md", ROOT / "DEVELOPERS.md"]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```", re.S | re.M)


def fenced_blocks(path: Path, language: str):
    text = path.read_text()
    for m in FENCE.finditer(text):
        if m.group(1).strip() == language:
            yield text[: m.start()].count("\n") + 1, m.group(2)


def python_examples():
    for path in EXAMPLE_DOCS:
        for line, code in fenced_blocks(path, "python"):
            # padded so that a traceback's line numbers are the document's
            yield pytest.param(path, "\n" * line + code, id=f"{path.relative_to(ROOT)}:{line}")


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory) -> Path:
    """A tiny stand-in for ``python train.py --run-name cartpole`` (same folder layout, 1 iteration)."""
    from svpg.rl.config import SVPGConfig
    from svpg.rl.trainer import SVPGTrainer

    log_dir = tmp_path_factory.mktemp("docs") / "runs"
    config = SVPGConfig(**CLASSIC, iterations=1, num_particles=4, samples_per_particle=200, run_name="cartpole",
                        log_dir=str(log_dir), progress=False)
    SVPGTrainer(config).train()
    return log_dir / "cartpole"


def test_every_python_fence_is_collected():
    """Python code only in ```python fences (the ones the test below runs), none under another tag."""
    for path in EXAMPLE_DOCS:
        tags = {m.group(1).strip() for m in FENCE.finditer(path.read_text())}
        assert not tags & {"py", "python3", "pycon", "ipython"}, f"{path.name}: use ```python so the example is tested"


@pytest.mark.parametrize("path, code", list(python_examples()))
def test_python_example_runs(path, code, tmp_path, monkeypatch, cartpole_run):
    monkeypatch.chdir(tmp_path)
    if "runs/cartpole" in code:
        shutil.copytree(cartpole_run, tmp_path / "runs" / "cartpole")
    torch.manual_seed(0)  # the examples' own torch.randn; library code has its own streams
    scope = {"__name__": "__docs__"}
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        exec(compile(code, str(path), "exec"), scope)
    if "svgd_direction(theta.detach(), grad)" in code:  # the README's SVGD example reaches its target
        theta = scope["theta"]
        torch.testing.assert_close(theta.mean(0), torch.tensor([1.0, -0.5]), atol=0.1, rtol=0)
        torch.testing.assert_close(torch.cov(theta.T), torch.tensor([[1.0, 0.6], [0.6, 0.8]]), atol=0.2, rtol=0)
    if "class Sign(gym.Env)" in code:  # docs/api.md's own, unregistered env learns what it prints
        assert float(printed.getvalue().split()[0]) >= 18  # the best particle's return: 20 is perfect, a coin scores 10
        env, total = scope["Sign"](), 0.0  # the loaded model acts with that particle on a fresh episode
        obs, _ = env.reset(seed=1)
        for _ in range(20):
            obs, reward, *_ = env.step(scope["model"].predict(obs, deterministic=True)[0])
            total += reward
        assert total >= 18


def test_the_checked_examples_exist():
    assert any("svgd_direction(theta.detach(), grad)" in c for _, c in fenced_blocks(ROOT / "README.md", "python"))
    assert any("class Sign(gym.Env)" in c for _, c in fenced_blocks(ROOT / "docs" / "api.md", "python"))


# --------------------------------------------------------------------------- shell commands


def shell_commands():
    """(doc, command words) of every `python …` and `svpg …` line in the documents' bash blocks."""
    for path in ALL_DOCS:
        for _, block in fenced_blocks(path, "bash"):
            for line in block.splitlines():
                line = line.split("#", 1)[0].strip()
                if line.startswith("python "):
                    yield path, line.split()[1:]
                elif line.startswith("svpg "):
                    yield path, line.split()


def command_key(words: list[str]) -> tuple[str, ...]:
    """What identifies a command's parser: the script or module, and train.py's front end."""
    if words[0] == "-m":
        return ("-m", words[1])
    if words[0] == "svpg":
        return ("svpg", words[1])
    if words[0] == "train.py" and len(words) > 1 and words[1] in ("bandit", "supervised"):
        return ("train.py", words[1])
    return (words[0],)


def help_text(key: tuple[str, ...], monkeypatch) -> str:
    out = io.StringIO()
    with monkeypatch.context() as m, contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        m.chdir(ROOT)
        m.syspath_prepend(str(ROOT))
        if key[0] == "svpg":
            from svpg.commands import main

            main([key[1], "--help"])
        elif key[0] == "-m":
            m.setattr(sys, "argv", [key[1], "--help"])
            runpy.run_module(key[1], run_name="__main__", alter_sys=False)
        else:
            m.setattr(sys, "argv", [key[0], *key[1:], "--help"])
            runpy.run_path(str(ROOT / key[0]), run_name="__main__")
    return out.getvalue()


def test_documented_commands_exist_with_their_options(monkeypatch):
    commands = list(shell_commands())
    assert len(commands) > 20
    helps: dict[tuple[str, ...], str] = {}
    for path, words in commands:
        key = command_key(words)
        if key[0] not in ("-m", "svpg"):
            assert (ROOT / key[0]).is_file(), f"{path.name}: `python {' '.join(words)}`: no file {key[0]}"
        if key not in helps:
            helps[key] = help_text(key, monkeypatch)
        options = {w.split("=", 1)[0] for w in words if w.startswith("--")}
        missing = sorted(o for o in options if not re.search(re.escape(o) + r"\b", helps[key]))
        assert not missing, f"{path.name}: `python {' '.join(words)}`: {missing} not in its --help"


# --------------------------------------------------------------------------- self-contained


FORBIDDEN = re.compile(r"(?i:session \d|issue #?\d)|DESIGN\b|/work/|\.\./shared|shared/papers")


def preset_comments() -> list[tuple[str, str]]:
    presets = sorted((ROOT / "svpg" / "rl" / "presets").glob("*.json"))
    return [(p.name, json.loads(p.read_text()).get("_comment", "")) for p in presets]


@pytest.mark.parametrize("name, text", [(p.name, p.read_text()) for p in ALL_DOCS] + preset_comments())
def test_no_working_log_or_outside_references(name, text):
    hits = [m.group(0) for m in FORBIDDEN.finditer(text)]
    assert not hits, f"{name}: {hits}"


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text())
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


@pytest.mark.parametrize("path", ALL_DOCS, ids=lambda p: p.name)
def test_links_stay_in_the_repository(path):
    text = FENCE.sub("", path.read_text())
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"https?://", target):
            continue
        assert not re.match(r"[a-z]+:|/", target), f"{path.name}: link {target} leaves the repository"
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        assert resolved.is_file() and ROOT in resolved.parents, f"{path.name}: link {target} has no file"
        if anchor and resolved.suffix == ".md":
            assert anchor in anchors(resolved), f"{path.name}: link {target}: no heading #{anchor}"
