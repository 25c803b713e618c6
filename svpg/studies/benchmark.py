"""svpg against Stable-Baselines3 at equal environment steps, resumably: the on-policy comparison
(S²VGD and SVGD with PPO's surrogate against SB3 PPO and A2C), the off-policy one (svpg's SAC and TD3
estimators against SB3 SAC and TD3, ``--budget off-policy``) and the observation- and action-space one
(S²VGD against SB3 PPO on MinAtar's Breakout, a ``Dict``-observation task and a ``MultiDiscrete`` one,
``--budget spaces``).

    python -m svpg.studies.benchmark --tasks Pendulum-v1 --seeds 0-4                       # every agent, reported seeds
    python -m svpg.studies.benchmark --tasks Pendulum-v1 --agents ppo,a2c --seeds 0-4 --jobs 2 --backend local
    python -m svpg.studies.benchmark --tasks Hopper-v5 --seeds 100-104 --svpg-options '{"lr": 0.01}'   # tuning seeds
    python -m svpg.studies.benchmark --tasks HalfCheetah-v5 --agents a2c --seeds 100-101 --sb3-options '{"normalize": false}'
    python -m svpg.studies.benchmark --tasks all --seeds 0-4 --backend ray                  # Ray Tune trials (RAY_ADDRESS: a cluster)
    python -m svpg.studies.benchmark --budget off-policy --tasks all --seeds 0-4           # the off-policy table
    python -m svpg.studies.benchmark --budget spaces --tasks all --seeds 0-4               # the spaces table
    python -m svpg.studies.benchmark --report-only --out runs/benchmark                     # rebuild the table and plots

Each run is one (task, agent, seed): its own folder ``<out>/<task>/<agent>__seed<s>/`` (a namespaced id's
"/" made "_": ``MinAtar_Breakout-v1``), trained for the budget's environment steps (on-policy and spaces:
the task's, :data:`TASK_BUDGETS`; off-policy: 300,000, :data:`BUDGETS`; for svpg all particles' steps
count), then evaluated deterministically on
``--eval-episodes`` fresh episodes. Agents (:data:`BUDGETS` says which belong to which comparison):

* ``s2vgd``, ``svgd``: :class:`svpg.SVPG` with the task's preset (``train.py --preset <task>``;
  ``--svpg-options`` adds to it); the final metric is the particle with the highest return in the last
  training iteration (chosen on training returns), and the mean over all particles, each on the same
  fresh episodes.
* ``s2vgd-sac``, ``svgd-sac``, ``s2vgd-td3``, ``svgd-td3``: :class:`svpg.SVPG` with ``estimator="sac"``
  or ``"td3"`` and the method (:data:`SVPG_AGENT_SETTINGS`): no task preset, only the estimator's own
  defaults (``svpg.rl.estimators.SAC.defaults``, ``TD3.defaults``) and ``--svpg-options``; the final
  metrics as above.
* ``ppo``, ``a2c``: SB3 with rl-zoo3's tuned hyperparameters for the task (:data:`ZOO`), normalisation
  included (``VecNormalize``, frozen for evaluation); on the spaces tasks, which rl-zoo3 lacks, PPO with
  SB3's defaults and the policy SB3 asks for (``CnnPolicy`` with MinAtar's small CNN, ``MultiInputPolicy``,
  ``MlpPolicy``).
* ``sac``, ``td3``: SB3 with rl-zoo3's settings (:data:`ZOO`: ``learning_starts`` 10,000 on MuJoCo, TD3's
  Gaussian action noise of std 0.1, SB3's defaults otherwise).

Runs are skipped when finished (``result.json``) and continue from their last checkpoint otherwise:
svpg through its :class:`~svpg.rl.callbacks.CheckpointCallback` folder (bit for bit, the SAC
estimator's replay buffer included), SB3 from a ``model.zip`` (with ``vecnormalize.pkl`` where it
normalises, ``replay_buffer.pkl`` for SAC and TD3) saved at rollout boundaries every tenth of the
budget (the learning-rate schedule continues; the environments restart their episodes, so a resumed
SB3 run is a valid run but not bit-identical to an uninterrupted one). Seeds 0–99 are reported seeds
and 100 and above tuning seeds; one invocation takes one kind and one budget, each into its own
``--out``. Writes to ``--out``:

* ``results.md``   per task: final return mean ± s.e. over seeds, svpg − the reference agent (PPO;
  off-policy: SAC) paired by seed with 95 % t-intervals, environment steps and wall-clock per run; the
  area under the learning curve (the mean training return over the run, :func:`area_under_curve`)
  where the runs recorded it,
* ``results.csv``  one row per finished run; ``curves.csv``: every run's training curve,
* ``curves.png``   training return against environment steps, mean ± s.e. over seeds, one panel per task.
"""

from __future__ import annotations

import json
import math
import re
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from svpg.io import append_csv, atomic_write, write_csv
from svpg.rl.config import load_preset
from svpg.stats import counted
from svpg.studies import sb3

#: the benchmark's tasks, each with a preset of the same name (``svpg/rl/presets/<task>.json``) that holds
#: its budget (``total_steps``: for svpg all particles' steps count) and svpg's settings for it
BENCHMARK_TASKS = (
    "Pendulum-v1",
    "InvertedDoublePendulum-v5",
    "Hopper-v5",
    "HalfCheetah-v5",
    "MountainCarContinuous-v0",  # hard exploration: the goal (return ≥ 90) is reached by exploring far right
    "Walker2d-v5",
    "Ant-v5",
)
#: the observation- and action-space comparison's tasks (``--budget spaces``): MinAtar's Breakout (10 × 10 × 4
#: binary images, ``pip install "svpg[minatar]"``), a goal-conditioned ``Dict`` observation and ``MultiDiscrete``
#: actions (the last two: :mod:`svpg.envs.spaces_tasks`); each with its preset, as the tasks above
SPACES_TASKS = ("MinAtar/Breakout-v1", "svpg/PointReach-v0", "svpg/Knobs-v0")
MINATAR_TASKS = ("MinAtar/Breakout-v1",)
#: task → its budget: the total environment steps of one run (the preset's ``total_steps``)
TASK_BUDGETS = {task: int(load_preset(task)["total_steps"]) for task in BENCHMARK_TASKS + SPACES_TASKS}
TASKS = TASK_BUDGETS  # the former name, kept for existing imports
MUJOCO_TASKS = ("InvertedDoublePendulum-v5", "Hopper-v5", "HalfCheetah-v5", "Walker2d-v5", "Ant-v5")
#: svpg's agents: agent → (method, estimator). Estimator None: the on-policy agents, the task's preset
#: (``train.py --preset <task>``, PPO's surrogate); otherwise that estimator with its own defaults and no preset
SVPG_AGENT_SETTINGS: dict[str, tuple[str, str | None]] = {
    "s2vgd": ("s2vgd", None),
    "svgd": ("svgd", None),
    "s2vgd-sac": ("s2vgd", "sac"),
    "svgd-sac": ("svgd", "sac"),
    "s2vgd-td3": ("s2vgd", "td3"),
    "svgd-td3": ("svgd", "td3"),
}
SVPG_AGENTS = tuple(SVPG_AGENT_SETTINGS)
SB3_AGENTS = sb3.AGENTS
SB3_OFF_POLICY = sb3.OFF_POLICY  # with a replay buffer
AGENTS = SVPG_AGENTS + SB3_AGENTS
REFERENCE = "ppo"  # the paired differences of the on-policy comparison are svpg − this agent
OFF_POLICY_STEPS = 300_000
REPORTED_SEEDS = 5  # a table's seeds 0–4


