"""EnvPool as the generic path's backend (vec_env="envpool"): same-step resets, seeds; refused without EnvPool
or for what EnvPool cannot run. The EnvPool checks run where it is installed (pip install "svpg[envpool]")."""
import sys

import pytest
import torch

from svpg import envs


def test_without_envpool_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "envpool", None)
    with pytest.raises(ValueError, match=r"needs EnvPool .*pip install \"svpg\[envpool\]\""):
        envs.make_batched("Pendulum-v1", 2, vec_env="envpool")


def test_envpool_runs_ids_only():
    with pytest.raises(ValueError, match=r"pass an id that EnvPool knows, not .*<lambda>"):
        envs.make_batched(lambda: None, 2, vec_env="envpool")


@pytest.fixture
def envpool():
    return pytest.importorskip("envpool")


def test_finished_environments_reset_on_the_same_step(envpool):
    env = envs.make_batched("Pendulum-v1", 4, seed=0, vec_env="envpool", max_episode_steps=3, n_workers=2)
    assert env.max_episode_steps == 3 and env.obs_dim == 3
    raw = envpool.make_gymnasium("Pendulum-v1", num_envs=4, env_seed=[0, 1, 2, 3], max_episode_steps=3)
    raw_obs, _ = raw.reset()
    assert torch.equal(env.reset(), torch.as_tensor(raw_obs))
    act = torch.full((4, 1), 0.5)
    for t in range(3):
        out = env.step(act)
        raw_obs, raw_reward, _, raw_truncated, _ = raw.step(act.numpy())
        assert torch.equal(out.reward, torch.as_tensor(raw_reward)) and out.truncated.tolist() == [t == 2] * 4
        assert torch.equal(out.final_obs, torch.as_tensor(raw_obs))  # the last observation before a reset
    raw_first, _, _, _, _ = raw.step(act.numpy())  # EnvPool's own reset comes one step later
    assert torch.equal(out.obs, torch.as_tensor(raw_first)) and not torch.equal(out.obs, out.final_obs)
    assert not env.step(act).truncated.any()  # a fresh episode: its first step


def test_seeds_give_the_same_run_whatever_the_threads(envpool):
    def run(threads, seed):
        env = envs.make_batched("Hopper-v5", 4, seed=0, vec_env="envpool", n_workers=threads)
        obs = [env.reset(seed=seed)]
        for t in range(30):
            obs.append(env.step(torch.full((4, 3), 0.3 * (-1) ** t)).obs)
        return torch.stack(obs)

    assert torch.equal(run(1, [5, 9]), run(2, [5, 9]))
    assert torch.equal(run(1, [5, 9])[0, 2:], run(1, 9)[0, :2])  # group 2's environments are seeded 9, 10


def test_svpg_trains_on_envpool(envpool):
    import svpg

    kw = dict(num_particles=2, samples_per_particle=400, ppo_epochs=1, ppo_minibatches=2, value_epochs=1,
              value_steps=2, seed=0, verbose=0, vec_env="envpool")
    a, b = (svpg.SVPG("Pendulum-v1", **kw).learn(800) for _ in range(2))
    assert a.iteration == 1 and torch.equal(a.policy.theta, b.policy.theta)
