"""One particle of a policy ensemble as a plain ``torch.nn`` module, saved to run without svpg.

:func:`to_module` builds the chosen particle's network from ``torch.nn`` layers (``nn.Linear`` with
its effective weights, ``nn.Tanh`` / ``nn.ReLU``) plus a small action head; :func:`export` writes it
as a ``torch.export`` program (``.pt2``, the default) or as TorchScript (``.pt``). Either file is
loaded with torch alone::

    >>> import tempfile, gymnasium as gym, torch
    >>> from svpg.rl.export import export
    >>> from svpg.rl.policies import ParticlePolicy, PolicySpec
    >>> env = gym.make("CartPole-v1")
    >>> spec = PolicySpec.for_spaces(env.observation_space, env.action_space, {"hidden": (16,)}, 4)
    >>> policy = ParticlePolicy(spec, seed=0)  # or svpg.load("runs/<run-name>")
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = export(policy, folder.name + "/actor.pt2")
    >>> actor = torch.export.load(path).module()  # from here on, no svpg
    >>> actor(torch.zeros(3, 4)).shape  # a batch of observations -> its actions
    torch.Size([3])

From the shell (a run folder or a ``.safetensors`` checkpoint; default particle: the best one at
save time)::

    python -m svpg.rl.export runs/<run-name> actor.pt2 [--particle N] [--stochastic] [--raw]
    python -m svpg.rl.export runs/<run-name> actor.pt            # TorchScript, for LibTorch (C++)

ONNX is not offered: ``torch.onnx.export`` needs the ``onnx`` (and ``onnxscript``) packages, which
svpg does not depend on; where they are installed, ``torch.onnx.export(to_module(policy), ...)``
works on the plain module.
"""

from __future__ import annotations

import json
import operator
import sys
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import nn

from svpg.core.extractors import FlattenImage, ParticleNetwork
from svpg.rl.policies import ParticlePolicy

__all__ = ["to_module", "export", "FORMATS"]

#: Deployment formats and the file suffix each is written with.
FORMATS = {"exported_program": ".pt2", "torchscript": ".pt"}
#: Name of the JSON description stored inside an exported file (``extra_files``).
INFO_FILE = "svpg.json"

_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}


class Argmax(nn.Module):
    """Logits (..., n) -> the action of highest logit (..., ), int64."""

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return logits.argmax(-1)


class AddGumbelNoise(nn.Module):
    """Logits plus Gumbel(0, 1) noise: their argmax is a categorical sample (Gumbel-max trick), drawn
    as :meth:`svpg.rl.policies.ParticlePolicy.draw_noise` draws it."""

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        u = torch.rand_like(logits).clamp(1e-20, 1.0)
        return logits - torch.log(-torch.log(u))


class ComponentArgmax(nn.Module):
    """A MultiDiscrete head's logits (..., sum(nvec)) -> each component's action of highest logit
    (..., K), int64, as :meth:`svpg.rl.policies.ParticlePolicy.component_logits` splits them.

    :param index: (K, max n): where each component's logits are read from (``sum(nvec)``: −inf padding).
    """

    def __init__(self, index: torch.Tensor):
        super().__init__()
        self.register_buffer("index", index)
        self.components, self.width = int(index.shape[0]), int(index.shape[1])

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        padded = torch.cat([logits, torch.full_like(logits[..., :1], float("-inf"))], -1)
        # buffers: see AddGaussianNoise
        rows = padded.index_select(-1, self.index.flatten())  # type: ignore[operator]
        return rows.unflatten(-1, (self.components, self.width)).argmax(-1)


class AddOffset(nn.Module):
    """Actions counted from 0 -> counted from the action space's ``start``."""

    def __init__(self, offset: torch.Tensor):
        super().__init__()
        self.register_buffer("offset", offset)

    def forward(self, action: torch.Tensor) -> torch.Tensor:
        # buffers: see AddGaussianNoise
        return action + self.offset  # type: ignore[operator]


