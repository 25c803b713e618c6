"""RL training states on disk and the RL run folder: :meth:`svpg.SVPG.save` / :meth:`~svpg.SVPG.load`
files, ``progress.csv``, the checkpoints (one file per saved iteration), and resuming.

A saved model is a safetensors file (loading never unpickles): θ, the SVGD optimizer and the estimator's
state (critics, replay buffer) flattened to tensors, the last returns and the normaliser's statistics,
with JSON metadata holding the policy spec, the single-seed config, the env id and kwargs, the
iteration (the position of every random stream) and the learning-rate schedule. A seed-batched model
saves each seed's rows as that seed's single-seed run would.

A checkpoint of iteration n is ``<run>/checkpoints/iter_<n>.safetensors``, such a file stamped with
``{iteration, progress_rows, theta_sha256}``. It is written atomically after ``progress.csv`` is
durable up to row n, and a run folder's ``model.safetensors`` is then a copy of it. A process killed at
any moment therefore leaves complete checkpoints only (and perhaps a ``.*.tmp`` file, removed on
resume), and ``progress.csv`` is never behind one. Continuing from iteration n
(:func:`prepare_run_dir`) moves later checkpoints and their progress rows aside, never deleting them;
:func:`resume_points` picks the newest consistent checkpoint every seed's folder has.

The folder itself (created or refused, locked, ``config.json``) is :mod:`svpg.runs`', shared by every
front end; :class:`svpg.rl.trainer.SVPGTrainer` and :class:`~svpg.rl.callbacks.CheckpointCallback` use
this module for everything RL-specific in it.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import torch

from svpg.io import CheckpointError, WriteError, flatten_state, load_tensors, save_tensors, unflatten_state, write_csv
from svpg.rl.config import SB3_LOAD_OPTIONS, SVPGConfig
from svpg.rl.policies import POLICY_KIND, ParticlePolicy, PolicySpec
from svpg.runs import remove_stray_temporaries

#: the format tag of a saved model's metadata
MODEL_FORMAT = "svpg-model-v1"


# -- a model's training state ------------------------------------------------------------------
def _split_rows(state, parts: int):
    """Split every tensor of a (nested) state along its first axis into ``parts`` (per-seed optimizer
    and critic state of a seed-batched run); other values are copied to every part."""
    if parts == 1:
        return [state]
    if isinstance(state, torch.Tensor) and state.ndim >= 1:
        return [t.clone() for t in state.chunk(parts)]
    if isinstance(state, dict):
        split = {k: _split_rows(v, parts) for k, v in state.items()}
        return [{k: v[i] for k, v in split.items()} for i in range(parts)]
    if isinstance(state, list):
        split_items = [_split_rows(v, parts) for v in state]
        return [[v[i] for v in split_items] for i in range(parts)]
    return [state] * parts


def _join_rows(states: list):
    """The inverse of :func:`_split_rows`."""
    if len(states) == 1:
        return states[0]
    first = states[0]
    if isinstance(first, torch.Tensor) and first.ndim >= 1:
        return torch.cat(states)
    if isinstance(first, dict):
        return {k: _join_rows([s[k] for s in states]) for k in first}
    if isinstance(first, list):
        return [_join_rows([s[i] for s in states]) for i in range(len(first))]
    return first


def check_seed_index(model, k) -> int:
    """``k`` if it names one of the model's seeds (0 … S − 1), else a one-line ValueError."""
    s = len(model.seeds)
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < s:
        raise ValueError(f"seed_index must be an integer from 0 to {s - 1} (the model runs {s} seed(s)), got {k!r}")
    return k