@dataclass(frozen=True)
class Budget:
    """One comparison: its tasks (``--tasks all``), agents (``--agents all`` and the only ones it
    takes), the reference agent of the paired differences, and the environment steps of a run (None:
    each task's own, :data:`TASK_BUDGETS`). ``auc``: its tables always show the area under the curve.
    ``agent_seeds``: the agents whose reported seeds stop short of 0–4 (how many each gets)."""

    name: str
    tasks: tuple[str, ...]
    agents: tuple[str, ...]
    reference: str
    total_steps: int | None = None
    auc: bool = False
    out: str = "runs/benchmark"
    agent_seeds: tuple[tuple[str, int], ...] = ()

    def steps(self, task: str) -> int:
        return self.total_steps or TASK_BUDGETS[task]

    def seeds(self, agent: str) -> int:
        """How many reported seeds (from 0) ``agent`` gets in this table."""
        return dict(self.agent_seeds).get(agent, REPORTED_SEEDS)

    def planned_runs(self) -> int:
        """The runs of the whole table: every task × agent on its reported seeds."""
        return len(self.tasks) * sum(self.seeds(agent) for agent in self.agents)

    def commands(self) -> list[str]:
        """The harness commands that run the whole table: one per seed range (no ``--agents`` when
        every agent gets the same)."""
        by_seeds: dict[int, list[str]] = {}
        for agent in self.agents:
            by_seeds.setdefault(self.seeds(agent), []).append(agent)
        command = f"python -m svpg.studies.benchmark --budget {self.name} --tasks all"
        if len(by_seeds) == 1:
            return [f"{command} --seeds 0-{next(iter(by_seeds)) - 1}"]
        return [
            f"{command} --agents {','.join(agents)} --seeds 0-{n - 1}"
            for n, agents in sorted(by_seeds.items(), reverse=True)
        ]


#: ``--budget``: the on-policy comparison (each task's budget) and the off-policy one (300,000 steps)
BUDGETS = {
    "on-policy": Budget("on-policy", BENCHMARK_TASKS, ("s2vgd", "svgd", "ppo", "a2c"), REFERENCE),
    "off-policy": Budget(
        "off-policy",
        ("Hopper-v5", "HalfCheetah-v5", "Walker2d-v5"),
        ("s2vgd-sac", "svgd-sac", "s2vgd-td3", "svgd-td3", "sac", "td3"),
        "sac",
        OFF_POLICY_STEPS,
        auc=True,
        out="runs/benchmark-off-policy",
        agent_seeds=(("s2vgd-td3", 3), ("svgd-td3", 3)),  # about two core-hours a run
    ),
    "spaces": Budget("spaces", SPACES_TASKS, ("s2vgd", "ppo"), REFERENCE, auc=True, out="runs/benchmark-spaces"),
}
SOLVED = {"MountainCarContinuous-v0": 90.0}  # tasks with a "solved" threshold: the table counts seeds at or above it

#: rl-zoo3's tuned SB3 hyperparameters, copied from DLR-RM/rl-baselines3-zoo hyperparams/ppo.yml,
#: hyperparams/a2c.yml, hyperparams/sac.yml and hyperparams/td3.yml (the MuJoCo entries are tuned on v4, v3 or
#: v2 ids, whose dynamics v5 keeps; a2c.yml has no InvertedDoublePendulum entry, so it gets that file's MuJoCo
#: defaults: normalize and SB3's defaults; ppo.yml's Ant entry is those MuJoCo defaults too, and its Walker2d
#: entry sets no policy_kwargs, so SB3's 64 × 64 tanh network).
#: ``normalize``: True, False or VecNormalize keyword arguments (VecNormalize's gamma is the agent's, as
#: rl-zoo3 sets it); ``lin_<x>``: a learning rate decaying linearly from x to 0; ``activation_fn`` by name.
_MUJOCO_PPO = {
    "normalize": True,
    "n_envs": 1,
    "policy_kwargs": {
        "log_std_init": -2,
        "ortho_init": False,
        "activation_fn": "relu",
        "net_arch": {"pi": [256, 256], "vf": [256, 256]},
    },
}
ZOO: dict[str, dict[str, dict[str, Any]]] = {
    "ppo": {
        "Pendulum-v1": {
            "n_envs": 4,
            "n_steps": 1024,
            "gae_lambda": 0.95,
            "gamma": 0.9,
            "n_epochs": 10,
            "ent_coef": 0.0,
            "learning_rate": 1e-3,
            "clip_range": 0.2,
            "use_sde": True,
            "sde_sample_freq": 4,
        },
        "InvertedDoublePendulum-v5": {
            "normalize": True,
            "n_envs": 1,
            "batch_size": 512,
            "n_steps": 128,
            "gamma": 0.98,
            "learning_rate": 0.000155454,
            "ent_coef": 1.05057e-06,
            "clip_range": 0.4,
            "n_epochs": 10,
            "gae_lambda": 0.8,
            "max_grad_norm": 0.5,
            "vf_coef": 0.695929,
        },
        "Hopper-v5": {
            **_MUJOCO_PPO,
            "batch_size": 32,
            "n_steps": 512,
            "gamma": 0.999,
            "learning_rate": 9.80828e-05,
            "ent_coef": 0.00229519,
            "clip_range": 0.2,
            "n_epochs": 5,
            "gae_lambda": 0.99,
            "max_grad_norm": 0.7,
            "vf_coef": 0.835671,
        },
        "HalfCheetah-v5": {
            **_MUJOCO_PPO,
            "batch_size": 64,
            "n_steps": 512,
            "gamma": 0.98,
            "learning_rate": 2.0633e-05,
            "ent_coef": 0.000401762,
            "clip_range": 0.1,
            "n_epochs": 20,
            "gae_lambda": 0.92,
            "max_grad_norm": 0.8,
            "vf_coef": 0.58096,
        },
        "Walker2d-v5": {
            "normalize": True,
            "n_envs": 1,
            "batch_size": 32,
            "n_steps": 512,
            "gamma": 0.99,
            "learning_rate": 5.05041e-05,
            "ent_coef": 0.000585045,
            "clip_range": 0.1,
            "n_epochs": 20,
            "gae_lambda": 0.95,
            "max_grad_norm": 1,
            "vf_coef": 0.871923,
        },
        "Ant-v5": {"normalize": True},
        "MountainCarContinuous-v0": {
            "normalize": True,
            "n_envs": 1,
            "batch_size": 256,
            "n_steps": 8,
            "gamma": 0.9999,
            "learning_rate": 7.77e-05,
            "ent_coef": 0.00429,
            "clip_range": 0.1,
            "n_epochs": 10,
            "gae_lambda": 0.9,
            "max_grad_norm": 5,
            "vf_coef": 0.19,
            "use_sde": True,
            "policy_kwargs": {"log_std_init": -3.29, "ortho_init": False},
        },
        # the spaces tasks: rl-zoo3 has no entries for them, so SB3's defaults with the policy SB3 asks for
        # (``policy``). MinAtar's 10 × 10 images are too small for CnnPolicy's NatureCNN (36 px at least) and,
        # being bool, not images to SB3: CnnPolicy with a features extractor of MinAtar's baseline network
        # (``features_extractor``: "minatar", :class:`svpg.studies.sb3_extractors.MinAtarCNN`, svpg's small torso)
        "MinAtar/Breakout-v1": {"policy": "CnnPolicy", "policy_kwargs": {"features_extractor": "minatar"}},
        "svpg/PointReach-v0": {"policy": "MultiInputPolicy"},
        "svpg/Knobs-v0": {},
    },
    "a2c": {
        "Pendulum-v1": {
            "normalize": True,
            "n_envs": 8,
            "ent_coef": 0.0,
            "max_grad_norm": 0.5,
            "n_steps": 8,
            "gae_lambda": 0.9,
            "vf_coef": 0.4,
            "gamma": 0.9,
            "use_rms_prop": True,
            "normalize_advantage": False,
            "learning_rate": "lin_7e-4",
            "use_sde": True,
            "policy_kwargs": {"log_std_init": -2, "ortho_init": False},
        },
        "InvertedDoublePendulum-v5": {"normalize": True},
        "Hopper-v5": {"normalize": True},
        "HalfCheetah-v5": {"normalize": True},
        "MountainCarContinuous-v0": {
            "normalize": True,
            "n_envs": 4,
            "n_steps": 100,
            "ent_coef": 0.0,
            "use_sde": True,
            "sde_sample_freq": 16,
            "policy_kwargs": {"log_std_init": 0.0, "ortho_init": False},
        },
        "Walker2d-v5": {"normalize": True},
        "Ant-v5": {"normalize": True},
    },
    # the off-policy agents: rl-zoo3's MuJoCo entries set only learning_starts (and TD3 its action noise);
    # SB3's defaults otherwise (SAC: 256 × 256 ReLU, TD3: 400 × 300 ReLU, buffer 1e6, batch 256, one
    # gradient step per environment step). ``noise_type``/``noise_std``: rl-zoo3's action noise, made an SB3
    # NormalActionNoise of that std on every action dimension
    "sac": {
        "Pendulum-v1": {"learning_rate": 1e-3},
        **{task: {"learning_starts": 10_000} for task in ("Hopper-v5", "HalfCheetah-v5", "Walker2d-v5", "Ant-v5")},
    },
    "td3": {
        # not a table's task (the tests' one): SB3's defaults and rl-zoo3's action noise
        "Pendulum-v1": {"noise_type": "normal", "noise_std": 0.1},
        **{
            task: {"learning_starts": 10_000, "noise_type": "normal", "noise_std": 0.1}
            for task in ("Hopper-v5", "HalfCheetah-v5", "Walker2d-v5", "Ant-v5")
        },
    },
}
ACTIVATIONS = ("relu", "tanh", "elu", "gelu", "leaky_relu")

