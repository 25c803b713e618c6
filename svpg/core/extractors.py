"""Image and ``Dict`` observations: a flat observation layout and convolutional torsos batched over particles.

The batched environments and rollouts keep every observation as one flat float vector (the parts of a
``Dict`` in the space's key order, an image in the environment's own layout, values 0–255), so the
samplers, buffers and normalisation work as for a flat ``Box``; :class:`ObsLayout` says what each slice
of the vector is, and :class:`ParticleNetwork` reads it back: one extractor per part, concatenated, as
Stable-Baselines3's ``CombinedExtractor`` (a lone image: its ``NatureCNN``), then the policy's MLP.

Images are detected as SB3's ``is_image_space`` detects them (a 3-D ``Box`` of dtype uint8 with bounds
0 and 255), channel-first when the first dimension is the smallest, channel-last otherwise
(``is_image_space_channels_first``), and scaled to [0, 1]. A 3-D bool ``Box`` with bounds 0 and 1
(MinAtar's observations) is a binary image too, read as it is (SB3 would flatten it). The torso is chosen by size:

* both sides ≥ 36 px: SB3's ``NatureCNN`` (Mnih et al. 2015): 32 8×8 filters stride 4, 64 4×4 stride 2,
  64 3×3 stride 1, ReLUs, then a dense layer to 512 features (256 for an image inside a ``Dict``, SB3's
  ``cnn_output_dim``), ReLU. 36 px is the smallest input its three unpadded convolutions accept.
* smaller (e.g. MinAtar's 10×10×4): MinAtar's baseline network (Young & Tian 2019,
  https://arxiv.org/abs/1903.03176): 16 3×3 filters stride 1 (zero-padded by 1, so any size works),
  ReLU, then a dense layer to 128 features, ReLU.

Every particle row (S·M of them) has its own filters; a convolution of all of them is one grouped
``conv2d`` with ``groups`` = rows over the particles' channels stacked (B, rows·C, H, W), never a loop
over particles. Filters and their biases form one group under the network's prior, as a plain
(unstructured) dense layer's weights and bias do: N(0, σ²) with an Inv-Gamma hyperprior on σ² under
``"mvg"`` (eq. 14), nothing under ``"flat"``. The dense layer after the convolutions is a
:class:`~svpg.core.layers.StructuralLinear` with the network's Householder reflections and scales, so
S²VGD's structure stays on the dense layers, and SVGD's kernel acts on all of θ, filters included.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from svpg.core.layers import StructuralLinear
from svpg.core.networks import LayerWeights, NetworkSpec, ParticleMLP
from svpg.core.particles import ParticleLayout
from svpg.core.priors import FlatPrior, Prior, make_prior

#: the smallest side (pixels) that gets SB3's NatureCNN; smaller images get the small torso
NATURE_MIN_SIDE = 36
#: (filters, kernel, stride, padding) of each convolution
NATURE_CONVS = ((32, 8, 4, 0), (64, 4, 2, 0), (64, 3, 1, 0))
SMALL_CONVS = ((16, 3, 1, 1),)
#: features of the dense layer after the convolutions: NatureCNN's 512 (256 in a Dict, SB3's
#: CombinedExtractor), the small torso's 128
NATURE_FEATURES, NATURE_DICT_FEATURES, SMALL_FEATURES = 512, 256, 128
#: what observation spaces svpg's policies read, as errors name them
SUPPORTED_OBSERVATIONS = (
    "flat or n-D Box, image Box (3-D: uint8 0–255, or bool 0–1), Discrete, flat MultiDiscrete, MultiBinary, or a "
    "Dict of those (not nested)"
)


@dataclass(frozen=True)
class ObsEncoding:
    """An observation that is not a flat vector read as one, as SB3's ``preprocess_obs`` reads it: the
    one-hot of a Discrete, the components' one-hots one after another for a MultiDiscrete, 0/1 for a
    MultiBinary, a non-flat (non-image) Box flattened (row-major). The environments hand the policies the
    encoded vector; ``predict`` encodes the raw observations the environment gives (stored in checkpoints).

    :param kind: ``"discrete"``, ``"multi_discrete"``, ``"multi_binary"`` or ``"box"``.
    :param sizes: each component's categories (a Discrete's ``(n,)``, a MultiDiscrete's ``nvec``), or a
        MultiBinary's or Box's shape.
    :param starts: each component's ``start`` (Discrete and MultiDiscrete).
    """

    kind: str
    sizes: tuple[int, ...]
    starts: tuple[int, ...] = ()

    @classmethod
    def from_space(cls, space: gym.Space, name: str = "the env") -> ObsEncoding | None:
        """The encoding of ``space``; None for other spaces; a one-line ValueError for a MultiDiscrete of
        several dimensions."""
        if isinstance(space, gym.spaces.Discrete):
            return cls("discrete", (int(space.n),), (int(space.start),))
        if isinstance(space, gym.spaces.MultiDiscrete):
            if space.nvec.ndim != 1:
                raise ValueError(
                    f"{name}: observation_space {space} has a {space.nvec.ndim}-D nvec; svpg reads a flat "
                    f"MultiDiscrete (as SB3): flatten it in a wrapper"
                )
            return cls("multi_discrete", tuple(int(n) for n in space.nvec), tuple(int(s) for s in space.start))
        if isinstance(space, gym.spaces.MultiBinary):
            return cls("multi_binary", tuple(int(n) for n in np.atleast_1d(space.n)))
        if isinstance(space, gym.spaces.Box) and len(space.shape) > 1 and not (len(space.shape) == 3):
            return cls("box", tuple(int(n) for n in space.shape))  # (3-D Boxes are images: ObsLayout)
        return None

    @property
    def size(self) -> int:
        """The encoded vector's length."""
        return int(np.prod(self.sizes)) if self.kind in ("multi_binary", "box") else sum(self.sizes)

    @property
    def raw_shape(self) -> tuple[int, ...]:
        """One raw observation's shape: () for a Discrete, (components,), or the MultiBinary's or Box's shape."""
        if self.kind == "discrete":
            return ()
        return (len(self.sizes),) if self.kind == "multi_discrete" else self.sizes

    def describe(self) -> str:
        """The environment's observation space, in Gymnasium's words (a Box without its bounds)."""
        if self.kind == "discrete":
            return str(gym.spaces.Discrete(self.sizes[0], start=self.starts[0]))
        if self.kind == "multi_discrete":
            return str(gym.spaces.MultiDiscrete(list(self.sizes), start=list(self.starts)))
        if self.kind == "multi_binary":
            return str(gym.spaces.MultiBinary(list(self.sizes) if len(self.sizes) > 1 else self.sizes[0]))
        return f"Box of shape {self.sizes}"

    def reads(self, obs: np.ndarray) -> bool:
        """Whether ``obs`` is in the environment's own form (one observation or a batch), not yet encoded:
        integers for the discrete kinds, the Box's shape for a Box."""
        if self.kind != "box":
            return obs.dtype.kind in "biu"
        return obs.shape[obs.ndim - len(self.raw_shape) :] == self.raw_shape and obs.ndim >= len(self.raw_shape)

    def encode(self, obs) -> np.ndarray:
        """Raw observations (…, *raw_shape) → float32 (…, size)."""
        obs = np.asarray(obs)
        lead = obs.shape[: obs.ndim - len(self.raw_shape)]
        if self.kind in ("multi_binary", "box"):
            return obs.reshape(*lead, -1).astype(np.float32, copy=False)  # no copy of float32 (every step)
        codes = obs.astype(np.int64).reshape(*lead, len(self.sizes)) - np.asarray(self.starts)
        return np.concatenate([np.eye(n, dtype=np.float32)[codes[..., i]] for i, n in enumerate(self.sizes)], axis=-1)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> ObsEncoding:
        return cls(d["kind"], tuple(d["sizes"]), tuple(d.get("starts", ())))


