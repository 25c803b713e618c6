"""Every results table of the documents, rebuilt from the result files under ``bench/results/``.

    python -m svpg.report                      # rewrite every table of README.md and docs/*.md from the files
    python -m svpg.report --check              # exit 1 at the first cell or quoted figure the files do not give
    python -m svpg.report gather runs/benchmark --into bench/results/benchmark_results.csv

A results table stands between two markers in its document, ``<!-- report:NAME -->`` and
``<!-- /report:NAME -->``; NAME is an entry of :data:`TABLES` (``svpg/report_tables.py``): the document,
the result file (CSV or JSON lines, one row per run unit: a seed, a split or a run) and the function that
formats the table from the file's rows. Under the table the report writes one line: the command that
reproduces it, its compute and the file it writes. A row whose units are not in the file says
*not re-measured* instead of a number. ``--check`` rebuilds every table in memory and names the first
cell that differs (document, table, row, column, the files' value and the document's), so a number in
a table that no file supports fails ``make test``. A table may draw a figure from its rows (:class:`Figure`: a
PNG under ``docs/img/`` that carries the SHA-256 of the rows it shows): the rebuild redraws it when they change,
and ``--check`` names one they no longer give. A figure the prose quotes stands between
``<!-- quote:TABLE/KEY -->`` and ``<!-- /quote -->`` on one line: KEY is an entry of :data:`QUOTES`, a value
formatted from the rows of the table TABLE (whose *Reproduce* line says where they come from), rebuilt and
checked as the tables are.

``gather`` exports the finished units of run folders into a result file: runs of
``python -m svpg.studies.benchmark`` (its ``--out`` or single run folders), of ``train.py bandit`` (one row per
agent and seed), of ``train.py supervised`` (one per method and split), of ``train.py`` (one per run that
reached its budget, at its last iteration; a run short of it is left out and named; a grid's ``--out`` of
``python -m svpg.studies.experiments`` or ``ablation`` gives its runs, and the ``sb3/`` folder of
``python -m svpg.studies.sb3`` in it one row per SB3 agent and seed). Each row carries the unit's setting
(options that differ from the defaults), its metrics, budget and wall-clock (a benchmark run's also its training
curve), and the machine and commit it ran at, as its run folder recorded them (``provenance.jsonl``;
``--machine`` and ``--commit`` set them instead). Rows already in the file with the same setting and seed or
split are replaced, others kept, so a user's own grid produces the same files as the committed ones.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from svpg.io import atomic_write

#: the repository's root (the documents and bench/results/ are read from here)
ROOT = Path(__file__).resolve().parents[1]
#: what a row without units in the result file says instead of a number
NOT_MEASURED = "not re-measured"
MARKER = re.compile(r"<!-- report:(?P<name>[\w.-]+) -->\n(?P<body>.*?)<!-- /report:(?P=name) -->", re.S)
QUOTE = re.compile(r"<!-- quote:(?P<table>[\w.-]+)/(?P<key>[\w.-]+) -->(?P<body>[^<\n]*)<!-- /quote -->")


class ReportError(ValueError):
    """A document or result file the report cannot use (one line naming the problem and the fix)."""


# -- result files -------------------------------------------------------------------------------------
def read_rows(path: Path) -> list[dict]:
    """The rows of a result file: CSV (a header line, values as strings) or JSON lines (``.jsonl``)."""
    path = Path(path)
    if not path.exists():
        raise ReportError(
            f"{path}: no such result file: gather it with python -m svpg.report gather RUN… --into {path}"
        )
    text = path.read_text()
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return list(csv.DictReader(io.StringIO(text)))


def write_rows(path: Path, rows: list[dict], columns: Sequence[str] = ()) -> None:
    """``rows`` as a result file (CSV: ``columns`` first, then any other key in order of appearance)."""
    path = Path(path)
    if path.suffix == ".jsonl":
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    else:
        names = list(dict.fromkeys([*columns, *(k for r in rows for k in r)]))
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=names, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: _text(r.get(k, "")) for k in names} for r in rows)
        text = buf.getvalue()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda tmp: Path(tmp).write_text(text))


def _text(value) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True) if value else ""
    return "" if value is None else str(value)


# -- tables -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Table:
    """One results table: where it stands, which file it comes from and how it is formatted.

    ``build`` turns the file's rows (those matching ``select``) into the table's Markdown lines;
    ``command``, ``compute`` and the file make the *Reproduce* line under it (``compute`` may be a
    function of the rows, e.g. the core-hours their wall-clock adds up to). ``command`` is what a reader
    pastes into a shell; ``first`` names in prose what to run before it (e.g. "the ablation commands
    above") and ``note`` says in prose how to repeat it (e.g. "for each task above")."""

    name: str
    doc: str
    source: str
    build: Callable[[list[dict]], str]
    command: str
    compute: str | Callable[[list[dict]], str]
    select: dict = field(default_factory=dict)
    first: str = ""
    note: str = ""
    figure: Figure | None = None

    def rows(self, root: Path) -> list[dict]:
        """The rows of the result file (a pattern with ``*``: of every file it matches) that match ``select``."""
        paths = sorted(root.glob(self.source)) if "*" in self.source else [root / self.source]
        if not paths:
            raise ReportError(f"{root / self.source}: no result file matches")
        rows = [row for path in paths for row in read_rows(path)]
        return [r for r in rows if all(str(r.get(k, "")) == str(v) for k, v in self.select.items())]

    def render(self, root: Path = ROOT, rows: list[dict] | None = None, body: str | None = None) -> str:
        """The table's Markdown (with its figure's image, where it draws one) and its *Reproduce* line, from
        ``rows`` (default: its result file's); ``body``: what ``build`` made of them, where already built."""
        rows = self.rows(root) if rows is None else rows
        compute = self.compute(rows) if callable(self.compute) else self.compute
        first = f"{self.first}, then " if self.first else ""
        note = f" {self.note}" if self.note else ""
        body = self.build(rows) if body is None else body
        if self.figure is not None:
            body += self.figure.markdown(rows, self.doc, after=bool(body))
        return f"{body}\nReproduce: {first}`{self.command}`{note} ({compute}), writes `{self.source}`.\n"


@dataclass(frozen=True)
class Figure:
    """The image a table draws: ``image`` under the checkout, drawn by ``draw(rows, path, metadata)`` from
    the rows ``rows`` picks of the table's, shown under the table with the alt text ``alt`` (or ``alt(picked
    rows)``) while there are any. The PNG carries the SHA-256 of those rows (:data:`FIGURE_SOURCE_KEY`), so
    ``--check`` finds an image that its result file no longer gives, and a rebuild redraws only an image
    whose rows changed."""

    image: str
    alt: str | Callable[[list[dict]], str]
    rows: Callable[[list[dict]], list[dict]]
    draw: Callable[[list[dict], Path, dict], None]

    def markdown(self, rows: list[dict], doc: str, after: bool) -> str:
        """The image's Markdown line for the document ``doc`` (after a blank line when ``after`` text), or
        nothing without rows to draw."""
        picked = self.rows(rows)
        if not picked:
            return ""
        alt = self.alt(picked) if callable(self.alt) else self.alt
        gap = "\n" if after else ""
        return f"{gap}![{alt}]({os.path.relpath(self.image, os.path.dirname(doc))})\n"


#: the key of a summary's rows that names the quoted table (the row's ``markdown`` is that table as built)
QUOTED = "quoted_table"


@dataclass(frozen=True)
class Summary(Table):
    """A table that quotes other tables' cells (README.md's results overview): its rows are the tables it ``quotes``,
    one row each, ``{QUOTED: name, "markdown": the table as its page shows it}``, so ``build`` picks cells of the
    pages' tables (:func:`quoted_cells`) and a figure changed in a page's table changes here with it. ``source``
    names in prose where the quoted tables' result files are."""

    quotes: tuple[str, ...] = ()

    def rows(self, root: Path, built: Callable[[str], str] | None = None) -> list[dict]:
        """One row per quoted table; ``built(name)`` gives a table's Markdown where a rebuild has it already."""
        tables = _tables()
        build = built or (lambda name: tables[name].build(tables[name].rows(root)))
        return [{QUOTED: name, "markdown": build(name)} for name in self.quotes]

    def render(self, root: Path = ROOT, rows: list[dict] | None = None, body: str | None = None) -> str:
        body = self.build(self.rows(root) if rows is None else rows) if body is None else body
        return (
            f"{body}\nReproduce: the commands under each linked page's tables write their result files under "
            f"`{self.source}`; `{self.command}` rebuilds this table from them ({self.compute}).\n"
        )


def quoted_cells(rows: list[dict], name: str) -> list[dict[str, str]]:
    """The cells of table ``name`` among a :class:`Summary`'s rows (header → cell, one dict per row)."""
    for row in rows:
        if row[QUOTED] == name:
            return table_cells(row["markdown"])
    raise ValueError(f"table {name} is not among the summary's quoted tables: add it to quotes")


def table_cells(markdown: str) -> list[dict[str, str]]:
    """The rows of the Markdown tables in ``markdown`` as :func:`render_table` writes them: header → cell."""
    lines = markdown.splitlines()
    out: list[dict[str, str]] = []
    header: list[str] = []
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            header = []
        elif i + 1 < len(lines) and lines[i + 1].startswith("|-") and not header:
            header = _cells(line)
        elif header and not line.startswith("|-"):
            out.append(dict(zip(header, _cells(line), strict=True)))
    return out


def _digest(picked: list[dict]) -> str:
    return hashlib.sha256(json.dumps(picked, sort_keys=True).encode()).hexdigest()


#: the PNG text key of a figure's rows' SHA-256
FIGURE_SOURCE_KEY = "svpg-source-sha256"


def png_text(path: Path) -> dict[str, str]:
    """The tEXt entries of a PNG file (empty for a file that is not one)."""
    data = Path(path).read_bytes() if Path(path).is_file() else b""
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return {}
    out, at = {}, 8
    while at + 8 <= len(data):
        length, kind = int.from_bytes(data[at : at + 4], "big"), data[at + 4 : at + 8]
        if kind == b"tEXt":
            key, _, value = data[at + 8 : at + 8 + length].partition(b"\0")
            out[key.decode("latin-1")] = value.decode("latin-1")
        at += 12 + length
    return out


def figure_problem(table: Table, rows: list[dict], root: Path, check: bool) -> str | None:
    """Where ``table`` draws a figure: with ``check``, a line when the image is not drawn from ``rows`` (its result
    file's now); else redraw the image when they changed. None when the image is current (or has no rows)."""
    figure = table.figure
    if figure is None:
        return None
    picked = figure.rows(rows)
    if not picked:
        return None
    path, digest = root / figure.image, _digest(picked)
    if png_text(path).get(FIGURE_SOURCE_KEY) == digest:
        return None
    if check:
        return (
            f"{figure.image}: figure {table.name} is not drawn from the rows of {table.source}: "
            "run python -m svpg.report"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.draw(picked, path, {FIGURE_SOURCE_KEY: digest})
    return None


TABLES: dict[str, Table] = {}
#: (table, key) → the function that formats a figure of the prose from that table's rows and its Markdown as built
QUOTES: dict[tuple[str, str], Callable[[list[dict], str], str]] = {}


def register(table: Table) -> Table:
    if table.name in TABLES:
        raise ValueError(f"report table {table.name!r} is registered twice")
    TABLES[table.name] = table
    return table


def register_quotes(table: str, quotes: dict[str, Callable[[list[dict], str], str]]) -> None:
    """Figures the prose quotes from table ``table``: key → function of its rows and its Markdown as built (whose
    cells :func:`table_cells` reads) giving the quoted text."""
    for key, value in quotes.items():
        if (table, key) in QUOTES:
            raise ValueError(f"quote {table}/{key} is registered twice")
        QUOTES[(table, key)] = value


def render_table(header: Sequence[str], rows: Sequence[Sequence], align: str | None = None) -> str:
    """A Markdown table as the documents write it: ``| a | b |`` without padding, ``|---|---:|``."""
    align = align or "l" + "r" * (len(header) - 1)
    if len(align) != len(header):
        raise ValueError(f"align {align!r}: one letter per column ({len(header)})")
    lines = ["| " + " | ".join(header) + " |", "|" + "".join("---|" if a == "l" else "---:|" for a in align)]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"row {list(row)} has {len(row)} cells, the header {len(header)}")
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines) + "\n"