RESULT, JOB, PROGRESS, WALL = "result.json", "job.json", "progress.csv", "wall.csv"
REPLAY_BUFFER = sb3.REPLAY_BUFFER  # SB3 SAC's and TD3's, in their checkpoint
CHECKPOINTS_PER_RUN = 10  # SVPG and SB3 save every tenth of the budget (and SVPG at the end)
TUNING_SEEDS = 100  # seeds from here on are tuning seeds
OWN_OPTIONS = (
    "budget",
    "tasks",
    "agents",
    "seeds",
    "out",
    "total_steps",
    "eval_episodes",
    "svpg_options",
    "report_only",
    "backend",
    "jobs",
    "gpus_per_job",
)


# -- the SB3 side ----------------------------------------------------------------------------------
def sb3_settings(agent: str, task: str, extra: dict | None = None) -> tuple[int, dict | None, dict]:
    """``(n_envs, VecNormalize kwargs or None, model kwargs)`` of rl-zoo3's entry for ``agent`` on ``task``,
    its top-level keys replaced by ``extra``'s (as rl-zoo3's ``--hyperparams``), with schedules and
    activations made SB3 objects. Raises ValueError for an entry it cannot read."""
    import torch.nn as nn
    from stable_baselines3.common.utils import LinearSchedule

    if agent not in ZOO or task not in ZOO[agent]:
        raise ValueError(
            f"no rl-zoo3 hyperparameters for {agent} on {task}: add an entry to svpg.studies.benchmark.ZOO"
        )
    if extra:
        import inspect

        accepted = set(inspect.signature(sb3.algorithm(agent).__init__).parameters) - {"self", "policy", "env"}
        accepted |= {"n_envs", "normalize", "noise_type", "noise_std"}  # rl-zoo3's own keys
        unknown = sorted(set(extra) - accepted)
        if unknown:
            raise ValueError(
                f"--sb3-options: {unknown} are not hyperparameters of SB3's {agent.upper()} (nor rl-zoo3's n_envs, "
                "normalize, noise_type, noise_std): see its documentation"
            )
    entry = {**ZOO[agent][task], **(extra or {})}
    n_envs = entry.pop("n_envs", 1)
    normalize = entry.pop("normalize", False)
    if normalize is True:
        normalize = {}
    elif normalize is False:
        normalize = None
    elif not isinstance(normalize, dict):
        raise ValueError(
            f"ZOO[{agent!r}][{task!r}]['normalize'] must be true, false or VecNormalize arguments, got {normalize!r}"
        )
    lr = entry.get("learning_rate")
    if isinstance(lr, str):
        if not lr.startswith("lin_"):
            raise ValueError(f"ZOO[{agent!r}][{task!r}] learning_rate {lr!r}: use a number or lin_<initial value>")
        entry["learning_rate"] = LinearSchedule(float(lr[4:]), 0.0, 1.0)
    policy_kwargs = dict(entry.pop("policy_kwargs", {}))
    if "activation_fn" in policy_kwargs:
        name = policy_kwargs["activation_fn"]
        if name not in ACTIVATIONS:
            raise ValueError(f"ZOO[{agent!r}][{task!r}] activation_fn {name!r}: choose from {', '.join(ACTIVATIONS)}")
        policy_kwargs["activation_fn"] = {
            "relu": nn.ReLU,
            "tanh": nn.Tanh,
            "elu": nn.ELU,
            "gelu": nn.GELU,
            "leaky_relu": nn.LeakyReLU,
        }[name]
    if "features_extractor" in policy_kwargs:
        name = policy_kwargs.pop("features_extractor")
        if name not in sb3.FEATURES_EXTRACTORS:
            raise ValueError(
                f"ZOO[{agent!r}][{task!r}] features_extractor {name!r}: choose from {', '.join(sb3.FEATURES_EXTRACTORS)}"
            )
        policy_kwargs["features_extractor_class"] = sb3.features_extractor(name)
    if policy_kwargs:
        entry["policy_kwargs"] = policy_kwargs
    noise_type, noise_std = entry.pop("noise_type", None), entry.pop("noise_std", None)
    if noise_type is not None:
        if noise_type != "normal" or not isinstance(noise_std, int | float) or noise_std <= 0:
            raise ValueError(
                f"ZOO[{agent!r}][{task!r}] noise_type {noise_type!r}, noise_std {noise_std!r}: "
                "use noise_type 'normal' with a positive noise_std"
            )
        entry["action_noise"] = _normal_action_noise(task, float(noise_std))
    if normalize is not None:
        normalize = {"gamma": entry.get("gamma", 0.99), **normalize}
    return int(n_envs), normalize, entry


