"""Thompson sampling from the parametric posteriors of :mod:`svpg.core.variational` (Bayes by Backprop,
the variational matrix Gaussian, Kronecker flows, BADAM)."""

from __future__ import annotations

import torch

from svpg.bandits.agents.base import RewardModelAgent, noise_prior_problems
from svpg.core.probability import gaussian_log_prob, inverse_gamma_log_prob_of_log
from svpg.core.variational import FAMILIES, make_posterior
from svpg.seeding import torch_generator

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

    def __init__(
        self,
        num_actions: int,
        context_dim: int,
        method: str = "bbb",
        hidden=(50,),
        activation: str = "relu",
        lr: float | None = None,
        noise_a: float = 1.0,
        noise_b: float = 0.1,
        train_every: int = 50,
        train_steps: int = 10,
        batch_size: int = 64,
        initial_pulls: int = 2,
        seed: int = 0,
        device: str = "cpu",
        name: str | None = None,
        **family_options,
    ):
        if method not in VARIATIONAL_METHODS:
            raise ValueError(
                f"VariationalThompson: method must be one of {', '.join(VARIATIONAL_METHODS)}, got {method!r}"
            )
        lr = VARIATIONAL_LR[method] if lr is None else float(lr)
        problems = []
        if not lr > 0:
            problems.append(f"lr must be > 0, got {lr}")
        problems += noise_prior_problems(noise_a, noise_b)
        super().__init__(
            num_actions,
            context_dim,
            train_every=train_every,
            train_steps=train_steps,
            batch_size=batch_size,
            initial_pulls=initial_pulls,
            device=device,
            name=name or method,
            problems=problems,
        )
        self.method, self.lr, self.noise_a, self.noise_b = method, lr, float(noise_a), float(noise_b)
        self.hidden, self.activation = tuple(int(h) for h in hidden), activation
        # initialised on the CPU whatever the device, so that a CUDA agent starts from the same weights
        init = torch_generator(seed, "agent", self.name, "init")
        family_options = {**VARIATIONAL_POSTERIOR.get(method, {}), **family_options}
        self.posterior = make_posterior(
            method, (context_dim, *self.hidden, num_actions), activation, generator=init, **family_options
        ).to(self.device)
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
        pred = self.posterior.train_forward(x, 1, g)  # (S, B, K)
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
        return {
            "train/loss": loss.detach(),
            "train/regulariser": reg.detach(),
            "train/noise_std": torch.exp(0.5 * self.log_var.detach()[0]),
        }

    def hyperparameters(self) -> dict:
        return {
            "method": self.method,
            "hidden": list(self.hidden),
            "activation": self.activation,
            "lr": self.lr,
            "noise_a": self.noise_a,
            "noise_b": self.noise_b,
            **super().hyperparameters(),
            **self.posterior.options,
        }