def is_image_space(space: gym.Space) -> bool:
    """SB3's ``is_image_space`` (without its channel check): a 3-D Box, uint8, bounds 0 and 255."""
    return (
        isinstance(space, gym.spaces.Box)
        and len(space.shape) == 3
        and space.dtype == np.uint8
        and bool(np.all(space.low == 0))
        and bool(np.all(space.high == 255))
    )


def is_channels_first(shape: Sequence[int]) -> bool:
    """SB3's ``is_image_space_channels_first``: the smallest of the three dimensions is the first
    (a smallest middle dimension counts as channel-last, as SB3 treats it)."""
    return int(np.argmin(shape)) == 0


@dataclass(frozen=True)
class ObsPart:
    """One slice of the flat observation.

    :param key: the ``Dict`` key (``None``: the whole observation).
    :param kind: ``"vector"`` (a Box, flattened), ``"image"`` (see the module docstring), ``"discrete"``
        (one-hot of a ``Discrete``), ``"multi_discrete"`` (one-hot per component) or ``"multi_binary"``
        (0/1 floats): the last three as :class:`ObsEncoding` encodes them.
    :param shape: the environment's shape of this part (``(n,)`` for a Discrete, ``(sum(nvec),)`` for a
        MultiDiscrete: the encoded width).
    :param channels_first: an image's layout (C, H, W) rather than (H, W, C).
    :param start: a Discrete's ``start``.
    :param features: an image torso's output features.
    :param scale: an image's pixel multiplier: 1/255 for uint8 images, 1 for binary (bool) ones.
    :param nvec: / :param starts: a MultiDiscrete's components and their starts.
    """

    key: str | None
    kind: str
    shape: tuple[int, ...]
    channels_first: bool = False
    start: int = 0
    features: int = 0
    scale: float = 1.0 / 255.0
    nvec: tuple[int, ...] = ()
    starts: tuple[int, ...] = ()

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def encoding(self) -> ObsEncoding | None:
        """How a discrete part's raw values become its slice; None for vectors and images."""
        if self.kind == "discrete":
            return ObsEncoding("discrete", self.shape, (self.start,))
        if self.kind == "multi_discrete":
            return ObsEncoding("multi_discrete", self.nvec, self.starts)
        if self.kind == "multi_binary":
            return ObsEncoding("multi_binary", self.shape)
        return None

    @property
    def raw_shape(self) -> tuple[int, ...]:
        """One raw value's shape in the environment's observation."""
        encoding = self.encoding
        return encoding.raw_shape if encoding is not None else self.shape

    @property
    def chw(self) -> tuple[int, int, int]:
        c, h, w = self.shape if self.channels_first else (self.shape[2], self.shape[0], self.shape[1])
        return int(c), int(h), int(w)

    @property
    def convs(self) -> tuple[tuple[int, int, int, int], ...]:
        _, h, w = self.chw
        return NATURE_CONVS if min(h, w) >= NATURE_MIN_SIDE else SMALL_CONVS

    @property
    def torso(self) -> str:
        """``"nature"`` or ``"small"``."""
        return "nature" if self.convs is NATURE_CONVS else "small"

    def describe(self) -> str:
        where = f"{self.key!r}: " if self.key is not None else ""
        if self.kind == "image":
            c, h, w = self.chw
            layout = "C×H×W" if self.channels_first else "H×W×C"
            return f"{where}image {h}×{w}×{c} ({layout}, {self.torso} CNN → {self.features})"
        return f"{where}{self.kind} {self.size}"


