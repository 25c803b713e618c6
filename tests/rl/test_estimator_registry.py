"""The estimator registry: --estimator's choices and help come from it, and a new estimator is one class
plus one decorator (the recipe of docs/architecture.md, followed here from a test)."""
import pytest
import torch

import svpg
from svpg.rl.config import ESTIMATORS, ON_POLICY_ESTIMATORS, SVPGConfig
from svpg.rl.estimators import ESTIMATORS as REGISTRY
from svpg.rl.estimators import OnPolicyEstimator, register_estimator
from svpg.rl.returns import discounted_returns, standardize
from svpg.rl.train_cli import build_parser


def test_the_choices_help_and_grids_come_from_the_registry():
    assert ESTIMATORS == tuple(REGISTRY) == ("reinforce", "a2c", "ppo", "sac", "td3")
    assert ON_POLICY_ESTIMATORS == ("reinforce", "a2c", "ppo")
    help_text = " ".join(build_parser("train.py").format_help().split())
    for name, cls in REGISTRY.items():
        assert f"{name} ({' '.join(cls.help.split())})" in help_text


def test_a_name_is_registered_once():
    with pytest.raises(ValueError, match="already registered"):
        register_estimator(type("Again", (OnPolicyEstimator,), {"name": "ppo", "help": "twice"}))


def test_an_estimator_added_from_outside_the_package_trains():
    @register_estimator
    class RewardToGo(OnPolicyEstimator):
        """REINFORCE without a baseline: the standardised discounted reward-to-go."""

        name = "reward-to-go"
        help = "standardised reward-to-go, no baseline"

        def __init__(self, gamma):
            self.gamma = gamma

        @classmethod
        def from_model(cls, model):
            return cls(model.config.gamma)

        def advantages(self, batch):
            returns = discounted_returns(batch.rewards, batch.dones, self.gamma)
            return standardize(returns, dims=(0, 2)), None, {}

    model = svpg.SVPG("CartPole-v1", estimator="reward-to-go", samples_per_particle=500, verbose=0, seed=1)
    before = model.policy.theta.detach().clone()
    model.learn(4000)
    assert isinstance(model.estimator, RewardToGo) and not torch.equal(model.policy.theta, before)
    assert SVPGConfig(estimator="reward-to-go").validate().estimator == "reward-to-go"
    parser = build_parser("train.py")
    assert parser.parse_args(["--estimator", "reward-to-go"]).estimator == "reward-to-go"
    del REGISTRY["reward-to-go"]  # (conftest restores the registry after every test in any case)
    with pytest.raises(ValueError, match="--estimator 'reward-to-go': choose from reinforce, a2c, ppo, sac, td3"):
        SVPGConfig(estimator="reward-to-go").validate()


def test_train_py_help_describes_the_actual_defaults():
    """The first example of train.py --help names the defaults a bare `python train.py` runs with."""
    import re

    from svpg.rl import train_cli

    line = next(x for x in train_cli.__doc__.splitlines() if x.strip().startswith("python train.py ") and "#" in x
                and x.split("#")[0].strip() == "python train.py")
    words = {"s2vgd": "S²VGD", "ppo": "PPO's surrogate", "a2c": "A2C", "reinforce": "REINFORCE"}
    cfg = SVPGConfig()
    assert words[cfg.method] in line and words[cfg.estimator] in line and cfg.env_id in line
    assert f"K = {cfg.householder}" in line and re.search(rf"M = {cfg.num_particles}\b", line)