def model_state(model, k: int = 0) -> tuple[dict[str, torch.Tensor], dict]:
    """Seed k's whole training state of an :class:`svpg.SVPG` as (tensors, JSON metadata)."""
    s, k = len(model.seeds), check_seed_index(model, k)
    optimizer = _split_rows(model.svgd.optimizer.state_dict(), s)[k]
    estimator = _split_rows(model.estimator.state_dict(), s)[k]
    policy = model.seed_policy(k)
    opt_tensors, opt_skeleton = flatten_state(optimizer, "optimizer")
    est_tensors, est_skeleton = flatten_state(estimator, "estimator")
    tensors = {
        "theta": policy.theta,
        "last_returns": model.last_returns.view(s, -1)[k],
        **opt_tensors,
        **est_tensors,
    }
    if model.normalizer is not None:
        tensors.update({f"normalizer.{name}": value[k] for name, value in model.normalizer.state_dict().items()})
    if policy.obs_normalization is not None:  # what svpg.load's policy applies to raw observations
        tensors.update(obs_norm_mean=policy.obs_normalization["mean"], obs_norm_std=policy.obs_normalization["std"])
    metadata = {
        "model_format": MODEL_FORMAT,
        "spec": policy.spec.to_dict(),
        "particle": policy.particle,
        "config": dataclasses.asdict(model.seed_config(k)),
        "env_id": model.config.env_id,
        "env_kwargs": model.config.env_kwargs,
        "iteration": model.iteration,
        "num_timesteps": model.num_timesteps,
        "schedule": list(model.schedule),
        "optimizer": opt_skeleton,
        "estimator": est_skeleton,
    }
    if policy.obs_normalization is not None:
        metadata["obs_norm_clip"] = policy.obs_normalization["clip"]
    return tensors, metadata


def save_model(model, path, seed_index: int = 0) -> Path:
    """:meth:`svpg.SVPG.save`: seed ``seed_index``'s training state to ``path`` (``.safetensors``
    appended if it has no suffix)."""
    path = Path(path)
    if not path.suffix:
        path = path.with_suffix(".safetensors")
    tensors, metadata = model_state(model, seed_index)
    return save_tensors(path, tensors, POLICY_KIND, metadata)


def read_model(path) -> tuple[dict[str, torch.Tensor], dict, SVPGConfig]:
    """(tensors, metadata, config) of a model written by :meth:`svpg.SVPG.save`; a CheckpointError for
    a file that is not one (a policy-only file, a corrupt one)."""
    tensors, meta, _ = load_tensors(path, expected_kind=POLICY_KIND)
    if meta.get("model_format") != MODEL_FORMAT:
        raise CheckpointError(
            f"{path} holds particles only, not a training state: svpg.load(path) loads it for acting; "
            f"to continue training, load a file written by SVPG.save or a run's checkpoint"
        )
    try:
        config = SVPGConfig.from_dict(meta["config"], f"the config in {path}")
    except (KeyError, ValueError) as e:
        raise CheckpointError(f"{path}: unreadable config ({e})") from None
    return tensors, meta, config


def read_models(
    paths: list, device: str | None = None, options: dict | None = None
) -> tuple[list[tuple[dict, dict, SVPGConfig]], SVPGConfig]:
    """The saved runs of one configuration that differ only in their seed, at one iteration (what
    :meth:`svpg.SVPG.load_seeds` continues as one model): their (tensors, metadata, config) and the
    config to build the model with (``device`` and ``options``, ``threads`` only, applied)."""
    options = dict(options or {})
    sb3_only = sorted(set(options) & set(SB3_LOAD_OPTIONS))
    if sb3_only:
        raise ValueError(
            f"{sb3_only} are SB3's options for its zip files; svpg's safetensors files need none of them (no "
            f"pickled objects; training continues bit for bit without a reset): drop them"
        )
    refused = sorted(set(options) - {"threads"})
    if refused:
        raise ValueError(
            f"{refused} cannot change when loading a model (it would be a different run); only threads can"
        )
    states = [read_model(p) for p in paths]
    config = states[0][2]
    for path, (_, _, other) in zip(paths[1:], states[1:]):
        if dataclasses.replace(other, seed=config.seed, run_name=config.run_name) != config:
            raise ValueError(f"{path} and {paths[0]} are runs of different configurations: load them separately")
    iterations = {m["iteration"] for _, m, _ in states}
    if len(iterations) > 1:
        raise ValueError(f"the runs are at different iterations {sorted(iterations)}: load them separately")
    device_option: dict[str, Any] = {"device": device} if device else {}
    return states, dataclasses.replace(config, **options, **device_option)


