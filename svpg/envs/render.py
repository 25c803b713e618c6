"""Tiny numpy rasteriser for the ``rgb_array`` render mode (no pygame needed).

Frames are ``(H, W, 3)`` uint8 arrays; world coordinates have y pointing up, angles are
counter-clockwise from the reference direction stated by each drawing function.
"""

from __future__ import annotations

import math

import numpy as np

WHITE = (255, 255, 255)
BLACK = (0, 0, 0)
CART = (60, 60, 60)
POLE = (202, 152, 101)
AXLE = (129, 132, 203)
LINK1 = (70, 110, 200)
LINK2 = (200, 80, 70)
TARGET = (90, 180, 90)


class Canvas:
    """A white image with a world-to-pixel transform (``scale`` pixels per unit, y up)."""

    def __init__(self, width: int, height: int, scale: float, origin: tuple[float, float]):
        self.img = np.full((height, width, 3), 255, dtype=np.uint8)
        self.scale = scale
        self.origin = origin  # pixel position of world (0, 0)

    def to_px(self, x: float, y: float) -> tuple[float, float]:
        return self.origin[0] + x * self.scale, self.origin[1] - y * self.scale

    def _box(self, x0, y0, x1, y1):
        h, w = self.img.shape[:2]
        c0, c1 = max(int(math.floor(x0)), 0), min(int(math.ceil(x1)) + 1, w)
        r0, r1 = max(int(math.floor(y0)), 0), min(int(math.ceil(y1)) + 1, h)
        if c0 >= c1 or r0 >= r1:
            return None
        cols = np.arange(c0, c1) + 0.5
        rows = np.arange(r0, r1) + 0.5
        return (slice(r0, r1), slice(c0, c1)), cols[None, :], rows[:, None]

    def segment(self, p0, p1, width: float, color) -> None:
        """Thick line between world points ``p0`` and ``p1`` (``width`` in world units)."""
        (ax, ay), (bx, by) = self.to_px(*p0), self.to_px(*p1)
        r = max(width * self.scale / 2, 0.5)
        box = self._box(min(ax, bx) - r, min(ay, by) - r, max(ax, bx) + r, max(ay, by) + r)
        if box is None:
            return
        sl, px, py = box
        dx, dy = bx - ax, by - ay
        denom = dx * dx + dy * dy
        t = np.zeros_like(px * py) if denom == 0 else np.clip(((px - ax) * dx + (py - ay) * dy) / denom, 0, 1)
        dist2 = (px - ax - t * dx) ** 2 + (py - ay - t * dy) ** 2
        self.img[sl][dist2 <= r * r] = color

    def circle(self, c, radius: float, color) -> None:
        """Filled disc of ``radius`` world units around world point ``c``."""
        cx, cy = self.to_px(*c)
        r = max(radius * self.scale, 0.5)
        box = self._box(cx - r, cy - r, cx + r, cy + r)
        if box is None:
            return
        sl, px, py = box
        self.img[sl][(px - cx) ** 2 + (py - cy) ** 2 <= r * r] = color

    def rect(self, center, half_w: float, half_h: float, color) -> None:
        """Axis-aligned filled rectangle (world units)."""
        x0, y0 = self.to_px(center[0] - half_w, center[1] + half_h)
        x1, y1 = self.to_px(center[0] + half_w, center[1] - half_h)
        box = self._box(x0, y0, x1 - 1, y1 - 1)
        if box is not None:
            self.img[box[0]] = color


def draw_cartpole(
    x: float,
    theta: float,
    *,
    x_limit: float,
    pole_length: float,
    width: int = 600,
    height: int = 400,
) -> np.ndarray:
    """Cart-pole frame: track, cart at ``x``, pole at ``theta`` counter-clockwise from upright."""
    world_width = 2 * (x_limit + pole_length)
    scale = width / world_width
    canvas = Canvas(width, height, scale, origin=(width / 2, height * 0.62))
    canvas.segment((-world_width, 0.0), (world_width, 0.0), 1.5 / scale, BLACK)  # track
    for edge in (-x_limit, x_limit):  # track limits
        canvas.segment((edge, -0.08), (edge, 0.08), 2.0 / scale, BLACK)
    canvas.rect((x, 0.0), 0.25, 0.15, CART)
    tip = (x - pole_length * math.sin(theta), pole_length * math.cos(theta))
    canvas.segment((x, 0.0), tip, 0.1, POLE)
    canvas.circle((x, 0.0), 0.05, AXLE)
    return canvas.img


def draw_double_pendulum(theta1: float, theta2: float, *, link_length: float = 1.0, size: int = 500) -> np.ndarray:
    """Double pendulum frame; absolute angles counter-clockwise from hanging down."""
    scale = size / (4.8 * link_length)
    canvas = Canvas(size, size, scale, origin=(size / 2, size / 2))
    canvas.circle((0.0, 2 * link_length), 0.06 * link_length, TARGET)  # the upright tip target
    elbow = (link_length * math.sin(theta1), -link_length * math.cos(theta1))
    tip = (elbow[0] + link_length * math.sin(theta2), elbow[1] - link_length * math.cos(theta2))
    canvas.segment((0.0, 0.0), elbow, 0.1 * link_length, LINK1)
    canvas.segment(elbow, tip, 0.1 * link_length, LINK2)
    canvas.circle((0.0, 0.0), 0.06 * link_length, BLACK)
    canvas.circle(elbow, 0.05 * link_length, BLACK)
    return canvas.img
