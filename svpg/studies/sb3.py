"""Stable-Baselines3's agents as baselines: the one SB3 runner of the studies, and the paper grid's SB3 A2C
and PPO on the same registered tasks, added to the reproduction table.

    python -m svpg.studies.sb3 --task swingup --seeds 5
    python -m svpg.studies.sb3 --task double-pendulum --seeds 3 --steps 1000000

The runner (used by this command and by :mod:`svpg.studies.benchmark`): :func:`make_model` builds an SB3
PPO, A2C, SAC or TD3 on ``n_envs`` seeded environments (optionally normalised with ``VecNormalize``);
:func:`train_resumably` trains it to a budget in a run folder, writing ``progress.csv`` and a checkpoint
(``model.zip``, ``vecnormalize.pkl`` where it normalises, ``replay_buffer.pkl`` for SAC and TD3) every
tenth of the budget, and continues from that checkpoint when started again; :func:`evaluation_env` and
:func:`evaluate` give deterministic evaluation returns (normalisation statistics frozen).

The command: each agent trains with ``--steps`` environment steps (default: the SVPG preset's budget *per
particle*, iterations × samples per particle = 5 M for swing-up; the whole 16-particle ensemble uses 16×
that), with SB3's default hyperparameters and 8 environments, and is evaluated every ``--eval-every``
steps on 10 episodes. Results go to ``<out>/sb3/`` and a section appended to ``<out>/results.md``;
processes training different agents into one ``--out`` at once keep each other's rows.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from svpg.io import append_csv, atomic_write, write_csv
from svpg.rl.config import PAPER_TASKS
from svpg.runtime import torch_threads

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.vec_env import VecEnv

AGENTS = ("ppo", "a2c", "sac", "td3")
OFF_POLICY = ("sac", "td3")  # with a replay buffer
CHECKPOINT = "checkpoint"  # the run folder's checkpoint, replaced whole
REPLAY_BUFFER = "replay_buffer.pkl"  # SB3 SAC's and TD3's, in their checkpoint
VECNORMALIZE = "vecnormalize.pkl"


def algorithm(agent: str) -> type[BaseAlgorithm]:
    """The SB3 class of ``agent`` (one of :data:`AGENTS`)."""
    from stable_baselines3 import A2C, PPO, SAC, TD3

    classes: dict[str, type[BaseAlgorithm]] = {"ppo": PPO, "a2c": A2C, "sac": SAC, "td3": TD3}
    return classes[agent]


def make_model(
    agent: str, task: str, seed: int, n_envs: int, normalize: dict | None = None, policy: str = "MlpPolicy", **kwargs
):
    """A fresh SB3 ``agent`` (``policy``: ``MlpPolicy``, ``CnnPolicy`` or ``MultiInputPolicy``; CPU) on ``n_envs``
    environments of ``task`` seeded from ``seed``, wrapped in ``VecNormalize(**normalize)`` unless ``normalize``
    is None; ``kwargs`` go to the agent."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    import svpg.envs  # noqa: F401  (registers svpg/* ids)

    venv: VecEnv = make_vec_env(task, n_envs=n_envs, seed=seed)
    if normalize is not None:
        venv = VecNormalize(venv, **normalize)
    return algorithm(agent)(policy, venv, seed=seed, device="cpu", verbose=0, **kwargs)


