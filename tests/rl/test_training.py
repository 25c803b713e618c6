"""End-to-end behaviour of the SVPG trainer: learning, reproducibility, resume, degenerate sizes."""
import pytest
import torch

from svpg.rl.config import SVPGConfig
from svpg.rl.evaluation import evaluate_particles
from svpg.rl.trainer import SVPGTrainer
from tests.conftest import CLASSIC


def small_config(tmp_runs, **kw):
    base = CLASSIC | dict(
        num_particles=4, samples_per_particle=1000, iterations=3, log_dir=str(tmp_runs), progress=False,
        checkpoint_every=0, eval_episodes=0, threads=1, anneal_lr=False,
    )
    base.update(kw)
    return SVPGConfig(**base)


def test_short_training_run_clearly_improves_cartpole(tmp_runs):
    # The initial (near-uniform) stochastic policies last ~22 steps. 40 iterations of 4 particles ×
    # 2000 samples (320k steps, a few seconds) must raise the mean stochastic return many times over.
    cfg = small_config(tmp_runs, samples_per_particle=2000, iterations=40, seed=1, run_name="learn")
    trainer = SVPGTrainer(cfg)
    before = evaluate_particles(trainer.policy, cfg.env_id, 10, seed=5, deterministic=False).mean()
    policy = trainer.train()
    after = evaluate_particles(policy, cfg.env_id, 10, seed=5, deterministic=False)
    assert before < 40
    assert after.mean() > 150, f"mean return {after.mean():.1f} after training (before {before:.1f})"
    assert after.mean(1).min() > 60, "every particle must learn, not only some"


@pytest.mark.parametrize("prior", ["mvg", "flat"])
def test_update_drives_particles_by_J_over_alpha_plus_weighted_log_prior(tmp_runs, prior):
    # eq. 19's driving gradient is ∇J/α + λ∇log p (λ = prior_weight; eq. 18 has λ = 1). Computed here
    # term by term on the same batch and compared with what the trainer hands to the SVGD step.
    cfg = small_config(tmp_runs, env_id="svpg/CartPoleSwingUp-v0", alpha=4.0, prior_weight=0.25, prior=prior, run_name=prior)
    trainer = SVPGTrainer(cfg)
    batch = trainer.model.collect()
    advantages, _, _ = trainer.model.estimator.advantages(batch)
    theta = trainer.policy.theta
    surrogate, _ = trainer.model.policy_gradient_surrogate(batch, advantages)
    (grad_j,) = torch.autograd.grad(surrogate.sum(), theta)
    log_prior = trainer.policy.log_prior(theta)
    grad_p = torch.autograd.grad(log_prior.sum(), theta)[0] if log_prior.requires_grad else torch.zeros_like(theta)
    assert (grad_p.abs().sum() > 0) == (prior == "mvg")
    seen, step = {}, trainer.model.svgd.step
    trainer.model.svgd.step = lambda grad: step(seen.setdefault("grad", grad.clone()))
    trainer.model.estimator.policy_update(trainer.model, batch, advantages)
    torch.testing.assert_close(seen["grad"], grad_j / 4.0 + 0.25 * grad_p, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("method", ["s2vgd", "svgd", "independent"])
def test_same_seed_same_particles(tmp_runs, method):
    a = SVPGTrainer(small_config(tmp_runs, method=method, run_name=f"a-{method}")).train()
    b = SVPGTrainer(small_config(tmp_runs, method=method, run_name=f"b-{method}")).train()
    c = SVPGTrainer(small_config(tmp_runs, method=method, run_name=f"c-{method}", seed=7)).train()
    assert torch.equal(a.theta, b.theta)
    assert not torch.equal(a.theta, c.theta)


def test_resume_continues_exactly_where_it_stopped(tmp_runs):
    straight = SVPGTrainer(small_config(tmp_runs, iterations=4, run_name="straight")).train()
    first = SVPGTrainer(small_config(tmp_runs, iterations=2, run_name="split"))
    first.train()
    resumed = SVPGTrainer.resume(first.run_dir, iterations=4)
    assert resumed.iteration == 2
    torch.testing.assert_close(resumed.train().theta, straight.theta, rtol=0, atol=0)
    assert (first.run_dir / "checkpoints" / "iter_000004.safetensors").exists()
    import csv

    rows = list(csv.DictReader(open(first.run_dir / "progress.csv")))
    assert [int(r["iteration"]) for r in rows] == [1, 2, 3, 4], "progress.csv continues without gaps or repeats"


def test_one_particle_and_identical_particles_give_no_nan(tmp_runs):
    one = SVPGTrainer(small_config(tmp_runs, num_particles=1, run_name="one")).train()
    assert torch.isfinite(one.theta).all()
    trainer = SVPGTrainer(small_config(tmp_runs, run_name="same"))
    with torch.no_grad():
        trainer.policy.theta.copy_(trainer.policy.theta[:1].expand_as(trainer.policy.theta))
    assert torch.isfinite(trainer.train().theta).all()


def test_impossible_hyperparameters_are_rejected_with_the_fix(tmp_runs):
    with pytest.raises(ValueError, match="--prior-weight"):
        SVPGTrainer(small_config(tmp_runs, prior_weight=-1.0))
    with pytest.raises(ValueError, match="--alpha"):
        SVPGTrainer(small_config(tmp_runs, alpha=0.0))
    with pytest.raises(ValueError, match="--num-particles"):
        SVPGTrainer(small_config(tmp_runs, num_particles=0))
    with pytest.raises(ValueError, match="not registered|Unknown|unknown"):
        SVPGTrainer(small_config(tmp_runs, env_id="CartPol-v1"))
    with pytest.raises(ValueError, match="householder"):
        SVPGTrainer(small_config(tmp_runs, hidden=(3,), householder=5, env_id="CartPole-v1"))


@pytest.mark.parametrize("env_id, estimator", [("Pendulum-v1", "a2c"), ("Acrobot-v1", "reinforce")])
def test_any_gymnasium_id_trains_on_the_generic_path(tmp_runs, env_id, estimator):
    from svpg import envs

    assert not envs.is_fast(env_id)
    trainer = SVPGTrainer(small_config(
        tmp_runs, env_id=env_id, estimator=estimator, num_particles=2, samples_per_particle=200, iterations=2,
        horizon=100, run_name=f"generic-{estimator}",
    ))
    policy = trainer.train()
    assert torch.isfinite(policy.theta).all() and trainer.iteration == 2
    returns = evaluate_particles(policy, env_id, 2, seed=0, max_episode_steps=100)
    assert returns.shape == (2, 2) and torch.isfinite(returns).all()
