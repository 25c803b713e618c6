"""The off-policy estimators on a CUDA device (skipped on a machine without one): the same seed gives the same run,
and a model saved, loaded and trained on equals the uninterrupted run bit for bit, as on the CPU."""

import pytest
import torch

import svpg

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

SMALL = dict(batch_size=64, learning_starts=200, train_freq=2, horizon=50, threads=1, device="cuda")


def model(method: str, estimator: str) -> svpg.SVPG:
    return svpg.SVPG("Pendulum-v1", method=method, estimator=estimator, seed=3, verbose=0, **SMALL)


@pytest.mark.parametrize("method", ["s2vgd", "svgd"])
@pytest.mark.parametrize("estimator", ["sac", "td3"])
def test_an_off_policy_run_on_cuda_repeats_and_resumes_bit_for_bit(tmp_path, method, estimator):
    straight = model(method, estimator)
    straight.learn(1200)
    assert straight.policy.theta.is_cuda
    again = model(method, estimator)
    again.learn(1200)
    assert torch.equal(again.policy.theta, straight.policy.theta)
    first = model(method, estimator)
    first.learn(600)
    resumed = svpg.SVPG.load(first.save(tmp_path / "half"), verbose=0)
    resumed.learn(600, reset_num_timesteps=False)
    assert resumed.policy.theta.is_cuda
    assert torch.equal(resumed.policy.theta, straight.policy.theta)
