"""Bandit agents: Stein Thompson sampling (Algorithm 1 of S²VGD), the baselines of its §5.3
(neural greedy, ε-greedy) and of Riquelme et al. 2018 (LinUCB, uniform), and Thompson sampling from
parametric posteriors (Bayes by Backprop, the variational matrix Gaussian, Kronecker flows, BADAM).

Every agent follows one small interface, driven by :func:`svpg.bandits.protocol.play`:

* ``window(t)`` — how many rounds, starting at round ``t``, the agent can act without new data
  (1 for LinUCB; the rounds up to the next training point for the neural agents; all for uniform);
* ``act(contexts, t)`` — the arms for those rounds' contexts (n, d) → (n,) integers;
* ``update(contexts, actions, rewards, t)`` — the rewards of the played arms; returns diagnostics
  (a dict, empty when nothing was trained).

An agent never sees the rewards of arms it did not play. Acting in windows is what makes the
neural agents fast: between two training points the particles are fixed, so the arms of a whole
window come from one batched forward pass, with the particle of each round drawn up front.

Randomness: an agent built with ``seed`` and ``name`` draws from its own :mod:`svpg.seeding` streams,
``(seed, "agent", name, "act")`` for arm, particle, ε and posterior draws, and, for the neural agents,
``"init"`` for the initial particles and ``"minibatch"`` for the training minibatches. No global RNG
is touched; agents of different names, the problem's table and neighbouring seeds share no numbers.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from svpg.core.networks import NetworkSpec, ParticleMLP
from svpg.core.particles import ParticleLayout
from svpg.core.probability import gaussian_log_prob, inverse_gamma_log_prob_of_log
from svpg.core.svgd import SVGD
from svpg.core.variational import FAMILIES, make_posterior, posterior_options
from svpg.seeding import numpy_rng, torch_generator

UNBOUNDED = 1 << 62


class Agent:
    """Base class: stores the problem's sizes and checks the contexts it is given."""

    name = "agent"

    def __init__(self, num_actions: int, context_dim: int, name: str | None = None):
        if int(num_actions) < 2:
            raise ValueError(f"a bandit needs at least 2 arms, got num_actions={num_actions}")
        if int(context_dim) < 1:
            raise ValueError(f"context_dim must be ≥ 1, got {context_dim}")
        self.num_actions, self.context_dim = int(num_actions), int(context_dim)
        if name is not None:
            self.name = name

    def check_contexts(self, contexts) -> np.ndarray:
        contexts = np.asarray(contexts, dtype=np.float32)
        if contexts.ndim == 1:
            contexts = contexts[None]
        if contexts.ndim != 2 or contexts.shape[1] != self.context_dim:
            raise ValueError(
                f"agent {self.name!r} was built for {self.context_dim}-dimensional contexts but got an array of "
                f"shape {contexts.shape}; build the agent with context_dim={contexts.shape[-1]} "
                f"(e.g. make_agent(name, problem.num_actions, problem.context_dim))"
            )
        return contexts

    def window(self, t: int) -> int:
        return 1

    def act(self, contexts: np.ndarray, t: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def update(self, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray, t: int) -> dict:
        return {}

    def hyperparameters(self) -> dict:
        return {}

    def __repr__(self) -> str:
        hp = ", ".join(f"{k}={v!r}" for k, v in self.hyperparameters().items())
        return f"{type(self).__name__}(name={self.name!r}, num_actions={self.num_actions}, context_dim={self.context_dim}{', ' if hp else ''}{hp})"


class Uniform(Agent):
    """Plays an arm uniformly at random every round (the normalisation reference: regret = 100).

    Paper: https://arxiv.org/abs/1802.09127 (Riquelme et al. 2018, the normalisation of regret)
    """

    name = "uniform"

    def __init__(self, num_actions: int, context_dim: int, seed: int = 0, name: str | None = None):
        super().__init__(num_actions, context_dim, name)
        self.rng = numpy_rng(seed, "agent", self.name, "act")

    def window(self, t: int) -> int:
        return UNBOUNDED

    def act(self, contexts, t):
        contexts = self.check_contexts(contexts)
        return self.rng.integers(0, self.num_actions, size=contexts.shape[0])


class LinUCB(Agent):
    """LinUCB with disjoint linear models (Li et al. 2010, Algorithm 1).

    Paper: https://arxiv.org/abs/1003.0146

    Each arm a keeps A_a = λI + Σ x xᵀ and b_a = Σ r x over the rounds it was played (x is the
    context with a constant 1 appended) and plays argmax_a θ_aᵀx + α σ̂ √(xᵀ A_a⁻¹ x), θ_a = A_a⁻¹ b_a.
    σ̂ is the standard deviation of the rewards observed so far (1 before two are seen), which makes
    α free of the reward scale. A_a⁻¹ is kept up to date by Sherman–Morrison (O(d²) per round).

    :param alpha: width multiplier α of the confidence bonus.
    :param reg: ridge λ.
    """

    name = "linucb"

    def __init__(self, num_actions: int, context_dim: int, alpha: float = 1.0, reg: float = 1.0, seed: int = 0,
                 name: str | None = None):
        super().__init__(num_actions, context_dim, name)
        if not alpha >= 0:
            raise ValueError(f"linucb: alpha must be ≥ 0, got {alpha}")
        if not reg > 0:
            raise ValueError(f"linucb: reg (ridge λ) must be > 0, got {reg}")
        self.alpha, self.reg = float(alpha), float(reg)
        d = context_dim + 1
        self.a_inv = np.repeat(np.eye(d)[None] / self.reg, num_actions, axis=0)
        self.b = np.zeros((num_actions, d))
        self.coef = np.zeros((num_actions, d))
        self.rng = numpy_rng(seed, "agent", self.name, "act")
        self._n, self._sum, self._sumsq = 0, 0.0, 0.0

    def _features(self, contexts: np.ndarray) -> np.ndarray:
        return np.concatenate([contexts.astype(np.float64), np.ones((contexts.shape[0], 1))], axis=1)

    def reward_scale(self) -> float:
        if self._n < 2:
            return 1.0
        var = (self._sumsq - self._sum**2 / self._n) / (self._n - 1)
        return math.sqrt(var) if var > 0 else 1.0

    def scores(self, contexts: np.ndarray) -> np.ndarray:
        """UCB of every arm: (n, K)."""
        x = self._features(self.check_contexts(contexts))
        means = x @ self.coef.T
        widths = np.sqrt(np.maximum(np.einsum("nd,kde,ne->nk", x, self.a_inv, x), 0.0))
        return means + self.alpha * self.reward_scale() * widths

    def act(self, contexts, t):
        s = self.scores(contexts)
        s = s + 1e-9 * self.rng.random(s.shape)  # break exact ties at random, not towards arm 0
        return s.argmax(1)

    def update(self, contexts, actions, rewards, t):
        x = self._features(self.check_contexts(contexts))
        for xi, a, r in zip(x, np.asarray(actions), np.asarray(rewards, dtype=np.float64)):
            ax = self.a_inv[a] @ xi
            self.a_inv[a] -= np.outer(ax, ax) / (1.0 + xi @ ax)
            self.b[a] += r * xi
            self.coef[a] = self.a_inv[a] @ self.b[a]
            self._n += 1
            self._sum += r
            self._sumsq += r * r
        return {}

    def hyperparameters(self) -> dict:
        return {"alpha": self.alpha, "reg": self.reg}


class RewardModelAgent(Agent):
    """The schedule shared by the neural agents: round-robin warm-up, training every ``train_every``
    rounds on all data so far, standardised rewards.

    The first ``initial_pulls`` × K rounds play the arms in turn (Riquelme et al.'s initial pulls);
    afterwards every ``train_every`` rounds :meth:`train` runs (``train_steps`` minibatches of
    ``batch_size`` drawn from all data so far). Between two training points the model is fixed, so
    :meth:`choose_arms` picks the arms of a whole window at once. Rewards are standardised with the
    mean and standard deviation of all rewards seen so far (which leaves every argmax unchanged).
    """

    def __init__(self, num_actions: int, context_dim: int, *, train_every: int, train_steps: int, batch_size: int,
                 initial_pulls: int, device: str, name: str | None, problems: list[str] | None = None):
        super().__init__(num_actions, context_dim, name)
        problems = list(problems or [])
        for key, value in (("train_every", train_every), ("train_steps", train_steps), ("batch_size", batch_size)):
            if int(value) < 1:
                problems.append(f"{key} must be ≥ 1, got {value}")
        if int(initial_pulls) < 0:
            problems.append(f"initial_pulls must be ≥ 0, got {initial_pulls}")
        if problems:
            raise ValueError(f"agent {self.name!r}: " + "; ".join(problems))
        self.train_every, self.train_steps, self.batch_size = int(train_every), int(train_steps), int(batch_size)
        self.initial_pulls = int(initial_pulls)
        self.device = torch.device(device)
        # growable buffers of everything observed
        self._x = torch.empty(0, context_dim, device=self.device)
        self._a = torch.empty(0, dtype=torch.long, device=self.device)
        self._r = torch.empty(0, dtype=torch.float64, device=self.device)
        self.size = 0
        self.trainings = 0

    def window(self, t: int) -> int:
        warmup = self.initial_pulls * self.num_actions
        if t < warmup:
            return warmup - t
        return self.train_every - (t % self.train_every)

    def act(self, contexts, t):
        contexts = self.check_contexts(contexts)
        n = contexts.shape[0]
        if t < self.initial_pulls * self.num_actions:  # round-robin warm-up (Riquelme et al.'s initial pulls)
            return (t + np.arange(n)) % self.num_actions
        return self.choose_arms(contexts)

    def choose_arms(self, contexts: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _append(self, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray) -> None:
        n = len(actions)
        if self.size + n > self._x.shape[0]:
            cap = max(1024, 2 * (self.size + n))
            for name in ("_x", "_a", "_r"):
                old = getattr(self, name)
                new = torch.empty((cap, *old.shape[1:]), dtype=old.dtype, device=self.device)
                new[: self.size] = old[: self.size]
                setattr(self, name, new)
        s = slice(self.size, self.size + n)
        self._x[s] = torch.as_tensor(contexts, device=self.device)
        self._a[s] = torch.as_tensor(np.asarray(actions, dtype=np.int64), device=self.device)
        self._r[s] = torch.as_tensor(np.asarray(rewards, dtype=np.float64), device=self.device)
        self.size += n

    def update(self, contexts, actions, rewards, t):
        contexts = self.check_contexts(contexts)
        actions = np.asarray(actions)
        self._append(contexts, actions, rewards)
        if self.size >= self.initial_pulls * self.num_actions and self.size % self.train_every == 0:
            return self.train()
        return {}

    def data(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Contexts, played arms and standardised rewards of everything observed so far."""
        n = self.size
        r = self._r[:n]
        mean, std = r.mean(), r.std() if n > 1 else r.new_tensor(1.0)
        std = torch.where(std > 0, std, torch.ones_like(std))
        return self._x[:n], self._a[:n], ((r - mean) / std).float()

    def train(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def hyperparameters(self) -> dict:
        return {"train_every": self.train_every, "train_steps": self.train_steps, "batch_size": self.batch_size,
                "initial_pulls": self.initial_pulls}


class ParticleRewardModel(RewardModelAgent):
    """Shared machinery of the neural agents: M reward networks as one particle tensor θ (M, D).

    Paper: https://proceedings.mlr.press/v84/zhang18a.html (S²VGD, Algorithm 1)

    Each particle is an MLP from the context to the expected reward of every arm, plus the log of
    a noise variance σ² shared by the arms (a per-arm variance shrinks without bound on a
    deterministic arm, such as mushroom's "don't eat", whose terms then dominate the gradient). The target of SVGD is the posterior given all data so far,

        log p(θ | D) = (N/B) Σ_{i ∈ batch} log N(r_i | f_θ(x_i)[a_i], σ²) + log p(θ) + log p(σ²),

    a Gaussian likelihood on the *played* arm only, scaled by the data-set size N (not the batch
    size B); p(θ) is eq. 14 (or flat), σ² ~ Inv-Gamma(``noise_a``, ``noise_b``). Rewards are
    standardised with the mean and standard deviation of all rewards observed so far (which leaves
    every argmax unchanged). Every ``train_every`` rounds the particles take ``train_steps`` SVGD
    steps (eq. 9), all particles in one batched computation; each step keeps the Householder vectors
    at length √ℓ (:class:`~svpg.core.svgd.SVGD`; the smallest ‖v‖/√ℓ before it is logged as
    ``structure/min_householder_norm``).
    """

    def __init__(self, num_actions: int, context_dim: int, *, num_particles: int, spec: NetworkSpec,
                 kernel="median", optimizer: str = "adam", lr: float = 3e-3, train_every: int = 50,
                 train_steps: int = 10, batch_size: int = 64, initial_pulls: int = 2, noise_a: float = 1.0,
                 noise_b: float = 0.1, structural_lr_scale: float = 1.0, seed: int = 0, device: str = "cpu",
                 name: str | None = None):
        problems = []
        if int(num_particles) < 1:
            problems.append(f"num_particles must be ≥ 1, got {num_particles}")
        if not structural_lr_scale > 0:
            problems.append(f"structural_lr_scale must be > 0, got {structural_lr_scale}")
        if not (noise_a > 0 and noise_b > 0):
            problems.append(f"noise_a and noise_b (Inv-Gamma prior of the noise variance) must be > 0, got {noise_a}, {noise_b}")
        if spec.sizes[0] != context_dim or spec.sizes[-1] != num_actions:
            problems.append(f"network sizes {spec.sizes} must start at context_dim={context_dim} and end at num_actions={num_actions}")
        super().__init__(num_actions, context_dim, train_every=train_every, train_steps=train_steps,
                         batch_size=batch_size, initial_pulls=initial_pulls, device=device, name=name, problems=problems)
        self.num_particles, self.spec = int(num_particles), spec
        self.noise_a, self.noise_b = float(noise_a), float(noise_b)
        self.lr, self.optimizer_name, self.kernel_spec = float(lr), optimizer, kernel
        self.structural_lr_scale = float(structural_lr_scale)
        self.layout = ParticleLayout()
        self.net = ParticleMLP(self.layout, spec, "reward")
        self.layout.add("noise.log_var", (1,))
        # separate streams, so that e.g. a larger batch size leaves the initial particles and the arm draws unchanged
        self.rng = numpy_rng(seed, "agent", self.name, "act")
        self.minibatch_generator = torch_generator(seed, "agent", self.name, "minibatch", device=self.device)
        theta = torch.zeros(self.num_particles, self.layout.size, device=self.device)
        self.net.init_(theta, torch_generator(seed, "agent", self.name, "init", device=self.device))
        self.layout.get(theta, "noise.log_var").zero_()  # σ² = 1 in standardised reward units
        self.theta = theta.requires_grad_(True)
        structural = self.net.structural_blocks()
        step_scale = None  # Λ and Householder vectors may step slower than C and b (docs/bandits.md, "Defaults and why")
        if structural and self.structural_lr_scale != 1.0:
            step_scale = self.layout.per_coordinate(dict.fromkeys(structural, self.structural_lr_scale))
        self.svgd = SVGD(self.theta, kernel, optimizer, lr, step_scale=step_scale, network=self.net)
        self._weights = None

    @torch.no_grad()
    def predict(self, contexts) -> torch.Tensor:
        """Expected rewards (standardised units) of every particle: (M, n, K)."""
        contexts = self.check_contexts(contexts)
        if self._weights is None:
            self._weights = self.net.weights(self.theta.detach())
        x = torch.as_tensor(contexts, device=self.device)
        return self.net.forward(self._weights, x.unsqueeze(0).expand(self.num_particles, -1, -1))

    def choose_arms(self, contexts):
        return self.choose(self.predict(contexts), contexts.shape[0])

    def choose(self, values: torch.Tensor, n: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def log_posterior(self, theta: torch.Tensor, x: torch.Tensor, a: torch.Tensor, y: torch.Tensor, n: int) -> torch.Tensor:
        """The SVGD target of every particle on a minibatch (see the class docstring): (M,)."""
        m, b = theta.shape[0], x.shape[0]
        pred = self.net.forward(self.net.weights(theta), x.unsqueeze(0).expand(m, -1, -1))  # (M, B, K)
        pred_a = pred.gather(2, a.view(1, b, 1).expand(m, b, 1)).squeeze(2)  # played arm only
        lv = self.layout.get(theta, "noise.log_var")  # (M, 1), one noise variance shared by the arms
        loglik = gaussian_log_prob(y, pred_a, log_var=lv)
        noise_prior = inverse_gamma_log_prob_of_log(lv[:, 0], self.noise_a, self.noise_b)
        return (n / b) * loglik.sum(1) + self.net.log_prior(theta) + noise_prior

    def train(self) -> dict:
        """``train_steps`` minibatch SVGD steps on all data so far (Algorithm 1, line 7)."""
        n = self.size
        x_all, a_all, y_all = self.data()
        terms, householder_norms = None, []
        for _ in range(self.train_steps):
            idx = torch.randint(0, n, (self.batch_size,), generator=self.minibatch_generator, device=self.device)
            logp = self.log_posterior(self.theta, x_all[idx], a_all[idx], y_all[idx], n)
            (grad,) = torch.autograd.grad(logp.sum(), self.theta)
            terms = self.svgd.step(grad)
            householder_norms.append(terms.min_householder_norm)
        self._weights = None
        self.trainings += 1
        diag = terms.diagnostics(self.theta.detach())
        diag["train/log_posterior"] = logp.detach().mean()
        if self.net.has_householder:
            diag["structure/min_householder_norm"] = torch.stack(householder_norms).amin()
        return diag

    def hyperparameters(self) -> dict:
        return {
            "num_particles": self.num_particles, "hidden": list(self.spec.sizes[1:-1]), "activation": self.spec.activation,
            "householder": self.spec.householder, "learn_scales": self.spec.learn_scales, "prior": self.spec.prior,
            "prior_a": self.spec.prior_a, "prior_b": self.spec.prior_b, "noise_a": self.noise_a, "noise_b": self.noise_b,
            "kernel": str(self.kernel_spec), "optimizer": self.optimizer_name, "lr": self.lr, "train_every": self.train_every,
            "train_steps": self.train_steps, "batch_size": self.batch_size, "initial_pulls": self.initial_pulls,
            "structural_output": self.spec.structural_output, "structural_lr_scale": self.structural_lr_scale,
        }


def _spec(context_dim, num_actions, hidden, activation, householder, learn_scales, prior, prior_a, prior_b,
          structural_output=True) -> NetworkSpec:
    return NetworkSpec((context_dim, *tuple(hidden), num_actions), activation=activation, householder=householder,
                       learn_scales=learn_scales, prior=prior, prior_a=prior_a, prior_b=prior_b,
                       structural_output=structural_output)


# Settings of the Stein agents chosen on mushroom tuning seeds 100–102 at the full 50,000 rounds, each
# method its own best (docs/bandits.md, "Defaults and why"); the greedy agents keep ParticleRewardModel's 3e-3.
STEIN_METHODS = ("s2vgd", "svgd")  # the SVGD-trained agents (SteinThompson's method)
STEIN_LR = {"s2vgd": 1e-3, "svgd": 1e-3}
# s2vgd: K = 2 reflections, structural hidden layer, plain output layer (the output's 2-D reflection
# mixes the arms), Λ and Householder vectors stepping at 0.1 × lr
S2VGD_STRUCTURE = {"householder": 2, "structural_output": False, "structural_lr_scale": 0.1}


class SteinThompson(ParticleRewardModel):
    """Stein Thompson sampling (Algorithm 1 of S²VGD, §4.1).

    Paper: https://proceedings.mlr.press/v84/zhang18a.html (S²VGD, §4.1 and eqs. 9–14), https://arxiv.org/abs/1608.04471 (SVGD)

    Each round one particle is drawn uniformly and its argmax arm is played; every ``train_every``
    rounds the particles take ``train_steps`` SVGD steps on minibatches of all data so far.

    :param method: ``"s2vgd"`` (structural prior: K Householder reflections per side and learned
        scales Λ, eqs. 10–14) or ``"svgd"`` (plain dense layers).
    :param num_particles: M. :param hidden: hidden widths.
    :param householder: K (s2vgd only). :param structural_output: the output layer structural too
        (s2vgd only). :param structural_lr_scale: step of the Λ and Householder coordinates relative
        to ``lr`` (s2vgd only). Defaults: ``S2VGD_STRUCTURE``.
    :param kernel: ``"median"``, a fixed bandwidth, or ``"identity"`` (M independent learners).
    :param lr: Adam's step; default ``STEIN_LR[method]``.
    The defaults were chosen on mushroom tuning seeds (docs/bandits.md, "Defaults and why").
    See :class:`ParticleRewardModel` for the training parameters.
    """

    def __init__(self, num_actions: int, context_dim: int, method: str = "s2vgd", num_particles: int = 20,
                 householder: int = S2VGD_STRUCTURE["householder"], hidden=(50,), activation: str = "relu",
                 prior: str = "mvg", prior_a: float = 1.0, prior_b: float = 0.1,
                 structural_output: bool = S2VGD_STRUCTURE["structural_output"],
                 structural_lr_scale: float = S2VGD_STRUCTURE["structural_lr_scale"], seed: int = 0,
                 name: str | None = None, lr: float | None = None, **training):
        if method not in STEIN_METHODS:
            raise ValueError(f"SteinThompson: method must be one of {', '.join(STEIN_METHODS)}, got {method!r}")
        if method == "s2vgd" and householder < 1:
            raise ValueError("SteinThompson: s2vgd needs householder K ≥ 1 (K = 0 with learned scales is the diagonal MVG)")
        self.method = method
        structural = method == "s2vgd"
        # plain SVGD has no structure: K = 0, Λ = I, every layer plain, no structural step scale
        spec = _spec(context_dim, num_actions, hidden, activation, householder if structural else 0, structural,
                     prior, prior_a, prior_b, structural_output or not structural)
        super().__init__(num_actions, context_dim, num_particles=num_particles, spec=spec, seed=seed,
                         name=name or method, lr=STEIN_LR[method] if lr is None else lr,
                         structural_lr_scale=structural_lr_scale if structural else 1.0, **training)

    def choose(self, values, n):
        particle = torch.as_tensor(self.rng.integers(0, self.num_particles, size=n), device=values.device)
        return values[particle, torch.arange(n, device=values.device)].argmax(1).cpu().numpy()

    def hyperparameters(self) -> dict:
        return {"method": self.method, **super().hyperparameters()}


class NeuralGreedy(ParticleRewardModel):
    """A single reward network (M = 1, plain dense layers), trained to the MAP of the same posterior
    as the particles (SVGD with one particle is gradient ascent on log p), playing greedily: the
    neural baselines of the S²VGD paper's §5.3 and of Riquelme et al. 2018.

    Paper: https://proceedings.mlr.press/v84/zhang18a.html (§5.3), https://arxiv.org/abs/1802.09127

    :param epsilon: probability of playing a uniformly random arm instead (ε-greedy).
    """

    def __init__(self, num_actions: int, context_dim: int, epsilon: float = 0.0, hidden=(50,),
                 activation: str = "relu", prior: str = "mvg", prior_a: float = 1.0, prior_b: float = 0.1,
                 seed: int = 0, name: str | None = None, **training):
        if not 0 <= epsilon <= 1:
            raise ValueError(f"epsilon must lie in [0, 1], got {epsilon}")
        self.epsilon = float(epsilon)
        training.pop("num_particles", None)
        training.pop("householder", None)
        spec = _spec(context_dim, num_actions, hidden, activation, 0, False, prior, prior_a, prior_b)
        default = "neural-greedy" if epsilon == 0 else f"eps-greedy-{epsilon:g}"
        super().__init__(num_actions, context_dim, num_particles=1, spec=spec, seed=seed, name=name or default, **training)

    def choose(self, values, n):
        greedy = values[0].argmax(1).cpu().numpy()
        if self.epsilon > 0:
            explore = self.rng.random(n) < self.epsilon
            greedy = np.where(explore, self.rng.integers(0, self.num_actions, size=n), greedy)
        return greedy

    def hyperparameters(self) -> dict:
        hp = super().hyperparameters()
        hp.pop("num_particles")
        return {"epsilon": self.epsilon, **hp}


class EpsilonGreedy(NeuralGreedy):
    """ε-greedy on a neural reward model (Sutton & Barto; the S²VGD paper's baseline at ε = 0, 1, 3 %).

    Paper: https://proceedings.mlr.press/v84/zhang18a.html (§5.3)
    """

    def __init__(self, num_actions: int, context_dim: int, epsilon: float = 0.01, **kwargs):
        super().__init__(num_actions, context_dim, epsilon=epsilon, **kwargs)


# The posterior families of svpg.core.variational as Thompson-sampling agents (VariationalThompson).
VARIATIONAL_METHODS = tuple(FAMILIES)
# Adam's step of each variational agent, chosen on mushroom tuning seeds 100–102 (docs/bandits.md,
# "Variational and Adam baselines").
VARIATIONAL_LR = {"bbb": 3e-3, "vmg": 1e-3, "kflow-diag": 1e-3, "kflow-linear": 3e-3, "badam": 3e-3}
# Posterior options of the agents that differ from make_posterior's defaults, chosen on the same tuning
# seeds: BADAM's prior N(0, 0.1²) (also its paper's bandit prior); at σ = 1 eq. 14's variance, capped by
# σ², stays so wide for thousands of rounds that the draws play almost at random.
VARIATIONAL_POSTERIOR = {"badam": {"prior_std": 0.1}}


class VariationalThompson(RewardModelAgent):
    """Thompson sampling with a parametric weight posterior (:mod:`svpg.core.variational`).

    Paper: https://arxiv.org/abs/1505.05424 (Bayes by Backprop, §5.3: Thompson sampling from q)
    Paper: https://arxiv.org/abs/1603.04733 (variational matrix Gaussian)
    Paper: https://arxiv.org/abs/1906.04282 (Kronecker flow, §5: approximate Thompson sampling)
    Paper: https://arxiv.org/abs/1811.03679 (BADAM, §5.2: Thompson sampling)

    The reward network (context → expected reward of every arm) has a posterior of family ``method``;
    every decision plays the argmax arm of its own posterior draw (n decisions: one forward pass with
    n independent draws). Every ``train_every`` rounds Adam takes ``train_steps`` steps on minibatches
    of all data so far (the schedule of :class:`RewardModelAgent`) of

        −(N/B) Σ_{i ∈ batch} log N(r_i | f_w(x_i)[a_i], σ²) + R − log p(σ²),

    one weight draw per step (local reparameterisation), N the rounds so far; R is KL(q ‖ p) for
    bbb, vmg and the Kronecker flows (their ELBO) and −log p(θ) for badam, whose Adam state then gives
    its posterior (eq. 14 of BADAM, N = the rounds observed so far). The likelihood is the Stein agents': the
    played arm only, one noise variance σ² shared by the arms, learned (a point estimate) under their
    Inv-Gamma(``noise_a``, ``noise_b``) prior, so the agents differ in their weight posteriors only.

    :param method: one of ``VARIATIONAL_METHODS``. :param hidden: hidden widths; :param activation.
    :param lr: Adam's step (default ``VARIATIONAL_LR[method]``).
    :param family_options: options of :func:`svpg.core.variational.make_posterior` (``prior_std``,
        ``init_std``, bbb's mixture ``pi``, ``sigma1``, ``sigma2``, …; their defaults there, except
        those of ``VARIATIONAL_POSTERIOR``).
    """

    def __init__(self, num_actions: int, context_dim: int, method: str = "bbb", hidden=(50,), activation: str = "relu",
                 lr: float | None = None, noise_a: float = 1.0, noise_b: float = 0.1, train_every: int = 50,
                 train_steps: int = 10, batch_size: int = 64, initial_pulls: int = 2, seed: int = 0,
                 device: str = "cpu", name: str | None = None, **family_options):
        if method not in VARIATIONAL_METHODS:
            raise ValueError(f"VariationalThompson: method must be one of {', '.join(VARIATIONAL_METHODS)}, got {method!r}")
        lr = VARIATIONAL_LR[method] if lr is None else float(lr)
        problems = []
        if not lr > 0:
            problems.append(f"lr must be > 0, got {lr}")
        if not (noise_a > 0 and noise_b > 0):
            problems.append(f"noise_a and noise_b (Inv-Gamma prior of the noise variance) must be > 0, got {noise_a}, {noise_b}")
        super().__init__(num_actions, context_dim, train_every=train_every, train_steps=train_steps,
                         batch_size=batch_size, initial_pulls=initial_pulls, device=device, name=name or method,
                         problems=problems)
        self.method, self.lr, self.noise_a, self.noise_b = method, lr, float(noise_a), float(noise_b)
        self.hidden, self.activation = tuple(int(h) for h in hidden), activation
        # initialised on the CPU whatever the device, so that a CUDA agent starts from the same weights
        init = torch_generator(seed, "agent", self.name, "init")
        family_options = {**VARIATIONAL_POSTERIOR.get(method, {}), **family_options}
        self.posterior = make_posterior(method, (context_dim, *self.hidden, num_actions), activation, generator=init,
                                        **family_options).to(self.device)
        self.log_var = torch.zeros(1, device=self.device, requires_grad=True)  # σ² = 1 in standardised reward units
        self.optimizer = torch.optim.Adam([*self.posterior.parameters(), self.log_var], lr)
        self.act_generator = torch_generator(seed, "agent", self.name, "act", device=self.device)
        # minibatch indices and the training steps' weight draws
        self.minibatch_generator = torch_generator(seed, "agent", self.name, "minibatch", device=self.device)
        self.steps = 0

    @torch.no_grad()
    def sample_values(self, contexts) -> torch.Tensor:
        """Expected rewards (standardised units) of every arm, one posterior draw per context: (n, K)."""
        x = torch.as_tensor(self.check_contexts(contexts), device=self.device)
        return self.posterior(x.unsqueeze(1), x.shape[0], self.act_generator)[:, 0]

    def choose_arms(self, contexts):
        return self.sample_values(contexts).argmax(1).cpu().numpy()

    def loss(self, x: torch.Tensor, a: torch.Tensor, y: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The minibatch objective of the class docstring and its R term."""
        g, b = self.minibatch_generator, x.shape[0]
        pred = self.posterior.train_forward(x, 1, g)                          # (S, B, K)
        pred_a = pred.gather(2, a.view(1, b, 1).expand(pred.shape[0], b, 1)).squeeze(2)
        loglik = gaussian_log_prob(y, pred_a, log_var=self.log_var)
        reg = self.posterior.regulariser(g)
        noise_prior = inverse_gamma_log_prob_of_log(self.log_var[0], self.noise_a, self.noise_b)
        return -(n / b) * loglik.mean(0).sum() + reg - noise_prior, reg

    def train(self) -> dict:
        """``train_steps`` Adam steps on minibatches of all data so far."""
        n = self.size
        x_all, a_all, y_all = self.data()
        for _ in range(self.train_steps):
            idx = torch.randint(0, n, (self.batch_size,), generator=self.minibatch_generator, device=self.device)
            loss, reg = self.loss(x_all[idx], a_all[idx], y_all[idx], n)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.steps += 1
            # BADAM's N (eq. 14): the training rows seen so far, as the BADAM reference code's N (the
            # data-set size), not Adam steps × batch size, which grows without the data and shrinks the variance
            self.posterior.observe_step(self.optimizer, n, data_size=n)
        self.trainings += 1
        return {"train/loss": loss.detach(), "train/regulariser": reg.detach(),
                "train/noise_std": torch.exp(0.5 * self.log_var.detach()[0])}

    def hyperparameters(self) -> dict:
        return {"method": self.method, "hidden": list(self.hidden), "activation": self.activation, "lr": self.lr,
                "noise_a": self.noise_a, "noise_b": self.noise_b, **super().hyperparameters(),
                **self.posterior.options}


# ----------------------------------------------------------------------------- registry
AGENTS = {
    "s2vgd": "Stein Thompson sampling, structural prior (K Householder reflections per side, learned Λ scales)",
    "svgd": "Stein Thompson sampling, plain dense layers",
    "neural-greedy": "one reward network (MAP), greedy; aliases: greedy, eps-greedy-0",
    "eps-greedy-<ε>": "one reward network (MAP), a random arm with probability ε, e.g. eps-greedy-0.01, eps-greedy-0.03",
    "linucb": "LinUCB with disjoint linear models (Li et al. 2010)",
    "bbb": "Thompson sampling from Bayes by Backprop's diagonal Gaussian posterior (Blundell et al. 2015)",
    "vmg": "Thompson sampling from a variational matrix Gaussian posterior (Louizos & Welling 2016)",
    "kflow-diag": "Thompson sampling from a Kronecker-product posterior, diagonal factors (Huang et al. 2020, K-Diag)",
    "kflow-linear": "Thompson sampling from a linear Kronecker-flow posterior (Huang et al. 2020, K-Linear)",
    "badam": "Thompson sampling from Bayesian Adam's posterior (Salas et al. 2018)",
    "uniform": "a uniformly random arm (the normalisation reference, = 100)",
}
DEFAULT_AGENTS = ("s2vgd", "svgd", "neural-greedy", "eps-greedy-0.01", "eps-greedy-0.03", "linucb", "uniform")
NEURAL_OPTIONS = ("hidden", "activation", "prior", "prior_a", "prior_b", "noise_a", "noise_b", "optimizer", "lr",
                  "train_every", "train_steps", "batch_size", "initial_pulls", "device", "kernel")


# the neural options that the variational agents share with the Stein agents (not their prior, optimizer or kernel)
VARIATIONAL_NEURAL = ("hidden", "activation", "noise_a", "noise_b", "train_every", "train_steps", "batch_size",
                      "initial_pulls", "device")


def canonical_name(name: str) -> str:
    """``greedy`` and ``eps-greedy-0`` are ``neural-greedy``; ε is written without trailing zeros."""
    key = name.strip().lower()
    if key in ("greedy", "neural-greedy"):
        return "neural-greedy"
    if key.startswith("eps-greedy-") or key.startswith("epsilon-greedy-"):
        eps = _parse_epsilon(key)
        return "neural-greedy" if eps == 0 else f"eps-greedy-{eps:g}"
    return key


def _parse_epsilon(key: str) -> float:
    text = key.rsplit("-", 1)[1]
    try:
        eps = float(text)
    except ValueError:
        raise ValueError(f"unknown agent {key!r}: ε-greedy agents are named eps-greedy-<ε>, e.g. eps-greedy-0.01") from None
    if not 0 <= eps <= 1:
        raise ValueError(f"agent {key!r}: ε must lie in [0, 1], got {eps}")
    return eps


def make_agent(name: str, num_actions: int, context_dim: int, seed: int = 0, **options) -> Agent:
    """Build an agent by name (see ``AGENTS``); ``options`` are passed on where they apply.

    Options for the neural agents: ``num_particles``, ``householder``, and those in ``NEURAL_OPTIONS``;
    ``s2vgd_lr`` / ``svgd_lr`` (if given and non-zero) replace ``lr`` for that Stein agent only; for LinUCB: ``linucb_alpha``, ``linucb_reg``.
    The variational agents (``VARIATIONAL_METHODS``) take those of ``VARIATIONAL_NEURAL``, their family's
    options of :func:`svpg.core.variational.posterior_options` (``prior_std``, ``init_std``, …) and
    ``variational_lr`` (0 or absent: ``VARIATIONAL_LR``), not ``lr``.
    Options that do not apply to an agent are ignored, so one options dict can configure a whole list of agents.
    """
    key = canonical_name(name)
    neural = {k: v for k, v in options.items() if k in NEURAL_OPTIONS}
    if key in STEIN_METHODS:
        extra = {k: options[k] for k in ("num_particles", "householder", "structural_output", "structural_lr_scale")
                 if k in options}
        own_lr = options.get(f"{key}_lr")  # a per-method learning rate (tuned separately), else the shared lr
        if own_lr:
            neural["lr"] = float(own_lr)
        return SteinThompson(num_actions, context_dim, method=key, seed=seed, **extra, **neural)
    if key == "neural-greedy":
        return NeuralGreedy(num_actions, context_dim, epsilon=0.0, seed=seed, **neural)
    if key.startswith("eps-greedy-"):
        return EpsilonGreedy(num_actions, context_dim, epsilon=_parse_epsilon(key), seed=seed, name=key, **neural)
    if key in VARIATIONAL_METHODS:
        own = {k: v for k, v in neural.items() if k in VARIATIONAL_NEURAL}
        # the family's own posterior options (bbb's prior is "mixture" | "gaussian", not the Stein agents' --prior)
        own.update({k: options[k] for k in posterior_options(key) if k in options and k not in NEURAL_OPTIONS})
        own["lr"] = options.get("variational_lr") or None      # 0 / None: the agent's tuned rate
        return VariationalThompson(num_actions, context_dim, method=key, seed=seed, **own)
    if key == "linucb":
        return LinUCB(num_actions, context_dim, alpha=options.get("linucb_alpha", 1.0), reg=options.get("linucb_reg", 1.0), seed=seed)
    if key == "uniform":
        return Uniform(num_actions, context_dim, seed=seed)
    raise ValueError(f"unknown agent {name!r}: choose from {', '.join(AGENTS)}")
