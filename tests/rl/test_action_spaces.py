"""MultiDiscrete and MultiBinary actions (Stable-Baselines3's independent categoricals and Bernoullis):
their log-probabilities and entropies, sampling, small tasks that learn, save / load, export, the
environments' conversion, and the spaces svpg refuses."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch.distributions import Bernoulli, Categorical

import svpg
from svpg.envs.generic import GymVectorEnv
from svpg.rl.evaluation import evaluate_particles
from svpg.rl.export import export, to_module
from svpg.rl.policies import ParticlePolicy, PolicySpec

OBS = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
MULTI_DISCRETE = gym.spaces.MultiDiscrete([3, 2, 4], start=[1, 0, -1])  # unequal sizes: padded logits
CHEAP_PPO = dict(ppo_epochs=2, ppo_minibatches=4, value_epochs=2, value_steps=4)


def _policy(space: gym.Space, logits: torch.Tensor) -> ParticlePolicy:
    """A policy whose network outputs ``logits`` (M, B, outputs) whatever it reads."""
    policy = ParticlePolicy(PolicySpec.for_spaces(OBS, space, {"hidden": (4,)}, logits.shape[0]), seed=0)
    policy.net.fast_forward = lambda weights, obs: logits  # type: ignore[method-assign]
    return policy


def test_multi_discrete_log_prob_and_entropy_are_the_components_categoricals():
    logits = torch.randn(2, 5, 9, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 2
    logits.requires_grad_()
    policy = _policy(MULTI_DISCRETE, logits)
    actions = torch.stack(
        [
            torch.randint(n, (2, 5), generator=torch.Generator().manual_seed(k)) + s
            for k, (n, s) in enumerate(zip(MULTI_DISCRETE.nvec, MULTI_DISCRETE.start, strict=True))
        ],
        -1,
    )
    logp, entropy = policy.log_prob_entropy(policy.theta, torch.zeros(2, 5, 2), actions)
    parts = [Categorical(logits=x) for x in logits.split([3, 2, 4], -1)]
    starts = torch.as_tensor(MULTI_DISCRETE.start)
    expected_logp = sum(d.log_prob(actions[..., k] - starts[k]) for k, d in enumerate(parts))
    expected_entropy = sum(d.entropy() for d in parts).mean(-1)
    torch.testing.assert_close(logp, expected_logp)
    torch.testing.assert_close(entropy, expected_entropy)
    (logp.sum() + entropy.sum()).backward()  # the −inf padding of the smaller components leaves no NaN
    assert torch.isfinite(logits.grad).all()
    mode = policy.mode(policy.fast_weights(), torch.zeros(2, 5, 2))
    assert torch.equal(mode, torch.stack([x.argmax(-1) for x in logits.split([3, 2, 4], -1)], -1) + starts)


def test_multi_binary_log_prob_and_entropy_are_the_bernoullis():
    logits = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 3
    policy = _policy(gym.spaces.MultiBinary(5), logits)
    actions = torch.randint(2, (3, 4, 5), generator=torch.Generator().manual_seed(2))
    logp, entropy = policy.log_prob_entropy(policy.theta, torch.zeros(3, 4, 2), actions)
    d = Bernoulli(logits=logits)
    torch.testing.assert_close(logp, d.log_prob(actions.double()).sum(-1))
    torch.testing.assert_close(entropy, d.entropy().sum(-1).mean(-1))
    assert torch.equal(policy.mode(policy.fast_weights(), torch.zeros(3, 4, 2)), (logits > 0).long())


@pytest.mark.parametrize("space", [MULTI_DISCRETE, gym.spaces.MultiBinary(3)], ids=["multi_discrete", "multi_binary"])
def test_samples_follow_the_probabilities(space):
    """Gumbel-max per component and logistic noise draw each component with its probability."""
    outputs = 9 if isinstance(space, gym.spaces.MultiDiscrete) else 3
    logits = torch.randn(1, 1, outputs, generator=torch.Generator().manual_seed(3))
    policy = _policy(space, logits)
    n = 20_000
    noise = policy.draw_noise((1, n), torch.Generator().manual_seed(4))
    policy.net.fast_forward = lambda weights, obs: logits.expand(1, n, outputs)  # type: ignore[method-assign]
    actions = policy.sample(policy.fast_weights(), torch.zeros(1, n, 2), noise)[0]
    assert actions.dtype == torch.int64 and actions.shape == (n, *space.shape)
    if isinstance(space, gym.spaces.MultiBinary):
        freq, prob = actions.double().mean(0), torch.sigmoid(logits[0, 0]).double()
    else:
        parts = logits[0, 0].split([3, 2, 4])
        freq = torch.cat(
            [
                torch.bincount(actions[:, k] - s, minlength=len(p)) / n
                for k, (p, s) in enumerate(zip(parts, MULTI_DISCRETE.start, strict=True))
            ]
        ).double()
        prob = torch.cat([p.softmax(-1) for p in parts]).double()
    assert (freq - prob).abs().max() < 0.015  # 3 standard errors of a frequency near ½ at 20,000 draws


def test_spec_of_todays_files_loads_unchanged_and_the_old_heads_store_what_they_did():
    network = {
        "sizes": [4, 8, 2], "activation": "tanh", "householder": 0, "learn_scales": False, "prior": "flat",
        "prior_a": 1.0, "prior_b": 0.1, "structural_output": True, "prior_std": 1.0,
    }  # fmt: skip
    discrete = {
        "obs_dim": 4, "discrete": True, "action_dim": 2, "network": network, "num_particles": 4,
        "action_low": [], "action_high": [], "init_log_std": 0.0, "obs_scale": [],
    }  # fmt: skip
    sac = {
        **discrete, "discrete": False, "action_dim": 1, "network": {**network, "sizes": [4, 8, 2]},
        "action_low": [-2.0], "action_high": [2.0], "squashed": True,
    }  # fmt: skip
    for saved, head in ((discrete, "categorical"), (sac, "squashed")):
        spec = PolicySpec.from_dict(saved)
        assert spec.head == head and spec.nvec == () and not spec.binary
        assert {k: list(v) if isinstance(v, tuple) else v for k, v in spec.to_dict().items() if k != "network"} == {
            k: v for k, v in saved.items() if k != "network"
        }
        ParticlePolicy(spec, seed=0)
    cartpole = PolicySpec.for_spaces(
        gym.spaces.Box(-1.0, 1.0, (4,)), gym.spaces.Discrete(2), {"hidden": (8,), "prior": "flat"}, 4
    )
    assert set(cartpole.to_dict()) == set(discrete)  # no new keys in a Discrete policy's file
    box = PolicySpec.for_spaces(OBS, gym.spaces.Box(-1.0, 1.0, (3,)), {"hidden": (8,)}, 4)
    assert "nvec" not in box.to_dict() and "binary" not in box.to_dict() and "squashed" not in box.to_dict()
    for space in (MULTI_DISCRETE, gym.spaces.MultiBinary(3), gym.spaces.Discrete(3, start=-1)):
        spec = PolicySpec.for_spaces(OBS, space, {"hidden": (8,)}, 4)
        assert PolicySpec.from_dict(spec.to_dict()) == spec and spec.acts_in(space)


class Match(gym.Env):
    """One step per episode: reward = the share of the action's components equal to a target that the
    sign of the first observation chooses."""

    observation_space = OBS

    def __init__(self, action_space: gym.Space, targets):
        self.action_space, self.targets = action_space, np.asarray(targets)

    def target(self, obs: np.ndarray) -> np.ndarray:
        return self.targets[(np.asarray(obs)[..., 0] > 0).astype(int)]

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return self.x, {}

    def step(self, action):
        assert self.action_space.contains(action), action
        return self.x, float(np.mean(np.asarray(action) == self.target(self.x))), True, False, {}


TASKS = {
    "multi_discrete": lambda: Match(MULTI_DISCRETE, [(1, 0, 2), (3, 1, -1)]),  # a random policy scores 0.36
    "multi_binary": lambda: Match(gym.spaces.MultiBinary(4), [(1, 0, 1, 1), (0, 1, 1, 0)]),  # 0.5
}


@pytest.mark.parametrize("task", TASKS)
def test_a_small_task_learns_and_saves_loads_exports_and_evaluates(task, tmp_path):
    make = TASKS[task]
    model = svpg.SVPG(
        make, estimator="ppo", seed=0, samples_per_particle=256, hidden=(16,), lr=3e-3, verbose=0, **CHEAP_PPO
    ).learn(8192)
    env = make()
    obs = np.random.default_rng(1).uniform(-1, 1, (200, 2)).astype(np.float32)
    actions, _ = model.predict(obs, deterministic=True)
    assert actions.dtype == np.int64 and actions.shape == (200, *env.action_space.shape)
    assert all(env.action_space.contains(a.astype(env.action_space.dtype)) for a in actions)
    assert (actions == env.target(obs)).mean() > 0.85
    single, _ = model.predict(obs[0], deterministic=True)
    assert single.shape == env.action_space.shape and np.array_equal(single, actions[0])
    sampled, _ = model.predict(obs)
    assert sampled.shape == actions.shape and all(env.action_space.contains(a) for a in sampled)

    loaded = svpg.SVPG.load(model.save(tmp_path / "model"), env=make)
    assert np.array_equal(loaded.predict(obs, deterministic=True)[0], actions)
    acting = svpg.load(tmp_path / "model")
    assert np.array_equal(acting.predict(obs, deterministic=True)[0], actions)

    module = to_module(acting)
    assert torch.equal(module(torch.as_tensor(obs)), torch.as_tensor(actions))
    assert module(torch.as_tensor(obs[:3])).dtype == torch.int64
    program = torch.export.load(export(acting, tmp_path / "actor.pt2")).module()
    assert torch.equal(program(torch.as_tensor(obs)), torch.as_tensor(actions))
    scripted = torch.jit.load(export(acting, tmp_path / "actor.pt"))
    assert torch.equal(scripted(torch.as_tensor(obs)), torch.as_tensor(actions))
    stochastic = to_module(acting, deterministic=False)(torch.as_tensor(obs))
    assert all(env.action_space.contains(a) for a in stochastic.numpy())

    returns = evaluate_particles(acting, make, episodes=8, seed=5, max_episode_steps=1)
    assert returns.shape == (acting.num_particles, 8) and returns.max() > 0.85


#: the (2, 2) sign patterns that the sign of the first observation chooses
PATTERNS = np.array([[[1, -1], [-1, 1]], [[-1, -1], [1, 1]]], np.float32)


class Signs(gym.Env):
    """One step per episode with a (2, 2) Box action: reward = the share of its entries whose sign is the
    target pattern's (a random policy scores 0.5)."""

    observation_space = OBS
    action_space = gym.spaces.Box(-1.0, 1.0, (2, 2), np.float32)

    @staticmethod
    def target(obs: np.ndarray) -> np.ndarray:
        return PATTERNS[(np.asarray(obs)[..., 0] > 0).astype(int)]

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return self.x, {}

    def step(self, action):
        assert self.action_space.contains(np.asarray(action, np.float32)), action  # the env's own (2, 2) shape
        return self.x, float(np.mean(np.sign(action) == self.target(self.x))), True, False, {}