@dataclass(frozen=True)
class ObsLayout:
    """How a flat observation is made of an env's image or ``Dict`` observation (stored in checkpoints).

    :param parts: the slices, in order.
    :param is_dict: the environment's observations are dicts (keys: the parts' keys).
    """

    parts: tuple[ObsPart, ...]
    is_dict: bool = False

    @property
    def size(self) -> int:
        """The flat observation's length."""
        return sum(p.size for p in self.parts)

    @property
    def has_images(self) -> bool:
        return any(p.kind == "image" for p in self.parts)

    def offsets(self) -> list[int]:
        return [int(x) for x in np.cumsum([0] + [p.size for p in self.parts[:-1]])]

    def normalized_index(self) -> list[int]:
        """The flat features SB3's VecNormalize would normalise: every Box vector key's (never an
        image's, never a one-hot Discrete's)."""
        return [
            i
            for p, o in zip(self.parts, self.offsets(), strict=True)
            if p.kind == "vector"
            for i in range(o, o + p.size)
        ]

    def describe(self) -> str:
        return ", ".join(p.describe() for p in self.parts)

    def to_dict(self) -> dict:
        parts = [{k: v for k, v in asdict(p).items() if k not in ("nvec", "starts") or v} for p in self.parts]
        return {"parts": parts, "is_dict": self.is_dict}

    @classmethod
    def from_dict(cls, d: dict) -> ObsLayout:
        parts = tuple(
            ObsPart(**{**p, **{k: tuple(p[k]) for k in ("shape", "nvec", "starts") if k in p}}) for p in d["parts"]
        )
        return cls(parts, bool(d.get("is_dict", False)))

    # -- the spaces ---------------------------------------------------------------------------------
    @classmethod
    def from_space(cls, space: gym.Space, name: str = "the environment") -> ObsLayout | None:
        """The layout of an image ``Box`` or a ``Dict`` space; None for a space read as a flat vector
        as before (a non-image Box, a Discrete); a one-line ValueError naming ``name`` otherwise."""
        if isinstance(space, gym.spaces.Dict):
            parts = []
            for key, sub in space.spaces.items():  # the space's order: sorted keys, as SB3 iterates them
                if isinstance(sub, (gym.spaces.Dict, gym.spaces.Tuple)):
                    raise ValueError(
                        f"{name}: the Dict observation key {key!r} is a {type(sub).__name__}: svpg reads a Dict of "
                        f"Box, Discrete, MultiDiscrete and MultiBinary spaces (not nested); flatten it with "
                        f"gymnasium.wrappers.FlattenObservation"
                    )
                parts.append(_part(sub, str(key), name, NATURE_DICT_FEATURES))
            if not parts:
                raise ValueError(f"{name}: the Dict observation space has no keys")
            return cls(tuple(parts), is_dict=True)
        if isinstance(space, gym.spaces.Box) and len(space.shape) == 3:
            return cls((_part(space, None, name, NATURE_FEATURES),))
        return None

    # -- observations -> flat vectors -----------------------------------------------------------------
    def flatten(self, obs, batched: bool | None = None) -> tuple[np.ndarray, bool]:
        """An observation (or a batch) in the environment's layout → (n, size) float32, and whether it
        was a single observation. ``batched`` None: decided from the shapes. A one-line ValueError for a
        shape, or a Dict's keys, this layout does not read."""
        if self.is_dict:
            if not isinstance(obs, dict):
                raise ValueError(
                    f"this policy reads Dict observations with keys {self.keys()}, got a {type(obs).__name__}"
                )
            if set(obs) != set(self.keys()):
                raise ValueError(f"observation has keys {sorted(obs)}, but this policy reads {self.keys()}")
            values = [obs[p.key] for p in self.parts]
        else:
            values = [obs]
        arrays = [np.asarray(v) for v in values]
        if batched is None:
            batched = arrays[0].ndim > len(self.parts[0].raw_shape)
        out = []
        n = None
        for a, p in zip(arrays, self.parts, strict=True):
            one = p.raw_shape
            if (a.shape[1:] if batched else a.shape) != one or (batched and a.ndim != len(one) + 1):
                where = f" key {p.key!r}" if p.key is not None else ""
                raise ValueError(
                    f"observation{where} has shape {a.shape}, but this policy expects {one} or "
                    f"(n_envs{''.join(f', {d}' for d in one)})"
                )
            encoding = p.encoding
            if encoding is not None:  # one-hots, 0/1 floats
                a = encoding.encode(a.reshape(-1, *one))
            else:
                a = a.reshape(-1 if batched else 1, p.size)
            if n is not None and a.shape[0] != n:
                raise ValueError(f"the observation's keys hold batches of different sizes ({n} and {a.shape[0]})")
            n = a.shape[0]
            out.append(a.astype(np.float32, copy=False))
        return np.concatenate(out, axis=1) if len(out) > 1 else out[0], not batched

    def keys(self) -> list[str]:
        return [str(p.key) for p in self.parts]