def _normal_action_noise(task: str, std: float):
    """SB3's NormalActionNoise of ``std`` on every dimension of ``task``'s action space (rl-zoo3's
    ``noise_type: normal``)."""
    import gymnasium as gym
    import numpy as np
    from stable_baselines3.common.noise import NormalActionNoise

    env = gym.make(task)
    try:
        dim = int(np.prod(env.action_space.shape or (1,)))
    finally:
        env.close()
    return NormalActionNoise(mean=np.zeros(dim), sigma=std * np.ones(dim))


#: SB3's defaults where rl-zoo3's entry leaves them; PPO's and A2C's default network is 64 × 64 tanh
_SB3_DEFAULTS: dict[str, dict[str, Any]] = {
    "ppo": {"n_steps": 2048, "batch_size": 64, "n_epochs": 10},
    "a2c": {"n_steps": 5},
    "sac": {"learning_starts": 100, "train_freq": 1, "gradient_steps": 1, "policy_kwargs": {"net_arch": [256, 256]}},
    "td3": {"learning_starts": 100, "train_freq": 1, "gradient_steps": 1, "policy_kwargs": {"net_arch": [400, 300]}},
}


def training_shape(agent: str, task: str, env_steps: int) -> tuple[str, int]:
    """(policy network, gradient steps) of a run of ``agent`` on ``task`` that trained ``env_steps``
    environment steps: svpg's SVGD steps of all particles (iterations × PPO epochs × minibatches), SB3
    PPO's minibatch steps (rollouts × epochs × minibatches per rollout) and A2C's one step per rollout."""
    from svpg.rl.config import SVPGConfig, with_estimator_defaults

    if agent in SVPG_AGENTS:
        method, estimator = SVPG_AGENT_SETTINGS[agent]
        # off-policy: gradient_steps updates every train_freq steps of all particles (sac: each one SVGD step;
        # td3: critic updates, an SVGD step every policy_delay-th, counted as SB3's TD3 row counts them)
        if estimator is not None:
            config = SVPGConfig(**with_estimator_defaults({"estimator": estimator}), method=method)
            widths = " × ".join(map(str, config.hidden))
            vector_steps = max(0, env_steps - config.learning_starts) // config.num_particles
            return (
                f"{widths} tanh, {config.num_particles} particles",
                vector_steps // config.train_freq * config.gradient_steps,
            )
        config = SVPGConfig(**{k: v for k, v in load_preset(task).items() if not k.startswith("_")})
        iterations = env_steps // (config.num_particles * config.samples_per_particle)
        widths = " × ".join(map(str, config.hidden))
        return (
            f"{_torso(task)}{widths} tanh, {config.num_particles} particles",
            iterations * config.ppo_epochs * config.ppo_minibatches,
        )
    entry = {**_SB3_DEFAULTS[agent], **ZOO[agent][task]}
    activation_default = "relu" if agent in SB3_OFF_POLICY else "tanh"
    net = {**_SB3_DEFAULTS[agent].get("policy_kwargs", {}), **entry.get("policy_kwargs", {})}.get(
        "net_arch", {"pi": [64, 64]}
    )
    name = entry.get("policy_kwargs", {}).get("activation_fn", activation_default)
    activation = {"relu": "ReLU"}.get(name, name)
    network = f"{_torso(task)}{' × '.join(map(str, net['pi'] if isinstance(net, dict) else net))} {activation}"
    if agent in SB3_OFF_POLICY:  # one update of gradient_steps after every train_freq steps past learning_starts
        updates = max(0, env_steps - entry["learning_starts"]) // entry["train_freq"]
        return network, updates * entry["gradient_steps"]
    rollout = entry["n_steps"] * entry.get("n_envs", 1)
    rollouts = -(-env_steps // rollout)
    if agent == "a2c":
        return network, rollouts
    return network, rollouts * entry["n_epochs"] * -(-rollout // entry["batch_size"])


def _torso(task: str) -> str:
    """The convolutional torso before the policy's MLP, as the tables name it (both sides use the same)."""
    return "CNN 16 × 3×3 → 128 ReLU, " if task in MINATAR_TASKS else ""


def rollout_steps(agent: str, task: str) -> int:
    """Environment steps of one SB3 rollout (n_envs × n_steps, SAC and TD3: n_envs × train_freq; SB3's
    defaults where rl-zoo3 sets none)."""
    n_envs, _, kwargs = sb3_settings(agent, task)
    key = "train_freq" if agent in SB3_OFF_POLICY else "n_steps"
    return n_envs * kwargs.get(key, _SB3_DEFAULTS[agent][key])


# -- one run ------------------------------------------------------------------------------------------
def run_folder(out, task: str, agent: str, seed: int) -> Path:
    return Path(out) / task_folder(task) / f"{agent}__seed{seed}"


def task_folder(task: str) -> str:
    """The folder of ``task``'s runs under ``--out``: its id, a namespace's "/" made "_" (``MinAtar_Breakout-v1``),
    so that every run folder lies two levels below ``--out``, where ``python -m svpg.report gather`` looks."""
    return task.replace("/", "_")


def run_job(job: dict, report=None) -> dict:
    """Train (or continue) one run of :func:`plan`, evaluate it and write ``result.json``; returns the result."""
    import torch

    torch.set_num_threads(1)  # one core per run for every agent; SB3's small MLPs gain nothing from more
    folder = run_folder(job["out"], job["task"], job["agent"], job["seed"])
    if (folder / RESULT).exists():
        return json.loads((folder / RESULT).read_text())
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / JOB).exists():
        _write_json(folder / JOB, job_record(job))
    train = _train_svpg if job["agent"] in SVPG_AGENTS else _train_sb3
    result = train(job, folder)
    result["auc"] = area_under_curve(curve_rows(job["agent"], sb3.read_rows(folder / PROGRESS)))
    result.update(task=job["task"], agent=job["agent"], seed=job["seed"], eval_episodes=job["eval_episodes"])
    _write_json(folder / RESULT, result)
    # a finished run is never resumed: its replay buffer (hundreds of MB on MuJoCo) goes
    (folder / sb3.CHECKPOINT / REPLAY_BUFFER).unlink(missing_ok=True)
    return result


def _write_json(path: Path, data: dict) -> None:
    atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(data, indent=2) + "\n"))