class AddLogisticNoise(nn.Module):
    """Bernoulli logits plus Logistic(0, 1) noise: where the sum is positive is a Bernoulli sample, drawn
    as :meth:`svpg.rl.policies.ParticlePolicy.draw_noise` draws it."""

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        u = torch.rand_like(logits).clamp(1e-20, 1.0 - 1e-7)
        return logits + torch.log(u) - torch.log1p(-u)


class Positive(nn.Module):
    """MultiBinary logits (..., n) -> 1 where the logit is positive (probability over ½), else 0; int64."""

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return (logits > 0).long()


class AddGaussianNoise(nn.Module):
    """Gaussian mean -> a sample ``mean + std * N(0, 1)``, with the particle's learned std."""

    def __init__(self, std: torch.Tensor):
        super().__init__()
        self.register_buffer("std", std)

    def forward(self, mean: torch.Tensor) -> torch.Tensor:
        # the ignores in these modules: torch types a buffer as Tensor | Module, and a class-level
        # annotation would not do, as TorchScript cannot read the postponed (string) annotation; TorchScript
        # takes a "type:" comment for a signature unless it is an ignore that ends its line
        return torch.addcmul(mean, self.std, torch.randn_like(mean))  # type: ignore[arg-type]


class SquashedGaussian(nn.Module):
    """The squashed head's output (B, 2A) = (mean, log-std) -> centre + half · tanh(mean [+ std ε]), as
    :meth:`svpg.rl.policies.ParticlePolicy.squashed_sample` draws it."""

    def __init__(self, centre: torch.Tensor, half: torch.Tensor, deterministic: bool):
        super().__init__()
        self.register_buffer("centre", centre)
        self.register_buffer("half_width", half)
        self.deterministic = deterministic

    def forward(self, out: torch.Tensor) -> torch.Tensor:
        mean, log_std = out.chunk(2, dim=-1)
        if not self.deterministic:
            mean = mean + log_std.clamp(-20.0, 2.0).exp() * torch.randn_like(mean)
        # buffers: see AddGaussianNoise
        return torch.addcmul(self.centre, self.half_width, torch.tanh(mean))  # type: ignore[arg-type]


class TanhBox(nn.Module):
    """The deterministic head's output μ (B, A) -> centre + half · tanh(μ), as
    :meth:`svpg.rl.policies.ParticlePolicy.mode` computes it (the head has no noise to sample)."""

    def __init__(self, centre: torch.Tensor, half: torch.Tensor):
        super().__init__()
        self.register_buffer("centre", centre)
        self.register_buffer("half_width", half)

    def forward(self, out: torch.Tensor) -> torch.Tensor:
        # buffers: see AddGaussianNoise
        return torch.addcmul(self.centre, self.half_width, torch.tanh(out))  # type: ignore[arg-type]


class Clip(nn.Module):
    """Actions clipped to the action space's box, as :meth:`ParticlePolicy.predict` and
    Stable-Baselines3 clip them."""

    def __init__(self, low: torch.Tensor, high: torch.Tensor):
        super().__init__()
        self.register_buffer("low", low)
        self.register_buffer("high", high)

    def forward(self, action: torch.Tensor) -> torch.Tensor:
        # buffers: see AddGaussianNoise
        return torch.clamp(action, self.low, self.high)  # type: ignore[arg-type]


class NormalizeObservation(nn.Module):
    """The frozen observation normalisation of a model trained with ``normalize_obs``:
    clip((obs − mean) / std, −clip, clip) (:mod:`svpg.rl.normalize`)."""

    def __init__(self, mean: torch.Tensor, std: torch.Tensor, clip: float):
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)
        self.clip = float(clip)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        # buffers: see AddGaussianNoise
        return torch.clamp((obs - self.mean) / self.std, -self.clip, self.clip)  # type: ignore[operator]