def _part(space: gym.Space, key: str | None, name: str, image_features: int) -> ObsPart:
    where = f"the Dict observation key {key!r}" if key is not None else "observation_space"
    if isinstance(space, gym.spaces.Discrete):
        return ObsPart(key, "discrete", (int(space.n),), start=int(space.start))
    if isinstance(space, (gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)):
        encoding = ObsEncoding.from_space(space, f"{name}: {where}")
        assert encoding is not None
        if encoding.kind == "multi_binary":
            return ObsPart(key, "multi_binary", encoding.sizes)
        return ObsPart(key, "multi_discrete", (encoding.size,), nvec=encoding.sizes, starts=encoding.starts)
    if not isinstance(space, gym.spaces.Box):
        raise ValueError(f"{name}: {where} is {space}; svpg reads {SUPPORTED_OBSERVATIONS}")
    shape = tuple(int(s) for s in space.shape)
    if len(shape) == 3:
        if space.dtype == np.bool_ and bool(np.all(space.low == 0)) and bool(np.all(space.high == 1)):
            # a binary image (MinAtar's Box(0, 1, (10, 10, n), bool)): read as it is, pixels already in {0, 1}
            part = ObsPart(key, "image", shape, channels_first=is_channels_first(shape), scale=1.0)
            return dataclasses.replace(part, features=image_features if part.torso == "nature" else SMALL_FEATURES)
        if space.dtype != np.uint8 or not is_image_space(space):
            got = f"dtype {space.dtype}" if space.dtype != np.uint8 else "bounds other than 0 and 255"
            raise ValueError(
                f"{name}: {where} {space} is 3-D, which svpg reads as an image (uint8, bounds 0 and 255, as SB3's "
                f"is_image_space), but it has {got}: give the space dtype=np.uint8, low=0, high=255, or wrap "
                f"the env in gymnasium.wrappers.FlattenObservation to read it as a vector"
            )
        part = ObsPart(key, "image", shape, channels_first=is_channels_first(shape))
        return dataclasses.replace(part, features=image_features if part.torso == "nature" else SMALL_FEATURES)
    return ObsPart(key, "vector", shape)