class FlatSigns(Signs):
    """The same task with the action flattened: Box (4,)."""

    action_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)

    def step(self, action):
        return self.x, float(np.mean(np.sign(np.reshape(action, (2, 2))) == self.target(self.x))), True, False, {}


BOX_OPTIONS = {
    "ppo": dict(samples_per_particle=256, hidden=(16,), lr=3e-3, **CHEAP_PPO),
    "sac": dict(hidden=(32,), critic_hidden=(32,), learning_starts=256, train_freq=4, gradient_steps=1),
}


@pytest.mark.parametrize("estimator", ["ppo", pytest.param("sac", marks=pytest.mark.slow)])  # sac: the squashed head
def test_a_non_flat_box_action_is_learned_flat_and_predicted_in_the_env_s_shape(estimator, tmp_path):
    from stable_baselines3.common.evaluation import evaluate_policy

    shaped, flat = (svpg.SVPG(task, estimator=estimator, seed=0, verbose=0, **BOX_OPTIONS[estimator]) for task in (Signs, FlatSigns))
    assert torch.equal(shaped.learn(1024).policy.theta, flat.learn(1024).policy.theta)  # row-major, as SB3: the same run
    model = shaped.learn(7168, reset_num_timesteps=False)
    obs = np.random.default_rng(1).uniform(-1, 1, (200, 2)).astype(np.float32)
    actions, _ = model.predict(obs, deterministic=True)
    assert actions.shape == (200, 2, 2) and model.predict(obs[0], deterministic=True)[0].shape == (2, 2)
    assert (np.sign(actions) == Signs.target(obs)).mean() > 0.9
    mean, _ = evaluate_policy(model, Signs(), n_eval_episodes=20, warn=False)  # SB3's loop steps the (2, 2) action
    assert mean > 0.9
    acting = svpg.load(model.save(tmp_path / "signs"))
    assert acting.spec.describe_actions() == "Box actions of shape (2, 2)" and acting.spec.acts_in(Signs.action_space)
    assert np.array_equal(acting.predict(obs, deterministic=True)[0], actions)