#: the pair count :func:`svpg.stats.format_difference` ends a paired difference with
PAIRS = re.compile(r" \(n=(\d+)\)$")


def doc_number(text: str) -> str:
    """A cell of :mod:`svpg.stats` as the documents print it: Unicode minus signs, no ``(n=…)`` count."""
    text = PAIRS.sub("", str(text))
    return re.sub(r"(?<![\w.])-(?=\d)", "−", text)


def _tables() -> dict[str, Table]:
    import svpg.report  # run as ``python -m svpg.report`` this module is __main__: the registry is svpg.report's
    import svpg.report_tables  # noqa: F401  (registers the tables)

    return svpg.report.TABLES


def _quotes() -> dict[tuple[str, str], Callable[[list[dict], str], str]]:
    import svpg.report
    import svpg.report_quotes  # noqa: F401  (registers the quotes)

    return svpg.report.QUOTES


# -- rebuild and check --------------------------------------------------------------------------------
DOCS = ("README.md", "docs/*.md")


def documents(root: Path) -> list[Path]:
    return [p for pattern in DOCS for p in sorted(root.glob(pattern))]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def first_difference(doc: str, name: str, expected: str, found: str) -> str | None:
    """None if equal, else one line naming the first differing cell (or line) of table ``name``."""
    if expected == found:
        return None
    want, have = expected.splitlines(), found.splitlines()
    header: list[str] = []
    for i in range(max(len(want), len(have))):
        w = want[i] if i < len(want) else "(nothing)"
        h = have[i] if i < len(have) else "(nothing)"
        if w.startswith("|") and (i == 0 or not want[i - 1].startswith("|")):
            header = _cells(w)
        if w == h:
            continue
        if w.startswith("|") and h.startswith("|"):
            a, b = _cells(w), _cells(h)
            for j in range(max(len(a), len(b))):
                x, y = (a[j] if j < len(a) else "(none)"), (b[j] if j < len(b) else "(none)")
                if x != y:
                    column = header[j] if j < len(header) else f"column {j + 1}"
                    return (
                        f"{doc}: table {name}, row {a[0]!r}, column {column!r}: "
                        f"the result file gives {x!r}, the document has {y!r}"
                    )
        return f"{doc}: table {name}, line {i + 1}: the result file gives {w!r}, the document has {h!r}"
    return f"{doc}: table {name} differs"  # pragma: no cover (line endings only)