# -- the particle networks ---------------------------------------------------------------------------------
class ParticleConv2d:
    """One convolution of every particle: filters (rows, out, in, k, k) and biases in the layout,
    applied as one grouped ``conv2d`` (``groups`` = rows)."""

    def __init__(
        self,
        layout: ParticleLayout,
        name: str,
        cin: int,
        cout: int,
        kernel: int,
        stride: int,
        padding: int,
        prior: Prior,
    ):
        self.layout, self.name, self.prior = layout, name, prior
        self.cin, self.cout, self.kernel, self.stride, self.padding = cin, cout, kernel, stride, padding
        layout.add(name + ".C", (cout, cin, kernel, kernel))
        layout.add(name + ".bias", (cout,))
        if prior.learns_variances:
            layout.add(name + ".log_var_C", (1,))

    def weight(self, theta: torch.Tensor) -> torch.Tensor:
        return self.layout.get(theta, self.name + ".C")

    def bias(self, theta: torch.Tensor) -> torch.Tensor:
        return self.layout.get(theta, self.name + ".bias")

    def log_prior(self, theta: torch.Tensor) -> torch.Tensor:
        """The filters and biases as one group, as a plain dense layer's weights and bias."""
        if isinstance(self.prior, FlatPrior):
            return theta.new_zeros(theta.shape[0])
        log_var = self.layout.get(theta, self.name + ".log_var_C")[:, 0] if self.prior.learns_variances else None
        return self.prior.group_log_prob([self.weight(theta), self.bias(theta)], log_var)

    @torch.no_grad()
    def init_(self, theta: torch.Tensor, generator: torch.Generator | None = None) -> None:
        """He-uniform filters (bound √(6 / fan_in), for ReLU), zero biases, log-variance 0."""
        bound = math.sqrt(6.0 / (self.cin * self.kernel * self.kernel))
        w = self.weight(theta)
        w.copy_(torch.rand(w.shape, generator=generator, dtype=w.dtype, device=w.device) * 2 * bound - bound)
        self.bias(theta).zero_()
        if self.prior.learns_variances:
            self.layout.get(theta, self.name + ".log_var_C").fill_(0.0)


def grouped_conv(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, stride: int, padding: int) -> torch.Tensor:
    """Every particle's convolution of its own images in one call: x (B, rows·in, H, W), weight (rows,
    out, in, k, k), bias (rows, out) → (B, rows·out, H', W')."""
    rows = weight.shape[0]
    return F.conv2d(x, weight.flatten(0, 1), bias.reshape(-1), stride=stride, padding=padding, groups=rows)


