"""SB3 features extractors of the benchmark's SB3 agents, importable by name so that a saved SB3 model
(``model.zip``) loads them back."""

from __future__ import annotations

import gymnasium as gym
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor


class MinAtarCNN(BaseFeaturesExtractor):
    """MinAtar's baseline network (Young & Tian 2019, https://arxiv.org/abs/1903.03176) as an SB3 features
    extractor, the torso svpg uses on images under 36 px: 16 3×3 filters stride 1 zero-padded by 1, ReLU,
    a dense layer to 128 features, ReLU. It reads channel-last observations (MinAtar's 10 × 10 × 4 bool:
    SB3 neither transposes nor scales them, as they are not uint8 images to it) and moves the channels first."""

    def __init__(self, observation_space: gym.spaces.Box, features_dim: int = 128):
        super().__init__(observation_space, features_dim)
        h, w, c = observation_space.shape
        self.conv = torch.nn.Sequential(torch.nn.Conv2d(c, 16, 3, stride=1, padding=1), torch.nn.ReLU())
        self.linear = torch.nn.Sequential(torch.nn.Linear(16 * h * w, features_dim), torch.nn.ReLU())

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.linear(self.conv(observations.permute(0, 3, 1, 2)).flatten(1))
