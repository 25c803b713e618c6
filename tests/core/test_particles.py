"""ParticleLayout.split: the same blocks and the same gradients as plain slicing."""
import torch

from svpg.core.networks import NetworkSpec, ParticleMLP
from svpg.core.particles import ParticleLayout


def test_split_views_equal_slices_in_value_and_gradient():
    layout = ParticleLayout()
    net = ParticleMLP(layout, NetworkSpec((4, 6, 3), householder=2, learn_scales=True))
    theta = torch.randn(5, layout.size, dtype=torch.float64, requires_grad=True)
    x = torch.randn(5, 7, 4, dtype=torch.float64)

    def objective():
        return (net.forward(net.weights(theta), x).square().sum(-1).mean(-1) + net.log_prior(theta)).sum()

    (plain,) = torch.autograd.grad(objective(), theta)
    with layout.split(theta):
        bias = layout.get(theta, "net.0.bias")  # the block after net.0.C (4 × 6 coordinates)
        assert bias is layout.get(theta, "net.0.bias")  # the split's view, made once (a slice is new each time)
        assert bias.data_ptr() == theta.data_ptr() + 4 * 6 * theta.element_size()  # a view into θ, no copy
        (split,) = torch.autograd.grad(objective(), theta)
    torch.testing.assert_close(split, plain, rtol=0, atol=1e-12)
    # outside the block (or for another tensor) get() slices again
    other = theta.detach().clone()
    assert torch.equal(layout.get(other, "net.0.C"), layout.get(theta, "net.0.C").detach())
