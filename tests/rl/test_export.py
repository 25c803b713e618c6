"""One particle exported as a plain torch module / file: same actions as predict, loadable without svpg."""
import doctest
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

import svpg.rl.export
from svpg.rl.export import FORMATS, export, main, to_module
from svpg.rl.policies import ParticlePolicy, PolicySpec, save_policy

NETWORKS = {
    "structural": dict(hidden=(16, 8), householder=1, learn_scales=True),
    "plain": dict(hidden=(16, 8)),
}
ENVS = {"discrete": "CartPole-v1", "continuous": "Pendulum-v1"}
CASES = [(kind, net) for kind in ENVS for net in NETWORKS]


def _policy(kind: str, net: str, num_particles: int = 3) -> ParticlePolicy:
    env = gym.make(ENVS[kind])
    obs_dim = env.observation_space.shape[0]
    scale = tuple(np.linspace(0.5, 2.0, obs_dim)) if net == "structural" else ()  # folded into layer 0
    spec = PolicySpec.for_spaces(env.observation_space, env.action_space, NETWORKS[net], num_particles, scale)
    policy = ParticlePolicy(spec, seed=0)
    with torch.no_grad():  # the output layer starts small; widen it: distinct logits, means beyond the box
        policy.layout.get(policy.theta, "pi.2.C").mul_(300.0)
    return policy.set_particle(1)


def _observations(policy: ParticlePolicy, n: int = 256) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(n, policy.spec.obs_dim)).astype(np.float32) * 2