def rebuild(root: Path = ROOT, check: bool = False, names: Sequence[str] | None = None) -> list[str]:
    """Rebuild every registered table and quote in its document (``check``: only compare). Returns the
    problems: with ``check``, every table that differs (its first differing cell) and every quote; always,
    markers that name no table or quote, and tables and quotes that no document marks."""
    tables, quotes = _tables(), _quotes()
    problems: list[str] = []
    seen: set[str] = set()
    used_quotes: set[tuple[str, str]] = set()
    built: dict[str, tuple[list[dict], str]] = {}

    def build(name: str) -> tuple[list[dict], str]:
        """Table ``name``'s rows and what its ``build`` makes of them, once per rebuild (a summary quotes it too)."""
        if name not in built:
            table = tables[name]
            rows = table.rows(root, lambda quoted: build(quoted)[1]) if isinstance(table, Summary) else table.rows(root)
            built[name] = rows, table.build(rows)
        return built[name]

    for path in documents(root):
        text = path.read_text()
        doc = str(path.relative_to(root))

        def replace(m: re.Match, doc=doc) -> str:
            name = m["name"]
            if name not in tables:
                problems.append(f"{doc}: marker report:{name} names no table: register it in svpg/report_tables.py")
                return m.group(0)
            table = tables[name]
            if table.doc != doc:
                problems.append(f"{doc}: table {name} belongs in {table.doc}")
            if name in seen:
                problems.append(f"{doc}: table {name} is marked twice")
            seen.add(name)
            if names is not None and name not in names:
                return m.group(0)
            rows, built_body = build(name)
            body = table.render(root, rows, built_body)
            drawn = figure_problem(table, rows, root, check)
            if drawn:
                problems.append(drawn)
            if check:
                diff = first_difference(doc, name, body, m["body"])
                if diff:
                    problems.append(diff)
            return f"<!-- report:{name} -->\n{body}<!-- /report:{name} -->"

        def replace_quote(m: re.Match, doc=doc) -> str:
            name, key = m["table"], m["key"]
            used_quotes.add((name, key))
            if (name, key) not in quotes:
                problems.append(
                    f"{doc}: marker quote:{name}/{key} names no quote: register it in svpg/report_quotes.py"
                )
                return m.group(0)
            if names is not None and name not in names:
                return m.group(0)
            value = quotes[(name, key)](*build(name))
            if check and value != m["body"]:
                problems.append(
                    f"{doc}: quote {name}/{key}: the result file gives {value!r}, the document has {m['body']!r}"
                )
            return f"<!-- quote:{name}/{key} -->{value}<!-- /quote -->"

        new = QUOTE.sub(replace_quote, MARKER.sub(replace, text))
        if not check and new != text:
            atomic_write(path, lambda tmp, new=new: Path(tmp).write_text(new))
    for name, table in tables.items():
        if name not in seen and (names is None or name in names):
            problems.append(
                f"{table.doc}: no markers <!-- report:{name} --> … <!-- /report:{name} --> for table {name}"
            )
    for name, key in quotes:
        if (name, key) not in used_quotes and (names is None or name in names):
            problems.append(f"no document quotes {name}/{key}: quote it as <!-- quote:{name}/{key} -->… or remove it")
    return problems