def restore(model, states: list[tuple[dict, dict]], paths: list) -> None:
    """Load the saved states (one per seed, in the model's seed order) into a model built from their
    config: θ, the optimizer, the estimator, the last returns, the normaliser, the iteration and the
    learning-rate schedule."""
    for (_, meta), path in zip(states, paths):
        try:
            spec = PolicySpec.from_dict(meta["spec"])
        except (KeyError, TypeError, ValueError) as e:
            raise CheckpointError(f"{path}: its metadata does not describe a policy ({e})") from None
        # files written before the spec recorded a discrete observation's encoding hold none: the same network
        if dataclasses.replace(spec, obs_encoding=model.spec.obs_encoding) != model.spec:
            raise CheckpointError(
                f"{path} holds a different network ({spec}) than its config builds ({model.spec}) "
                f"on this environment: pass the environment it was trained on"
            )
    try:
        with torch.no_grad():
            model.policy.theta.copy_(torch.cat([t["theta"] for t, _ in states]).to(model.device))
        model.svgd.optimizer.load_state_dict(_join_rows([unflatten_state(m["optimizer"], t) for t, m in states]))
        model.estimator.load_state_dict(_join_rows([unflatten_state(m["estimator"], t) for t, m in states]))
        model.last_returns = torch.cat([t["last_returns"] for t, _ in states]).to(model.device)
        if model.normalizer is not None:
            model.normalizer.load_state_dict(
                {
                    name: torch.stack([t[f"normalizer.{name}"] for t, _ in states])
                    for name in model.normalizer.state_dict()
                }
            )
    except (KeyError, RuntimeError, ValueError) as e:
        raise CheckpointError(
            f"{paths[0]} does not hold a whole training state ({e}); svpg.load(path) still "
            f"loads its particles for acting"
        ) from None
    meta = states[0][1]
    model.iteration, model.num_timesteps = int(meta["iteration"]), int(meta["num_timesteps"])
    model.schedule = tuple(meta["schedule"])
    model.policy.set_particle(int(meta.get("particle", 0)))


def read_parameters(path) -> dict[str, dict]:
    """:meth:`svpg.SVPG.get_parameters` of the model a file of :meth:`svpg.SVPG.save` holds (SB3's
    ``set_parameters`` from a path): its particles by block, the SVGD optimizer's and the estimator's state
    without the replay buffer."""
    tensors, meta, _ = read_model(path)
    try:
        policy = ParticlePolicy(PolicySpec.from_dict(meta["spec"]), tensors["theta"])
        estimator = unflatten_state(meta["estimator"], tensors)
        return {
            "policy": policy.state_dict(),
            "policy.optimizer": unflatten_state(meta["optimizer"], tensors),
            "estimator": {key: value for key, value in estimator.items() if key not in NOT_PARAMETERS},
        }
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"{path} does not hold a whole training state ({e})") from None


#: what a saved estimator state holds beyond ``Estimator.parameters_state``: data, not parameters
NOT_PARAMETERS = ("buffer",)


# -- a replay buffer on its own (SB3's save_replay_buffer / load_replay_buffer) -----------------
#: the kind of a file written by :meth:`svpg.SVPG.save_replay_buffer`
REPLAY_BUFFER_KIND = "replay-buffer"


def _replay_buffer(model):
    buffer = model.replay_buffer
    if buffer is None:
        raise ValueError(
            f"estimator '{model.config.estimator}' learns on-policy and keeps no replay buffer: only the "
            "off-policy estimators ('sac', 'td3') have one to save or load"
        )
    return buffer


def save_replay_buffer(model, path, seed_index: int = 0) -> Path:
    """:meth:`svpg.SVPG.save_replay_buffer`: seed ``seed_index``'s transitions and ring position to
    ``path`` (``.safetensors`` appended if it has no suffix)."""
    buffer, seed_index = _replay_buffer(model), check_seed_index(model, seed_index)
    path = Path(path)
    if not path.suffix:
        path = path.with_suffix(".safetensors")
    state = _split_rows(buffer.state_dict(), len(model.seeds))[seed_index]
    metadata = {"env_id": model.config.env_id, "seed": model.seeds[seed_index], "capacity": buffer.capacity}
    return save_tensors(path, state, REPLAY_BUFFER_KIND, metadata)


