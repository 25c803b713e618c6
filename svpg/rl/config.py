"""The training configuration: one dataclass whose fields document themselves (CleanRL style).

``train.py`` builds its command line from these fields, so ``--help`` and this file never disagree.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields

METHODS = {
    # method: (Householder K used?, learn Λ scales, kernel)
    "s2vgd": "structural prior: W = P Λ1 C Λ2 Qᵀ with K Householder reflections per side, RBF kernel",
    "svgd": "plain dense layers (K = 0, Λ = I), RBF kernel",
    "independent": "plain dense layers, identity kernel: M independent policy-gradient learners",
}
ESTIMATORS = ("reinforce",)


def _f(default, help: str, **kw):
    return field(default=default, metadata={"help": help, **kw})


@dataclass
class SVPGConfig:
    """Stein variational policy gradient (eq. 19 of S²VGD) on a vectorized Gymnasium task."""

    env_id: str = _f("CartPole-v1", "Gymnasium environment id (svpg/* and CartPole-v1 run on the fast batched path)")
    method: str = _f("s2vgd", "s2vgd | svgd | independent", choices=tuple(METHODS))
    estimator: str = _f("reinforce", "policy-gradient estimator", choices=ESTIMATORS)
    num_particles: int = _f(16, "M, the number of policy particles")
    householder: int = _f(1, "K, Householder reflections per side of every layer (s2vgd only; capped at min(ℓ1, ℓ2))")
    hidden: tuple[int, ...] = _f((25, 10), "hidden layer widths of the tanh policy MLP")
    alpha: float = _f(1.0, "temperature α of the target q(θ) ∝ exp(J(θ)/α) p(θ) (eq. 18); larger α trusts the prior more")
    prior: str = _f("mvg", "mvg (eq. 14 with Inv-Gamma(a, b) hyperpriors) | flat (original SVPG)", choices=("mvg", "flat"))
    prior_a: float = _f(1.0, "Inv-Gamma shape a of the prior variances")
    prior_b: float = _f(0.1, "Inv-Gamma scale b of the prior variances")
    bandwidth: str = _f("median", "RBF bandwidth h: 'median' (h = med²/log M) or a fixed positive number")
    optimizer: str = _f("adam", "adam | rmsprop | adagrad | sgd (steps along −φ)", choices=("adam", "rmsprop", "adagrad", "sgd"))
    lr: float = _f(5e-3, "learning rate")
    samples_per_particle: int = _f(5000, "environment steps each particle collects per iteration")
    horizon: int = _f(0, "maximum episode length (0: the environment's own limit)")
    gamma: float = _f(0.99, "discount factor γ")
    iterations: int = _f(200, "number of SVGD updates (iterations)")
    total_steps: int = _f(0, "if > 0, train for this many environment steps instead of --iterations")
    seed: int = _f(0, "random seed (initial particles, environments, action noise)")
    device: str = _f("cpu", "torch device, e.g. cpu or cuda")
    threads: int = _f(0, "torch CPU threads (0: all cores)")
    log_dir: str = _f("runs", "parent folder of run folders")
    run_name: str = _f("", "run folder name (default: <env>__<method>__<seed>__<time>)")
    checkpoint_every: int = _f(10, "save a checkpoint every this many iterations (0: only at the end)")
    eval_episodes: int = _f(20, "episodes per particle in the final evaluation (0: skip)")
    resume: str = _f("", "run folder to resume from (its config is reused; other options are ignored)")
    progress: bool = _f(True, "show a progress bar")

    def validate(self) -> "SVPGConfig":
        problems = []
        if self.method not in METHODS:
            problems.append(f"--method {self.method!r}: choose from {', '.join(METHODS)}")
        if self.estimator not in ESTIMATORS:
            problems.append(f"--estimator {self.estimator!r}: choose from {', '.join(ESTIMATORS)}")
        for name in ("num_particles", "samples_per_particle"):
            if getattr(self, name) < 1:
                problems.append(f"--{name.replace('_', '-')} must be ≥ 1, got {getattr(self, name)}")
        for name in ("iterations", "total_steps", "horizon", "householder", "checkpoint_every", "eval_episodes", "threads"):
            if getattr(self, name) < 0:
                problems.append(f"--{name.replace('_', '-')} must be ≥ 0, got {getattr(self, name)}")
        if self.iterations == 0 and self.total_steps == 0:
            problems.append("give --iterations > 0 or --total-steps > 0")
        if not self.alpha > 0:
            problems.append(f"--alpha (temperature) must be > 0, got {self.alpha}")
        if not self.lr > 0:
            problems.append(f"--lr must be > 0, got {self.lr}")
        if not 0 <= self.gamma <= 1:
            problems.append(f"--gamma must be in [0, 1], got {self.gamma}")
        if not self.hidden or min(self.hidden) < 1:
            problems.append(f"--hidden needs positive widths, got {self.hidden}")
        if self.bandwidth != "median":
            try:
                ok = float(self.bandwidth) > 0
            except ValueError:
                ok = False
            if not ok:
                problems.append(f"--bandwidth must be 'median' or a positive number, got {self.bandwidth!r}")
        if problems:
            raise ValueError("invalid configuration:\n  " + "\n  ".join(problems))
        return self

    def kernel_spec(self) -> str | float:
        if self.method == "independent":
            return "identity"
        return "median" if self.bandwidth == "median" else float(self.bandwidth)

    def network_kwargs(self) -> dict:
        structural = self.method == "s2vgd"
        return dict(
            hidden=tuple(self.hidden),
            activation="tanh",
            householder=self.householder if structural else 0,
            learn_scales=structural,
            prior=self.prior,
            prior_a=self.prior_a,
            prior_b=self.prior_b,
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_dict(cls, d: dict) -> "SVPGConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown config keys {sorted(unknown)}")
        d = dict(d)
        if "hidden" in d:
            d["hidden"] = tuple(d["hidden"])
        return cls(**d)