# -- gather -------------------------------------------------------------------------------------------
def _changed_options(config: dict, defaults: dict, skip: Sequence[str]) -> dict:
    """The options of a run that differ from the defaults (those in ``skip`` say how it ran, not what)."""
    return {k: v for k, v in sorted(config.items()) if k in defaults and k not in skip and v != defaults[k]}


def _dataclass_defaults(cls) -> dict:
    import dataclasses

    out = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return json.loads(json.dumps(out, default=list))


#: columns that identify a unit, per kind of run: rows with the same values are one unit
UNIT_KEYS = {
    "benchmark": ("task", "agent", "options", "seed"),  # options: tuning runs of other svpg options apart
    "bandit": ("problem", "rounds", "options", "agent", "seed"),
    "supervised": ("dataset", "protocol", "options", "method", "split"),
    "rl": ("env_id", "method", "estimator", "options", "seed"),
}


def _benchmark_rows(run: Path) -> list[dict]:
    """The run's result, its options, and its training curve (``curve``: [steps, return, mean return] per
    progress row, :func:`svpg.studies.benchmark.curve_rows`), from which the documents' curves are drawn."""
    from svpg.studies import sb3
    from svpg.studies.benchmark import JOB, PROGRESS, RESULT, curve_rows

    result = json.loads((run / RESULT).read_text())
    job = json.loads((run / JOB).read_text())
    curve = [
        [r["total_steps"], _rounded(r["return"]), _rounded(r["return_mean"])]
        for r in curve_rows(result["agent"], sb3.read_rows(run / PROGRESS))
    ]
    return [{**result, "options": job.get("svpg_options") or job.get("sb3_options") or {}, "curve": curve}]