def load_replay_buffer(model, paths) -> None:
    """:meth:`svpg.SVPG.load_replay_buffer`: replace the model's buffer by the saved one (one file per
    seed of a seed-batched model, in its seed order)."""
    buffer = _replay_buffer(model)
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if len(paths) != len(model.seeds):
        raise ValueError(f"the model runs {len(model.seeds)} seeds: pass one replay-buffer file per seed")
    states = []
    for path in paths:
        tensors, _, _ = load_tensors(path, expected_kind=REPLAY_BUFFER_KIND)
        for name, store in (("obs", buffer.obs), ("actions", buffer.actions)):
            if name in tensors and tensors[name].shape[-1] != store.shape[-1]:
                raise CheckpointError(
                    f"{path} holds {name} of {tensors[name].shape[-1]} dimensions and this model's environment "
                    f"has {store.shape[-1]}: load it into a model of the environment it was collected on"
                )
        states.append(tensors)
    if any(not torch.equal(s["counters"], states[0]["counters"]) for s in states):
        raise ValueError(f"{paths} were saved at different points of training: load files saved together")
    buffer.load_state_dict(_join_rows(states))


# -- the run folder's progress rows ----------------------------------------------------------
PROGRESS_FILE = "progress.csv"


class ProgressCSV:
    """Per-iteration scalars (SB3's progress.csv), one row appended per iteration.

    Rows may run ahead of the last checkpoint; on resume the rows after it are dropped (or moved with
    the later checkpoints), so the file and the checkpoint agree.
    """

    def __init__(self, path: Path, keep_until: int):
        self.path = path
        rows = self.read(path, keep_until)
        self.rows = len(rows)
        self.fieldnames = list(rows[0]) if rows else None
        if rows or path.exists():  # rewrite without the rows of iterations after the checkpoint
            self._rewrite(rows)
        self.file: TextIO | None = None

    @staticmethod
    def read(path: Path, keep_until: int | None = None) -> list[dict]:
        """Complete rows with iteration ≤ keep_until (a torn last line of a killed process is dropped)."""
        if not path.exists():
            return []
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            rows = [r for r in reader if None not in r.values() and None not in r]
        out = []
        for r in rows:
            try:
                it = int(r["iteration"])
            except (KeyError, ValueError):
                continue
            if keep_until is None or it <= keep_until:
                out.append(r)
        return out

    @classmethod
    def count(cls, path: Path) -> int:
        """Rows 1, 2, … present without a gap: how far the progress file backs a checkpoint."""
        n = 0
        for r in cls.read(path):
            if int(r["iteration"]) == n + 1:
                n += 1
        return n

    @classmethod
    def set_aside(cls, path: Path, iteration: int, target: Path) -> None:
        later = [r for r in cls.read(path) if int(r["iteration"]) > iteration]
        if later:
            write_csv(target, later)

    def _rewrite(self, rows: list[dict]) -> None:
        if rows:
            write_csv(self.path, rows)
        else:
            self.path.unlink()

    def append(self, row: dict) -> None:
        try:
            if self.file is None:
                new = self.fieldnames is None
                self.fieldnames = self.fieldnames or list(row)
                self.file = open(self.path, "a", newline="")
                self.writer = csv.DictWriter(self.file, fieldnames=self.fieldnames, extrasaction="ignore")
                if new:
                    self.writer.writeheader()
            self.writer.writerow(row)
            self.file.flush()  # live for readers; durable at the next sync()
        except OSError as e:
            raise WriteError(f"could not write {self.path} ({e.strerror or e})") from None
        self.rows += 1

    def sync(self) -> None:
        """Make every appended row durable (before a checkpoint that counts them is written)."""
        if self.file is not None:
            try:
                os.fsync(self.file.fileno())
            except OSError as e:
                raise WriteError(f"could not write {self.path} ({e.strerror or e})") from None

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


# -- a run folder's checkpoints ----------------------------------------------------------------
CHECKPOINT_DIR = "checkpoints"
MODEL_SUFFIX = ".safetensors"
_NAME = re.compile(r"^iter_(\d+)\.safetensors$")