def _assert_same_actions(actions, expected, discrete: bool):
    """Equal argmax actions; Gaussian means equal to float32 rounding: the module computes tanh with
    addmm, predict the sigmoid form of ParticleMLP.fast_weights with baddbmm (~1e-6 on means of ~3)."""
    actions = np.asarray(actions)
    assert actions.dtype == expected.dtype and actions.shape == expected.shape
    if discrete:
        np.testing.assert_array_equal(actions, expected)
    else:
        np.testing.assert_allclose(actions, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind,net", CASES)
def test_module_gives_the_actions_of_predict(kind, net):
    policy = _policy(kind, net)
    obs = _observations(policy)
    module = to_module(policy)
    assert all(type(layer).__module__.startswith("torch.nn") for layer in module[:-1])
    for particle in (None, 2):
        if particle is not None:
            module = to_module(policy, particle)
            policy.set_particle(particle)
        expected, _ = policy.predict(obs, deterministic=True)
        _assert_same_actions(module(torch.from_numpy(obs)).numpy(), expected, kind == "discrete")
    raw = to_module(policy, raw=True)(torch.from_numpy(obs))
    assert raw.shape == (len(obs), policy.spec.action_dim)
    if kind == "discrete":
        assert torch.equal(raw.argmax(-1), module(torch.from_numpy(obs)))
    else:
        assert (raw.abs() > 2).any()  # the raw mean is not clipped; the action is
        assert torch.equal(raw.clamp(-2, 2), module(torch.from_numpy(obs)))


def test_stochastic_modules_sample_the_policy():
    n = 10_000
    discrete = _policy("discrete", "plain")
    obs = torch.from_numpy(_observations(discrete, 1)).expand(n, -1)
    torch.manual_seed(0)
    draws = to_module(discrete, deterministic=False)(obs)
    probs = torch.softmax(to_module(discrete, raw=True)(obs[:1]), -1)[0]
    freq = torch.bincount(draws, minlength=2).float() / n
    torch.testing.assert_close(freq, probs, atol=0.015, rtol=0)
    gaussian = _policy("continuous", "plain")
    with torch.no_grad():
        gaussian.layout.get(gaussian.theta, "pi.log_std").fill_(np.log(0.1))
    obs = torch.zeros(n, gaussian.spec.obs_dim)
    mean = to_module(gaussian, raw=True)(obs[:1])[0]
    assert mean.abs().item() < 1.5  # the box [-2, 2] clips no more than a few draws
    samples = to_module(gaussian, deterministic=False)(obs)
    torch.testing.assert_close(samples.mean(0), mean, atol=0.005, rtol=0)
    torch.testing.assert_close(samples.std(0), torch.tensor([0.1]), atol=0, rtol=0.05)


# The files are loaded in a separate interpreter (isolated mode) in which importing svpg fails. It
# starts (imports torch) while the test writes the files, then reads from stdin the observations'
# file (a dict kind -> batch), its output file and kind:path pairs, one a line.
LOADER = """
import json, sys, torch
sys.modules["svpg"] = None  # any import of svpg from here on raises ImportError
obs_file, out_file, *items = sys.stdin.read().splitlines()
obs, results = torch.load(obs_file), {}
for item in items:
    kind, path = item.split(":", 1)
    extra = {"svpg.json": ""}
    if path.endswith(".pt2"):
        module = torch.export.load(path, extra_files=extra).module()
    else:
        module = torch.jit.load(path, _extra_files=extra)
    results[path] = (module(obs[kind]), module(obs[kind][:1]), json.loads(extra["svpg.json"]))
assert not [name for name in sys.modules if name.startswith("svpg.")]
torch.save(results, out_file)
"""


def test_files_run_without_svpg(tmp_path):
    loader = subprocess.Popen([sys.executable, "-I", "-c", LOADER], stdin=subprocess.PIPE, cwd=tmp_path, text=True)
    obs, expected, paths = {}, {}, []
    for kind, net in CASES:
        policy = _policy(kind, net)
        o = _observations(policy)
        obs[kind] = torch.from_numpy(o)
        expected[kind, net] = policy.predict(o, deterministic=True)[0]
        for suffix in FORMATS.values():
            path = tmp_path / f"{kind}-{net}{suffix}"
            assert export(policy, path) == path
            paths.append((kind, net, path))
    assert not list(tmp_path.glob(".*"))  # no temporary files left
    torch.save(obs, tmp_path / "obs.pt")
    lines = [str(tmp_path / "obs.pt"), str(tmp_path / "out.pt"), *(f"{kind}:{path}" for kind, _, path in paths)]
    loader.communicate("\n".join(lines), timeout=120)
    assert loader.returncode == 0
    results = torch.load(tmp_path / "out.pt", weights_only=True)
    for kind, net, path in paths:
        actions, first, info = results[str(path)]
        _assert_same_actions(actions.numpy(), expected[kind, net], kind == "discrete")
        _assert_same_actions(first.numpy(), expected[kind, net][:1], kind == "discrete")  # any batch size
        assert info["particle"] == 1 and info["output"] == "action"
        assert info["obs_dim"] == obs[kind].shape[1]


def test_bad_particle_format_and_path_are_one_line_errors(tmp_path, capsys):
    policy = _policy("continuous", "structural")
    for bad in (3, -1, True, 1.5, "0"):
        with pytest.raises(ValueError, match=r"particle must be an index in \[0, 2\]"):
            to_module(policy, bad)
    with pytest.raises(ValueError, match="ONNX needs the onnx package"):
        export(policy, tmp_path / "actor.onnx")
    with pytest.raises(ValueError, match="must end in .pt2"):
        export(policy, tmp_path / "actor.pt", format="exported_program")
    with pytest.raises(ValueError, match="format must be one of"):
        export(policy, tmp_path / "actor.bin")
    assert not list(tmp_path.iterdir())

    run = tmp_path / "run"
    save_policy(policy, run / "model.safetensors", {"env_id": "Pendulum-v1"})
    for argv in ([str(tmp_path / "missing"), str(tmp_path / "a.pt2")],
                 [str(run), str(tmp_path / "a.pt2"), "--particle", "7"],
                 [str(run), str(tmp_path / "a.txt")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("python -m svpg.rl.export: error: ") and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit) as exit_:
        main([str(run), str(tmp_path / "a.pt2"), "--particle", "best"])
    assert exit_.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not list(tmp_path.glob("a.*"))

    assert main([str(run), str(tmp_path / "a.pt2"), "--particle", "2"]) == 0
    extra = {"svpg.json": ""}
    module = torch.export.load(tmp_path / "a.pt2", extra_files=extra).module()
    obs = _observations(policy, 8)
    expected, _ = policy.set_particle(2).predict(obs, deterministic=True)
    _assert_same_actions(module(torch.from_numpy(obs)).numpy(), expected, discrete=False)
    assert '"env_id": "Pendulum-v1"' in extra["svpg.json"] and '"particle": 2' in extra["svpg.json"]


def test_module_docstring_example_runs():
    assert doctest.testmod(svpg.rl.export).failed == 0
