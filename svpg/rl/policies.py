"""M tanh-MLP policies ("particles") stored as one θ (M, D), with categorical, Bernoulli or Gaussian heads.

Sampling uses direct formulas on pre-drawn noise (Gumbel-max for categorical, logistic noise for
Bernoulli, μ + σ ε for Gaussian) rather than ``torch.distributions`` objects, which cost ~40× more per step.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import asdict, dataclass, field
from typing import cast

import gymnasium as gym
import numpy as np
import torch

from svpg.core.extractors import ObsEncoding, ObsLayout, ParticleNetwork, feature_size
from svpg.core.networks import LayerWeights, NetworkSpec, ParticleMLP
from svpg.core.particles import ParticleLayout
from svpg.core.probability import LOG_2PI, gaussian_log_prob
from svpg.envs.generic import SUPPORTED_ACTIONS
from svpg.seeding import torch_generator


@dataclass(frozen=True)
class PolicySpec:
    """What fixes a policy ensemble's shape; stored in every checkpoint.

    The head (:attr:`head`) follows from ``discrete``, ``nvec``, ``binary``, ``squashed`` and ``deterministic``, as
    Stable-Baselines3 chooses its distribution from the action space: ``Discrete`` → one categorical,
    ``MultiDiscrete`` → one categorical per component, ``MultiBinary`` → independent Bernoullis, ``Box``
    → a Gaussian. Fields left at their defaults are not stored (:meth:`to_dict`), so files written
    before a field existed read as they did.

    :param obs_dim: observation size.
    :param discrete: integer actions from logits (``Discrete``, ``MultiDiscrete``, ``MultiBinary``: True) or
        a Gaussian head (``Box``: False).
    :param action_dim: number of network outputs of a discrete head (``n``, ``sum(nvec)``, ``n``) or action
        dimensions (continuous).
    :param network: the particle MLP (input obs_dim, output action_dim; 2 action_dim when ``squashed``).
    :param num_particles: M.
    :param action_low: lower bounds of a Box action space (clipping in :meth:`predict`); for a
        ``MultiDiscrete`` (or a ``Discrete`` with a non-zero ``start``), the space's ``start``, which
        actions are counted from (empty: 0).
    :param action_high: upper bounds of a Box action space; ``start + nvec − 1`` of a ``MultiDiscrete``.
    :param init_log_std: initial log σ of the Gaussian head.
    :param obs_scale: fixed per-feature multipliers of the observation (empty: none), folded into the
        first layer's effective weights, so the policy still takes the environment's raw observation.
    :param squashed: a Box head whose network outputs a mean and a log-std per action dimension, the
        Gaussian sample squashed by tanh into the action box (SAC's policy, Haarnoja et al. 2018,
        https://arxiv.org/abs/1801.01290, appendix C); False: a state-independent learned log-std, and
        actions clipped to the box.
    :param nvec: the sizes of a ``MultiDiscrete``'s components (one categorical each, their logits
        consecutive in the network's output); empty otherwise.
    :param binary: a ``MultiBinary`` head: ``action_dim`` independent Bernoullis with logits.
    :param deterministic: a Box head without noise, a = centre + half · tanh(μ(s)) in the action box (the
        deterministic policy of TD3, Fujimoto et al. 2018, https://arxiv.org/abs/1802.09477, as
        Stable-Baselines3's TD3 actor); its sample is its mode, the exploration noise is the estimator's.
    :param obs_layout: image or ``Dict`` observations (:class:`~svpg.core.extractors.ObsLayout`): what
        each slice of the flat observation (``obs_dim`` long) is, read by per-part extractors (a CNN for
        images) before the MLP, whose input is then the extractors' features; None: a flat observation
        read by the MLP directly.
    """

    obs_dim: int
    discrete: bool
    action_dim: int
    network: NetworkSpec
    num_particles: int
    action_low: tuple[float, ...] = field(default=())
    action_high: tuple[float, ...] = field(default=())
    init_log_std: float = 0.0
    obs_scale: tuple[float, ...] = field(default=())
    squashed: bool = False
    nvec: tuple[int, ...] = field(default=())
    binary: bool = False
    obs_layout: ObsLayout | None = None
    deterministic: bool = False
    obs_encoding: ObsEncoding | None = None
    box_shape: tuple[int, ...] = field(default=())

    def __post_init__(self):
        if self.deterministic and (self.discrete or self.squashed):
            raise ValueError("a deterministic head is a Box head, neither discrete nor squashed")
        if self.obs_layout is not None:
            if self.obs_layout.size != self.obs_dim or self.network.sizes[0] != feature_size(self.obs_layout):
                raise ValueError(
                    f"obs_dim {self.obs_dim} and the network's input {self.network.sizes[0]} must be the observation "
                    f"layout's size {self.obs_layout.size} and features {feature_size(self.obs_layout)}"
                )
            if self.obs_scale:
                raise ValueError(
                    "--obs-scale scales the features of flat observations; image and Dict observations take none "
                    "(images are scaled to [0, 1])"
                )
        object.__setattr__(self, "nvec", tuple(int(n) for n in self.nvec))
        if self.nvec and (not self.discrete or self.binary or sum(self.nvec) != self.action_dim or min(self.nvec) < 1):
            raise ValueError(
                f"a MultiDiscrete head needs discrete=True and action_dim = sum(nvec) with every n ≥ 1, got "
                f"nvec={self.nvec}, action_dim={self.action_dim}, discrete={self.discrete}, binary={self.binary}"
            )
        if self.binary and not self.discrete:
            raise ValueError("a MultiBinary head needs discrete=True")
        scale = tuple(float(s) for s in self.obs_scale)
        object.__setattr__(self, "obs_scale", scale)
        if scale and (len(scale) != self.obs_dim or not all(0 < s < float("inf") for s in scale)):
            raise ValueError(
                f"--obs-scale needs {self.obs_dim} positive numbers (one per observation feature), got {scale}; "
                f"leave it empty for no scaling"
            )

    def to_dict(self) -> dict:
        d = asdict(self)
        d["network"] = self.network.to_dict()
        # a field at its default is not stored
        for name in ("squashed", "nvec", "binary", "obs_layout", "deterministic", "obs_encoding", "box_shape"):
            if not d[name]:
                del d[name]
        if self.obs_layout is not None:
            d["obs_layout"] = self.obs_layout.to_dict()
        if self.obs_encoding is not None:
            d["obs_encoding"] = self.obs_encoding.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> PolicySpec:
        d = dict(d)
        d["network"] = NetworkSpec(**d["network"])
        d["action_low"] = tuple(d.get("action_low", ()))
        d["action_high"] = tuple(d.get("action_high", ()))
        d["nvec"] = tuple(d.get("nvec", ()))
        d["box_shape"] = tuple(d.get("box_shape", ()))
        if d.get("obs_layout") is not None:
            d["obs_layout"] = ObsLayout.from_dict(d["obs_layout"])
        if d.get("obs_encoding") is not None:
            d["obs_encoding"] = ObsEncoding.from_dict(d["obs_encoding"])
        return cls(**d)

    def normalized_index(self) -> list[int] | None:
        """The observation features that ``normalize_obs`` normalises, as SB3's ``VecNormalize``: every
        one of a flat observation (None), a ``Dict``'s Box vector keys, never an image's pixels."""
        return None if self.obs_layout is None else self.obs_layout.normalized_index()

    @property
    def head(self) -> str:
        """``"categorical"`` (Discrete), ``"multi_categorical"`` (MultiDiscrete), ``"bernoulli"``
        (MultiBinary), ``"gaussian"``, ``"squashed"`` or ``"deterministic"`` (Box)."""
        if self.discrete:
            return "multi_categorical" if self.nvec else "bernoulli" if self.binary else "categorical"
        return "squashed" if self.squashed else "deterministic" if self.deterministic else "gaussian"

    @property
    def learns_log_std(self) -> bool:
        """The Gaussian head: a state-independent log-std in θ (the other Box heads have none)."""
        return self.head == "gaussian"

    @property
    def tanh_box(self) -> bool:
        """A Box head mapped onto the action box by tanh (squashed and deterministic)."""
        return self.squashed or self.deterministic

    @property
    def action_shape(self) -> tuple[int, ...]:
        """The shape of one action: () for Discrete, (components,) for MultiDiscrete, (n,) otherwise."""
        if self.head == "categorical":
            return ()
        return (len(self.nvec),) if self.nvec else self.box_shape or (self.action_dim,)

    def action_start(self) -> tuple[int, ...]:
        """What a discrete head's actions are counted from (a Gymnasium space's ``start``; empty: 0)."""
        return tuple(int(x) for x in self.action_low) if self.discrete else ()

    def describe_actions(self) -> str:
        """The action space this head acts in, in Gymnasium's words (for messages)."""
        start = self.action_start()
        at = f", start={list(start)}" if any(start) else ""
        if self.head == "categorical":
            return f"Discrete({self.action_dim}{', start=' + str(start[0]) if at else ''})"
        if self.head == "multi_categorical":
            return f"MultiDiscrete({list(self.nvec)}{at})"
        if self.head == "bernoulli":
            return f"MultiBinary({self.action_dim})"
        if self.box_shape:
            return f"Box actions of shape {self.box_shape}"
        return f"Box actions of {self.action_dim} dimensions"

    def acts_in(self, action_space: gym.Space) -> bool:
        """Whether this head acts in ``action_space``: the same kind of space, sizes and ``start``."""
        try:
            other = PolicySpec.for_spaces(gym.spaces.Box(-1.0, 1.0, (self.obs_dim,)), action_space, {"hidden": ()}, 1)
        except ValueError:
            return False
        fields = ("discrete", "binary", "nvec", "action_dim", "box_shape")
        same = all(getattr(other, f) == getattr(self, f) for f in fields)
        return same and (not self.discrete or other.action_start() == self.action_start())

    @classmethod
    def for_spaces(
        cls,
        obs_space: gym.Space,
        action_space: gym.Space,
        network: dict,
        num_particles: int,
        obs_scale: tuple[float, ...] = (),
        squashed: bool = False,
        deterministic: bool = False,
        init_log_std: float = 0.0,
    ) -> PolicySpec:
        """Build from Gymnasium spaces; ``network`` holds NetworkSpec fields except ``sizes``' ends.
        ``squashed``: the tanh-squashed Gaussian head, ``deterministic``: the deterministic tanh head (Box
        actions with finite bounds only; ignored for discrete action spaces). An image
        Box or a Dict observation space gets an :class:`~svpg.core.extractors.ObsLayout`: the MLP reads
        the extractors' features. ``init_log_std``: the initial log σ of a Gaussian Box head (SB3's
        ``log_std_init``)."""
        encoding = ObsEncoding.from_space(obs_space, "the observation space")
        layout = ObsLayout.from_space(obs_space, "the observation space") if encoding is None else None
        if encoding is not None or layout is not None:  # the MLP reads the encoded vector or the features
            width = encoding.size if encoding is not None else feature_size(cast(ObsLayout, layout))
            spec = cls.for_spaces(
                gym.spaces.Box(0.0, 1.0, (width,)),
                action_space,
                network,
                num_particles,
                obs_scale,
                squashed,
                deterministic,
                init_log_std,
            )
            if encoding is not None:  # predict encodes the env's own observations
                return dataclasses.replace(spec, obs_encoding=encoding)
            layout = cast(ObsLayout, layout)
            return dataclasses.replace(spec, obs_dim=layout.size, obs_layout=layout)
        if not isinstance(obs_space, gym.spaces.Box) or len(obs_space.shape) != 1:
            raise ValueError(
                f"svpg policies need a flat Box, an image Box or a Dict observation space, got {obs_space}"
            )
        obs_dim = obs_space.shape[0]
        network = dict(network)
        hidden = tuple(network.pop("hidden"))
        if isinstance(action_space, gym.spaces.Discrete):
            n = int(action_space.n)
            start = int(action_space.start)
            return cls(
                obs_dim,
                True,
                n,
                NetworkSpec((obs_dim, *hidden, n), **network),
                num_particles,
                (float(start),) if start else (),  # a Discrete counted from 0 stores no bounds
                (float(start + n - 1),) if start else (),
                obs_scale=obs_scale,
            )
        if isinstance(action_space, gym.spaces.MultiDiscrete) and action_space.nvec.ndim == 1:
            nvec = tuple(int(n) for n in action_space.nvec)
            first = [int(k) for k in np.broadcast_to(getattr(action_space, "start", 0), action_space.nvec.shape)]
            return cls(
                obs_dim,
                True,
                sum(nvec),
                NetworkSpec((obs_dim, *hidden, sum(nvec)), **network),
                num_particles,
                tuple(float(k) for k in first),
                tuple(float(k + n - 1) for k, n in zip(first, nvec, strict=True)),
                obs_scale=obs_scale,
                nvec=nvec,
            )
        if isinstance(action_space, gym.spaces.MultiBinary) and len(action_space.shape) == 1:
            n = int(action_space.shape[0])
            return cls(
                obs_dim,
                True,
                n,
                NetworkSpec((obs_dim, *hidden, n), **network),
                num_particles,
                obs_scale=obs_scale,
                binary=True,
            )
        if isinstance(action_space, gym.spaces.Box) and len(action_space.shape) >= 1:
            a = math.prod(action_space.shape)  # a non-flat Box: the policy acts in its flattened vector, as SB3
            if (squashed or deterministic) and not (
                np.isfinite(action_space.low).all() and np.isfinite(action_space.high).all()
            ):
                kind = "tanh-squashed" if squashed else "deterministic tanh"
                raise ValueError(
                    f"a {kind} policy needs finite action bounds, got {action_space}: give the env's Box the "
                    f"range its actions take (gymnasium.wrappers.ClipAction makes the bounds infinite: leave it out)"
                )
            return cls(
                obs_dim,
                False,
                a,
                NetworkSpec((obs_dim, *hidden, 2 * a if squashed else a), **network),
                num_particles,
                tuple(float(x) for x in action_space.low.reshape(-1)),
                tuple(float(x) for x in action_space.high.reshape(-1)),
                obs_scale=obs_scale,
                squashed=squashed,
                deterministic=deterministic,
                init_log_std=init_log_std,
                box_shape=tuple(int(n) for n in action_space.shape) if len(action_space.shape) > 1 else (),
            )
        raise ValueError(f"svpg policies support {SUPPORTED_ACTIONS} action spaces, got {action_space}")


def fold_obs_scale(weights: LayerWeights, obs_scale: tuple[float, ...]) -> LayerWeights:
    """Layer weights whose first layer reads x ⊙ obs_scale: W0 (M, in, out) → diag(obs_scale) W0."""
    if not obs_scale:
        return weights
    (w, b), *rest = weights
    return [(w * w.new_tensor(obs_scale).unsqueeze(-1), b), *rest]


class ParticlePolicy:
    """An ensemble of M policies; every method works on all particles at once.

    Follows the Stable-Baselines3 convention in :meth:`predict`, acting with one chosen particle
    (``policy.particle``, by default the best one at the end of training), so
    ``stable_baselines3.common.evaluation.evaluate_policy(policy, env)`` works on it.
    """

    metadata: dict  # the saved metadata, set on a policy read by load_policy

    def __init__(self, spec: PolicySpec, theta: torch.Tensor | None = None, *, device="cpu", seed: int = 0):
        """:param theta: the particles (M, D); by default drawn from the ``policy_init`` stream of ``seed``."""
        self.spec = spec
        self.layout = ParticleLayout()
        self.net: ParticleMLP | ParticleNetwork
        if spec.obs_layout is not None:  # image / Dict observations: extractors, then the MLP
            self.net = ParticleNetwork(self.layout, spec.obs_layout, spec.network, name="pi")
        else:
            self.net = ParticleMLP(self.layout, spec.network, name="pi")
        if spec.learns_log_std:
            self.layout.add("pi.log_std", (spec.action_dim,))
        self.particle = 0
        if theta is None:
            theta = torch.empty(spec.num_particles, self.layout.size, device=device)
            # small last layer: every particle starts close to the uniform / zero-mean policy
            self.net.init_(theta, torch_generator(seed, "policy_init", device=theta.device), out_scale=0.01)
            if spec.learns_log_std:
                self.layout.get(theta, "pi.log_std").fill_(spec.init_log_std)
        elif tuple(theta.shape) != (spec.num_particles, self.layout.size):
            raise ValueError(
                f"θ has shape {tuple(theta.shape)} but this policy needs ({spec.num_particles}, {self.layout.size})"
            )
        self.theta = torch.nn.Parameter(theta.detach().clone(), requires_grad=True)
        #: a frozen observation normalisation ({"mean", "std", "clip"}, see svpg.rl.normalize) applied by
        #: :meth:`preprocess` before acting on raw observations; None: the policy reads them as they are
        self.obs_normalization: dict | None = None
        if spec.tanh_box:  # the box [low, high] as tanh's image: a = centre + half · tanh(u)
            low, high = (
                torch.tensor(b, dtype=self.theta.dtype, device=self.theta.device)
                for b in (spec.action_low, spec.action_high)
            )
            self.action_centre, self.action_half = (high + low) / 2, (high - low) / 2
        start = spec.action_start()
        #: a discrete head's ``start`` (long, one per component), None when every action counts from 0
        self.action_offset = torch.tensor(start, device=self.theta.device) if any(start) else None
        #: MultiDiscrete components of unequal sizes: where each padded logit (K, max n) is read from the
        #: network's output (index sum(nvec): the -inf padding) and which of them are padding
        self._component_index: torch.Tensor | None = None
        self._component_pad: torch.Tensor | None = None
        nvec = spec.nvec
        if nvec and len(set(nvec)) > 1:
            width, offsets = max(nvec), np.cumsum((0, *nvec[:-1]))
            index = [[o + j if j < n else sum(nvec) for j in range(width)] for o, n in zip(offsets, nvec, strict=True)]
            self._component_index = torch.tensor(index, device=self.theta.device)
            self._component_pad = self._component_index == sum(nvec)

    def preprocess(self, obs: torch.Tensor) -> torch.Tensor:
        """Raw environment observations → what the particles read (the frozen normalisation, if any)."""
        from svpg.rl.normalize import apply_frozen

        return apply_frozen(obs, self.obs_normalization, self.spec.normalized_index())

    # -- all particles, batched ------------------------------------------------------------
    @property
    def num_particles(self) -> int:
        return self.spec.num_particles

    @property
    def device(self) -> torch.device:
        return self.theta.device

    def weights(self, theta: torch.Tensor | None = None) -> tuple[LayerWeights, torch.Tensor | None]:
        """Effective layer weights and log-std of every particle (compute once per update).

        A fixed observation scale s is folded into the first layer: (x ⊙ s) W = x (diag(s) W), the same
        function and the same gradients in θ as scaling every observation, at no cost per step.
        """
        theta = self.theta if theta is None else theta
        log_std = self.layout.get(theta, "pi.log_std") if self.spec.learns_log_std else None
        return fold_obs_scale(self.net.weights(theta), self.spec.obs_scale), log_std

    def fast_weights(self, theta: torch.Tensor | None = None):
        """(network weights in the fast form of :meth:`ParticleMLP.fast_weights`, log-std): what
        :meth:`sample` and :meth:`mode` take. Compute once per rollout (pass a detached θ)."""
        layer_weights, log_std = self.weights(theta)
        return self.net.fast_weights(layer_weights), log_std

    def draw_noise(self, shape: tuple[int, ...], generator: torch.Generator | None) -> torch.Tensor:
        """Noise for :meth:`sample`: Gumbel(0, 1) for categorical heads, Logistic(0, 1) for Bernoulli
        ones, N(0, 1) for Gaussian ones; (*shape, action_dim)."""
        full = (*shape, self.spec.action_dim)
        if self.spec.binary:
            u = torch.rand(full, generator=generator, device=self.device).clamp_(1e-20, 1.0 - 1e-7)
            return torch.log(u) - torch.log1p(-u)
        if self.spec.discrete:
            u = torch.rand(full, generator=generator, device=self.device).clamp_(1e-20, 1.0)
            return -torch.log(-torch.log(u))
        return torch.randn(full, generator=generator, device=self.device)

    def component_logits(self, out: torch.Tensor) -> torch.Tensor:
        """A MultiDiscrete head's output (..., sum(nvec)) → one row of logits per component (..., K, max n),
        the rows of smaller components padded with −inf."""
        nvec = self.spec.nvec
        if self._component_index is None:
            return out.unflatten(-1, (len(nvec), nvec[0]))
        padded = torch.cat([out, out.new_full((*out.shape[:-1], 1), -math.inf)], -1)
        return padded[..., self._component_index]

    def _discrete_action(self, scores: torch.Tensor) -> torch.Tensor:
        """Actions of a discrete head from (perturbed) logits: argmax per categorical, sign per Bernoulli,
        counted from the space's ``start``."""
        if self.spec.binary:
            return (scores > 0).long()
        if self.spec.nvec:
            scores = self.component_logits(scores)
        action = scores.argmax(-1)
        return action if self.action_offset is None else action + self.action_offset

    def sample(self, weights, obs: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """Actions for obs (M, N, obs_dim) given :meth:`fast_weights` and noise from :meth:`draw_noise`:
        (M, N) or (M, N, A). The deterministic head's sample is its mode (the noise is not read)."""
        if self.spec.deterministic:
            return self.mode(weights, obs)
        layer_weights, log_std = weights
        out = self.net.fast_forward(layer_weights, obs)
        if self.spec.discrete:
            # Gumbel-max: an exact categorical sample; x + logistic noise > 0: an exact Bernoulli(σ(x)) one
            return self._discrete_action(out + noise)
        if self.spec.squashed:
            return self.squashed_sample(out, noise)[0]
        return torch.addcmul(out, log_std.exp().unsqueeze(1), noise)

    #: SAC's bounds on the squashed head's log-std (Stable-Baselines3's LOG_STD_MIN / LOG_STD_MAX)
    LOG_STD_BOUNDS = (-20.0, 2.0)

    def squashed_sample(self, out: torch.Tensor, noise: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The squashed head's reparameterised action a = c + h · tanh(μ + σ ε) and log π(a|s), from the
        network output ``out`` (..., 2A) = (μ, log σ) and ε ~ N(0, 1) (..., A); differentiable in ``out``.

        log π(a|s) = log N(u; μ, σ) − Σ log(1 − tanh²u), the change of variables of SAC's appendix C, for
        the action in [−1, 1] before the box's affine map (as Stable-Baselines3 counts it, so that
        SAC's target entropy −A means the same on every box); 1 − tanh²u is computed in log space,
        exact where tanh saturates.
        """
        mean, log_std = out.chunk(2, dim=-1)
        log_std = log_std.clamp(*self.LOG_STD_BOUNDS)
        u = torch.addcmul(mean, log_std.exp(), noise)
        squash = torch.tanh(u)
        log_det = 2 * (math.log(2.0) - u - torch.nn.functional.softplus(-2 * u))  # log(1 − tanh²u)
        logp = (-0.5 * noise.square() - log_std - 0.5 * LOG_2PI - log_det).sum(-1)
        return torch.addcmul(self.action_centre, self.action_half, squash), logp

    def deterministic_action(self, out: torch.Tensor, noise: torch.Tensor | None = None) -> torch.Tensor:
        """The deterministic head's action c + h · tanh(μ) from the network output μ (..., A), differentiable
        in it; with ``noise`` (in units of the half-width h, as Stable-Baselines3 adds TD3's noise to the
        action scaled to [−1, 1]) c + h · clip(tanh(μ) + noise, −1, 1)."""
        squash = torch.tanh(out)
        if noise is not None:
            squash = (squash + noise).clamp(-1.0, 1.0)
        return torch.addcmul(self.action_centre, self.action_half, squash)

    def mode(self, weights, obs: torch.Tensor) -> torch.Tensor:
        """Deterministic actions (argmax / mean; a Bernoulli's 1 where its probability is over ½) for obs
        (M, N, obs_dim), given :meth:`fast_weights`."""
        layer_weights, _ = weights
        out = self.net.fast_forward(layer_weights, obs)
        if self.spec.squashed:
            return torch.addcmul(self.action_centre, self.action_half, torch.tanh(out.chunk(2, dim=-1)[0]))
        if self.spec.deterministic:
            return self.deterministic_action(out)
        return self._discrete_action(out) if self.spec.discrete else out

    def log_prob_entropy(self, theta: torch.Tensor, obs: torch.Tensor, actions: torch.Tensor):
        """log π(a|s) (M, B) and the mean entropy per particle (M,), differentiable in θ.

        Several independent components (MultiDiscrete's categoricals, MultiBinary's Bernoullis, a Box's
        Gaussians) add their log-probabilities and their entropies, as Stable-Baselines3 counts them.
        """
        layer_weights, log_std = self.fast_weights(theta)
        out = self.net.fast_forward(layer_weights, obs)
        if self.spec.tanh_box:
            raise ValueError(
                f"a {self.spec.head} policy is trained by the off-policy estimators (sac, td3), which draw their "
                f"own actions; its log-probabilities of given actions are not used"
            )
        if self.spec.binary:  # log σ(x) = x − softplus(x), log(1 − σ(x)) = −softplus(x)
            softplus = torch.nn.functional.softplus(out)
            logp = (actions.to(out.dtype) * out - softplus).sum(-1)
            entropy = (softplus - torch.sigmoid(out) * out).sum(-1).mean(-1)
            return logp, entropy
        if self.spec.discrete:
            if self.action_offset is not None:
                actions = actions - self.action_offset
            if self.spec.nvec:
                logits = torch.log_softmax(self.component_logits(out), dim=-1)  # (M, B, K, max n)
                if self._component_pad is not None:  # padding: probability 0, and 0 · log 0 counted as 0
                    logits = logits.masked_fill(self._component_pad, 0.0)
                    probs = logits.exp().masked_fill(self._component_pad, 0.0)
                else:
                    probs = logits.exp()
                logp = logits.gather(-1, actions.unsqueeze(-1)).squeeze(-1).sum(-1)
                return logp, -(probs * logits).sum((-1, -2)).mean(-1)
            logits = torch.log_softmax(out, dim=-1)
            logp = logits.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
            entropy = -(logits.exp() * logits).sum(-1).mean(-1)
            return logp, entropy
        logp = gaussian_log_prob(actions, out, log_var=2 * log_std.unsqueeze(1)).sum(-1)
        entropy = (log_std + 0.5 * (1 + LOG_2PI)).sum(-1)
        return logp, entropy

    def log_prior(self, theta: torch.Tensor | None = None) -> torch.Tensor:
        """log p(θ) of every particle (eq. 14; the log-std has a flat prior): (M,)."""
        return self.net.log_prior(self.theta if theta is None else theta)

    # -- parameters by name, as an nn.Module's ---------------------------------------------------
    def state_dict(self) -> dict[str, torch.Tensor]:
        """Every parameter block of every particle by name (``pi.0.C``, ``pi.0.bias``, …, ``pi.log_std``), each
        (M, *shape): copies of θ's blocks, as ``torch.nn.Module.state_dict`` gives (S²VGD's layers store C,
        the Householder vectors ``v_in``/``v_out`` and the scales ``lam_in``/``lam_out`` of W = P Λ1 C Λ2 Qᵀ)."""
        return {name: self.layout.get(self.theta, name).detach().clone() for name in self.layout}

    def load_state_dict(self, state_dict: dict[str, torch.Tensor], strict: bool = True) -> tuple[list, list]:
        """Copy named blocks (:meth:`state_dict`'s names and shapes) into θ; returns ``(missing_keys,
        unexpected_keys)`` as torch's does. ``strict``: every block must be given and no other one."""
        missing = [name for name in self.layout if name not in state_dict]
        unexpected = [name for name in state_dict if name not in self.layout]
        if strict and (missing or unexpected):
            raise ValueError(
                f"the policy's blocks and the state dict's differ (missing {missing}, unexpected {unexpected}): give a "
                f"state_dict() of a policy of the same network, or strict=False to load the blocks both have"
            )
        for name in state_dict:
            if name in self.layout:
                ours = self.layout.get(self.theta, name)
                if tuple(state_dict[name].shape) != tuple(ours.shape):
                    raise ValueError(
                        f"block {name!r} has shape {tuple(state_dict[name].shape)}, the policy's {tuple(ours.shape)}: "
                        f"give a state_dict() of a policy of the same network and number of particles"
                    )
        with torch.no_grad():
            for name in state_dict:
                if name in self.layout:
                    self.layout.get(self.theta, name).copy_(state_dict[name])
        return missing, unexpected

    # -- one particle, Stable-Baselines3 style ----------------------------------------------
    def set_particle(self, index: int) -> ParticlePolicy:
        if not 0 <= index < self.num_particles:
            raise ValueError(f"particle must be in [0, {self.num_particles - 1}], got {index}")
        self.particle = int(index)
        return self

    @torch.no_grad()
    def predict(self, observation, state=None, episode_start=None, deterministic: bool = False):
        """Actions of particle ``self.particle`` for a batch of observations: ``(actions, None)``.

        :param observation: array (obs_dim,) or (n_envs, obs_dim); an image (its space's shape) or a
            batch of them (n_envs, *shape); a dict of such arrays for a ``Dict`` space, single or batched;
            for a ``Discrete``, ``MultiDiscrete``, ``MultiBinary`` or non-flat ``Box`` space, the environment's
            own observations (integers; the Box's shape), or already encoded ones (one-hot or 0/1 floats;
            flattened).
        :param deterministic: argmax / mean action instead of a sample (a deterministic head ignores it:
            its sample is its mode, as Stable-Baselines3's TD3 predicts).
        :returns: actions (n_envs, *action_shape), or one action for one observation: int64 for discrete
            heads (() for Discrete, (components,) for MultiDiscrete, (n,) for MultiBinary), float32 in
            the box for Box ones.
        """
        encoding = self.spec.obs_encoding
        if self.spec.obs_layout is not None:
            obs, single = self.spec.obs_layout.flatten(observation)
        elif encoding is not None and encoding.reads(np.asarray(observation)):  # the env's own observations
            raw = np.asarray(observation)
            if (
                raw.shape[raw.ndim - len(encoding.raw_shape) :] != encoding.raw_shape
                or raw.ndim > len(encoding.raw_shape) + 1
            ):
                raise ValueError(
                    f"observation has shape {raw.shape}, but this policy reads {encoding.describe()}: one observation "
                    f"{encoding.raw_shape} or a batch (n_envs, {', '.join(map(str, encoding.raw_shape))})"
                )
            single = raw.ndim == len(encoding.raw_shape)
            obs = encoding.encode(raw.reshape(-1, *encoding.raw_shape))
        else:
            obs = np.asarray(observation, dtype=np.float32)
            single = obs.ndim == 1
            if single:
                obs = obs[None]
        if obs.ndim != 2 or obs.shape[1] != self.spec.obs_dim:
            raise ValueError(
                f"observation has shape {np.shape(observation)}, but this policy expects "
                f"({self.spec.obs_dim},) or (n_envs, {self.spec.obs_dim})"
            )
        i = self.particle
        weights = self.fast_weights(self.theta.detach()[i : i + 1])
        x = self.preprocess(torch.as_tensor(obs, device=self.device)).unsqueeze(0)
        if deterministic:
            act = self.mode(weights, x)
        else:
            act = self.sample(weights, x, self.draw_noise(x.shape[:2], None))
        actions = act[0].cpu().numpy()
        if not self.spec.discrete:
            actions = np.clip(actions, self.spec.action_low, self.spec.action_high).astype(np.float32)
            if self.spec.box_shape:
                actions = actions.reshape(-1, *self.spec.box_shape)
        return (actions[0] if single else actions), None

    def __repr__(self) -> str:
        net = self.spec.network
        head = {
            "squashed": "squashed gaussian",
            "multi_categorical": "multi-categorical",
            "deterministic": "deterministic tanh",
        }.get(self.spec.head, self.spec.head)
        return (
            f"ParticlePolicy(M={self.num_particles}, sizes={net.sizes}, K={net.householder}, "
            f"scales={net.learn_scales}, prior={net.prior}, head={head}, D={self.layout.size})"
        )


POLICY_KIND = "policy"


def save_policy(policy: ParticlePolicy, path, extra: dict | None = None):
    """Write the ensemble (θ, spec and ``extra`` metadata such as the config) to ``path``."""
    from svpg.io import save_tensors

    meta = {"spec": policy.spec.to_dict(), "particle": policy.particle, **(extra or {})}
    tensors: dict[str, torch.Tensor] = {"theta": policy.theta}
    if policy.obs_normalization is not None:
        tensors.update(obs_norm_mean=policy.obs_normalization["mean"], obs_norm_std=policy.obs_normalization["std"])
        meta["obs_norm_clip"] = policy.obs_normalization["clip"]
    return save_tensors(path, tensors, POLICY_KIND, meta)


def load_policy(path, device="cpu") -> ParticlePolicy:
    """Load a policy ensemble saved by :func:`save_policy` (a run folder or a .safetensors file)."""
    from svpg.io import CheckpointError, load_tensors

    tensors, meta, _ = load_tensors(path, expected_kind=POLICY_KIND)
    try:
        spec = PolicySpec.from_dict(meta["spec"])
        theta = tensors["theta"]
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: checkpoint metadata does not describe a policy ({e})") from None
    try:
        policy = ParticlePolicy(spec, theta.to(device))
    except ValueError as e:
        raise CheckpointError(f"{path}: θ does not match the network it describes ({e})") from None
    policy.set_particle(int(meta.get("particle", 0)))
    if "obs_norm_mean" in tensors:
        policy.obs_normalization = {
            "mean": tensors["obs_norm_mean"].to(device),
            "std": tensors["obs_norm_std"].to(device),
            "clip": float(meta.get("obs_norm_clip", 10.0)),
        }
    policy.metadata = meta
    return policy