def checkpoint_name(iteration: int) -> str:
    return f"iter_{iteration:06d}"


def theta_digest(theta: torch.Tensor) -> str:
    """SHA-256 of θ's bytes: ties a stamp to the exact particles it was saved with."""
    return hashlib.sha256(theta.detach().cpu().contiguous().numpy().tobytes()).hexdigest()


def save_checkpoint(run_dir: Path, model, seed_index: int, progress_rows: int) -> Path:
    """Write seed ``seed_index``'s state of ``model`` as the checkpoint of its iteration, then refresh
    ``model.safetensors``."""
    tensors, metadata = model_state(model, seed_index)
    metadata["stamp"] = {
        "iteration": int(model.iteration),
        "progress_rows": int(progress_rows),
        "theta_sha256": theta_digest(tensors["theta"]),
    }
    path = Path(run_dir) / CHECKPOINT_DIR / (checkpoint_name(model.iteration) + MODEL_SUFFIX)
    save_tensors(path, tensors, POLICY_KIND, metadata)
    save_tensors(Path(run_dir) / "model.safetensors", tensors, POLICY_KIND, metadata)
    return path


@dataclass
class Checkpoint:
    """A verified checkpoint file and its stamp."""

    path: Path
    stamp: dict

    @property
    def iteration(self) -> int:
        return self.stamp["iteration"]


def listed(run_dir: Path) -> list[tuple[int, Path]]:
    """(iteration, path) of every checkpoint file, newest first."""
    folder = Path(run_dir) / CHECKPOINT_DIR
    found = [(int(m.group(1)), p) for p in folder.glob("iter_*" + MODEL_SUFFIX) if (m := _NAME.match(p.name))]
    return sorted(found, reverse=True)


def load_checkpoint(path: Path, progress_rows: int, device="cpu") -> Checkpoint:
    """Read and verify one checkpoint; a CheckpointError says what disagrees."""
    path = Path(path)
    tensors, meta, _ = load_tensors(path, expected_kind=POLICY_KIND)
    stamp = meta.get("stamp")
    if not isinstance(stamp, dict) or "optimizer" not in meta:
        raise CheckpointError(f"{path.name} is not a complete checkpoint (no stamp or training state)")
    if "theta" not in tensors or theta_digest(tensors["theta"]) != stamp.get("theta_sha256"):
        raise CheckpointError(f"θ in {path.name} does not match its stamp")
    if progress_rows < stamp["progress_rows"]:
        raise CheckpointError(
            f"progress.csv has {progress_rows} rows but {path.name} was saved after {stamp['progress_rows']}"
        )
    return Checkpoint(path, stamp)


def refresh_model(run_dir: Path, point: Checkpoint) -> bool:
    """Make ``model.safetensors`` the resume point's model if it is not already (a process killed
    between a checkpoint and the copy leaves it one checkpoint behind); True if it was rewritten."""
    path = Path(run_dir) / "model.safetensors"
    try:
        if load_tensors(path)[1].get("stamp") == point.stamp:
            return False
    except (CheckpointError, FileNotFoundError):
        pass
    tensors, meta, _ = load_tensors(point.path)
    save_tensors(path, tensors, POLICY_KIND, meta)
    return True