class Record(gym.Env):
    """Remembers the action it was given."""

    observation_space = OBS

    def __init__(self, action_space: gym.Space):
        self.action_space = action_space

    def reset(self, *, seed=None, options=None):
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.action = action
        return np.zeros(2, np.float32), 0.0, False, False, {}


@pytest.mark.parametrize("space", [MULTI_DISCRETE, gym.spaces.MultiBinary(3)], ids=["multi_discrete", "multi_binary"])
def test_the_vector_env_passes_integer_arrays_of_the_space(space):
    env = GymVectorEnv(lambda: Record(space), 2)
    assert env.action_dim == (9 if isinstance(space, gym.spaces.MultiDiscrete) else 3)
    env.reset(seed=0)
    actions = torch.as_tensor(np.stack([space.sample(), space.sample()]))
    env.step(actions)
    given = [e.unwrapped.action for e in env.vec_env.envs]
    assert all(a.dtype == space.dtype and a.shape == space.shape for a in given)
    assert np.array_equal(np.stack(given), actions.numpy())
    env.close()


class TupleActions(Record):
    pass


@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Discrete(3)]),
        gym.spaces.Dict({"a": gym.spaces.Discrete(2)}),
        gym.spaces.MultiBinary([2, 2]),
        gym.spaces.MultiDiscrete([[2, 3], [2, 2]]),
    ],
    ids=["tuple", "dict", "multi-binary-2d", "multi-discrete-2d"],
)
def test_other_action_spaces_are_refused_in_one_line(space):
    supported = "svpg policies support Discrete, flat MultiDiscrete, flat MultiBinary or Box action spaces, got "
    with pytest.raises(ValueError) as info:
        PolicySpec.for_spaces(OBS, space, {"hidden": (4,)}, 2)
    assert str(info.value) == supported + str(space)
    with pytest.raises(ValueError) as info:
        svpg.SVPG(lambda: TupleActions(space), verbose=0)
    assert str(info.value) == f"TupleActions: {supported}{space}"


def test_evaluation_refuses_an_env_of_other_actions():
    spec = PolicySpec.for_spaces(OBS, MULTI_DISCRETE, {"hidden": (4,)}, 2)
    with pytest.raises(ValueError, match=r"MultiDiscrete\(\[3, 2, 4\], start=\[1, 0, -1\]\): evaluate on the"):
        evaluate_particles(ParticlePolicy(spec), lambda: Match(gym.spaces.MultiDiscrete([3, 2, 4]), [(0, 0, 0)]))


def test_a_discrete_start_is_respected():
    logits = torch.randn(1, 6, 3, generator=torch.Generator().manual_seed(5))
    policy = _policy(gym.spaces.Discrete(3, start=-1), logits)
    mode = policy.mode(policy.fast_weights(), torch.zeros(1, 6, 2))
    assert torch.equal(mode, logits.argmax(-1) - 1)
    logp, _ = policy.log_prob_entropy(policy.theta, torch.zeros(1, 6, 2), mode)
    torch.testing.assert_close(logp, Categorical(logits=logits).log_prob(mode + 1))