class NormalizeFeatures(nn.Module):
    """:class:`NormalizeObservation` of the features ``index`` only (a Dict's vector keys; never pixels)."""

    def __init__(self, index: torch.Tensor, mean: torch.Tensor, std: torch.Tensor, clip: float):
        super().__init__()
        self.register_buffer("index", index)
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)
        self.clip = float(clip)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        # buffers: see AddGaussianNoise
        index, mean, std = self.index, self.mean, self.std
        assert isinstance(index, torch.Tensor) and isinstance(mean, torch.Tensor) and isinstance(std, torch.Tensor)
        return obs.index_copy(1, index, torch.clamp((obs.index_select(1, index) - mean) / std, -self.clip, self.clip))


def _particle_index(policy: ParticlePolicy, particle) -> int:
    if particle is None:
        return policy.particle
    try:
        i = operator.index(particle)
    except TypeError:
        i = None
    if i is None or isinstance(particle, bool) or not 0 <= i < policy.num_particles:
        raise ValueError(f"particle must be an index in [0, {policy.num_particles - 1}], got {particle!r}")
    return i


@torch.no_grad()
def to_module(
    policy: ParticlePolicy, particle: int | None = None, deterministic: bool = True, raw: bool = False
) -> nn.Sequential:
    """One particle as an ``nn.Sequential`` mapping observations (B, obs_dim) float32 to actions; an
    image observation as the env gives it, (B, *shape) of any numeric dtype (pixels 0–255); a ``Dict``
    observation as one flat (B, obs_dim) float32 vector, its keys flattened one after the other in the
    order of ``svpg.json``'s ``obs_layout`` (``ObsLayout.flatten`` builds it, Discrete keys one-hot); a
    ``Discrete``, ``MultiDiscrete`` or ``MultiBinary`` observation encoded as ``svpg.json``'s ``obs_encoding``
    says (``ObsEncoding.encode``: one-hots, 0/1 floats).

    The layers hold the particle's effective weights (``policy.weights``: for structural layers
    W = P Λ1 C Λ2 Qᵀ, eqs. 10-13 of the S²VGD paper, with the observation scale folded into the first),
    after the frozen observation normalisation if the model has one, so the module computes the same
    function of raw observations as the ensemble's particle, on CPU in float32.

    :param policy: the ensemble (e.g. from ``svpg.load``).
    :param particle: which particle (default: ``policy.particle``, the best one at save time).
    :param deterministic: the argmax action (categorical head, one per component of a MultiDiscrete), the
        more probable value of each Bernoulli (MultiBinary) or the mean clipped to the action box (Gaussian
        head), as ``policy.predict(obs, deterministic=True)``; False samples like
        ``predict(obs, deterministic=False)`` (Gumbel-max / logistic noise / mean + σ ε, then clipped).
        The deterministic head (``estimator="td3"``) has no noise: centre + half · tanh(μ) either way.
    :param raw: the network's output instead of an action: logits (B, n) or Gaussian means (B, A),
        not clipped; ``deterministic`` does not apply.
    :raises ValueError: for a particle index outside the ensemble.
    """
    i = _particle_index(policy, particle)
    spec = policy.spec
    theta = policy.theta.detach()[i : i + 1]
    layer_weights, log_std = policy.weights(theta)
    layers: list[nn.Module] = []
    layout = spec.obs_layout
    if layout is not None and not layout.is_dict:
        layers.append(FlattenImage())
    norm_index = spec.normalized_index()
    if policy.obs_normalization is not None and norm_index != []:  # the statistics frozen at save time
        norm = policy.obs_normalization
        mean, std = norm["mean"].to("cpu", torch.float32), norm["std"].to("cpu", torch.float32)
        if norm_index is None:
            layers.append(NormalizeObservation(mean, std, norm["clip"]))
        else:
            idx = torch.tensor(norm_index, dtype=torch.long)
            layers.append(NormalizeFeatures(idx, mean[idx], std[idx], norm["clip"]))
    if isinstance(policy.net, ParticleNetwork):  # the extractors (CNNs), then the MLP's layers
        split = len(layer_weights) - len(policy.net.mlp.layers)
        layers.append(policy.net.to_module(layer_weights[:split]))
        layer_weights = layer_weights[split:]
    for k, (w, b) in enumerate(layer_weights):
        if k:
            layers.append(_ACTIVATIONS[spec.network.activation]())
        linear = nn.Linear(w.shape[1], w.shape[2])
        linear.weight.copy_(w[0].T)  # ours is (in, out) for x W + b, nn.Linear's (out, in)
        linear.bias.copy_(b[0, 0])
        layers.append(linear)
    if raw:
        return nn.Sequential(*layers).requires_grad_(False)
    if spec.binary:
        head: list[nn.Module] = [Positive()] if deterministic else [AddLogisticNoise(), Positive()]
    elif spec.discrete:
        if spec.nvec:
            nvec, total = spec.nvec, sum(spec.nvec)
            width, first = max(nvec), [sum(nvec[:k]) for k in range(len(nvec))]
            index = [[o + j if j < n else total for j in range(width)] for o, n in zip(first, nvec, strict=True)]
            argmax: nn.Module = ComponentArgmax(torch.tensor(index))
        else:
            argmax = Argmax()
        head = [argmax] if deterministic else [AddGumbelNoise(), argmax]
        if any(spec.action_start()):
            head.append(AddOffset(torch.tensor(spec.action_start())))
    elif spec.squashed:
        low, high = (torch.tensor(bound, dtype=torch.float32) for bound in (spec.action_low, spec.action_high))
        head = [SquashedGaussian((high + low) / 2, (high - low) / 2, deterministic)]
    elif spec.deterministic:  # the same module either way: its sample is its mode
        low, high = (torch.tensor(bound, dtype=torch.float32) for bound in (spec.action_low, spec.action_high))
        head = [TanhBox((high + low) / 2, (high - low) / 2)]
    else:
        low, high = (torch.tensor(bound, dtype=torch.float32) for bound in (spec.action_low, spec.action_high))
        assert log_std is not None  # a continuous policy learns its std
        noise = [] if deterministic else [AddGaussianNoise(log_std[0].exp().to("cpu", torch.float32))]
        head = [*noise, Clip(low, high)]
    return nn.Sequential(*layers, *head).requires_grad_(False)  # for inference: outputs need no graph