def _rounded(value: float) -> float | None:
    """A curve's return to 0.1 (a figure's resolution; keeps the result file small); NaN (no finished episode)
    as null."""
    return round(value, 1) if math.isfinite(value) else None


def _bandit_rows(run: Path) -> list[dict]:
    from svpg.bandits.cli import RESUME_OPTIONS, BanditConfig
    from svpg.bandits.compare import load_runs

    config, table = load_runs([run])
    full = json.loads((run / "config.json").read_text())
    # the unit's own columns, and the options that leave a seed's results unchanged (--num-seeds, --data-dir, …)
    skip = (*RESUME_OPTIONS, "problem", "rounds", "seed", "agents", "run_name", "log_dir")
    options = _changed_options(full, _dataclass_defaults(BanditConfig), skip)
    # the wheel's δ as a column of its own (also where it is the default, so not among the options)
    problem = {"delta": config["delta"]} if config["problem"] == "wheel" else {}
    return [
        {
            "problem": config["problem"],
            "rounds": config["rounds"],
            "options": options,
            "agent": agent,
            "seed": seed,
            **problem,
            **values,
        }
        for (agent, seed), values in sorted(table.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    ]


#: what a supervised row records of a (method, split) fit besides its test metrics: its training and test rows,
#: the epoch whose weights it kept, its wall-clock seconds and mean seconds per epoch
SUPERVISED_FIT_KEYS = ("n_train", "n_test", "best_epoch", "seconds", "seconds_per_epoch")


def _supervised_rows(run: Path) -> list[dict]:
    """One row per finished (method, split): the metrics of its split file, the epochs it trained (what the options
    resolved to), and for classification the validation figures of every evaluated epoch (its TensorBoard curves:
    ``val_log_likelihood`` and ``val_error`` as ``[[epoch, value], …]``)."""
    import dataclasses

    from svpg.supervised.compare import RESULT_KEYS, load_runs
    from svpg.supervised.config import SupervisedConfig
    from svpg.supervised.runfolder import RESUME_OPTIONS, load_config, validation_curves

    shared, table, labels = load_runs([run])
    cfg, built = load_config(run)
    full = json.loads(json.dumps(dataclasses.asdict(cfg), default=list))
    # the unit's own columns, and the options that leave a split's results unchanged (threads, device, --compile, …)
    skip = (*RESUME_OPTIONS, "dataset", "protocol", "method", "run_name", "log_dir", "save_models")
    options = _changed_options(full, _dataclass_defaults(SupervisedConfig), skip)
    epochs = built.get("resolved", {}).get("epochs", {})
    rows = []
    for method, by_split in table.items():
        for split, row in sorted(by_split.items()):
            metrics = {k: row[k] for k in RESULT_KEYS if k in row}
            fit = {k: row[k] for k in SUPERVISED_FIT_KEYS if k in row}
            curves = validation_curves(run, method, split) if "error" in row else {}
            rows.append(
                {
                    "dataset": shared["dataset"],
                    "protocol": shared["protocol"],
                    "options": options,
                    "method": method,
                    "label": labels.get(method, method),
                    "split": split,
                    **metrics,
                    **({"epochs": epochs[method]} if method in epochs else {}),
                    **fit,
                    **curves,
                }
            )
    return rows


#: the run folders of python -m svpg.studies.experiments and ablation: ``<method or cell>__<estimator>__seed<s>``
STUDY_RUN = re.compile(r"^(?P<label>.+)__(?P<estimator>[\w-]+)__seed(?P<seed>\d+)$")
#: the folder of python -m svpg.studies.sb3 under a grid's ``--out``, and its evaluations
SB3_FOLDER, SB3_CURVES = "sb3", "curves.csv"


def rl_run_unfinished(config: dict, last: dict | None) -> str | None:
    """How far a train.py run with ``config`` and last progress row ``last`` is from its budget (its config's
    ``total_steps``, else its ``iterations``), or ``None`` when it has reached it: an interrupted run resumes,
    so its last iteration is not its final one."""
    done = int(float(last["total_steps"])) if last else 0
    if config.get("total_steps"):
        return None if last and done >= config["total_steps"] else f"{done:,} of {config['total_steps']:,} steps"
    at, planned = (int(float(last["iteration"])) if last else 0), config.get("iterations", 0)
    return None if last and at >= planned else f"iteration {at} of {planned}"


def _rl_rows(run: Path, skipped: list[str] | None = None) -> list[dict]:
    """One row per run that reached its budget (else none, and ``skipped`` names it), at its last iteration: its
    final returns (mean and max over particles), its budget and wall-clock, and its per-iteration returns
    ``mean_curve`` and ``max_curve`` (the paper grid's peak is the best iteration of the seed-averaged curve,
    the ablation's smoothed over iterations: not a figure of one seed). A run of the studies' grids also records
    its ``cell`` (the ablation's cell, the grid's method), and one of the ablation (its ``--out`` holds
    ``timing/``) the diversity of its final particles, ``action_kl``, and the seconds per iteration of its seed
    batch, ``seconds_per_iteration``.
    The folder of ``python -m svpg.studies.sb3`` gives one row per agent and seed (:func:`_sb3_rows`)."""
    from svpg.rl.checkpoints import PROGRESS_FILE, ProgressCSV
    from svpg.runs import CONFIG_FILE

    if _is_sb3_folder(run):
        return _sb3_rows(run)
    config = json.loads((run / CONFIG_FILE).read_text())
    progress = ProgressCSV.read(run / PROGRESS_FILE)
    last = progress[-1] if progress else None
    why = rl_run_unfinished(config, last)
    if why is not None or last is None:
        if skipped is not None:
            skipped.append(f"{run} ({why})")
        return []
    row = {
        "env_id": config["env_id"],
        "method": config["method"],
        "estimator": config["estimator"],
        "options": rl_options(config),
        "seed": config.get("seed"),
        "iteration": int(float(last["iteration"])),
        "total_steps": int(float(last["total_steps"])),
        "final_mean": float(last["rollout/ep_rew_mean"]),
        "final_max": float(last["rollout/ep_rew_max"]),
    }
    for key in ("time/wall", "time/total"):
        if key in last:
            row["wall_s"] = float(last[key])
            break
    study = STUDY_RUN.match(run.name)
    if study and study["estimator"] == config["estimator"] and int(study["seed"]) == config.get("seed"):
        row["cell"] = study["label"]
        if (run.parent / "timing").is_dir():
            row["action_kl"] = _action_kl(run, config)
            row["seconds_per_iteration"] = _batch_seconds(run, study["label"], config["estimator"], row["seed"])
    row["mean_curve"] = [float(r["rollout/ep_rew_mean"]) for r in progress]
    row["max_curve"] = [float(r["rollout/ep_rew_max"]) for r in progress]
    return [row]


def rl_options(config: dict) -> dict:
    """The options of an RL run's row: the fields of its configuration (or of a preset with a method's settings)
    that differ from train.py's defaults, less the unit's own columns and those that say how it ran (seed, threads,
    device, run name, log dir, progress, checkpoints, its length: :data:`svpg.rl.compare.RUN_ONLY`)."""
    from svpg.rl.compare import RUN_ONLY
    from svpg.rl.config import SVPGConfig

    config = json.loads(json.dumps(config, default=list))  # tuples as the run's config.json writes them
    return _changed_options(config, _dataclass_defaults(SVPGConfig), (*RUN_ONLY, "env_id", "method", "estimator"))


def _action_kl(run: Path, config: dict) -> float:
    """The ablation's action KL of the run's final particles (:func:`svpg.studies.ablation_analysis.diversity`)."""
    from svpg.rl.config import default_horizon
    from svpg.studies.ablation_analysis import diversity

    states = _probe_states(config["env_id"], config.get("horizon") or default_horizon(config["env_id"]))
    return diversity(run, states)["action_kl"]


def _batch_seconds(run: Path, cell: str, estimator: str, seed: int) -> float:
    """Wall-clock seconds per iteration of the seed batch the run trained in, from the ablation's ``timing/``."""
    from svpg.studies.ablation_analysis import batch_seeds, seconds_per_iteration

    return seconds_per_iteration(run.parent, cell, estimator, batch_seeds(run.parent, cell, estimator, seed))


_PROBES: dict[tuple[str, int], object] = {}


def _probe_states(env_id: str, horizon: int):
    from svpg.studies.ablation_analysis import probe_states

    if (env_id, horizon) not in _PROBES:  # the same states for every run of a task: made once per gather
        _PROBES[env_id, horizon] = probe_states(env_id, horizon)
    return _PROBES[env_id, horizon]


def _is_sb3_folder(path: Path) -> bool:
    """The folder of ``python -m svpg.studies.sb3`` (its ``curves.csv`` has an ``algo`` column), not a benchmark's
    ``--out`` that happens to be named so (its ``curves.csv`` names an ``agent``)."""
    from svpg.comparing import is_rl_run

    curves = path / SB3_CURVES
    if path.name != SB3_FOLDER or not curves.is_file() or is_rl_run(path):
        return False
    with open(curves, newline="") as f:
        return "algo" in next(csv.reader(f), [])


def _sb3_rows(folder: Path) -> list[dict]:
    """One row per (agent, seed) of ``python -m svpg.studies.sb3``'s ``curves.csv``: method ``sb3-<agent>``, its
    budget in steps as its option, the final deterministic evaluation return and the evaluation curve as
    ``mean_curve`` (one policy: its mean and max over particles are the same)."""
    rows = read_rows(folder / SB3_CURVES)
    if rows and "env_id" not in rows[0]:
        raise ReportError(
            f"{folder / SB3_CURVES} does not name its task (written before curves.csv recorded env_id): "
            "train it again with python -m svpg.studies.sb3 into a new --out"
        )
    runs: dict[tuple[str, int], list[dict]] = {}
    for r in rows:
        runs.setdefault((r["algo"], int(r["seed"])), []).append(r)
    out = []
    for (algo, seed), evaluations in sorted(runs.items()):
        evaluations.sort(key=lambda r: int(r["total_steps"]))
        curve = [float(r["eval_mean"]) for r in evaluations]
        steps = int(evaluations[-1]["total_steps"])
        out.append(
            {
                "env_id": evaluations[-1]["env_id"],
                "method": f"sb3-{algo}",
                "estimator": "",
                "options": {"steps": steps},
                "seed": seed,
                "total_steps": steps,
                "final_mean": curve[-1],
                "final_max": curve[-1],
                "mean_curve": curve,
                "max_curve": curve,
            }
        )
    return out


def run_units(path: Path) -> tuple[str, list[Path]]:
    """(kind, run folders) of ``path``: one run folder, or a folder of them (a benchmark's or experiments'
    ``--out``)."""
    from svpg.compare import run_kind
    from svpg.rl.compare import expand, is_benchmark_run

    path = Path(path)
    if _is_sb3_folder(path):
        return "rl", [path]
    sb3 = [path / SB3_FOLDER] if _is_sb3_folder(path / SB3_FOLDER) else []  # beside a grid's runs, in its --out
    kind = run_kind(path)
    if kind in ("bandit", "supervised"):
        return kind, [path]
    if kind is None and sb3:
        return "rl", sb3
    if kind == "rl":
        runs = expand([path])
        benchmark = [is_benchmark_run(r) for r in runs]
        if all(benchmark):
            return "benchmark", runs
        if not any(benchmark):
            return "rl", runs + sb3
        raise ReportError(f"{path} holds runs of python -m svpg.studies.benchmark and of train.py: gather them apart")
    raise ReportError(
        f"{path} is not a run folder of train.py, train.py bandit, train.py supervised or "
        "python -m svpg.studies.benchmark, and holds none: pass runs/<run-name> or a grid's --out"
    )


def run_provenance(run: Path) -> dict:
    """The machine and commit a run folder's units ran on, from the records of the processes that wrote it
    (:func:`svpg.runs.record_provenance`; several joined by `` + ``, in order, for a run resumed elsewhere); a
    folder written before they were recorded gets this machine and this checkout's commit."""
    from svpg.runs import describe_machine, read_provenance, source_commit

    records = read_provenance(run)

    def joined(key: str, fallback: str) -> str:
        values = list(dict.fromkeys(str(r[key]) for r in records if r.get(key)))
        return " + ".join(values) if values else fallback

    return {"machine": joined("machine", describe_machine()), "commit": joined("commit", source_commit())}


READERS = {"benchmark": _benchmark_rows, "bandit": _bandit_rows, "supervised": _supervised_rows, "rl": _rl_rows}


def gather(
    paths: Sequence[str | Path],
    into: str | Path,
    machine: str | None = None,
    commit: str | None = None,
    skipped: list[str] | None = None,
) -> int:
    """Export the finished units of the run folders ``paths`` into the result file ``into`` (see the
    module docstring). Returns the number of rows written or replaced; ``skipped`` receives the train.py runs
    left out because they have not reached their budget yet."""
    into = Path(into)
    kinds, new = set(), []
    for path in paths:
        kind, runs = run_units(Path(path))
        kinds.add(kind)
        for run in runs:
            rows = _rl_rows(run, skipped) if kind == "rl" else READERS[kind](run)
            written = run_provenance(run)
            where = {"machine": machine or written["machine"], "commit": commit or written["commit"]}
            new += [{**row, **where} for row in rows]
    if len(kinds) > 1:
        raise ReportError(
            f"{', '.join(map(str, paths))}: runs of {' and '.join(sorted(kinds))}: gather one kind per file"
        )
    if not new:
        raise ReportError(f"{', '.join(map(str, paths))}: no finished unit (seed, split or run) to gather")
    keys = UNIT_KEYS[kinds.pop()]
    old = read_rows(into) if into.exists() else []
    columns = list(old[0]) if old else []

    def key(row: dict) -> tuple:
        return tuple(_text(row.get(k, "")) for k in keys)

    replaced = {key(r) for r in new}
    kept = [r for r in old if key(r) not in replaced]
    write_rows(into, kept + new, columns)
    return len(new)


# -- the command line ---------------------------------------------------------------------------------
def build_parser(prog: str = "python -m svpg.report"):
    from svpg.cli import Parser

    p = Parser(prog=prog, description=__doc__)
    p.add_argument(
        "--check",
        action="store_true",
        help="compare only: exit 1 at the first table cell or quoted figure the files do not give",
    )
    p.add_argument("--tables", default=None, help="only these tables (comma-separated names; default: every one)")
    p.add_argument("--root", default=str(ROOT), help="the checkout whose documents and bench/results/ are read")
    p.add_argument("--list", action="store_true", help="print every table: name, document, result file")
    return p


def build_gather_parser(prog: str):
    from svpg.cli import Parser

    p = Parser(prog=prog, description="Export the finished units of run folders into a result file.")
    p.add_argument("runs", nargs="+", help="run folders (runs/<run-name>) or a grid's --out")
    p.add_argument(
        "--into", required=True, help="the result file (.csv or .jsonl); rows of the same units are replaced"
    )
    p.add_argument(
        "--machine",
        default=None,
        help="the machine the runs ran on, for every row (default: what each run folder recorded: CPU and OS)",
    )
    p.add_argument(
        "--commit",
        default=None,
        help="the commit the runs ran at, for every row (default: what each run folder recorded)",
    )
    return p


def main(argv: list[str] | None = None, prog: str = "python -m svpg.report") -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["gather"]:
        p = build_gather_parser(f"{prog} gather")
        args = p.parse_args(argv[1:])
        try:
            skipped: list[str] = []
            n = gather(args.runs, args.into, args.machine, args.commit, skipped)
        except ValueError as e:
            p.error(str(e))
        print(f"{n} rows into {args.into}")
        if skipped:
            print(
                f"left out {len(skipped)} runs short of their budget (resume them, then gather again): "
                + ", ".join(skipped)
            )
        return 0
    p = build_parser(prog)
    args = p.parse_args(argv)
    root = Path(args.root)
    try:
        if args.list:
            for name, table in _tables().items():
                print(f"{name}\t{table.doc}\t{table.source}")
            return 0
        names = [n for n in args.tables.split(",") if n] if args.tables else None
        unknown = [n for n in names or [] if n not in _tables()]
        if unknown:
            raise ReportError(f"--tables {','.join(unknown)}: no such table (python -m svpg.report --list names them)")
        problems = rebuild(root, check=args.check, names=names)
    except ValueError as e:
        p.error(str(e))
    for problem in problems[:1] if args.check else problems:
        print(problem, file=sys.stderr)
    if args.check and len(problems) > 1:
        print(f"… and {len(problems) - 1} more table(s) or quote(s) differ", file=sys.stderr)
    if not problems and not args.check:
        print(f"rebuilt {len(names or _tables())} tables")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
