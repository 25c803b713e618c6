"""The particle agents: Stein Thompson sampling (Algorithm 1 of S²VGD) and the neural greedy and
ε-greedy baselines of its §5.3, M reward networks as one particle tensor moved by SVGD."""

from __future__ import annotations

from typing import TypedDict, cast

import numpy as np
import torch

from svpg.bandits.agents.base import RewardModelAgent, noise_prior_problems
from svpg.core.networks import NetworkSpec, ParticleMLP
from svpg.core.particles import ParticleLayout
from svpg.core.probability import gaussian_log_prob, inverse_gamma_log_prob_of_log
from svpg.core.svgd import SVGD
from svpg.seeding import numpy_rng, torch_generator


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

    def __init__(
        self,
        num_actions: int,
        context_dim: int,
        *,
        num_particles: int,
        spec: NetworkSpec,
        kernel="median",
        optimizer: str = "adam",
        lr: float = 3e-3,
        train_every: int = 50,
        train_steps: int = 10,
        batch_size: int = 64,
        initial_pulls: int = 2,
        noise_a: float = 1.0,
        noise_b: float = 0.1,
        structural_lr_scale: float = 1.0,
        seed: int = 0,
        device: str = "cpu",
        name: str | None = None,
    ):
        problems = []
        if int(num_particles) < 1:
            problems.append(f"num_particles must be ≥ 1, got {num_particles}")
        if not structural_lr_scale > 0:
            problems.append(f"structural_lr_scale must be > 0, got {structural_lr_scale}")
        problems += noise_prior_problems(noise_a, noise_b)
        if spec.sizes[0] != context_dim or spec.sizes[-1] != num_actions:
            problems.append(
                f"network sizes {spec.sizes} must start at context_dim={context_dim} and end at num_actions={num_actions}"
            )
        super().__init__(
            num_actions,
            context_dim,
            train_every=train_every,
            train_steps=train_steps,
            batch_size=batch_size,
            initial_pulls=initial_pulls,
            device=device,
            name=name,
            problems=problems,
        )
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
        step_scale = (
            None  # Λ and Householder vectors may step slower than C and b (docs/bandits.md, "Defaults and why")
        )
        if structural and self.structural_lr_scale != 1.0:
            step_scale = self.layout.per_coordinate(dict.fromkeys(structural, self.structural_lr_scale))
        self.svgd = SVGD(self.theta, kernel, optimizer, lr, step_scale=step_scale, network=self.net)
        self._weights: list[tuple[torch.Tensor, torch.Tensor]] | None = None

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

    def log_posterior(
        self, theta: torch.Tensor, x: torch.Tensor, a: torch.Tensor, y: torch.Tensor, n: int
    ) -> torch.Tensor:
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
        terms = None
        householder_norms: list[torch.Tensor | None] = []  # each set: the SVGD holds the network
        for _ in range(self.train_steps):
            idx = torch.randint(0, n, (self.batch_size,), generator=self.minibatch_generator, device=self.device)
            logp = self.log_posterior(self.theta, x_all[idx], a_all[idx], y_all[idx], n)
            (grad,) = torch.autograd.grad(logp.sum(), self.theta)
            terms = self.svgd.step(grad)
            householder_norms.append(terms.min_householder_norm)
        self._weights = None
        self.trainings += 1
        assert terms is not None  # train_steps ≥ 1, checked at construction
        diag = terms.diagnostics(self.theta.detach())
        diag["train/log_posterior"] = logp.detach().mean()
        if self.net.has_householder:
            diag["structure/min_householder_norm"] = torch.stack(cast("list[torch.Tensor]", householder_norms)).amin()
        return diag

    def hyperparameters(self) -> dict:
        return {
            "num_particles": self.num_particles,
            "hidden": list(self.spec.sizes[1:-1]),
            "activation": self.spec.activation,
            "householder": self.spec.householder,
            "learn_scales": self.spec.learn_scales,
            "prior": self.spec.prior,
            "prior_a": self.spec.prior_a,
            "prior_b": self.spec.prior_b,
            "noise_a": self.noise_a,
            "noise_b": self.noise_b,
            "kernel": str(self.kernel_spec),
            "optimizer": self.optimizer_name,
            "lr": self.lr,
            "train_every": self.train_every,
            "train_steps": self.train_steps,
            "batch_size": self.batch_size,
            "initial_pulls": self.initial_pulls,
            "structural_output": self.spec.structural_output,
            "structural_lr_scale": self.structural_lr_scale,
        }


