"""What the SAC and TD3 tests share: one update with its critic target captured, and twin critics written out."""
import torch


def update_capturing_target(model, noise_stream: str):
    """One gradient step of ``model``'s off-policy estimator; returns the critic target y it trained towards,
    its minibatch indices (M, b) redrawn from the same stream, and the noise stream's generator, unread."""
    est = model.estimator
    captured = {}
    update = est.critic_update
    est.critic_update = lambda obs, actions, y: update(obs, actions, captured.setdefault("y", y))
    est.gradient_step(model, model.streams("replay_minibatch"), model.streams(noise_stream))
    indices = torch.randint(est.buffer.filled, (4, est.batch_size), generator=model.streams("replay_minibatch")[0])
    return captured["y"], indices, model.streams(noise_stream)[0]


def twin_q(est, critic, x):
    """Both critics of each particle, (2, M, b), from critic rows interleaved per particle (Q_i1, Q_i2)."""
    return torch.stack([est.net.forward(est.net.weights(critic[k::2]), x).squeeze(-1) for k in range(2)])