def export(
    policy: ParticlePolicy,
    path: str | Path,
    particle: int | None = None,
    format: str | None = None,
    *,
    deterministic: bool = True,
    raw: bool = False,
) -> Path:
    """Write one particle (:func:`to_module`) to ``path`` for deployment without svpg, atomically.

    ``"exported_program"`` (``.pt2``; load with ``torch.export.load(path).module()``) is the default
    because it is torch's current serialisation format, also the input of AOTInductor and ExecuTorch;
    ``"torchscript"`` (``.pt``; ``torch.jit.load(path)``) is there for LibTorch (C++) runtimes, though
    torch 2.13 deprecates it. Both take a batch of observations of any size. The file also holds a
    JSON description (``svpg.json`` in ``extra_files``): particle, spaces, output and environment id.

    :param format: one of :data:`FORMATS`; default: the one whose suffix ``path`` has.
    :param deterministic: see :func:`to_module`.
    :param raw: see :func:`to_module`.
    :returns: the path written.
    :raises ValueError: for an unknown format, a suffix that does not match it, or a bad particle.
    :raises svpg.io.WriteError: if the file cannot be written (the previous version stays intact).
    """
    from svpg.io import atomic_write

    path = Path(path)
    format = format or next((f for f, suffix in FORMATS.items() if path.suffix == suffix), None)
    if format not in FORMATS:
        onnx = "onnx" in (format, path.suffix.lstrip("."))
        raise ValueError(
            f"format must be one of {FORMATS} (format: file suffix), got {format or path.name!r}"
            + ("; ONNX needs the onnx package: torch.onnx.export(to_module(policy), ...)" if onnx else "")
        )
    if path.suffix != FORMATS[format]:
        raise ValueError(f"a {format} file must end in {FORMATS[format]}, got {path}")
    i = _particle_index(policy, particle)
    module = to_module(policy, i, deterministic=deterministic, raw=raw)
    extra = {INFO_FILE: json.dumps(_describe(policy, i, deterministic, raw))}
    layout = policy.spec.obs_layout
    shape = layout.parts[0].shape if layout is not None and not layout.is_dict else (policy.spec.obs_dim,)
    example = torch.zeros(2, *shape)
    if format == "exported_program":
        program = torch.export.export(module, (example,), dynamic_shapes=({0: torch.export.Dim("batch")},))

        def write(tmp):
            with open(tmp, "wb") as f:  # a file object: torch.export.save warns about a non-.pt2 temp name
                torch.export.save(program, f, extra_files=extra)
    else:
        scripted = torch.jit.script(module)

        def write(tmp):
            with warnings.catch_warnings():  # the docstring says it: no warning at every export
                warnings.filterwarnings("ignore", "`torch.jit.save` is deprecated", DeprecationWarning)
                torch.jit.save(scripted, tmp, _extra_files=extra)

    atomic_write(path, write)
    return path