def _spec(
    context_dim,
    num_actions,
    hidden,
    activation,
    householder,
    learn_scales,
    prior,
    prior_a,
    prior_b,
    structural_output=True,
) -> NetworkSpec:
    return NetworkSpec(
        (context_dim, *tuple(hidden), num_actions),
        activation=activation,
        householder=householder,
        learn_scales=learn_scales,
        prior=prior,
        prior_a=prior_a,
        prior_b=prior_b,
        structural_output=structural_output,
    )


# Settings of the Stein agents chosen on mushroom tuning seeds 100–102 at the full 50,000 rounds, each
# method its own best (docs/bandits.md, "Defaults and why"); the greedy agents keep ParticleRewardModel's 3e-3.
STEIN_METHODS = ("s2vgd", "svgd")  # the SVGD-trained agents (SteinThompson's method)
STEIN_LR = {"s2vgd": 1e-3, "svgd": 1e-3}


# s2vgd: K = 2 reflections, structural hidden layer, plain output layer (the output's 2-D reflection
# mixes the arms), Λ and Householder vectors stepping at 0.1 × lr
class S2VGDStructure(TypedDict):
    householder: int
    structural_output: bool
    structural_lr_scale: float


S2VGD_STRUCTURE: S2VGDStructure = {"householder": 2, "structural_output": False, "structural_lr_scale": 0.1}


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

    def __init__(
        self,
        num_actions: int,
        context_dim: int,
        method: str = "s2vgd",
        num_particles: int = 20,
        householder: int = S2VGD_STRUCTURE["householder"],
        hidden=(50,),
        activation: str = "relu",
        prior: str = "mvg",
        prior_a: float = 1.0,
        prior_b: float = 0.1,
        structural_output: bool = S2VGD_STRUCTURE["structural_output"],
        structural_lr_scale: float = S2VGD_STRUCTURE["structural_lr_scale"],
        seed: int = 0,
        name: str | None = None,
        lr: float | None = None,
        **training,
    ):
        if method not in STEIN_METHODS:
            raise ValueError(f"SteinThompson: method must be one of {', '.join(STEIN_METHODS)}, got {method!r}")
        if method == "s2vgd" and householder < 1:
            raise ValueError(
                "SteinThompson: s2vgd needs householder K ≥ 1 (K = 0 with learned scales is the diagonal MVG)"
            )
        self.method = method
        structural = method == "s2vgd"
        # plain SVGD has no structure: K = 0, Λ = I, every layer plain, no structural step scale
        spec = _spec(
            context_dim,
            num_actions,
            hidden,
            activation,
            householder if structural else 0,
            structural,
            prior,
            prior_a,
            prior_b,
            structural_output or not structural,
        )
        super().__init__(
            num_actions,
            context_dim,
            num_particles=num_particles,
            spec=spec,
            seed=seed,
            name=name or method,
            lr=STEIN_LR[method] if lr is None else lr,
            structural_lr_scale=structural_lr_scale if structural else 1.0,
            **training,
        )

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

    def __init__(
        self,
        num_actions: int,
        context_dim: int,
        epsilon: float = 0.0,
        hidden=(50,),
        activation: str = "relu",
        prior: str = "mvg",
        prior_a: float = 1.0,
        prior_b: float = 0.1,
        seed: int = 0,
        name: str | None = None,
        **training,
    ):
        if not 0 <= epsilon <= 1:
            raise ValueError(f"epsilon must lie in [0, 1], got {epsilon}")
        self.epsilon = float(epsilon)
        training.pop("num_particles", None)
        training.pop("householder", None)
        spec = _spec(context_dim, num_actions, hidden, activation, 0, False, prior, prior_a, prior_b)
        default = "neural-greedy" if epsilon == 0 else f"eps-greedy-{epsilon:g}"
        super().__init__(
            num_actions, context_dim, num_particles=1, spec=spec, seed=seed, name=name or default, **training
        )

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
