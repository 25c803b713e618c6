"""The README's SVGD example runs and does what it says."""
import re
from pathlib import Path

import torch


def test_readme_svgd_example_reaches_the_target():
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "svgd_direction" in b)
    scope: dict = {}
    torch.manual_seed(0)
    exec(block.replace("print(", "(lambda *a: None)("), scope)
    theta = scope["theta"]
    torch.testing.assert_close(theta.mean(0), torch.tensor([1.0, -0.5]), atol=0.1, rtol=0)
    torch.testing.assert_close(torch.cov(theta.T), torch.tensor([[1.0, 0.6], [0.6, 0.8]]), atol=0.2, rtol=0)