def _describe(policy: ParticlePolicy, particle: int, deterministic: bool, raw: bool) -> dict:
    """What a deployer needs to know about an exported file's module."""
    spec = policy.spec
    action: dict[str, Any]
    start = list(spec.action_start())
    if spec.binary:
        action = {"multi_binary": spec.action_dim}
    elif spec.nvec:
        action = {"multi_discrete": list(spec.nvec), "start": start}
    elif spec.discrete:
        action = {"discrete": spec.action_dim, **({"start": start[0]} if any(start) else {})}
    else:
        action = {"low": list(spec.action_low), "high": list(spec.action_high)}
        if spec.box_shape:  # the module's actions are flat: reshape them to the env's Box
            action["shape"] = list(spec.box_shape)
    if raw:
        output = (
            "logits"
            if spec.discrete
            else "mean and log-std before tanh"
            if spec.squashed
            else "action before tanh"
            if spec.deterministic
            else "mean"
        )
    else:
        output = "action" if deterministic or spec.deterministic else "sampled action"
    return {
        "particle": particle,
        "obs_dim": spec.obs_dim,
        **({"obs_layout": spec.obs_layout.to_dict()} if spec.obs_layout is not None else {}),
        **({"obs_encoding": spec.obs_encoding.to_dict()} if spec.obs_encoding is not None else {}),
        "action_space": action,
        "output": output,
        "env_id": getattr(policy, "metadata", {}).get("env_id"),
    }


def main(argv: list[str] | None = None) -> int:
    from svpg.cli import Parser

    prog = "python -m svpg.rl.export"
    p = Parser(
        prog=prog,
        usage=f"{prog} RUN OUT [options]",
        description="Write one particle of a saved ensemble to a file that runs with torch alone.",
    )
    p.add_argument("path", metavar="RUN", help="run folder (runs/<run-name>) or a .safetensors checkpoint")
    p.add_argument("out", metavar="OUT", help="output file: .pt2 (torch.export) or .pt (TorchScript)")
    p.add_argument("--particle", type=int, default=None, help="particle index (default: the best at save time)")
    p.add_argument("--format", choices=sorted(FORMATS), default=None, help="default: from OUT's suffix")
    p.add_argument("--stochastic", action="store_true", help="sample actions instead of argmax / clipped mean")
    p.add_argument("--raw", action="store_true", help="output logits / Gaussian means instead of actions")
    args = p.parse_args(argv)

    import svpg
    from svpg.io import CheckpointError

    try:
        policy = svpg.load(args.path)
        out = export(policy, args.out, args.particle, args.format, deterministic=not args.stochastic, raw=args.raw)
    except (CheckpointError, FileNotFoundError, ValueError) as e:  # WriteError is a ValueError
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    i = policy.particle if args.particle is None else args.particle
    print(f"{out}: particle {i} of {args.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
