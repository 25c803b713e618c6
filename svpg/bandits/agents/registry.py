"""The agents by name: descriptions, the default list, and :func:`make_agent`, which builds one from
a name and a dict of options."""

from __future__ import annotations

from svpg.bandits.agents.base import Agent
from svpg.bandits.agents.classic import LinUCB, Uniform
from svpg.bandits.agents.stein import STEIN_METHODS, EpsilonGreedy, NeuralGreedy, SteinThompson
from svpg.bandits.agents.variational import VARIATIONAL_METHODS, VariationalThompson
from svpg.core.variational import posterior_options

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
NEURAL_OPTIONS = (
    "hidden",
    "activation",
    "prior",
    "prior_a",
    "prior_b",
    "noise_a",
    "noise_b",
    "optimizer",
    "lr",
    "train_every",
    "train_steps",
    "batch_size",
    "initial_pulls",
    "device",
    "kernel",
)


# the neural options that the variational agents share with the Stein agents (not their prior, optimizer or kernel)
VARIATIONAL_NEURAL = (
    "hidden",
    "activation",
    "noise_a",
    "noise_b",
    "train_every",
    "train_steps",
    "batch_size",
    "initial_pulls",
    "device",
)


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
        raise ValueError(
            f"unknown agent {key!r}: ε-greedy agents are named eps-greedy-<ε>, e.g. eps-greedy-0.01"
        ) from None
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
        extra = {
            k: options[k]
            for k in ("num_particles", "householder", "structural_output", "structural_lr_scale")
            if k in options
        }
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
        own["lr"] = options.get("variational_lr") or None  # 0 / None: the agent's tuned rate
        return VariationalThompson(num_actions, context_dim, method=key, seed=seed, **own)
    if key == "linucb":
        return LinUCB(
            num_actions,
            context_dim,
            alpha=options.get("linucb_alpha", 1.0),
            reg=options.get("linucb_reg", 1.0),
            seed=seed,
        )
    if key == "uniform":
        return Uniform(num_actions, context_dim, seed=seed)
    raise ValueError(f"unknown agent {name!r}: choose from {', '.join(AGENTS)}")