class ImageTorso:
    """The convolutions and the dense layer of one image part (see the module docstring)."""

    def __init__(self, layout: ParticleLayout, name: str, part: ObsPart, spec: NetworkSpec, prior: Prior):
        c, h, w = part.chw
        self.part = part
        self.convs = []
        for i, (cout, k, s, p) in enumerate(part.convs):
            self.convs.append(ParticleConv2d(layout, f"{name}.conv{i}", c, cout, k, s, p, prior))
            c, h, w = cout, (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        self.flat = c * h * w
        k_fc = min(spec.householder, self.flat, part.features)
        self.fc = StructuralLinear(
            layout,
            f"{name}.fc",
            self.flat,
            part.features,
            householder=k_fc,
            learn_scales=spec.learn_scales,
            prior=prior,
        )


class ParticleNetwork:
    """Per-part extractors (:class:`ImageTorso` for images, the flat slice otherwise), concatenated,
    then a :class:`~svpg.core.networks.ParticleMLP` on the features; the same maps as ParticleMLP
    (``weights``, ``fast_weights``, ``fast_forward``, …) on x (rows, B, obs layout size)."""

    def __init__(self, layout: ParticleLayout, obs: ObsLayout, spec: NetworkSpec, name: str = "net"):
        self.obs, self.layout = obs, layout
        prior = make_prior(spec.prior, spec.prior_a, spec.prior_b, spec.prior_std)
        self.torsos: dict[int, ImageTorso] = {
            i: ImageTorso(layout, f"{name}.cnn{i}", p, spec, prior)
            for i, p in enumerate(obs.parts)
            if p.kind == "image"
        }
        if spec.sizes[0] != feature_size(obs):
            raise ValueError(
                f"the network's input {spec.sizes[0]} must be the extractors' {feature_size(obs)} features"
            )
        self.mlp = ParticleMLP(layout, spec, name)
        self.spec = spec
        self._split = sum(len(t.convs) + 1 for t in self.torsos.values())

    # the torsos' weights come first: per torso, (filters, bias) of each convolution, then (W, b) of the fc
    def weights(self, theta: torch.Tensor) -> LayerWeights:
        out: LayerWeights = []
        for torso in self.torsos.values():
            out += [(conv.weight(theta), conv.bias(theta)) for conv in torso.convs]
            out.append((torso.fc.weight(theta), torso.fc.bias(theta)))
        return out + self.mlp.weights(theta)

    def fast_weights(self, weights: LayerWeights) -> LayerWeights:
        return weights[: self._split] + self.mlp.fast_weights(weights[self._split :])

    def features(self, weights: LayerWeights, x: torch.Tensor) -> torch.Tensor:
        """x (rows, B, obs size) → the concatenated features (rows, B, F)."""
        rows, batch = x.shape[0], x.shape[1]
        out, k = [], 0
        for i, (part, offset) in enumerate(zip(self.obs.parts, self.obs.offsets(), strict=True)):
            seg = x[..., offset : offset + part.size]
            if part.kind != "image":
                out.append(seg)
                continue
            torso = self.torsos[i]
            img = seg.reshape(rows, batch, *part.shape)
            if not part.channels_first:
                img = img.permute(0, 1, 4, 2, 3)
            c, h, w = part.chw
            h_ = img.transpose(0, 1).reshape(batch, rows * c, h, w)  # one copy: each row's channels side by side
            for j, conv in enumerate(torso.convs):
                wgt, b = weights[k]
                if j == 0 and part.scale != 1.0:  # pixels / 255 in [0, 1], folded into the first filters
                    wgt = wgt * part.scale
                h_ = torch.relu(grouped_conv(h_, wgt, b, conv.stride, conv.padding))
                k += 1
            flat = h_.reshape(batch, rows, -1).transpose(0, 1)  # (rows, B, C'H'W'), each particle's own
            wgt, b = weights[k]
            k += 1
            out.append(torch.relu(torch.baddbmm(b, flat, wgt)))
        return torch.cat(out, -1) if len(out) > 1 else out[0]

    def forward(self, weights: LayerWeights, x: torch.Tensor) -> torch.Tensor:
        return self.mlp.forward(weights[self._split :], self.features(weights, x))

    def fast_forward(self, fast_weights: LayerWeights, x: torch.Tensor) -> torch.Tensor:
        return self.mlp.fast_forward(fast_weights[self._split :], self.features(fast_weights, x))

    def _dense(self) -> list[StructuralLinear]:
        return [t.fc for t in self.torsos.values()] + self.mlp.layers

    def structural_blocks(self) -> list[str]:
        return [b for layer in self._dense() for b in layer.structural_blocks()]

    @property
    def has_householder(self) -> bool:
        return any(layer.k for layer in self._dense())

    @torch.no_grad()
    def normalise_householder_(self, theta: torch.Tensor) -> torch.Tensor:
        norms = [layer.normalise_householder_(theta) for layer in self._dense() if layer.k]
        return torch.stack(norms).amin() if norms else theta.new_ones(())

    def log_prior(self, theta: torch.Tensor) -> torch.Tensor:
        lp = self.mlp.log_prior(theta)
        for torso in self.torsos.values():
            lp = lp + torso.fc.log_prior(theta)
            for conv in torso.convs:
                lp = lp + conv.log_prior(theta)
        return lp

    def init_(self, theta: torch.Tensor, generator: torch.Generator | None = None, out_scale: float = 1.0) -> None:
        for torso in self.torsos.values():
            for conv in torso.convs:
                conv.init_(theta, generator)
            torso.fc.init_(theta, generator)
        self.mlp.init_(theta, generator, out_scale=out_scale)

    # -- one particle as torch modules ------------------------------------------------------------------
    @torch.no_grad()
    def to_module(self, weights: LayerWeights) -> nn.Module:
        """The extractors of one particle (``weights`` of a single row) as a module on flat observations
        (B, obs size) → features (B, F), in float32 on CPU, with plain ``nn.Conv2d`` layers."""
        blocks: list[tuple[int, int, nn.Module | None]] = []
        k = 0
        for i, (part, offset) in enumerate(zip(self.obs.parts, self.obs.offsets(), strict=True)):
            if part.kind != "image":
                blocks.append((offset, part.size, None))
                continue
            torso = self.torsos[i]
            layers: list[nn.Module] = [_ToImage(part)]
            for conv in torso.convs:
                wgt, b = weights[k]
                k += 1
                module = nn.Conv2d(conv.cin, conv.cout, conv.kernel, conv.stride, conv.padding)
                module.weight.copy_(wgt[0])
                assert module.bias is not None  # nn.Conv2d's default bias=True
                module.bias.copy_(b[0])
                layers += [module, nn.ReLU()]
            wgt, b = weights[k]
            k += 1
            linear = nn.Linear(wgt.shape[1], wgt.shape[2])
            linear.weight.copy_(wgt[0].T)
            linear.bias.copy_(b[0, 0])
            layers += [nn.Flatten(1), linear, nn.ReLU()]
            blocks.append((offset, part.size, nn.Sequential(*layers)))
        return _Extractors(blocks).to("cpu", torch.float32)


def feature_size(obs: ObsLayout) -> int:
    """The width of the concatenated features: each image torso's features, each other part's size."""
    return sum(p.features if p.kind == "image" else p.size for p in obs.parts)


def network_input_size(space: gym.Space, flat_size: int) -> int:
    """The width of the dense network's input for observations of ``space``: the extractors' features
    for an image ``Box`` or a ``Dict``, else ``flat_size`` (the flat observation's size)."""
    layout = ObsLayout.from_space(space)
    return flat_size if layout is None else feature_size(layout)


class _ToImage(nn.Module):
    """Flat (B, size) pixels → (B, C, H, W) in [0, 1]."""

    def __init__(self, part: ObsPart):
        super().__init__()
        self.shape = tuple(int(s) for s in part.shape)
        self.channels_last = not part.channels_first
        self.scale = float(part.scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        img = x.reshape(x.shape[0], self.shape[0], self.shape[1], self.shape[2])
        if self.channels_last:
            img = img.permute(0, 3, 1, 2)
        return img * self.scale


class _Part(nn.Module):
    """One part of a flat observation, x[:, offset : offset + size], through its extractor."""

    def __init__(self, offset: int, size: int, inner: nn.Module | None):
        super().__init__()
        self.offset, self.end = int(offset), int(offset + size)
        self.inner = inner if inner is not None else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x[:, self.offset : self.end])


class _Extractors(nn.Module):
    def __init__(self, blocks: list[tuple[int, int, nn.Module | None]]):
        super().__init__()
        self.parts = nn.ModuleList([_Part(o, n, m) for o, n, m in blocks])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = [part(x) for part in self.parts]
        return torch.cat(out, -1)


class FlattenImage(nn.Module):
    """An exported policy's input for an image observation: (B, *image shape) in the env's layout, any
    numeric dtype → the flat float32 (B, size) the rest of the module reads."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(x.shape[0], -1).to(torch.float32)