def job_record(job: dict) -> dict:
    """What makes a run the run it is: a folder made for another record is refused, not mixed in."""
    keys = ("task", "agent", "seed", "total_steps", "eval_episodes", "svpg_options", "sb3_options")
    return {k: job[k] for k in keys if k in job and (k != "svpg_options" or job["agent"] in SVPG_AGENTS)}


def eval_seed(seed: int) -> int:
    from svpg.seeding import int_seed

    return int_seed(seed, "benchmark_evaluation") % 2**31


def _train_svpg(job: dict, folder: Path) -> dict:
    from svpg.rl import SVPG
    from svpg.rl.callbacks import PROGRESS_FILE, BaseCallback, CheckpointCallback, ProgressCSV
    from svpg.rl.checkpoints import find_resume_point, listed

    class Wall(BaseCallback):
        """Cumulative training wall-clock after every iteration (``wall.csv``)."""

        def __init__(self, start: float):
            super().__init__()
            self.start, self.t0 = start, time.perf_counter()

        def _on_rollout_end(self) -> None:
            append_csv(
                folder / WALL,
                [
                    {
                        "iteration": self.model.iteration,
                        "total_steps": self.model.num_timesteps,
                        "wall_s": self.start + time.perf_counter() - self.t0,
                    }
                ],
            )

    device = job.get("device", "cpu")
    if listed(folder):
        point, _ = find_resume_point(folder, ProgressCSV.count(folder / PROGRESS_FILE))
        model = SVPG.load(point.path, device=device, verbose=0, threads=1)
        resumed = True
    else:
        options = svpg_options(job["task"], job.get("svpg_options"), job["agent"])
        method = SVPG_AGENT_SETTINGS[job["agent"]][0]
        model = SVPG(job["task"], method=method, seed=job["seed"], device=device, verbose=0, threads=1, **options)
        resumed = False
    target = math.ceil(job["total_steps"] / model.steps_per_update)
    planned = target * model.steps_per_update
    if planned > job["total_steps"] and not resumed:  # said before training, as train.py says it
        print(
            f"{job['task']} {job['agent']} seed {job['seed']}: {planned:,} steps, {planned - job['total_steps']:,} "
            f"past the budget of {job['total_steps']:,} (whole iterations of {model.steps_per_update:,} steps)",
            flush=True,
        )
    start = sb3.keep_rows(folder / WALL, model.num_timesteps)
    if model.iteration < target:
        # off-policy checkpoints hold the replay buffer: only the newest two are kept
        keep = 0 if SVPG_AGENT_SETTINGS[job["agent"]][1] is None else 2
        checkpoint = CheckpointCallback(max(1, target // CHECKPOINTS_PER_RUN), folder, keep_last=keep)
        try:
            model.learn(
                (target - model.iteration) * model.steps_per_update,
                reset_num_timesteps=not resumed,
                callback=[Wall(start), checkpoint],
            )
        finally:  # an interrupted run in this process releases its folder at once
            checkpoint.close()
    from svpg.rl.evaluation import evaluate_particles

    policy = model.seed_policy(0)  # acting with the particle of the highest return in the last iteration
    returns = evaluate_particles(
        policy, job["task"], job["eval_episodes"], seed=eval_seed(job["seed"]), deterministic=True
    )
    per_particle = returns.mean(1)
    wall = sb3.read_rows(folder / WALL)
    return {
        "env_steps": model.num_timesteps,
        "final": float(per_particle[policy.particle]),
        "final_particle_mean": float(per_particle.mean()),
        "best_particle": int(policy.particle),
        "wall_s": float(wall[-1]["wall_s"]) if wall else math.nan,
    }


def svpg_options(task: str, extra: dict | None = None, agent: str = "s2vgd") -> dict:
    """svpg.SVPG keyword arguments of ``agent`` on ``task``: the on-policy agents take the task's preset's
    training options (without the run fields, such as the env and the budget), the off-policy ones
    only their estimator (whose own defaults svpg.SVPG fills in); then ``extra``."""
    from svpg.rl.algorithm import RUN_FIELDS

    estimator = SVPG_AGENT_SETTINGS[agent][1]
    if estimator is not None:
        return {"estimator": estimator, **(extra or {})}
    preset = {k: v for k, v in load_preset(task).items() if k not in RUN_FIELDS}
    return {**preset, **(extra or {})}


def _train_sb3(job: dict, folder: Path) -> dict:
    from svpg.runs import RunLock, record_provenance

    with RunLock(folder):  # one writer per run folder, as svpg's CheckpointCallback
        record_provenance(folder)
        return _train_sb3_locked(job, folder)


def _train_sb3_locked(job: dict, folder: Path) -> dict:
    agent, task, seed, total = job["agent"], job["task"], job["seed"], job["total_steps"]
    n_envs, normalize, kwargs = sb3_settings(agent, task, job.get("sb3_options"))
    model = sb3.train_resumably(
        agent, task, seed, total, folder, n_envs, normalize, kwargs, progress=PROGRESS, checkpoints=CHECKPOINTS_PER_RUN
    )
    # deterministic evaluation on fresh episodes, normalisation statistics frozen
    returns = sb3.evaluate(model, sb3.evaluation_env(task, eval_seed(seed), model, normalize), job["eval_episodes"])
    rows = sb3.read_rows(folder / PROGRESS)
    final = sum(returns) / len(returns)
    return {
        "env_steps": int(model.num_timesteps),
        "final": float(final),
        "final_particle_mean": math.nan,
        "best_particle": None,
        "wall_s": float(rows[-1]["wall_s"]) if rows else math.nan,
    }


# -- the grid -----------------------------------------------------------------------------------------
def plan(
    out,
    tasks: list[str],
    agents: list[str],
    seeds: list[int],
    total_steps: int | None = None,
    eval_episodes: int = 10,
    svpg_extra: dict | None = None,
    budget: str = "on-policy",
    sb3_extra: dict | None = None,
    device: str = "cpu",
) -> list[dict]:
    """One job per (task, agent, seed), SB3 runs first (the slower ones, so no worker idles at the end),
    each trained for ``total_steps`` or else the ``budget``'s steps on its task, svpg's on ``device`` (not
    part of a run's record: a run may resume on another device). ``out`` is made absolute: Ray Tune starts
    each trial in a folder of its own."""
    out = str(Path(out).resolve())
    jobs = []
    for task in tasks:
        for agent in sorted(agents, key=lambda a: a not in SB3_AGENTS):
            for seed in seeds:
                job = {
                    "out": out,
                    "task": task,
                    "agent": agent,
                    "seed": seed,
                    "total_steps": total_steps or BUDGETS[budget].steps(task),
                    "eval_episodes": eval_episodes,
                }
                if agent in SVPG_AGENTS:
                    job["svpg_options"] = svpg_extra or {}
                    if device != "cpu":
                        job["device"] = device
                elif sb3_extra:  # only when given: the run folders of rl-zoo3's settings keep their record
                    job["sb3_options"] = sb3_extra
                jobs.append(job)
    return jobs


def check(jobs: list[dict]) -> None:
    """Refuse, with one line each, what would fail later: unknown tasks or agents, MuJoCo missing, bad
    svpg options or rl-zoo3 entries, and run folders made by a different command."""
    for job in jobs:
        task, agent = job["task"], job["agent"]
        if task not in TASK_BUDGETS:
            raise ValueError(f"unknown task {task!r}: choose from {', '.join(TASK_BUDGETS)} (or all)")
        if agent not in AGENTS:
            raise ValueError(f"unknown agent {agent!r}: choose from {', '.join(AGENTS)}")
        if task in MUJOCO_TASKS:
            try:
                import mujoco  # noqa: F401
            except ImportError:
                raise ValueError(f'{task} needs MuJoCo: pip install "svpg[mujoco]"') from None
        if task in MINATAR_TASKS:
            from svpg.envs.spaces_tasks import minatar_installed

            if not minatar_installed():
                raise ValueError(f'{task} needs MinAtar: pip install "svpg[minatar]"')
        if agent in SB3_AGENTS:
            sb3_settings(agent, task, job.get("sb3_options"))
        else:
            import dataclasses

            from svpg.rl.config import SVPGConfig, refuse_other_estimators_options, with_estimator_defaults

            method, estimator = SVPG_AGENT_SETTINGS[agent]
            options = svpg_options(task, job["svpg_options"], agent)
            fields = {f.name for f in dataclasses.fields(SVPGConfig)}
            fixed = {"method", "seed", "device", "threads"} | ({"estimator"} if estimator is not None else set())
            refused = sorted(set(options) - fields) + sorted(fixed & set(job["svpg_options"] or {}))
            if refused:
                raise ValueError(
                    f"--svpg-options: {refused} are not options to set here (the agent is the method and "
                    f"estimator, --seeds the seed, --device the device; see python train.py --help)"
                )
            try:  # --svpg-options go to every svpg agent: one its estimator ignores is refused before any run
                refuse_other_estimators_options(
                    options.get("estimator", SVPGConfig.estimator), job["svpg_options"] or {}
                )
            except ValueError as e:
                raise ValueError(f"--svpg-options for {agent}: {e}") from None
            SVPGConfig(**with_estimator_defaults(options), method=method, env_id=task).validate()
        if "device" in job:
            from svpg.runtime import resolve_device

            resolve_device(job["device"])
        folder = run_folder(job["out"], task, agent, job["seed"])
        if (folder / JOB).exists():
            recorded = json.loads((folder / JOB).read_text())
            if recorded != job_record(job):
                changed = sorted(
                    k for k in set(recorded) | set(job_record(job)) if recorded.get(k) != job_record(job).get(k)
                )
                raise ValueError(
                    f"{folder} holds a run with other settings ({', '.join(changed)}): use another --out "
                    f"or remove that folder"
                )


def run_grid(jobs: list[dict], backend: str | None, workers: int, prog: str, gpus: float | None = None) -> int:
    """Train every unfinished job; 0, or 2 / 130 / 143 after a one-line message."""
    from svpg.grid import run_jobs

    todo = [j for j in jobs if not (run_folder(j["out"], j["task"], j["agent"], j["seed"]) / RESULT).exists()]
    where = "in this process" if backend is None else f"on {counted(workers, f'{backend} worker')}"
    print(
        f"{counted(len(jobs), 'run')}, {len(jobs) - len(todo)} already finished; running {len(todo)} {where}",
        flush=True,
    )

    def done(job: dict, result: dict) -> None:
        if "final" in result:
            print(
                f"{job['task']} {job['agent']} seed {job['seed']}: final {result['final']:.1f} after "
                f"{result['env_steps']:,} steps, {result['wall_s']:.0f} s",
                flush=True,
            )

    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        if backend is None:
            for job in todo:
                done(job, run_job(job))
        else:
            out = Path(jobs[0]["out"]) if jobs else Path(".")
            run_jobs(
                "svpg.studies.benchmark:run_job",
                todo if backend == "local" else jobs,
                backend=backend,
                workers=workers,
                storage=out / ".ray",
                on_done=done,
                gpus_per_job=gpus or 0.0,
            )
    except ValueError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, SystemExit) as e:
        print(
            f"{prog}: interrupted; every run keeps its last checkpoint, and the same command resumes the grid",
            file=sys.stderr,
        )
        return e.code if isinstance(e, SystemExit) and isinstance(e.code, int) else 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


# -- the report ---------------------------------------------------------------------------------------
def collect(out) -> tuple[list[dict], list[dict]]:
    """(results, curves) of every run folder under ``out``: one result per finished run, and every
    run's training curve (finished or not) as rows of task, agent, seed, total_steps, return
    (svpg: the best particle's training return; SB3: the mean training episode return) and
    return_mean (svpg: the mean over particles; SB3: the same as return)."""
    results, curves = [], []
    for task in TASK_BUDGETS:
        for folder in sorted((Path(out) / task_folder(task)).glob("*__seed*")):
            agent, _, seed = folder.name.rpartition("__seed")
            if agent not in AGENTS or not seed.isdigit():
                continue
            if (folder / RESULT).exists():
                results.append(json.loads((folder / RESULT).read_text()))
            for r in curve_rows(agent, sb3.read_rows(folder / PROGRESS)):
                curves.append({"task": task, "agent": agent, "seed": int(seed), **r})
    order = {a: i for i, a in enumerate(AGENTS)}
    results.sort(key=lambda r: (list(TASK_BUDGETS).index(r["task"]), order[r["agent"]], r["seed"]))
    return results, curves


def curve_rows(agent: str, progress: list[dict]) -> list[dict]:
    """A run's training curve from its ``progress.csv`` rows: total_steps, return (svpg: the best
    particle's training return; SB3: the mean training episode return) and return_mean (svpg: the mean
    over particles; SB3: the same as return)."""
    rows = []
    for r in progress:
        if agent in SVPG_AGENTS:
            best, mean = float(r["rollout/ep_rew_max"]), float(r["rollout/ep_rew_mean"])
        else:
            best = mean = float(r["ep_rew_mean"])
        rows.append({"total_steps": int(float(r["total_steps"])), "return": best, "return_mean": mean})
    return rows


def area_under_curve(curve: list[dict]) -> float:
    """The area under a run's learning curve per environment step: the mean training return over the
    whole run, each row of :func:`curve_rows` (``return_mean``: for svpg the mean over particles, so all
    the episodes the run played count alike) weighted by the steps since the row before. Rows without a
    finished episode (NaN) are left out; NaN for a run without any."""
    total = weight = 0.0
    previous = 0
    for row in sorted(curve, key=lambda r: r["total_steps"]):
        steps, value = row["total_steps"] - previous, row["return_mean"]
        previous = row["total_steps"]
        if math.isfinite(value) and steps > 0:
            total, weight = total + steps * value, weight + steps
    return total / weight if weight else math.nan


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _auc(row: dict) -> float:
    value = row.get("auc")
    return float(value) if value not in (None, "") else math.nan


def machine_label(machine: str | None) -> str:
    """A run's machine as the wall-clock column names it: the CPU and any GPUs of a recorded machine
    ("x86_64, 2 CPUs (Intel(R) Xeon(R) Processor), Linux" → "Intel Xeon"; "…, 1 GPU (NVIDIA H200), Linux" →
    "Intel Xeon + NVIDIA H200"), else as written."""
    found = re.findall(r"\(([^()]*)\)", re.sub(r"\((R|TM)\)", "", machine or ""))
    if not found:
        return machine or "an unrecorded machine"
    return " + ".join(re.sub(r" Processor| CPU", "", part).strip() for part in found)


def wall_clock_cell(rows: list[dict], name_machine: bool = False, spread: bool = True) -> str:
    """Minutes per run, mean ± standard error (the mean alone without ``spread``); the runs of each machine
    apart where they ran on more than one, since wall-clock compares only within a machine, and the
    machine named also for one where ``name_machine`` (a table whose other rows ran elsewhere)."""
    from svpg.stats import cell

    by_machine: dict[str, list[float]] = {}
    for r in rows:
        by_machine.setdefault(machine_label(r.get("machine")), []).append(r["wall_s"] / 60)
    cells = {
        label: cell(minutes if spread else [sum(minutes) / len(minutes)], digits=2)
        for label, minutes in sorted(by_machine.items())
    }
    if len(cells) == 1 and not name_machine:
        return next(iter(cells.values()))
    return ", ".join(f"{text} on {label}" for label, text in cells.items())


def machines_differ(rows: list[dict]) -> bool:
    """Whether ``rows`` ran on more than one machine, so each wall-clock cell of theirs names its machine."""
    return len({machine_label(r.get("machine")) for r in rows}) > 1


def task_table(results: list[dict], task: str, budget: str = "on-policy") -> tuple[list[str], list[list]]:
    """(header, rows) of ``task``'s table in ``budget``'s comparison: one row per agent of it with
    finished runs, the columns of docs/benchmarks.md; ``results.md`` and ``python -m svpg.report`` print it.
    The area under the curve and its paired difference are columns where the budget asks for them or
    a run recorded it."""
    from svpg.stats import cell, format_difference, paired_difference

    comparison = BUDGETS[budget]
    ref = comparison.reference
    rows = [r for r in results if r["task"] == task and r["agent"] in comparison.agents]
    threshold = SOLVED.get(task)
    reference = {r["seed"]: r["final"] for r in rows if r["agent"] == ref}
    with_auc = comparison.auc or any(math.isfinite(_auc(r)) for r in rows)
    reference_auc = {r["seed"]: _auc(r) for r in rows if r["agent"] == ref and math.isfinite(_auc(r))}
    table: list[list] = []
    for agent in comparison.agents:
        own = [r for r in rows if r["agent"] == agent]
        if not own:
            continue
        final = {r["seed"]: r["final"] for r in own}
        steps = sorted({r["env_steps"] for r in own})
        diff = format_difference(*paired_difference(final, reference)) if agent != ref and reference else "–"
        particles = cell([r["final_particle_mean"] for r in own]) if agent in SVPG_AGENTS else "–"
        solved = [f"{sum(v >= threshold for v in final.values())}/{len(final)}"] if threshold is not None else []
        auc_cells = []
        if with_auc:
            auc = {r["seed"]: _auc(r) for r in own if math.isfinite(_auc(r))}
            auc_diff = (
                format_difference(*paired_difference(auc, reference_auc))
                if agent != ref and auc and reference_auc
                else "–"
            )
            auc_cells = [cell(auc.values()) if auc else "–", auc_diff]
        table.append(
            [
                agent,
                len(own),
                "/".join(f"{s:,}" for s in steps),
                cell(final.values()),
                particles,
                diff,
                *solved,
                *auc_cells,
                wall_clock_cell(own, machines_differ(rows)),
                "{}, {:,}".format(*training_shape(agent, task, max(steps))),
            ]
        )
    header = [
        "agent",
        "seeds",
        "env steps",
        "final return",
        "mean over particles",
        f"− {ref.upper()} (95 % CI)",
        *(["solved"] if threshold is not None else []),
        *(["AUC (mean training return)", f"AUC − {ref.upper()} (95 % CI)"] if with_auc else []),
        "wall-clock per run (min)",
        "policy network, gradient steps",
    ]
    return header, table


def write_table(results: list[dict], path: Path, budget: str = "on-policy") -> str:
    """``results.md``: one table per task (see the module docstring and docs/benchmarks.md)."""
    from svpg.stats import convention, markdown_table

    comparison = BUDGETS[budget]
    baselines = " and ".join(a.upper() for a in comparison.agents if a in SB3_AGENTS)
    lines = [
        f"# svpg against SB3 {baselines} at equal environment steps",
        "",
        "Final return: deterministic, on fresh episodes; svpg acts with the particle of the highest training return",
        f"in its last iteration. {_sentence(convention('seeds', paired=comparison.reference.upper()))}.",
        "",
    ]
    if comparison.auc or any(math.isfinite(_auc(r)) for r in results):
        lines[-1:-1] = [
            "AUC: the mean training return over the whole run (svpg: over all particles' episodes), paired by seed.",
        ]
    for task in TASK_BUDGETS:
        header, table = task_table(results, task, budget)
        if table:
            lines += [f"## {task}", "", markdown_table(header, table)]
    text = "\n".join(lines)
    atomic_write(path, lambda tmp: Path(tmp).write_text(text))
    return text


def plot(curves: list[dict], path: Path, metadata: dict[str, str] | None = None) -> None:
    """Training return against environment steps, one panel per task: mean over seeds (line) ± s.e.
    (band) of each agent, every seed's curve interpolated onto the task's common step grid; ``metadata``:
    the PNG's text entries."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    import numpy as np

    from svpg.stats import mean_se_rows

    tasks = [t for t in TASK_BUDGETS if any(c["task"] == t for c in curves)]
    agents = [a for a in AGENTS if any(c["agent"] == a for c in curves)]
    fig, axes = plt.subplots(1, max(1, len(tasks)), figsize=(5 * max(1, len(tasks)), 4), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        for colour, agent in enumerate(agents):
            runs: dict = {}
            for c in curves:
                if c["task"] == task and c["agent"] == agent and math.isfinite(c["return"]):
                    runs.setdefault(c["seed"], []).append((c["total_steps"], c["return"]))
            if not runs:
                continue
            end = min(max(x for x, _ in v) for v in runs.values())
            start = max(min(x for x, _ in v) for v in runs.values())
            grid = np.linspace(start, end, 50) if end > start else np.array([end])
            ys = np.array(
                [np.interp(grid, [x for x, _ in sorted(v)], [y for _, y in sorted(v)]) for v in runs.values()]
            )
            mu, se = mean_se_rows(ys)
            label = f"svpg {agent} (best particle)" if agent in SVPG_AGENTS else f"SB3 {agent.upper()}"
            # one colour per agent in every panel; TD3's family dashed beside SAC's
            style = dict(color=f"C{colour}", ls="--" if agent.endswith("td3") else "-")
            ax.plot(grid, mu, label=f"{label}, {len(ys)} seed{'' if len(ys) == 1 else 's'}", lw=1.5, **style)
            ax.fill_between(grid, mu - se, mu + se, color=style["color"], alpha=0.2, lw=0)
        ax.set_title(task)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x / 1000:g}k"))
        ax.set_xlabel("environment steps")
        ax.set_ylabel("training return")
        ax.legend(fontsize=8)
    fig.tight_layout()
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=100, metadata=metadata))
    finally:
        plt.close(fig)


def report(out: Path, budget: str = "on-policy") -> str | None:
    """Rebuild ``results.md``, ``results.csv``, ``curves.csv`` and ``curves.png`` from the run folders of
    ``budget``'s agents."""
    agents = BUDGETS[budget].agents
    results, curves = collect(out)
    results = [r for r in results if r["agent"] in agents]
    curves = [c for c in curves if c["agent"] in agents]
    if not curves and not results:
        return None
    write_csv(out / "results.csv", results)
    write_csv(out / "curves.csv", curves)
    plot(curves, out / "curves.png")
    return write_table(results, out / "results.md", budget)


# -- the command line ---------------------------------------------------------------------------------
def _names(text: str, known, what: str, every=None, hint: str = "") -> list[str]:
    """The comma-separated names of ``text`` among ``known`` (``all``: ``every``, default ``known``)."""
    names = list(every or known) if text == "all" else [n for n in text.split(",") if n]
    bad = [n for n in names if n not in known]
    if bad or not names:
        raise ValueError(f"--{what} {text!r}: choose from {', '.join(known)} (comma-separated) or all{hint}")
    return names


def main(argv: list[str] | None = None) -> int:
    from svpg.cli import Parser, _json_object
    from svpg.grid import add_backend_arguments, gpus_per_job
    from svpg.stats import parse_range_list

    p = Parser(prog="python -m svpg.studies.benchmark", description=__doc__)
    p.add_argument(
        "--budget",
        default="on-policy",
        choices=tuple(BUDGETS),
        help="the comparison: on-policy (S²VGD and SVGD with PPO's surrogate against SB3 PPO and A2C, each "
        f"task's budget; all tasks: {', '.join(BUDGETS['on-policy'].tasks)}), off-policy (svpg's SAC and TD3 "
        f"estimators against SB3 SAC and TD3, {OFF_POLICY_STEPS:,} steps; all tasks: "
        f"{', '.join(BUDGETS['off-policy'].tasks)}) or spaces (S²VGD against SB3 PPO on an image, a Dict "
        f"observation and MultiDiscrete actions, each task's budget; all tasks: "
        f"{', '.join(BUDGETS['spaces'].tasks)}) (default: on-policy)",
    )
    p.add_argument(
        "--tasks",
        default="Pendulum-v1",
        help=f"comma-separated, or all (the budget's): {', '.join(TASK_BUDGETS)} (default: Pendulum-v1)",
    )
    p.add_argument(
        "--agents",
        default="all",
        help="comma-separated, or all: "
        + "; ".join(f"{name} {', '.join(b.agents)}" for name, b in BUDGETS.items())
        + " (default: all of the budget's)",
    )
    p.add_argument(
        "--seeds",
        default="0-4",
        help="reported seeds (0-99), e.g. 0-4, or tuning seeds (100 and above), e.g. "
        "100-104; never both at once (default: 0-4)",
    )
    p.add_argument(
        "--out",
        default=None,
        help="output folder (default: runs/benchmark, off-policy runs/benchmark-off-policy, spaces "
        "runs/benchmark-spaces; with -tuning appended for tuning seeds)",
    )
    p.add_argument(
        "--total-steps",
        type=int,
        default=0,
        help="environment steps of every run instead of the budget's (0: the budget's: on-policy and "
        f"spaces each task's, off-policy {OFF_POLICY_STEPS:,})",
    )
    p.add_argument(
        "--eval-episodes",
        type=int,
        default=10,
        help="fresh episodes of the final deterministic evaluation (default: 10)",
    )
    p.add_argument(
        "--svpg-options",
        type=_json_object,
        default={},
        help="svpg.SVPG options added to every task's preset (off-policy: to the SAC or TD3 estimator's "
        "defaults), as a JSON object, e.g. '{\"lr\": 0.01}'",
    )
    p.add_argument(
        "--sb3-options",
        type=_json_object,
        default={},
        help="hyperparameters that replace the SB3 agents' rl-zoo3 entry's (top-level keys, as rl-zoo3's "
        '--hyperparams), as a JSON object, e.g. \'{"normalize": {"norm_reward": false}}\'',
    )
    p.add_argument(
        "--device",
        default="cpu",
        help="torch device of svpg's runs, e.g. cuda (default: cpu); SB3's agents train on the CPU. A run "
        "may resume on another device",
    )
    p.add_argument("--report-only", action="store_true", help="only rebuild results.md, the CSVs and curves.png")
    add_backend_arguments(p, "runs", shared="--out")
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    try:
        comparison = BUDGETS[args.budget]
        tasks = _names(args.tasks, TASK_BUDGETS, "tasks", comparison.tasks)
        elsewhere = {
            a: [b for b in BUDGETS if a in BUDGETS[b].agents]
            for a in ([] if args.agents == "all" else args.agents.split(","))
            if a not in comparison.agents
        }
        hint = "".join(f" ({a} belongs to --budget {', '.join(owners)})" for a, owners in elsewhere.items() if owners)
        agents = _names(args.agents, comparison.agents, "agents", hint=hint)
        seeds = parse_range_list(args.seeds, "--seeds")
        if min(seeds) < TUNING_SEEDS <= max(seeds):
            raise ValueError(
                f"--seeds {args.seeds!r} mixes reported seeds (0-99) and tuning seeds (100 and above): "
                f"run them separately, into separate --out folders"
            )
        if args.total_steps < 0 or args.eval_episodes < 1:
            raise ValueError("--total-steps must be ≥ 0 and --eval-episodes ≥ 1")
        out = Path(args.out or (comparison.out + ("-tuning" if min(seeds) >= TUNING_SEEDS else "")))
        jobs = plan(
            out,
            tasks,
            agents,
            seeds,
            args.total_steps or None,
            args.eval_episodes,
            args.svpg_options,
            args.budget,
            args.sb3_options,
            args.device,
        )
        if not args.report_only:
            check(jobs)
            out.mkdir(parents=True, exist_ok=True)
    except ValueError as e:
        print(f"{p.prog}: error: {e}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    if not args.report_only:
        gpus = gpus_per_job(args.gpus_per_job, args.device)
        status = run_grid(jobs, args.backend, args.jobs, p.prog, gpus)
        if status:
            return status
    text = report(out, args.budget)
    if text is None:
        print("no runs to report yet", file=sys.stderr)
        return 1
    print(text)
    if not args.report_only:
        print(f"wall-clock of this invocation: {(time.perf_counter() - t0) / 60:.1f} min")
    print(f"wrote {out / 'results.md'}, {out / 'results.csv'}, {out / 'curves.csv'}, {out / 'curves.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