def evaluation_env(task: str, seed: int, model=None, normalize: dict | None = None):
    """One environment of ``task`` seeded from ``seed`` for :func:`evaluate`; where the agent normalises
    (``normalize`` not None), wrapped in a frozen ``VecNormalize`` with ``model``'s observation statistics."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    import svpg.envs  # noqa: F401  (registers svpg/* ids)

    env: VecEnv = make_vec_env(task, n_envs=1, seed=seed)
    if normalize is not None:
        train_env = cast(VecNormalize, model.get_env())
        # returns are scored raw whatever the training normalised (the settings' norm_reward is training's)
        kwargs = {k: v for k, v in normalize.items() if k not in ("gamma", "norm_reward")}
        env = VecNormalize(env, training=False, norm_reward=False, **kwargs)
        env.obs_rms = train_env.obs_rms.copy() if hasattr(train_env.obs_rms, "copy") else train_env.obs_rms
    return env


def evaluate(model, env, episodes: int) -> list[float]:
    """The returns of ``episodes`` deterministic episodes of ``model`` on ``env`` (:func:`evaluation_env`)."""
    from stable_baselines3.common.evaluation import evaluate_policy

    # return_episode_rewards=True: the returns of every episode, a list
    return cast(
        "list[float]",
        evaluate_policy(model, env, n_eval_episodes=episodes, deterministic=True, return_episode_rewards=True)[0],
    )


#: SB3 features extractors the benchmark's settings name (``policy_kwargs.features_extractor``): name → class path
FEATURES_EXTRACTORS = {"minatar": "svpg.studies.sb3_extractors:MinAtarCNN"}


def features_extractor(name: str) -> type:
    """The SB3 features extractor class :data:`FEATURES_EXTRACTORS` names ``name`` (imported on use)."""
    import importlib

    module, _, cls = FEATURES_EXTRACTORS[name].partition(":")
    return getattr(importlib.import_module(module), cls)


# -- progress files -----------------------------------------------------------------------------------
def read_rows(path: Path) -> list[dict]:
    """The complete rows of the CSV file ``path`` (none when it does not exist)."""
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if None not in r.values()]


def keep_rows(path: Path, up_to_step: int) -> float:
    """Drop the rows of ``path`` after environment step ``up_to_step`` (work a resume redoes); returns
    the cumulative wall-clock of the last kept row (0 when none)."""
    rows = [r for r in read_rows(path) if int(r["total_steps"]) <= up_to_step]
    path.unlink(missing_ok=True)
    if rows:
        append_csv(path, rows)
    return float(rows[-1]["wall_s"]) if rows else 0.0


# -- a resumable run ----------------------------------------------------------------------------------
def train_resumably(
    agent: str,
    task: str,
    seed: int,
    total: int,
    folder: Path,
    n_envs: int,
    normalize: dict | None,
    kwargs: dict[str, Any],
    progress: str = "progress.csv",
    checkpoints: int = 10,
):
    """Train SB3 ``agent`` on ``task`` to ``total`` environment steps in the run folder ``folder``, continuing
    from its checkpoint when it holds one; returns the model. The caller holds the folder's lock.

    ``progress`` gets the mean training episode return every hundredth of the budget; the checkpoint is
    saved at the first rollout boundary after every ``total / checkpoints`` steps (after the update, so
    nothing is lost). A resumed run continues the learning-rate schedule; its environments restart their
    episodes from seeds of their own, so it is a valid run but not bit-identical to an uninterrupted one."""
    from stable_baselines3 import SAC, TD3
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    from svpg.seeding import int_seed

    off_policy = agent in OFF_POLICY
    ckpt = folder / CHECKPOINT
    if not ckpt.exists() and (folder / f"{CHECKPOINT}.old").exists():  # killed while replacing the checkpoint
        (folder / f"{CHECKPOINT}.old").rename(ckpt)
    shutil.rmtree(folder / f"{CHECKPOINT}.tmp", ignore_errors=True)
    state = json.loads((ckpt / "state.json").read_text()) if (ckpt / "state.json").exists() else None
    at = state["total_steps"] if state else 0
    if state:
        # a resumed run's environments start from seeds of their own (not the first segment's start states again)
        import svpg.envs  # noqa: F401  (registers svpg/* ids)

        venv = make_vec_env(task, n_envs=n_envs, seed=int_seed(seed, "sb3_resume", at) % 2**31)
        if normalize is not None:
            venv = VecNormalize.load(str(ckpt / VECNORMALIZE), venv)
        model = algorithm(agent).load(ckpt / "model.zip", env=venv, device="cpu")
        if off_policy:  # the replay buffer as it was at the checkpoint; a fresh noise process
            cast(SAC | TD3, model).load_replay_buffer(ckpt / REPLAY_BUFFER)
            if "action_noise" in kwargs:
                cast(TD3, model).action_noise = kwargs["action_noise"]
        model.set_random_seed(int_seed(seed, "sb3_resume_model", at) % 2**31)
    else:
        model = make_model(agent, task, seed, n_envs, normalize, **kwargs)
    start = keep_rows(folder / progress, at)
    log_every = max(1, total // 100)
    save_every = max(1, total // checkpoints)

    class Recorder(BaseCallback):
        """Training returns every ``log_every`` steps (``progress``); a checkpoint at the first rollout
        boundary after every ``save_every`` steps (after the update, so nothing is lost)."""

        returns: list[float]
        lengths: list[int]

        def _on_training_start(self) -> None:
            self.t0, self.returns, self.lengths, self.last_row = time.perf_counter(), [], [], at
            self.next_log = (self.num_timesteps // log_every + 1) * log_every
            self.next_save = (self.num_timesteps // save_every + 1) * save_every

        def wall(self) -> float:
            return start + time.perf_counter() - self.t0

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    self.returns.append(float(info["episode"]["r"]))
                    self.lengths.append(int(info["episode"]["l"]))
            if self.num_timesteps >= self.next_log:
                self.row()
                self.next_log = (self.num_timesteps // log_every + 1) * log_every
            return True

        def row(self) -> None:
            if self.num_timesteps == self.last_row:  # a checkpoint on a logging boundary: one row
                return
            self.last_row = self.num_timesteps
            mean = sum(self.returns) / len(self.returns) if self.returns else math.nan
            append_csv(
                folder / progress,
                [
                    {
                        "total_steps": self.num_timesteps,
                        "ep_rew_mean": mean,
                        "episodes": len(self.returns),
                        "wall_s": self.wall(),
                    }
                ],
            )
            self.returns, self.lengths = [], []

        def _on_rollout_start(self) -> None:
            self.num_timesteps = self.model.num_timesteps
            if self.num_timesteps >= self.next_save and self.num_timesteps < total:
                self.row()  # the wall-clock at the checkpoint, kept on resume
                tmp = folder / f"{CHECKPOINT}.tmp"
                tmp.mkdir(exist_ok=True)
                self.model.save(tmp / "model.zip")
                if normalize is not None:
                    cast(VecNormalize, self.model.get_env()).save(str(tmp / VECNORMALIZE))
                if off_policy:
                    cast(SAC | TD3, self.model).save_replay_buffer(tmp / REPLAY_BUFFER)
                (tmp / "state.json").write_text(json.dumps({"total_steps": self.num_timesteps}))  # tmp renamed whole
                if ckpt.exists():  # replaced whole: a kill leaves either checkpoint complete
                    ckpt.rename(folder / f"{CHECKPOINT}.old")
                tmp.rename(ckpt)
                shutil.rmtree(folder / f"{CHECKPOINT}.old", ignore_errors=True)
                self.next_save = (self.num_timesteps // save_every + 1) * save_every

        def _on_training_end(self) -> None:
            self.row()

    if model.num_timesteps < total:
        model.learn(total - model.num_timesteps, callback=Recorder(), reset_num_timesteps=not state)
    return model


# -- the paper grid's baselines ------------------------------------------------------------------------
def train_one(task_env: str, algo: str, seed: int, steps: int, eval_every: int, out: Path) -> list[dict]:
    """SB3 ``algo`` (A2C or PPO) with its defaults on 8 environments for ``steps`` steps, evaluated every
    ``eval_every`` steps on 10 deterministic episodes; saves ``<out>/<algo>__seed<seed>.zip`` and returns
    one row per evaluation."""
    # SB3's small MLPs gain nothing from a second thread, and the svpg runs it is compared with use one;
    # the caller's setting is restored afterwards
    with torch_threads(1):
        model = make_model(algo, task_env, seed, n_envs=8)
        eval_env = evaluation_env(task_env, seed + 1000)
        rows, done = [], 0
        while done < steps:
            chunk = min(eval_every, steps - done)
            model.learn(total_timesteps=chunk, reset_num_timesteps=False)
            done += chunk
            returns = evaluate(model, eval_env, 10)
            rows.append(
                {
                    "env_id": task_env,
                    "algo": algo,
                    "seed": seed,
                    "total_steps": done,
                    "eval_mean": float(np.mean(returns)),
                    "eval_std": float(np.std(returns)),
                }
            )
        eval_env.close()
        model.save(out / f"{algo}__seed{seed}")
    return rows


def main(argv: list[str] | None = None) -> int:
    from svpg.rl.config import load_preset
    from svpg.runs import record_provenance

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=PAPER_TASKS, required=True)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--algos", default="a2c,ppo")
    p.add_argument("--steps", type=int, default=0, help="steps per agent (0: preset iterations × samples per particle)")
    p.add_argument("--eval-every", type=int, default=0, help="evaluation interval in steps (0: steps / 20)")
    p.add_argument("--out", default=None, help="reproduction folder (default: runs/repro-<task>)")
    args = p.parse_args(argv)
    preset = load_preset(args.task)
    steps = args.steps or preset["iterations"] * preset["samples_per_particle"]
    eval_every = args.eval_every or max(steps // 20, 1000)
    out = Path(args.out or f"runs/repro-{args.task}")
    (out / "sb3").mkdir(parents=True, exist_ok=True)
    record_provenance(out / "sb3")  # the machine and commit python -m svpg.report gather writes into its rows
    csv_path = out / "sb3" / "curves.csv"
    done = {(r["algo"], int(r["seed"])) for r in read_rows(csv_path) if int(r["total_steps"]) >= steps}
    t0 = time.perf_counter()
    for algo in args.algos.split(","):
        for seed in range(args.seeds):
            if (algo, seed) in done:
                continue
            t1 = time.perf_counter()
            new = train_one(preset["env_id"], algo, seed, steps, eval_every, out / "sb3")
            # merged into the file as it is now, not as it was at the start: a second process (--algos ppo
            # beside --algos a2c on the same --out) may have added its agents since
            rows = [r for r in read_rows(csv_path) if not (r["algo"] == algo and int(r["seed"]) == seed)] + new
            write_csv(csv_path, rows)
            print(
                f"{algo} seed {seed}: final {new[-1]['eval_mean']:.1f}, peak {max(r['eval_mean'] for r in new):.1f} "
                f"({time.perf_counter() - t1:.0f} s, {steps / (time.perf_counter() - t1):,.0f} steps/s)"
            )
    lines = [
        "",
        f"## Stable-Baselines3 baselines ({steps:,} steps per agent, default hyperparameters, 8 envs)",
        "",
        "Deterministic evaluation return, 10 episodes per evaluation, mean ± std over seeds.",
        "",
        "| agent | seeds | final | peak (best evaluation of the seed-averaged curve) |",
        "|---|---:|---:|---:|",
    ]
    rows = read_rows(csv_path)
    for algo in dict.fromkeys(r["algo"] for r in rows):  # every agent of the file, in the order trained
        by_seed: dict = {}
        for r in rows:
            if r["algo"] == algo:
                by_seed.setdefault(int(r["seed"]), []).append(float(r["eval_mean"]))
        n = min(len(v) for v in by_seed.values())
        curves = np.array([v[:n] for v in by_seed.values()])
        lines.append(
            f"| SB3 {algo.upper()} | {len(by_seed)} | {curves[:, -1].mean():.1f} ± {curves[:, -1].std():.1f} | "
            f"{curves.mean(0).max():.1f} |"
        )
    text = "\n".join(lines) + "\n"
    md = out / "results.md"
    old = md.read_text().split("\n## Stable-Baselines3")[0].rstrip("\n") + "\n" if md.exists() else ""
    atomic_write(md, lambda tmp: Path(tmp).write_text(old + text))
    print(text)
    print(f"wall-clock {(time.perf_counter() - t0) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