def prune(run_dir: Path, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` checkpoints (a CheckpointCallback with ``keep_last``)."""
    old = [p for _, p in listed(run_dir)[keep:]]
    for p in old:
        p.unlink(missing_ok=True)
    return old


def parse_checkpoint(text: str) -> int:
    """The iteration named by ``iter_000040``, ``iter_40``, ``40``, a file name or a path."""
    name = Path(str(text)).name
    m = re.fullmatch(r"(?:iter_)?0*(\d+)(?:\.safetensors)?", name)
    if not m:
        raise ValueError(f"--from {text!r} does not name a checkpoint: use e.g. iter_000040 or 40")
    return int(m.group(1))


def find_resume_point(run_dir: Path, progress_rows: int, iteration: int | None = None, device="cpu"):
    """The checkpoint to resume from and the notes to print about skipped ones.

    :param iteration: a chosen checkpoint (``--from``); default: the newest consistent one.
    :raises CheckpointError: when the chosen one, or every one, is inconsistent or missing.
    """
    run_dir = Path(run_dir)
    available = listed(run_dir)
    if not available:
        raise CheckpointError(f"{run_dir} has no complete checkpoint to resume from; start a new run instead")
    if iteration is not None:
        chosen = [p for it, p in available if it == iteration]
        if not chosen:
            names = ", ".join(checkpoint_name(it) for it, _ in sorted(available)[-5:])
            raise CheckpointError(f"{run_dir} has no checkpoint {checkpoint_name(iteration)}; the latest are: {names}")
        try:
            return load_checkpoint(chosen[0], progress_rows, device), []
        except CheckpointError as e:
            raise CheckpointError(f"cannot resume from {chosen[0]}: {e}; choose another with --from") from None
    notes: list[str] = []
    for _, path in available:
        try:
            return load_checkpoint(path, progress_rows, device), notes
        except CheckpointError as e:
            notes.append(f"skipped {path.name}: {e}")
    raise CheckpointError(
        f"no consistent checkpoint in {run_dir / CHECKPOINT_DIR} ({'; '.join(notes)}); start a new run"
    )


def files_after(run_dir: Path, iteration: int) -> list[Path]:
    """Checkpoint files of iterations after ``iteration`` (also other files named ``iter_<n>.*``)."""
    found = []
    for p in (Path(run_dir) / CHECKPOINT_DIR).glob("iter_*"):
        m = re.match(r"^iter_(\d+)\.", p.name)
        if m and int(m.group(1)) > iteration and p.is_file():
            found.append(p)
    return sorted(found)


def set_aside(run_dir: Path, iteration: int, later: list[Path]) -> Path:
    """Move ``later`` to ``checkpoints/discarded_after_<n>[_k]/`` (resuming from an earlier checkpoint
    never deletes a later one); returns that folder."""
    folder = Path(run_dir) / CHECKPOINT_DIR
    target = folder / f"discarded_after_{checkpoint_name(iteration)}"
    k = 1
    while target.exists():
        k += 1
        target = folder / f"discarded_after_{checkpoint_name(iteration)}_{k}"
    target.mkdir()
    for p in later:
        shutil.move(str(p), target / p.name)
    return target


def prepare_run_dir(run_dir: Path, iteration: int) -> list[str]:
    """Make a run folder continue from ``iteration``: remove temporary files of an interrupted write,
    and move the checkpoints after it (incomplete ones, or later ones when an earlier one was
    chosen) with their progress rows to ``checkpoints/discarded_after_<n>/``, never deleting them.
    Returns notes of what it did, for the user."""
    notes = []
    stray = remove_stray_temporaries(run_dir)
    if stray:
        notes.append(f"removed {len(stray)} temporary file(s) of an interrupted write")
    later = files_after(run_dir, iteration)
    if later:
        aside = set_aside(run_dir, iteration, later)
        ProgressCSV.set_aside(Path(run_dir) / PROGRESS_FILE, iteration, aside / PROGRESS_FILE)
        notes.append(
            f"moved {len(later)} checkpoint file(s) after iteration {iteration} (and their progress rows) to {aside}"
        )
    return notes


def resume_points(run_dirs: list[Path], wanted: int | None, notes: list[str]) -> list[Checkpoint]:
    """One verified checkpoint per run folder, all of the same iteration (empty: start over)."""
    if wanted is None and not all(listed(d) for d in run_dirs):
        if any(listed(d) for d in run_dirs):
            notes.append("a seed has no complete checkpoint yet: every seed starts over")
        return []
    points = []
    for run_dir in run_dirs:
        rows = ProgressCSV.count(run_dir / PROGRESS_FILE)
        point, found = find_resume_point(run_dir, rows, wanted)
        points.append(point)
        notes += [f"{run_dir}: {n}" if len(run_dirs) > 1 else n for n in found]
    common = min(p.iteration for p in points)
    if any(p.iteration != common for p in points):  # a kill between seeds' checkpoints: go back together
        points = [
            p if p.iteration == common else find_resume_point(d, ProgressCSV.count(d / PROGRESS_FILE), common)[0]
            for d, p in zip(run_dirs, points)
        ]
    return points
